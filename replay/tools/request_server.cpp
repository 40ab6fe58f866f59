// mold-request-server: the exchange's MoldUDP64 re-request server for a run.
// It holds the session's messages as the capture has them (before any fault)
// and answers each request (session, first sequence, count: 20 bytes) with
// downstream packets sent to the request's source address and port, as the
// scenario sets it: delayed, capped, rate limited, within a retention window,
// some answers dropped (seeded), and for a while after the end of session
// (announced by SIGUSR1). Every request and answer goes to --log
// (gateway/log/FORMAT.md, kind 5); a bad request is counted by reason, never
// fatal. It runs until SIGTERM or SIGINT, then prints its counts as JSON.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "log/mmap_log.hpp"
#include "net/receive_buffer.hpp"
#include "protocol/moldudp64.hpp"
#include "replay/lib/listen_address.hpp"
#include "replay/lib/report_output.hpp"
#include "replay/lib/request_server.hpp"
#include "source/capture_file.hpp"
#include "source/feed_option.hpp"
#include "util/cli.hpp"
#include "util/json_writer.hpp"
#include "util/stage_clock.hpp"

using namespace itchbench;

namespace {

volatile std::sig_atomic_t stop_requested = 0;
volatile std::sig_atomic_t end_announced = 0;

using RequestLog = RecordLog<logfmt::RequestRecord>;

struct Pending {
  uint64_t due_ns;
  sockaddr_in to;
  replay::AnswerPacket answer;
  std::vector<uint8_t> bytes;
};

void log_record(RequestLog* log, uint64_t seq, uint64_t t, const sockaddr_in& from, uint16_t count, uint8_t flags,
                logfmt::RequestOutcome outcome) {
  if (!log) return;
  logfmt::RequestRecord r{};
  r.seq = seq;
  r.t = t;
  r.client_addr = from.sin_addr.s_addr;
  r.client_port = ntohs(from.sin_port);
  r.count = count;
  r.flags = flags;
  r.outcome = uint8_t(outcome);
  log->append(r);
}

}  // namespace

int main(int argc, char** argv) {
  cli::Args args("mold-request-server", "mold-request-server CAPTURE --port PORT [options]",
                 "Answer MoldUDP64 retransmission requests (20 bytes: session, first sequence, count) for the\n"
                 "session in CAPTURE (pcap/pcapng of MoldUDP64, or a binary ITCH file numbered from 1) with\n"
                 "downstream packets sent to each request's source. Binds a loopback address only. Prints\n"
                 "'LISTENING udp=PORT' when ready; SIGUSR1 announces the feed's end of session; SIGTERM or\n"
                 "SIGINT stops it and prints its counts as JSON. Exit status: 0 stopped, 1 the capture\n"
                 "could not be held, 2 usage.");
  args.positional("CAPTURE", "the session's capture, before any fault");
  args.option("port", "PORT", "UDP port to listen on (0: any free)", "0");
  args.option("address", "IPV4", "address to listen on (loopback only)", "127.0.0.1");
  args.option("feed", "ADDR:PORT", kFeedOptionHelp);
  args.option("session", "NAME", "a binary ITCH file's MoldUDP64 session name", "ITCHBENCH0");
  args.option("delay-ms", "MS", "answer this long after each request", "0");
  args.option("max-messages", "N", "messages answered a request at most (0: as many as asked)", "0");
  args.option("max-payload", "BYTES", "bytes of an answer packet, its 20-byte header included", "1400");
  args.option("rate-limit", "N", "requests a second from one requester (0: no limit)", "0");
  args.option("retention", "N", "messages held, the session's last ones (0: all)", "0");
  args.option("drop-answers", "P", "probability an answer packet is not sent (a fault)", "0");
  args.option("seed", "N", "seed of the drop draw", "1");
  args.option("answer-after-end-ms", "MS", "after SIGUSR1 (the end of session) answer for this long (-1: always)",
              "-1");
  args.option("rcvbuf", "BYTES", "receive buffer for bursts of requests", "4194304");
  args.option("log", "FILE", "every request and answer (gateway/log/FORMAT.md, kind 5)");
  args.option("report", "FILE", "also write the closing report as JSON to FILE");
  args.parse(argc, argv);

  replay::RequestPolicy policy;
  policy.delay_ns = args.get_u64("delay-ms") * 1000000;
  policy.max_messages = uint32_t(args.get_u64("max-messages"));
  policy.max_payload = args.get_u64("max-payload");
  if (policy.max_payload < 22 || policy.max_payload > 65507) args.fail("--max-payload must be 22..65507");
  policy.rate_limit = uint32_t(args.get_u64("rate-limit"));
  policy.retention = args.get_u64("retention");
  const double drop = args.get_double("drop-answers");
  if (!(drop >= 0 && drop <= 1)) args.fail("--drop-answers must be 0..1");
  policy.drop_ppm = uint32_t(drop * 1000000 + 0.5);
  policy.seed = args.get_u64("seed");
  const std::string after_end = args.get("answer-after-end-ms");
  const uint64_t answer_after_end_ns = after_end == "-1" ? UINT64_MAX : std::stoull(after_end) * 1000000;
  sockaddr_in self = replay::listen_address(args);

  try {
    const replay::MessageStore store = replay::load_session(args.positionals()[0], feed_option(args), args.get("session"));
    replay::RequestServer server(store, policy);
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr*>(&self), sizeof self) != 0)
      throw std::runtime_error(std::string("bind: ") + std::strerror(errno));
    // Room for a burst of requests (past rmem_max where it may: root), and the kernel's count of those it still
    // had to drop, carried on every datagram (SO_RXQ_OVFL): a request lost at the socket is counted, not silent.
    const int on = 1;
    itchbench::net::request_receive_buffer(fd, int(args.get_u64("rcvbuf")));
    ::setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &on, sizeof on);
    uint32_t socket_dropped = 0;
    socklen_t self_len = sizeof self;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&self), &self_len);
    std::optional<RequestLog> log;
    if (args.has("log"))
      log.emplace(args.get("log"), logfmt::Kind::kRequest,
                  LogIdentity{logfmt::StageClock::kMonotonic, logfmt::OriginClock::kNone, "", ""});

    std::signal(SIGTERM, [](int) { stop_requested = 1; });
    std::signal(SIGINT, [](int) { stop_requested = 1; });
    std::signal(SIGUSR1, [](int) { end_announced = 1; });
    std::printf("LISTENING udp=%u session=%.10s first=%llu last=%llu\n", ntohs(self.sin_port),
                store.session().data(), (unsigned long long)store.first(), (unsigned long long)store.last());
    std::fflush(stdout);

    std::deque<Pending> pending;  // answers in the order they are due (one delay for all: FIFO)
    std::vector<replay::AnswerPacket> answers;
    std::vector<uint8_t> packets;
    uint8_t buffer[65536];
    uint64_t session_ended_ns = 0;
    while (!stop_requested) {
      if (end_announced && !session_ended_ns) session_ended_ns = monotonic_ns();
      const uint64_t now = monotonic_ns();
      while (!pending.empty() && pending.front().due_ns <= now) {
        Pending& p = pending.front();
        const bool dropped = server.drop_answer();
        if (!dropped) {
          ::sendto(fd, p.bytes.data(), p.bytes.size(), 0, reinterpret_cast<const sockaddr*>(&p.to), sizeof p.to);
          server.sent(p.answer);
        }
        log_record(log ? &*log : nullptr, p.answer.sequence, monotonic_ns(), p.to, p.answer.count,
                   uint8_t(logfmt::kAnswer | (dropped ? logfmt::kAnswerDropped : 0)), logfmt::RequestOutcome::kServed);
        pending.pop_front();
      }
      int timeout_ms = 50;
      if (!pending.empty()) timeout_ms = int(std::min<uint64_t>(50, (pending.front().due_ns - now) / 1000000));
      pollfd pfd{fd, POLLIN, 0};
      if (::poll(&pfd, 1, timeout_ms) <= 0) continue;  // a timeout, or a signal: look at the flags again
      sockaddr_in from{};
      iovec iov{buffer, sizeof buffer};
      alignas(cmsghdr) uint8_t control[64];
      msghdr msg{};
      msg.msg_name = &from;
      msg.msg_namelen = sizeof from;
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      const ssize_t n = ::recvmsg(fd, &msg, MSG_DONTWAIT);
      if (n < 0) continue;
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL)
          std::memcpy(&socket_dropped, CMSG_DATA(c), sizeof socket_dropped);
      const uint64_t t = monotonic_ns();
      const uint64_t client = uint64_t(from.sin_addr.s_addr) << 16 | ntohs(from.sin_port);
      const logfmt::RequestOutcome outcome =
          server.handle(buffer, size_t(n), client, t, answers, packets, session_ended_ns, answer_after_end_ns);
      const mold::Request& r = server.last_request();
      log_record(log ? &*log : nullptr, r.sequence, t, from, r.count, 0, outcome);
      for (const replay::AnswerPacket& a : answers)
        pending.push_back({t + policy.delay_ns, from, a,
                           std::vector<uint8_t>(packets.begin() + long(a.offset),
                                                packets.begin() + long(a.offset + a.length))});
    }
    uint64_t unread = 0;  // requests that came after the stop: counted, not judged
    while (::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT) >= 0) ++unread;
    ::close(fd);
    if (log) log->close();

    const replay::RequestCounts& c = server.counts();
    JsonWriter j;
    j.begin_object();
    j.field("port", uint64_t(ntohs(self.sin_port))).field("session", std::string(store.session().data(), 10));
    j.field("first", store.first()).field("last", store.last());
    j.field("requests", c.requests);
    j.key("by_outcome").begin_object();
    for (size_t i = 0; i < replay::kOutcomes; ++i)
      j.field(replay::to_string(logfmt::RequestOutcome(i)), c.by_outcome[i]);
    j.end_object();
    j.field("answer_packets", c.answer_packets).field("answers_dropped", c.answers_dropped);
    j.field("answers_pending_at_stop", uint64_t(pending.size())).field("messages_answered", c.messages_answered);
    j.field("session_ended", session_ended_ns != 0);
    j.field("socket_dropped", uint64_t(socket_dropped)).field("requests_unread_at_stop", unread);  // requests the kernel dropped before the last one read
    if (log) j.field("log_records", log->records()).field("log_dropped", log->dropped());
    j.end_object();
    replay::emit_report(j.str() + "\n", args.has("report") ? args.get("report") : "");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mold-request-server: %s\n", e.what());
    return 1;
  }
}
