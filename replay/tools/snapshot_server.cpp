// snapshot-server: the exchange's snapshot service for a run (docs/snapshot.md). Serves a GLIMPSE-5.0-shaped
// snapshot of a session after one of its messages over SoupBinTCP, to any number of clients on a loopback
// TCP port; each client's login, what it was sent and how its connection ended go to the closing report.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "replay/lib/listen_address.hpp"
#include "replay/lib/report_output.hpp"
#include "replay/lib/snapshot.hpp"
#include "replay/lib/snapshot_server.hpp"
#include "source/feed_option.hpp"
#include "util/cli.hpp"
#include "util/json_writer.hpp"
#include "util/stage_clock.hpp"

using namespace itchbench;

namespace {

volatile std::sig_atomic_t stop_requested = 0;

struct Connection {
  int fd;
  uint16_t peer_port;
  uint64_t opened_ns;
  std::unique_ptr<replay::SnapshotClient> client;
  std::vector<uint8_t> out;  // written as the socket takes it
  size_t out_at = 0;
};

constexpr size_t kMaxPending = 256 * 1024;  // bytes queued for a client before no more messages are made for it

// Sends what the socket takes now; false when the peer is gone.
bool flush(Connection& c) {
  while (c.out_at < c.out.size()) {
    const ssize_t n = ::send(c.fd, c.out.data() + c.out_at, c.out.size() - c.out_at, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    c.out_at += size_t(n);
  }
  c.out.clear();
  c.out_at = 0;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  cli::Args args("snapshot-server", "snapshot-server CAPTURE (--through SEQ | --through-share F) [options]",
                 "Serve a GLIMPSE-5.0-shaped snapshot of the session in CAPTURE (pcap/pcapng of MoldUDP64, or a\n"
                 "binary ITCH file numbered from 1) after one of its messages, over SoupBinTCP on a loopback TCP\n"
                 "port: the last system event, the stock directory, every live order as an Add Order, then the\n"
                 "End of Snapshot message (G) with the ITCH sequence number to continue from (docs/snapshot.md).\n"
                 "Prints 'LISTENING tcp=PORT ...' when ready; SIGTERM or SIGINT stops it and prints its report\n"
                 "as JSON. Exit status: 0 stopped, 1 the capture could not be held, 2 usage.");
  args.positional("CAPTURE", "the session's capture, before any fault");
  args.option("through", "SEQ", "the snapshot reflects the session's messages up to this one (the next is SEQ + 1)");
  args.option("through-share", "F", "or: up to this share of the session's messages (0..1)");
  args.option("through-time", "HH:MM:SS", "or: up to the last message stamped before this time of day (ITCH "
              "timestamps, fractions of a second allowed)");
  args.option("port", "PORT", "TCP port to listen on (0: any free)", "0");
  args.option("address", "IPV4", "address to listen on (loopback only)", "127.0.0.1");
  args.option("feed", "ADDR:PORT", kFeedOptionHelp);
  args.option("mold-session", "NAME", "a binary ITCH file's MoldUDP64 session name", "ITCHBENCH0");
  args.option("session", "NAME", "the SoupBinTCP session clients log in to", "GLIMPSE");
  args.option("username", "NAME", "the login's username (6 characters at most)", "itch");
  args.option("password", "TEXT", "the login's password (10 characters at most)", "bench");
  args.option("heartbeat-ms", "MS", "server heartbeat after this long without sending", "1000");
  args.option("client-timeout-ms", "MS", "a client silent this long is dropped", "15000");
  args.option("messages-per-s", "N", "a slow snapshot: sequenced messages a second to each client (0: no limit)", "0");
  args.option("cut-after", "N", "a fault: the first client logged in loses its connection after N messages", "0");
  args.option("report", "FILE", "also write the closing report as JSON to FILE");
  args.parse(argc, argv);

  if (int(args.has("through")) + int(args.has("through-share")) + int(args.has("through-time")) != 1)
    args.fail("give one of --through, --through-share and --through-time");
  uint64_t through_time_ns = 0;
  if (args.has("through-time")) {
    unsigned h = 0, m = 0;
    double sec = -1;
    if (std::sscanf(args.get("through-time").c_str(), "%u:%u:%lf", &h, &m, &sec) != 3 || h > 23 || m > 59 ||
        !(sec >= 0 && sec < 60))
      args.fail("--through-time takes HH:MM:SS (a time of day)");
    through_time_ns = (uint64_t(h) * 3600 + m * 60) * 1'000'000'000ull + uint64_t(sec * 1e9);
  }
  replay::SnapshotPolicy policy;
  policy.username = args.get("username");
  policy.password = args.get("password");
  policy.session = args.get("session");
  if (policy.username.size() > soup::kUsernameLength || policy.password.size() > soup::kPasswordLength ||
      policy.session.size() > soup::kSessionLength || policy.session.empty())
    args.fail("--username, --password and --session must fit SoupBinTCP's 6, 10 and 10 characters (a session: 1+)");
  policy.heartbeat_ns = args.get_u64("heartbeat-ms") * 1000000;
  policy.client_timeout_ns = args.get_u64("client-timeout-ms") * 1000000;
  if (!policy.heartbeat_ns || !policy.client_timeout_ns) args.fail("--heartbeat-ms and --client-timeout-ms must be 1+");
  const uint64_t rate = args.get_u64("messages-per-s");
  const uint64_t cut_after = args.get_u64("cut-after");
  sockaddr_in self = replay::listen_address(args);

  try {
    const replay::MessageStore session =
        replay::load_session(args.positionals()[0], feed_option(args), args.get("mold-session"));
    uint64_t through = 0;
    if (args.has("through")) {
      through = args.get_u64("through");
    } else if (args.has("through-time")) {
      through = replay::last_before(session, through_time_ns);
    } else {
      const double share = args.get_double("through-share");
      if (!(share >= 0 && share <= 1)) args.fail("--through-share must be 0..1");
      through = session.first() - 1 + uint64_t(double(session.last() - session.first() + 1) * share);
    }
    const uint64_t t_build = monotonic_ns();
    const replay::Snapshot snapshot = replay::make_snapshot(session, through);
    const double build_s = double(monotonic_ns() - t_build) / 1e9;
    const replay::MessageStore stream = replay::snapshot_stream(snapshot.messages, policy.session);

    const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    const int on = 1;
    ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (listener < 0 || ::bind(listener, reinterpret_cast<const sockaddr*>(&self), sizeof self) != 0 ||
        ::listen(listener, 16) != 0)
      throw std::runtime_error(std::string("listen: ") + std::strerror(errno));
    socklen_t self_len = sizeof self;
    ::getsockname(listener, reinterpret_cast<sockaddr*>(&self), &self_len);
    std::signal(SIGTERM, [](int) { stop_requested = 1; });
    std::signal(SIGINT, [](int) { stop_requested = 1; });
    std::signal(SIGPIPE, SIG_IGN);
    std::printf("LISTENING tcp=%u session=%s through=%llu next=%llu messages=%zu orders=%zu\n", ntohs(self.sin_port),
                policy.session.c_str(), (unsigned long long)snapshot.through,
                (unsigned long long)snapshot.next_sequence, snapshot.messages.size(), snapshot.orders);
    std::fflush(stdout);

    std::vector<Connection> open;
    struct Closed {
      uint16_t peer_port;
      replay::ClientEnd end;
      bool logged_in;
      char rejected;
      std::string malformed;
      uint64_t requested, sent, heartbeats, unsequenced;
      double connected_ms, login_to_end_ms, login_to_last_ms;
    };
    std::vector<Closed> closed;  // each connection, as it closes
    uint64_t accepted = 0, logins = 0, rejected_a = 0, rejected_s = 0, completed = 0, cuts = 0;
    uint64_t ends[replay::kClientEnds] = {}, malformed[replay::kMalformedReasons] = {};
    bool cut_done = cut_after == 0;
    auto close_connection = [&](Connection& c, uint64_t now) {
      replay::SnapshotClient& k = *c.client;
      ++ends[size_t(k.end())];
      if (k.malformed()) ++malformed[size_t(k.malformed_reason())];
      if (k.logged_in()) ++logins;
      if (k.rejected_with() == soup::kNotAuthorized) ++rejected_a;
      if (k.rejected_with() == soup::kSessionNotAvailable) ++rejected_s;
      if (k.end() == replay::ClientEnd::kCompleted) ++completed;
      closed.push_back({c.peer_port, k.end(), k.logged_in(), k.rejected_with(),
                        k.malformed() ? replay::to_string(k.malformed_reason()) : "", k.requested_sequence(),
                        k.messages_sent(), k.client_heartbeats(), k.unsequenced_ignored(),
                        double(now - c.opened_ns) / 1e6,
                        k.completed_ns() ? double(k.completed_ns() - k.login_ns()) / 1e6 : -1.0,
                        k.last_message_ns() ? double(k.last_message_ns() - k.login_ns()) / 1e6 : -1.0});
      ::close(c.fd);
    };

    std::vector<pollfd> fds;
    uint8_t buffer[65536];
    uint64_t last_tick = monotonic_ns();
    double tokens = 0;  // the rate limit's budget, per client alike
    while (!stop_requested) {
      fds.assign(1, pollfd{listener, POLLIN, 0});
      for (const Connection& c : open)
        fds.push_back(pollfd{c.fd, short(POLLIN | (c.out.size() > c.out_at ? POLLOUT : 0)), 0});
      ::poll(fds.data(), fds.size(), 10);
      const uint64_t now = monotonic_ns();
      if (fds[0].revents & POLLIN) {
        sockaddr_in peer{};
        socklen_t len = sizeof peer;
        const int fd = ::accept4(listener, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
          open.push_back({fd, ntohs(peer.sin_port), now,
                          std::make_unique<replay::SnapshotClient>(stream, policy, now), {}, 0});
          ++accepted;
        }
      }
      // The rate limit: messages a second, earned as time passes (a burst of at most a tenth of a second's).
      size_t budget = SIZE_MAX;
      if (rate) {
        tokens = std::min(double(rate) / 10 + 1, tokens + double(now - last_tick) * double(rate) / 1e9);
        budget = size_t(tokens);
      }
      last_tick = now;
      size_t spent = 0;
      for (size_t i = 0; i < open.size(); ++i) {
        Connection& c = open[i];
        replay::SnapshotClient& k = *c.client;
        if (i + 1 < fds.size() && (fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) {
          const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, MSG_DONTWAIT);
          if (n > 0)
            k.on_bytes(buffer, size_t(n), now, c.out);
          else if (n == 0 || (errno != EAGAIN && errno != EINTR))
            k.closed(replay::ClientEnd::kDisconnected);
        }
        if (c.out.size() - c.out_at < kMaxPending) {
          size_t allowed = budget;
          if (!cut_done && k.logged_in()) allowed = std::min<uint64_t>(allowed, cut_after - std::min(cut_after, k.messages_sent()));
          spent = std::max(spent, k.on_time(now, allowed, c.out));
          if (!cut_done && k.logged_in() && k.messages_sent() >= cut_after) {  // the fault: cut mid-snapshot
            flush(c);
            k.closed(replay::ClientEnd::kCut);
            cut_done = true;
            ++cuts;
          }
        }
        if (!flush(c)) k.closed(replay::ClientEnd::kDisconnected);
      }
      if (rate) tokens -= double(spent);
      for (size_t i = 0; i < open.size();) {
        Connection& c = open[i];
        const bool done = c.client->end() != replay::ClientEnd::kOpen;
        if (done && (c.out_at >= c.out.size() || c.client->end() == replay::ClientEnd::kDisconnected ||
                     c.client->end() == replay::ClientEnd::kCut)) {
          close_connection(c, now);
          open.erase(open.begin() + ptrdiff_t(i));
        } else {
          ++i;
        }
      }
    }
    const uint64_t now = monotonic_ns();
    for (Connection& c : open) {
      c.client->closed(replay::ClientEnd::kDisconnected);
      close_connection(c, now);
    }
    ::close(listener);

    JsonWriter j;
    j.begin_object();
    j.field("port", uint64_t(ntohs(self.sin_port))).field("session", policy.session);
    j.field("mold_session", std::string(session.session().data(), 10));
    j.field("session_first", session.first()).field("session_last", session.last());
    j.key("snapshot").begin_object();
    j.field("through", snapshot.through).field("next_sequence", snapshot.next_sequence);
    j.field("messages", uint64_t(snapshot.messages.size())).field("system_events", uint64_t(snapshot.system_events));
    j.field("directory", uint64_t(snapshot.directory)).field("orders", uint64_t(snapshot.orders));
    j.field("bytes", uint64_t(snapshot.bytes)).field("build_s", build_s);
    j.end_object();
    j.field("connections", accepted).field("logins", logins).field("completed", completed).field("cut", cuts);
    j.key("rejected").begin_object().field("not_authorized", rejected_a).field("session_not_available", rejected_s);
    j.end_object();
    j.key("ends").begin_object();
    for (size_t i = 0; i < replay::kClientEnds; ++i) j.field(replay::to_string(replay::ClientEnd(i)), ends[i]);
    j.end_object();
    j.key("malformed").begin_object();
    for (size_t i = 0; i < replay::kMalformedReasons; ++i) j.field(replay::to_string(replay::Malformed(i)), malformed[i]);
    j.end_object();
    j.key("clients").begin_array();
    for (const Closed& c : closed) {
      j.begin_object();
      j.field("peer_port", uint64_t(c.peer_port)).field("end", replay::to_string(c.end)).field("logged_in", c.logged_in);
      j.field("rejected", c.rejected ? std::string(1, c.rejected) : std::string()).field("malformed", c.malformed);
      j.field("requested_sequence", c.requested).field("messages_sent", c.sent);
      j.field("client_heartbeats", c.heartbeats).field("unsequenced_ignored", c.unsequenced);
      j.field("connected_ms", c.connected_ms).field("login_to_end_of_session_ms", c.login_to_end_ms);
      j.field("login_to_last_message_ms", c.login_to_last_ms);
      j.end_object();
    }
    j.end_array();
    j.end_object();
    replay::emit_report(j.str(), args.get("report"));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "snapshot-server: %s\n", e.what());
    return 1;
  }
}
