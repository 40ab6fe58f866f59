// itch-gateway: the system under test. Reads ITCH 5.0 from a source, keeps
// the order book, emits BBO events, and records per-message latency and the
// BBO stream to binary logs in the output directory.
//
// Sources: sim — a capture read in-process (pcap of MoldUDP64 or binary
// ITCH file), no sockets, no sleeping: time is the capture's.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "app/gateway_report.hpp"
#include "source/capture_file.hpp"
#include "util/atomic_file.hpp"
#include "util/cli.hpp"

using namespace itchbench;

namespace {

// Median cost of one stage stamp, measured in place: every latency figure
// of the run includes it.
double timer_overhead_ns(const StageClock& clock) {
  std::vector<uint64_t> d(2001);
  for (auto& x : d) {
    const uint64_t a = clock.now();
    const uint64_t b = clock.now();
    x = b - a;
  }
  std::nth_element(d.begin(), d.begin() + d.size() / 2, d.end());
  // Two stamps bracket the gap; the gap is the cost of one.
  return double(d[d.size() / 2]);
}

const char* stage_clock_name(logfmt::StageClock c) {
  return c == logfmt::StageClock::kTsc ? "tsc" : c == logfmt::StageClock::kMonotonic ? "monotonic" : "none";
}

}  // namespace

int main(int argc, char** argv) {
  cli::Args args("itch-gateway", "itch-gateway --source sim --capture FILE --out DIR [options]",
                 "The gateway under test: ITCH 5.0 in, order book, BBO events out, latency and BBO\n"
                 "logs written to DIR (latency.lat, bbo.bbo, gateway.json). Exit status: 0 the\n"
                 "whole input was processed (malformed messages are counted, not fatal), 1 the\n"
                 "input ended in an error (logs hold everything before it), 2 usage or I/O error.");
  args.option("source", "KIND", "sim: read a capture in-process (pcap or binary ITCH file)", "sim");
  args.option("capture", "FILE", "capture for --source sim");
  args.option("out", "DIR", "existing directory for the logs");
  args.option("port", "PORT", "only UDP datagrams to this port (pcap)");
  args.option("run-id", "ID", "run identifier written into log headers", "");
  args.option("commit", "SHA", "commit identifier written into log headers", "");
  args.option("expected-orders", "N", "order index pre-sized for this many live orders", "1048576");
  args.flag("no-latency-log", "do not record per-message latency");
  args.flag("progress", "print progress to stderr every million datagrams");
  args.flag("build-info", "print how this binary was built (JSON) and exit");
  args.parse(argc, argv);
  if (args.flag_set("build-info")) {
    JsonWriter j;
    j.begin_object();
    j.field("build_type", ITCHBENCH_BUILD_TYPE).field("cxx_flags", ITCHBENCH_CXX_FLAGS);
    j.field("compiler", ITCHBENCH_COMPILER);
    j.end_object();
    std::fputs(j.str().c_str(), stdout);
    return 0;
  }
  if (args.get("source") != "sim") args.fail("--source: only 'sim' is available");
  if (!args.has("capture")) args.fail("--capture is required");
  if (!args.has("out")) args.fail("--out is required");
  const std::string out = args.get("out");
  struct stat st {};
  if (::stat(out.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) args.fail("--out: " + out + " is not a directory");
  std::optional<uint16_t> port;
  if (args.has("port")) port = uint16_t(args.get_u64("port"));

  try {
    CaptureReader reader(args.get("capture"), port);
    const StageClock clock = StageClock::calibrate();
    const logfmt::OriginClock origin =
        reader.kind() == CaptureKind::kPcap ? logfmt::OriginClock::kCaptureEpoch : logfmt::OriginClock::kItchTimestamp;
    const LogIdentity lat_id{clock.source(), origin, args.get("run-id"), args.get("commit")};
    const LogIdentity bbo_id{logfmt::StageClock::kNone, logfmt::OriginClock::kNone, args.get("run-id"),
                             args.get("commit")};
    std::unique_ptr<LatencyLog> latency;
    if (!args.flag_set("no-latency-log"))
      latency = std::make_unique<LatencyLog>(out + "/latency.lat", logfmt::Kind::kLatency, lat_id);
    BboLog bbo_log(out + "/bbo.bbo", logfmt::Kind::kBbo, bbo_id);
    OrderBook book(args.get_u64("expected-orders"));
    NullPublisher publisher;
    Gateway<NullPublisher> gw(book, clock, latency.get(), &bbo_log, publisher);
    const double overhead = timer_overhead_ns(clock);

    const bool progress = args.flag_set("progress");
    uint64_t datagrams = 0;
    const auto t0 = std::chrono::steady_clock::now();
    const bool complete = reader.run(
        [&](uint64_t capture_ns, const uint8_t* p, size_t n) {
          gw.on_datagram(p, n, clock.now(), capture_ns);
          if (progress && ++datagrams % 1000000 == 0)
            std::fprintf(stderr, "itch-gateway: %llu datagrams, %llu messages\n", (unsigned long long)datagrams,
                         (unsigned long long)gw.decode_counters().messages());
        },
        [&](uint64_t position, const uint8_t* m, size_t n) {
          gw.on_message(position, m, n, clock.now(), load_be48(m + 5));
        });
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (latency) latency->close();
    bbo_log.close();

    const uint64_t messages = gw.decode_counters().messages() + gw.decode_counters().rejected();
    JsonWriter j;
    j.begin_object();
    j.field("source", "sim").field("capture", reader.path()).field("capture_kind", to_string(reader.kind()));
    j.field("complete", complete).field("error", reader.error());
    j.field("elapsed_s", elapsed).field("messages_per_s", elapsed > 0 ? double(messages) / elapsed : 0.0);
    j.key("clock").begin_object();
    j.field("stage", stage_clock_name(clock.source())).field("ticks_per_ns", clock.ticks_per_ns());
    j.field("timer_overhead_ns", overhead);
    j.end_object();
    write_capture_json(j, reader.stats());
    write_pipeline_counters(j, gw, book);
    j.key("logs").begin_object();
    j.field("latency_records", latency ? latency->records() : 0).field("latency_dropped", latency ? latency->dropped() : 0);
    j.field("bbo_records", bbo_log.records()).field("bbo_dropped", bbo_log.dropped());
    j.end_object();
    j.end_object();
    write_file_atomically(out + "/gateway.json", j.str());
    if (!complete) std::fprintf(stderr, "itch-gateway: %s\n", reader.error().c_str());
    return complete ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "itch-gateway: %s\n", e.what());
    return 2;
  }
}
