// udp-replay: the UDP datagrams of a capture (MoldUDP64 packets) sent from a
// socket to a loopback address, paced against absolute deadlines, in
// sendmmsg batches, with the intended and the actual send time of every
// packet written to a send log (gateway/log/FORMAT.md, kind 3). Unlike
// tcpreplay it needs no rewritten frames, stamps what it sends, and is not
// capped by a per-packet write.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "log/mmap_log.hpp"
#include "protocol/endian.hpp"
#include "replay/lib/capture_schedule.hpp"
#include "replay/lib/deadline.hpp"
#include "replay/lib/report_output.hpp"
#include "source/capture_file.hpp"
#include "source/feed_option.hpp"
#include "util/cli.hpp"
#include "util/json_writer.hpp"
#include "util/stage_clock.hpp"

using namespace itchbench;

namespace {

struct Datagram {
  uint64_t capture_ns;
  size_t offset;
  uint32_t length;
};

// MoldUDP64 header: session (10), sequence of the first message (8), count (2).
constexpr size_t kMoldHeader = 20;
constexpr uint16_t kEndOfSession = 0xFFFF;

uint64_t first_seq(const uint8_t* p, size_t n) { return n >= kMoldHeader ? load_be64(p + 10) : 0; }
uint16_t message_count(const uint8_t* p, size_t n) {
  const uint16_t c = n >= kMoldHeader ? load_be16(p + 18) : 0;
  return c == kEndOfSession ? 0 : c;
}

bool is_loopback(const in_addr& a) { return (ntohl(a.s_addr) >> 24) == 127; }
bool is_multicast(const in_addr& a) { return (ntohl(a.s_addr) >> 28) == 0xE; }  // 224.0.0.0/4

}  // namespace

int main(int argc, char** argv) {
  cli::Args args("udp-replay", "udp-replay CAPTURE --port PORT [options]",
                 "Send the UDP datagrams of a capture (pcap/pcapng of MoldUDP64) to a loopback address,\n"
                 "paced against absolute deadlines (CLOCK_MONOTONIC), in sendmmsg batches. Every packet's\n"
                 "intended and actual send time go to --send-log. Only 127.0.0.0/8 destinations, or a\n"
                 "multicast group (224.0.0.0/4) sent out of the loopback interface with TTL 0, which\n"
                 "never leaves the host, are accepted. Prints what it sent as JSON.");
  args.positional("CAPTURE", "capture to replay");
  args.option("port", "PORT", "destination UDP port");
  args.option("address", "IPV4", "destination address: loopback, or a multicast group (sent on lo, TTL 0)",
              "127.0.0.1");
  args.option("feed", "ADDR:PORT", kFeedOptionHelp);
  args.option("rate", "capture|pps|topspeed", "capture: the capture's timing x --multiplier; pps: --pps packets "
              "a second; topspeed: as fast as the socket takes them", "capture");
  args.option("multiplier", "X", "speed-up of the capture's timing (with --rate capture)", "1");
  args.option("pps", "N", "packets per second (with --rate pps)", "10000");
  args.option("loops", "N", "times through the capture", "1");
  args.option("batch", "N", "most packets handed to one sendmmsg (1..1024)", "64");
  args.option("sndbuf", "BYTES", "SO_SNDBUF request", "4194304");
  args.option("send-log", "FILE", "write every packet's intended and actual send time here");
  args.option("report", "FILE", "also write the report as JSON to FILE");
  args.parse(argc, argv);
  if (!args.has("port")) args.fail("--port is required");
  const uint64_t port = args.get_u64("port");
  if (port == 0 || port > 65535) args.fail("--port must be 1..65535");
  const std::string rate = args.get("rate");
  if (rate != "capture" && rate != "pps" && rate != "topspeed") args.fail("--rate takes capture, pps or topspeed");
  const double multiplier = args.get_double("multiplier");
  if (!(multiplier > 0)) args.fail("--multiplier must be positive");
  const uint64_t pps = args.get_u64("pps");
  if (rate == "pps" && (pps == 0 || pps > 100000000)) args.fail("--pps must be 1..100000000");
  const uint64_t loops = args.get_u64("loops");
  if (loops == 0 || loops > 1000000) args.fail("--loops must be 1..1000000");
  const uint64_t batch = args.get_u64("batch");
  if (batch == 0 || batch > 1024) args.fail("--batch must be 1..1024");
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(uint16_t(port));
  if (inet_pton(AF_INET, args.get("address").c_str(), &dst.sin_addr) != 1) args.fail("--address is not an IPv4 address");
  const bool multicast = is_multicast(dst.sin_addr);
  if (!is_loopback(dst.sin_addr) && !multicast)
    args.fail("--address must be a loopback address (127.0.0.0/8) or a multicast group (224.0.0.0/4): traffic "
              "stays local");
  const std::optional<Feed> feed = feed_option(args);

  try {
    // The whole capture in memory first: pacing must not wait on the disk.
    CaptureReader reader(args.positionals()[0], feed);
    if (reader.kind() != CaptureKind::kPcap)
      throw std::runtime_error(args.positionals()[0] + ": udp-replay sends a pcap's UDP datagrams; this is a "
                               "binary ITCH file (make a pcap with itch2pcap)");
    std::vector<uint8_t> bytes;
    std::vector<Datagram> datagrams;
    const bool complete = reader.run(
        [&](uint64_t ts, const uint8_t* p, size_t n) {
          datagrams.push_back({ts, bytes.size(), uint32_t(n)});
          bytes.insert(bytes.end(), p, p + n);
        },
        [](uint64_t, const uint8_t*, size_t) {});
    if (!complete) {
      std::fprintf(stderr, "udp-replay: %s\n", reader.error().c_str());
      return 1;
    }

    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    const int sndbuf = int(std::min<uint64_t>(args.get_u64("sndbuf"), 1u << 30));
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    if (multicast) {  // out of the loopback interface only, and never past this host
      const in_addr lo{htonl(INADDR_LOOPBACK)};
      const unsigned char ttl = 0, loop = 1;
      if (::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &lo, sizeof lo) != 0 ||
          ::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl) != 0 ||
          ::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop) != 0)
        throw std::runtime_error(std::string("multicast options: ") + std::strerror(errno));
    }
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&dst), sizeof dst) != 0)
      throw std::runtime_error(std::string("connect: ") + std::strerror(errno));

    std::optional<SendLog> log;
    if (args.has("send-log"))
      log.emplace(args.get("send-log"), logfmt::Kind::kSend,
                  LogIdentity{logfmt::StageClock::kMonotonic, logfmt::OriginClock::kNone, "", ""});

    const uint64_t total = uint64_t(datagrams.size()) * loops;
    std::vector<mmsghdr> msgs(batch);
    std::vector<iovec> iovs(batch);
    uint64_t sent = 0, failed = 0, retried_eagain = 0, retried_enobufs = 0, sent_bytes = 0, messages = 0;
    uint64_t max_lag = 0, lag_sum = 0;
    int first_error = 0;
    replay::CaptureSchedule schedule(multiplier);
    replay::tighten_timer_slack();
    const uint64_t t0 = monotonic_ns() + 20000000;  // start 20 ms from now
    uint64_t loop_offset = 0;                       // capture timing restarts each loop, after the last
    uint64_t last_due = 0;
    std::vector<uint64_t> intended(batch);
    auto due_at = [&](uint64_t i) -> uint64_t {  // intended send time of the i-th packet overall
      if (rate == "pps") return t0 + uint64_t((unsigned __int128)i * 1000000000u / pps);
      if (rate == "topspeed") return 0;  // due at once: the intended time is when its batch was formed
      const size_t k = size_t(i % datagrams.size());
      if (k == 0 && i > 0) {
        loop_offset = last_due;
        schedule = replay::CaptureSchedule(multiplier);
      }
      last_due = loop_offset + schedule.due(datagrams[k].capture_ns);
      return t0 + last_due;
    };

    uint64_t next = 0;  // the first packet of the batch being sent
    // One send-log record a packet: k is its place in the batch being sent.
    auto record = [&](size_t k, uint64_t t_sent, uint8_t flags) {
      if (!log) return;
      const Datagram& d = datagrams[size_t((next + k) % datagrams.size())];
      const uint8_t* p = bytes.data() + d.offset;
      logfmt::SendRecord rec{};
      rec.seq = first_seq(p, d.length);
      rec.count = message_count(p, d.length);
      rec.bytes = d.length;
      rec.t_intended = intended[k];
      rec.t_sent = t_sent;
      rec.flags = flags;
      log->append(rec);
    };

    uint64_t next_due = total ? due_at(0) : 0;
    while (next < total) {
      replay::wait_until(next_due);
      const uint64_t formed = monotonic_ns();
      // Everything due by now, up to a batch.
      size_t n = 0;
      while (next + n < total && n < batch) {
        const uint64_t due = n == 0 ? next_due : due_at(next + n);
        if (n > 0 && due > formed) {
          next_due = due;  // the first packet of the next batch
          break;
        }
        const Datagram& d = datagrams[size_t((next + n) % datagrams.size())];
        iovs[n] = {bytes.data() + d.offset, d.length};
        msgs[n] = {};
        msgs[n].msg_hdr.msg_iov = &iovs[n];
        msgs[n].msg_hdr.msg_iovlen = 1;
        intended[n] = due ? due : formed;
        ++n;
      }
      const bool batch_ended_by_schedule = next + n < total && n < batch;
      size_t done = 0;
      while (done < n) {
        // Stamped as the packets are handed to the kernel: on loopback the receiver's kernel stamp is taken
        // inside this very call, so a stamp after it would come later than the arrival.
        const uint64_t t_sent = monotonic_ns();
        const int r = ::sendmmsg(fd, msgs.data() + done, unsigned(n - done), 0);
        if (r < 0) {
          if (errno == EINTR) continue;
          if (errno == EAGAIN || errno == ENOBUFS) {  // the socket is full: try again, counted
            ++(errno == EAGAIN ? retried_eagain : retried_enobufs);
            continue;
          }
          // Any other error loses this packet: recorded as failed, never silently.
          if (!first_error) first_error = errno;
          ++failed;
          record(done, t_sent, logfmt::kSendFailed);
          ++done;
          continue;
        }
        for (size_t k = done; k < done + size_t(r); ++k) {
          const Datagram& d = datagrams[size_t((next + k) % datagrams.size())];
          const uint8_t* p = bytes.data() + d.offset;
          const uint64_t lag = t_sent > intended[k] ? t_sent - intended[k] : 0;
          max_lag = std::max(max_lag, lag);
          lag_sum += lag;
          sent_bytes += d.length;
          messages += message_count(p, d.length);
          record(k, t_sent, 0);
        }
        sent += uint64_t(r);
        done += size_t(r);
      }
      next += n;
      if (!batch_ended_by_schedule && next < total) next_due = due_at(next);
    }
    const uint64_t finished = monotonic_ns();
    ::close(fd);
    const uint64_t log_dropped = log ? log->dropped() : 0;
    if (log) log->close();

    const double elapsed_s = double(finished > t0 ? finished - t0 : 0) / 1e9;
    JsonWriter j;
    j.begin_object();
    j.field("address", args.get("address")).field("port", port).field("rate", rate).field("multiplier", multiplier);
    j.field("pps_requested", rate == "pps" ? pps : 0).field("loops", loops).field("batch", batch);
    j.field("capture_datagrams", uint64_t(datagrams.size())).field("packets", total).field("sent", sent);
    j.field("failed", failed).field("first_error", first_error ? std::string(std::strerror(first_error)) : std::string());
    j.field("retried_eagain", retried_eagain).field("retried_enobufs", retried_enobufs);
    j.field("bytes", sent_bytes).field("messages", messages);
    j.field("elapsed_s", elapsed_s).field("rate_pps", elapsed_s > 0 ? double(sent) / elapsed_s : 0.0);
    j.field("max_lag_ns", max_lag).field("mean_lag_ns", sent ? double(lag_sum) / double(sent) : 0.0);
    j.field("timestamps_backwards", schedule.backwards_steps());
    j.field("send_log_dropped", log_dropped);
    j.end_object();
    replay::emit_report(j.str(), args.get("report"));
    return failed || log_dropped ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "udp-replay: %s\n", e.what());
    return 2;
  }
}
