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
#include <array>
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
#include "replay/lib/line_faults.hpp"
#include "replay/lib/report_output.hpp"
#include "source/capture_file.hpp"
#include "source/feed_option.hpp"
#include "source/stop_flag.hpp"
#include "util/atomic_file.hpp"
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
                 "never leaves the host, are accepted. Prints what it sent as JSON. Stopped (SIGINT,\n"
                 "SIGTERM), it sends no more, closes its send log, reports and exits 128 + the signal.");
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
  args.option("line-b", "IPV4", "also send every packet on a B line to this address (loopback or a group), as "
              "exchanges send a session twice");
  args.option("line-b-port", "PORT", "the B line's port (default: --port)");
  args.option("b-skew-us", "US", "how far the B line runs behind A", "0");
  args.option("drop-a", "P", "line A: probability a packet is lost at send time", "0");
  args.option("drop-b", "P", "line B: probability a packet is lost at send time", "0");
  args.option("burst-drop-a", "LEN@P", "line A: LEN packets lost in a row, starting with probability P");
  args.option("burst-drop-b", "LEN@P", "line B: the same");
  args.option("silent-a", "FROM:TO", "line A sends nothing from FROM to TO seconds into the schedule");
  args.option("silent-b", "FROM:TO", "line B: the same");
  args.option("duplicate-a", "P", "line A: probability a packet it sends goes twice", "0");
  args.option("duplicate-b", "P", "line B: the same", "0");
  args.option("reorder-a", "P", "line A: probability a packet it sends goes after the line's next one", "0");
  args.option("reorder-b", "P", "line B: the same", "0");
  args.option("delay-a-us", "US", "line A runs this much later (beyond B's skew: B ahead of A)", "0");
  args.option("delay-b-us", "US", "line B runs this much later, on top of --b-skew-us", "0");
  args.option("line-seed", "N", "seed of the lines' faults (one stream a line)", "1");
  args.option("from-seq", "SEQ", "start at the first packet that holds this sequence number or a later one (a feed "
              "joined mid-session); the packets before it are skipped and counted", "0");
  args.option("heartbeat-ms", "MS", "while the capture is idle this long, send heartbeats (count 0, the next "
              "sequence) every MS, as a MoldUDP64 server does (0: only the capture's own)", "0");
  args.option("end-of-session-ms", "MS", "after the last packet, send end-of-session packets (count 0xFFFF) for "
              "this long, every heartbeat interval or 100 ms (0: only the capture's own)", "0");
  args.option("line-faults", "FILE", "write what each line lost (sequence numbers) as JSON");
  args.option("send-log", "FILE", "write every packet's intended and actual send time here");
  args.option("report", "FILE", "also write the report as JSON to FILE");
  args.parse(argc, argv);
  install_stop_signal_handlers();  // stopped (SIGINT, SIGTERM), it still closes its send log and reports
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
  // The lines: A always, B when asked for; each with its own destination and faults.
  std::vector<sockaddr_in> line_to{dst};
  if (args.has("line-b")) {
    sockaddr_in b = dst;
    if (inet_pton(AF_INET, args.get("line-b").c_str(), &b.sin_addr) != 1 ||
        (!is_loopback(b.sin_addr) && !is_multicast(b.sin_addr)))
      args.fail("--line-b must be a loopback address or a multicast group");
    if (is_multicast(b.sin_addr) != multicast) args.fail("--line-b must be multicast when --address is, and only then");
    if (args.has("line-b-port")) {
      const uint64_t bp = args.get_u64("line-b-port");
      if (bp == 0 || bp > 65535) args.fail("--line-b-port must be 1..65535");
      b.sin_port = htons(uint16_t(bp));
    }
    line_to.push_back(b);
  }
  const uint64_t skew_ns = args.get_u64("b-skew-us") * 1000;
  const uint64_t heartbeat_ns = args.get_u64("heartbeat-ms") * 1000000;
  const uint64_t end_of_session_ns = args.get_u64("end-of-session-ms") * 1000000;
  if ((heartbeat_ns || end_of_session_ns) && args.get("rate") == "topspeed")
    args.fail("--heartbeat-ms and --end-of-session-ms need a schedule with time in it (--rate capture or pps)");
  std::vector<replay::LineFaults> line_faults;
  std::vector<uint64_t> line_delay_ns;
  for (size_t line = 0; line < line_to.size(); ++line) {
    const std::string l = line == 0 ? "a" : "b";
    const double p = args.get_double("drop-" + l);
    if (!(p >= 0 && p <= 1)) args.fail("--drop-" + l + " must be 0..1");
    uint32_t burst_len = 0, burst_ppm = 0;
    if (args.has("burst-drop-" + l) && !replay::parse_burst(args.get("burst-drop-" + l), burst_len, burst_ppm))
      args.fail("--burst-drop-" + l + " takes LEN@P, e.g. 5@0.001");
    uint64_t from = UINT64_MAX, to = UINT64_MAX;
    if (args.has("silent-" + l) && !replay::parse_window(args.get("silent-" + l), from, to))
      args.fail("--silent-" + l + " takes FROM:TO in seconds, FROM < TO");
    const double dup = args.get_double("duplicate-" + l), reorder = args.get_double("reorder-" + l);
    if (!(dup >= 0 && dup <= 1) || !(reorder >= 0 && reorder <= 1))
      args.fail("--duplicate-" + l + " and --reorder-" + l + " must be 0..1");
    line_faults.emplace_back(args.get_u64("line-seed") * 2 + line, uint32_t(p * 1e6 + 0.5), burst_len, burst_ppm,
                             from, to, uint32_t(dup * 1e6 + 0.5), uint32_t(reorder * 1e6 + 0.5));
    line_delay_ns.push_back(args.get_u64("delay-" + l + "-us") * 1000);
  }
  if (line_to.size() == 1 && (args.has("b-skew-us") || args.get_double("drop-b") > 0 || args.has("burst-drop-b") ||
                              args.has("silent-b") || args.get_double("duplicate-b") > 0 ||
                              args.get_double("reorder-b") > 0 || args.get_u64("delay-b-us")))
    args.fail("the B line's options need --line-b");

  try {
    // The whole capture in memory first: pacing must not wait on the disk.
    CaptureReader reader(args.positionals()[0], feed);
    if (reader.kind() != CaptureKind::kPcap)
      throw std::runtime_error(args.positionals()[0] + ": udp-replay sends a pcap's UDP datagrams; this is a "
                               "binary ITCH file (make a pcap with itch2pcap)");
    std::vector<uint8_t> bytes;
    std::vector<Datagram> datagrams;
    // A feed joined mid-session (docs/snapshot.md): from the first packet holding --from-seq or later on.
    const uint64_t from_seq = args.get_u64("from-seq");
    uint64_t skipped_before = 0;
    const bool complete = reader.run(
        [&](uint64_t ts, const uint8_t* p, size_t n) {
          if (datagrams.empty() && from_seq > 1 && n >= kMoldHeader) {
            const uint16_t count = message_count(p, n);
            if (first_seq(p, n) + (count ? count : 1) <= from_seq) {
              ++skipped_before;
              return;
            }
          }
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

    std::optional<SendLog> log;
    if (args.has("send-log"))
      log.emplace(args.get("send-log"), logfmt::Kind::kSend,
                  LogIdentity{logfmt::StageClock::kMonotonic, logfmt::OriginClock::kNone, "", ""});

    const uint64_t total = uint64_t(datagrams.size()) * loops;
    const size_t captured_count = datagrams.size();  // the capture's; the sender's own packets come after them
    std::vector<mmsghdr> msgs(batch);
    std::vector<iovec> iovs(batch);
    uint64_t sent = 0, failed = 0, retried_eagain = 0, retried_enobufs = 0, sent_bytes = 0, messages = 0;
    uint64_t max_lag = 0, lag_sum = 0;
    int first_error = 0;
    replay::CaptureSchedule schedule(multiplier);
    replay::tighten_timer_slack();
    uint64_t t0 = 1;  // the schedule is laid out from 1 (0 means "at once"), then moved to its start below
    uint64_t loop_offset = 0;                       // capture timing restarts each loop, after the last
    uint64_t last_due = 0;
    std::vector<uint64_t> intended(batch);
    auto due_at = [&](uint64_t i) -> uint64_t {  // intended send time of the i-th packet overall
      if (rate == "pps") return t0 + uint64_t((unsigned __int128)i * 1000000000u / pps);
      if (rate == "topspeed") return 0;  // due at once: the intended time is when its batch was formed
      const size_t k = size_t(i % captured_count);
      if (k == 0 && i > 0) {
        loop_offset = last_due;
        schedule = replay::CaptureSchedule(multiplier);
      }
      last_due = loop_offset + schedule.due(datagrams[k].capture_ns);
      return t0 + last_due;
    };

    // Every copy of every packet, one a line, in the order it is due: B's copy `skew` behind A's. A copy its line's
    // faults drop stays in the schedule, logged as such, and is not sent.
    struct Copy {
      uint64_t due;
      size_t datagram;  // in datagrams: the capture's, or one the sender made (a heartbeat, an end of session)
      uint8_t line;
      bool dropped;
      bool duplicate;  // the line's second send of the packet
      bool reorder;    // to go after the line's next packet
    };
    std::vector<Copy> copies;
    copies.reserve(size_t(total) * line_to.size());
    std::vector<uint64_t> line_sent(line_to.size()), line_dropped(line_to.size());
    std::vector<uint64_t> line_duplicated(line_to.size()), line_reordered(line_to.size());
    std::vector<std::vector<uint64_t>> lost_sequences(line_to.size());  // messages each line's faults took
    // A packet the server makes itself: a heartbeat (count 0) or an end of session (0xFFFF), carrying the next
    // sequence number, as a MoldUDP64 server sends them.
    std::array<char, 10> session{};
    uint64_t next_seq = 0;
    uint64_t made_heartbeats = 0, made_ends = 0;
    auto make = [&](uint16_t count_field) -> size_t {
      uint8_t header[kMoldHeader];
      std::memcpy(header, session.data(), session.size());
      store_be64(header + 10, next_seq);
      store_be16(header + 18, count_field);
      datagrams.push_back({0, bytes.size(), uint32_t(kMoldHeader)});
      bytes.insert(bytes.end(), header, header + kMoldHeader);
      return datagrams.size() - 1;
    };
    auto add = [&](uint64_t due, size_t k) {  // every line's copy of datagram k, due at `due` on line A
      const Datagram& d = datagrams[k];
      const uint8_t* p = bytes.data() + d.offset;
      const bool eos = d.length >= kMoldHeader && load_be16(p + 18) == kEndOfSession;
      for (uint8_t line = 0; line < line_to.size(); ++line) {
        const uint64_t at = due ? due + (line ? skew_ns : 0) + line_delay_ns[line] : 0;
        const bool dropped = line_faults[line].drops(at ? at - t0 : 0, eos);
        bool duplicate = false, reorder = false;
        if (!dropped) line_faults[line].order(eos, duplicate, reorder);
        reorder = reorder && !duplicate;  // behind its own second copy it would not be out of order
        copies.push_back({at, k, line, dropped, false, reorder});
        if (duplicate) {
          copies.push_back({at, k, line, false, true, false});
          ++line_duplicated[line];
        }
        if (dropped)
          for (uint16_t m = 0; m < message_count(p, d.length); ++m)
            lost_sequences[line].push_back(first_seq(p, d.length) + m);
      }
    };
    uint64_t previous_due = 0;
    for (uint64_t i = 0; i < total; ++i) {
      const uint64_t due = due_at(i);
      const size_t k = size_t(i % captured_count);
      // Idle longer than the heartbeat interval since the last packet: heartbeats, as the server sends them.
      for (uint64_t t = previous_due + heartbeat_ns; heartbeat_ns && i > 0 && due && t < due; t += heartbeat_ns) {
        add(t, make(0));
        ++made_heartbeats;
      }
      add(due, k);
      const Datagram& d = datagrams[k];
      const uint8_t* p = bytes.data() + d.offset;
      if (d.length >= kMoldHeader) {
        std::memcpy(session.data(), p, session.size());
        if (message_count(p, d.length)) next_seq = first_seq(p, d.length) + message_count(p, d.length);
      }
      previous_due = due;
    }
    // After the last message, end-of-session packets for a while (every heartbeat interval, or 100 ms).
    const uint64_t end_every = heartbeat_ns ? heartbeat_ns : 100000000;
    for (uint64_t t = previous_due + end_every; end_of_session_ns && previous_due && t <= previous_due + end_of_session_ns;
         t += end_every) {
      add(t, make(kEndOfSession));
      ++made_ends;
    }
    // A reordered copy takes the due time of the line's next copy and gives it its own: it leaves second.
    {
      std::vector<size_t> pending(line_to.size(), SIZE_MAX);
      for (size_t c = 0; c < copies.size(); ++c) {
        size_t& p = pending[copies[c].line];
        if (p != SIZE_MAX && copies[c].due && copies[p].due) {
          std::swap(copies[p].due, copies[c].due);
          std::swap(copies[p], copies[c]);  // keeps the stable sort's order for equal due times
          ++line_reordered[copies[c].line];
          p = SIZE_MAX;
          continue;
        }
        if (copies[c].reorder) p = c;
      }
    }
    std::stable_sort(copies.begin(), copies.end(), [](const Copy& a, const Copy& b) { return a.due < b.due; });
    // Start 20 ms from now, once the schedule is made (a long capture takes a while to lay out).
    const uint64_t start = monotonic_ns() + 20000000;
    for (Copy& c : copies)
      if (c.due) c.due += start - t0;
    t0 = start;

    size_t next = 0;  // the first copy of the batch being sent
    std::vector<size_t> slot(batch);  // the copy in each place of the batch
    // One send-log record a copy.
    auto record = [&](size_t c, uint64_t t_intended, uint64_t t_sent, uint8_t flags) {
      if (!log) return;
      const Datagram& d = datagrams[copies[c].datagram];
      const uint8_t* p = bytes.data() + d.offset;
      logfmt::SendRecord rec{};
      rec.seq = first_seq(p, d.length);
      rec.count = message_count(p, d.length);
      rec.bytes = d.length;
      rec.t_intended = t_intended;
      rec.t_sent = t_sent;
      rec.flags = uint8_t(flags | (copies[c].line ? logfmt::kSendLineB : 0) |
                          (copies[c].duplicate ? logfmt::kSendDuplicate : 0));
      log->append(rec);
    };

    uint64_t next_due = copies.empty() ? 0 : copies[0].due;
    while (next < copies.size()) {
      replay::wait_until(next_due);
      if (stop_requested().load()) break;  // what was sent is logged and reported, the rest said as not sent
      const uint64_t formed = monotonic_ns();
      // Everything due by now, up to a batch.
      size_t n = 0, taken = 0;
      while (next + taken < copies.size() && n < batch) {
        const Copy& c = copies[next + taken];
        if (taken > 0 && c.due > formed) break;
        if (c.dropped) {  // the line's fault: never sent, said in the log
          record(next + taken, c.due ? c.due : formed, 0, logfmt::kSendDropped);
          ++line_dropped[c.line];
          ++taken;
          continue;
        }
        const Datagram& d = datagrams[c.datagram];
        iovs[n] = {bytes.data() + d.offset, d.length};
        msgs[n] = {};
        msgs[n].msg_hdr.msg_name = &line_to[c.line];
        msgs[n].msg_hdr.msg_namelen = sizeof(sockaddr_in);
        msgs[n].msg_hdr.msg_iov = &iovs[n];
        msgs[n].msg_hdr.msg_iovlen = 1;
        intended[n] = c.due ? c.due : formed;
        slot[n] = next + taken;
        ++n;
        ++taken;
      }
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
          record(slot[done], intended[done], t_sent, logfmt::kSendFailed);
          ++done;
          continue;
        }
        for (size_t k = done; k < done + size_t(r); ++k) {
          const Datagram& d = datagrams[copies[slot[k]].datagram];
          const uint8_t* p = bytes.data() + d.offset;
          const uint64_t lag = t_sent > intended[k] ? t_sent - intended[k] : 0;
          max_lag = std::max(max_lag, lag);
          lag_sum += lag;
          sent_bytes += d.length;
          messages += message_count(p, d.length);
          ++line_sent[copies[slot[k]].line];
          record(slot[k], intended[k], t_sent, 0);
        }
        sent += uint64_t(r);
        done += size_t(r);
      }
      next += taken;
      if (next < copies.size()) next_due = copies[next].due;
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
    j.field("skipped_before_from_seq", skipped_before);
    j.field("capture_datagrams", uint64_t(captured_count)).field("packets", total).field("sent", sent);
    // (packets + made) x lines + duplicates: sent + failed + dropped by a line
    j.field("copies", uint64_t(copies.size()));
    j.field("heartbeats_made", made_heartbeats).field("ends_of_session_made", made_ends);
    j.field("failed", failed).field("first_error", first_error ? std::string(std::strerror(first_error)) : std::string());
    j.field("retried_eagain", retried_eagain).field("retried_enobufs", retried_enobufs);
    j.field("bytes", sent_bytes).field("messages", messages);
    j.field("elapsed_s", elapsed_s).field("rate_pps", elapsed_s > 0 ? double(sent) / elapsed_s : 0.0);
    j.field("max_lag_ns", max_lag).field("mean_lag_ns", sent ? double(lag_sum) / double(sent) : 0.0);
    j.field("timestamps_backwards", schedule.backwards_steps());
    j.field("send_log_dropped", log_dropped);
    // Asked to stop before the end (0: it was not): the copies it then never sent.
    j.field("stopped_by_signal", stop_signal().load()).field("copies_not_sent", uint64_t(copies.size() - next));
    j.field("lines", uint64_t(line_to.size())).field("b_skew_us", skew_ns / 1000);
    j.field("line_a_sent", line_sent[0]).field("line_a_dropped", line_dropped[0]);
    j.field("line_a_duplicated", line_duplicated[0]).field("line_a_reordered", line_reordered[0]);
    j.field("line_a_delay_us", line_delay_ns[0] / 1000);
    if (line_to.size() > 1) {
      j.field("line_b_sent", line_sent[1]).field("line_b_dropped", line_dropped[1]);
      j.field("line_b_duplicated", line_duplicated[1]).field("line_b_reordered", line_reordered[1]);
      j.field("line_b_delay_us", line_delay_ns[1] / 1000);
    }
    j.end_object();
    if (args.has("line-faults")) {  // what each line lost, and what both lost (only a re-request brings those back)
      JsonWriter f;
      f.begin_object();
      for (size_t line = 0; line < line_to.size(); ++line) {
        f.key(line ? "b" : "a").begin_array();
        for (uint64_t seq : lost_sequences[line]) f.value(seq);
        f.end_array();
      }
      f.end_object();
      write_file_atomically(args.get("line-faults"), f.str() + "\n");
    }
    replay::emit_report(j.str(), args.get("report"));
    if (next < copies.size()) return 128 + stop_signal().load();
    return failed || log_dropped ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "udp-replay: %s\n", e.what());
    return 2;
  }
}
