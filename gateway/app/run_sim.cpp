// The simulation source: a capture read in-process, no sockets, no sleeping.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <type_traits>

#include "app/gateway_report.hpp"
#include "app/run_common.hpp"
#include "app/runs.hpp"
#include "source/capture_file.hpp"
#include "source/stop_flag.hpp"
#include "util/atomic_file.hpp"
#include "util/realtime.hpp"

namespace itchbench {

int run_sim(const GatewayOptions& o) {
  // Pinned before anything is measured; a pin that is not granted is an error, never ignored.
  const Grant pin{o.cpu >= 0, o.cpu >= 0 ? pin_current_thread(o.cpu) : ""};
  if (!pin.error.empty()) {
    std::fprintf(stderr, "itch-gateway: %s\n", pin.error.c_str());
    return 2;
  }
  CaptureReader reader(o.capture, o.feed);
  reader.select_feed();  // a capture with two sessions is refused before any log exists
  // 2 ms fits the TSC rate to ~50 ppm, plenty for differences within one process; live runs take 20 ms,
  // because there stamps are set against other processes' CLOCK_MONOTONIC.
  const StageClock clock = StageClock::calibrate(2);
  const bool pcap = reader.kind() == CaptureKind::kPcap;
  // Every message takes at least 14 bytes of an uncompressed file (a 2-byte length and a 12-byte message, more
  // in a pcap): a plain file's logs are never remapped. A compressed file's size bounds nothing; the logs grow.
  const uint64_t expected_records = std::filesystem::file_size(o.capture) / 14 + 1;
  // No kernel stamp in simulation: the log holds the stages asked for.
  RunLogs logs = open_run_logs(o, clock, pcap ? logfmt::OriginClock::kCaptureEpoch : logfmt::OriginClock::kItchTimestamp,
                               o.stamps, expected_records);
  OrderBook book(o.expected_orders);
  NullPublisher publisher;
  Gateway<NullPublisher> gw(book, clock, logs.latency.get(), logs.bbo.get(), publisher, logs.histograms.get());
  DepthEvents depth(o.levels);
  depth.attach(gw, logs.depth.get());
  const double overhead = timer_overhead_ns(clock);
  // Unrecorded (neither the log nor histograms) no stage is stamped, so no receive stamp either.
  const bool recorded = o.latency_log || o.latency_histogram;
  const bool timed = recorded && (o.stamps & kStampRead);
  static constexpr logfmt::Arrival kUnrecorded{};

  // A stop request (SIGINT, SIGTERM: Ctrl-C, a CI job cancelled) ends the read between two inputs, looked at
  // every 2^16 of them; the logs are then finalized and gateway.json says how far the run got.
  install_stop_signal_handlers();
  struct Stopped {};
  // A pcap's datagrams are counted here; an ITCH file's messages by their position, already in a register (a
  // counter of its own lived in memory: 1.1 % of the gateway's instructions on nasdaq-day, callgrind).
  uint64_t datagrams = 0;
  const auto t0 = std::chrono::steady_clock::now();
  // Called after input n (1-based): every 2^16 inputs, the stop request is looked at.
  const auto every_so_often = [&](uint64_t n) {
    if ((n & 0xFFFF) != 0) return;
    if (o.progress && (n & 0xFFFFF) == 0)
      std::fprintf(stderr, "itch-gateway: progress %llu messages %.3f s\n",
                   (unsigned long long)gw.decode_counters().messages(),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (stop_requested().load(std::memory_order_relaxed)) throw Stopped{};
  };
  bool complete = false, stopped = false;
  // A walk per recorder, so that the unrecorded one tests nothing a message (0.8 % of the instructions):
  // unrecorded, nothing reads the arrival (building it was 15 instructions a message, 1.03-1.05x).
  const auto read_capture = [&](auto is_recorded) {
    return reader.run(
        [&](uint64_t capture_ns, const uint8_t* p, size_t n) {
          gw.on_datagram(p, n, logfmt::Arrival{0, timed ? clock.now_after_loading(p, n) : 0, capture_ns});
          every_so_often(++datagrams);
        },
        [&](uint64_t position, const uint8_t* m, size_t n) {  // a binary ITCH file's message
          if constexpr (decltype(is_recorded)::value)
            gw.on_message(position, m, n,
                          logfmt::Arrival{0, timed ? clock.now() : 0,
                                          n >= itch::kHeaderLength ? itch::header_timestamp(m) : 0});
          else
            gw.on_message(position, m, n, kUnrecorded);
          every_so_often(position);
        },
        [&](const uint8_t* m, size_t n) { gw.look_ahead(m, n); });
  };
  try {
    complete = recorded ? read_capture(std::true_type{}) : read_capture(std::false_type{});
  } catch (const Stopped&) {
    stopped = true;
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const NoiseSnapshot noise = take_noise_snapshot();  // while the helper threads still live
  logs.close();

  const uint64_t received = pcap ? gw.framer().counters().messages : reader.stats().itch_messages;
  JsonWriter j;
  j.begin_object();
  j.field("source", "sim").field("capture", reader.path()).field("capture_kind", to_string(reader.kind()));
  j.field("complete", complete).field("error", stopped ? "stopped by a signal before the capture's end" : reader.error());
  j.field("stopped_by_signal", stopped);
  j.field("elapsed_s", elapsed).field("messages_per_s", elapsed > 0 ? double(received) / elapsed : 0.0);
  j.field("messages_received", received);
  // The receive stamps are this source's: one a datagram from a pcap, one a message from a binary ITCH file.
  const uint64_t receive_reads = !timed ? 0 : pcap ? datagrams : received;
  write_clock_json(j, clock, overhead, int64_t(receive_reads + gw.clock_reads()));
  j.key("realtime").begin_object();
  write_grant(j, "cpu", pin, o.cpu);
  j.end_object();
  write_capture_json(j, reader.stats(), reader.feed());
  write_mold_json(j, gw.framer().counters());
  write_sequence_json(j, gw.framer().sequence().counters());
  write_pipeline_counters(j, gw, book);
  write_logs_json(j, logs, clock);
  write_noise_json(j, noise);
  j.end_object();
  write_file_atomically(o.out + "/gateway.json", j.str());
  if (stopped) {
    std::fprintf(stderr, "itch-gateway: stopped by a signal after %llu messages; logs finalized\n",
                 (unsigned long long)received);
    return 3;
  }
  if (!complete) std::fprintf(stderr, "itch-gateway: %s\n", reader.error().c_str());
  return complete ? 0 : 1;
}

}  // namespace itchbench
