// serial-replay: a capture -> ITCH lines (SERIAL_LINE.md) on a serial port or
// pty, paced like a UART at a baud rate (8N1: 10 bits a byte) and/or at the
// capture's timing times a multiplier, against absolute deadlines.
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "log/mmap_log.hpp"
#include "pipeline/mold_framer.hpp"
#include "replay/lib/capture_schedule.hpp"
#include "replay/lib/deadline.hpp"
#include "replay/lib/line_return.hpp"
#include "replay/lib/report_output.hpp"
#include "source/feed_option.hpp"
#include "protocol/itch.hpp"
#include "protocol/serial_line.hpp"
#include "source/capture_file.hpp"
#include "source/stop_flag.hpp"
#include "util/cli.hpp"
#include "util/json_writer.hpp"
#include "util/stage_clock.hpp"

using namespace itchbench;

namespace {

struct Message {
  uint64_t seq;
  uint64_t capture_ns;
  std::vector<uint8_t> bytes;
};

}  // namespace

int main(int argc, char** argv) {
  cli::Args args("serial-replay", "serial-replay CAPTURE --device PATH [options]",
                 "Replay a capture (pcap of MoldUDP64, or binary ITCH) as ITCH lines on a serial port\n"
                 "or pty, paced like a UART. A line is handed over when its last byte would have\n"
                 "left the wire; it carries the time its first byte was due (CLOCK_MONOTONIC).\n"
                 "Deadlines are absolute: no drift accumulates. Prints what it sent. Stopped (SIGINT,\n"
                 "SIGTERM), it sends no more, closes its send log, reports and exits 128 + the signal.");
  args.positional("CAPTURE", "capture to replay");
  args.option("device", "PATH", "serial port or pty to write to");
  args.option("baud", "N", "line rate in baud (8N1: 10 bits per byte)", "115200");
  args.option("timing", "baud|capture", "baud: back to back at the line rate; capture: at the capture's "
              "timing x --multiplier, never faster than the line rate", "baud");
  args.option("multiplier", "X", "speed-up of the capture's timing (with --timing capture)", "1");
  args.option("feed", "ADDR:PORT", kFeedOptionHelp);
  args.option("end-of-session", "yes|no", "send the end-of-session line at the end", "yes");
  args.option("garbage-every", "N", "insert a burst of line noise before every Nth line (0: never)", "0");
  args.option("corrupt-every", "N", "damage one hex digit of every Nth line (0: never)", "0");
  args.option("report", "FILE", "also write the report as JSON to FILE");
  args.option("send-log", "FILE", "write every line's intended time (its first byte due) and the time its write "
              "returned (gateway/log/FORMAT.md, kind 3)");
  args.parse(argc, argv);
  install_stop_signal_handlers();  // stopped (SIGINT, SIGTERM), it still closes its send log and reports
  if (!args.has("device")) args.fail("--device is required");
  const uint64_t baud = args.get_u64("baud");
  if (baud < 300 || baud > 100000000) args.fail("--baud must be 300..100000000");
  const std::string timing = args.get("timing");
  if (timing != "baud" && timing != "capture") args.fail("--timing takes baud or capture");
  const double multiplier = args.get_double("multiplier");
  if (!(multiplier > 0)) args.fail("--multiplier must be positive");
  const std::string eos = args.get("end-of-session");
  if (eos != "yes" && eos != "no") args.fail("--end-of-session takes yes or no");
  const uint64_t garbage_every = args.get_u64("garbage-every");
  const uint64_t corrupt_every = args.get_u64("corrupt-every");
  const std::optional<Feed> feed = feed_option(args);

  try {
    // Read the whole capture first: pacing must not wait on the disk.
    CaptureReader reader(args.positionals()[0], feed);
    std::vector<Message> messages;
    MoldFramer framer;
    const bool complete = reader.run(
        [&](uint64_t ts, const uint8_t* p, size_t n) {
          framer.on_datagram(p, n, [&](uint64_t seq, const uint8_t* m, size_t len) {
            messages.push_back({seq, ts, {m, m + len}});
          });
        },
        [&](uint64_t pos, const uint8_t* m, size_t len) {
          messages.push_back({pos, itch::header_timestamp_or(m, len, 0), {m, m + len}});
        });
    if (!complete) {
      std::fprintf(stderr, "serial-replay: %s\n", reader.error().c_str());
      return 1;
    }
    std::optional<SendLog> log;
    if (args.has("send-log"))
      log.emplace(args.get("send-log"), logfmt::Kind::kSend,
                  LogIdentity{logfmt::StageClock::kMonotonic, logfmt::OriginClock::kNone, "", ""});
    // A terminal (a pty, a serial port) is opened to read too: what the gateway writes back is taken (LineReturn).
    struct stat device {};
    const bool terminal = ::stat(args.get("device").c_str(), &device) == 0 && S_ISCHR(device.st_mode);
    const int fd = ::open(args.get("device").c_str(), (terminal ? O_RDWR : O_WRONLY) | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error(args.get("device") + ": " + std::strerror(errno));
    replay::LineReturn written_back(fd);

    const double ns_per_byte = 10.0 * 1e9 / double(baud);
    uint8_t line[serial::kMaxLine + 64];
    uint64_t lines = 0, bytes = 0, late = 0, max_late_ns = 0, oversize = 0;
    replay::tighten_timer_slack();
    const uint64_t t0 = monotonic_ns() + 20000000;  // start 20 ms from now
    uint64_t line_free_at = t0;                    // when the wire is idle again
    replay::CaptureSchedule schedule(multiplier);
    // False when a stop request cut its line short (not logged as sent).
    auto send = [&](const uint8_t* msg, size_t len, uint64_t seq, uint64_t not_before) -> bool {
      const uint64_t start = std::max(line_free_at, not_before);
      size_t n = 0;
      if (garbage_every && (lines + 1) % garbage_every == 0) {
        static const char kNoise[] = "~!noise#%";
        std::memcpy(line, kNoise, sizeof kNoise - 1);
        n = sizeof kNoise - 1;
      }
      if (msg && len > serial::kMaxPayload) {
        ++oversize;  // cannot be framed: counted, not sent
        return true;
      }
      const size_t body = serial::encode_line(line + n, seq, start, msg, len);
      const bool corrupted = corrupt_every && msg && (lines + 1) % corrupt_every == 0;
      if (corrupted) line[n + body - 6] ^= 0x01;  // a payload digit
      n += body;
      const uint64_t end = start + uint64_t(double(n) * ns_per_byte);
      const uint64_t now = monotonic_ns();
      if (now > end) {
        ++late;
        max_late_ns = std::max(max_late_ns, now - end);
      } else {
        replay::wait_until(end);
      }
      const uint64_t t_write = monotonic_ns();  // handed to the pty (its bytes have had their line time)
      size_t off = 0;
      while (off < n) {
        const ssize_t w = ::write(fd, line + off, n - off);
        if (w < 0) {
          if (errno == EINTR && stop_requested().load()) return false;
          if (errno == EINTR) continue;
          throw std::runtime_error(args.get("device") + ": write: " + std::strerror(errno));
        }
        off += size_t(w);
        // A signal that comes while a write waits for room ends it short, not with EINTR: asked to stop, the rest
        // of the line is not waited for (the pty's reader may never read again).
        if (off < n && stop_requested().load()) return false;
      }
      line_free_at = end;
      bytes += n;
      if (msg) {
        ++lines;
        if (log) {
          logfmt::SendRecord rec{};
          rec.seq = seq;
          rec.count = 1;
          rec.bytes = uint32_t(n);
          rec.t_intended = start;
          rec.t_sent = t_write;
          rec.flags = corrupted ? uint8_t(logfmt::kSendCorrupted) : 0;
          log->append(rec);
        }
      }
      return true;
    };
    size_t taken = 0;  // messages handed to send: all of them unless it was asked to stop
    for (const Message& m : messages) {
      if (stop_requested().load()) break;  // what was sent is logged and reported, the rest said as not sent
      const uint64_t not_before = timing == "capture" ? t0 + schedule.due(m.capture_ns) : 0;
      if (!send(m.bytes.data(), m.bytes.size(), m.seq, not_before)) break;
      ++taken;
    }
    const bool stopped = stop_requested().load();
    if (eos == "yes" && !stopped) send(nullptr, 0, messages.empty() ? 1 : messages.back().seq + 1, 0);
    const uint64_t finished = monotonic_ns();
    written_back.stop();
    ::close(fd);
    if (log) log->close();

    const double wire_s = double(line_free_at - t0) / 1e9;
    const double elapsed_s = double(finished - t0) / 1e9;
    const double ideal_s = double(bytes) * ns_per_byte / 1e9;
    JsonWriter j;
    j.begin_object();
    j.field("device", args.get("device")).field("baud", baud).field("timing", timing).field("multiplier", multiplier);
    j.field("messages", uint64_t(messages.size())).field("lines", lines).field("bytes", bytes);
    j.field("not_sent_oversize", oversize).field("timestamps_backwards", schedule.backwards_steps());
    j.field("elapsed_s", elapsed_s).field("wire_time_s", wire_s);
    j.field("line_utilisation", elapsed_s > 0 ? ideal_s / elapsed_s : 0.0);
    j.field("late_lines", late).field("max_late_ns", max_late_ns);
    j.field("garbage_bursts", garbage_every ? lines / garbage_every : 0);
    j.field("corrupted_lines", corrupt_every ? lines / corrupt_every : 0);
    j.field("bytes_written_back", written_back.bytes());  // by the gateway on its line: taken and dropped
    // Asked to stop before the end (0: it was not): the messages it then never sent.
    j.field("stopped_by_signal", stop_signal().load()).field("messages_not_sent", uint64_t(messages.size() - taken));
    j.end_object();
    replay::emit_report(j.str(), args.get("report"));
    return stopped ? 128 + stop_signal().load() : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "serial-replay: %s\n", e.what());
    return 2;
  }
}
