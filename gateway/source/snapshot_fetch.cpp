#include "source/snapshot_fetch.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "protocol/endian.hpp"
#include "protocol/glimpse.hpp"
#include "protocol/itch.hpp"
#include "protocol/soupbintcp.hpp"
#include "source/stop_flag.hpp"
#include "util/stage_clock.hpp"

namespace itchbench {

SnapshotFetch::SnapshotFetch(const SnapshotFetchOptions& options) : options_(options) {
  thread_ = std::thread([this] { run(); });
}

SnapshotFetch::~SnapshotFetch() {
  if (thread_.joinable()) thread_.join();
}

void SnapshotFetch::run() {
  result_.started_ns = monotonic_ns();
  uint64_t received = 0;  // sequenced messages so far, End of Snapshot included once it came
  while (!result_.ok && result_.connections < options_.max_connections && !stop_requested().load()) {
    ++result_.connections;
    if (!session(received)) break;
  }
  if (!result_.ok && result_.error.empty())
    result_.error = stop_requested().load() ? "stopped before the snapshot was complete"
                                            : "the snapshot was not complete after " +
                                                  std::to_string(result_.connections) + " connections";
  done_.store(true, std::memory_order_release);
}

bool SnapshotFetch::session(uint64_t& received) {
  const std::string where = options_.addr + ":" + std::to_string(options_.port);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(options_.port);
  if (inet_pton(AF_INET, options_.addr.c_str(), &to.sin_addr) != 1) {
    result_.error = where + " is not an IPv4 address";
    return false;
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
    result_.error = "connecting to the snapshot server " + where + ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return true;  // it may come up: another connection
  }
  result_.error.clear();
  const int on = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  std::vector<uint8_t> out;
  soup::write_login_request(out, {options_.username, options_.password, options_.session, received + 1});
  bool keep_trying = true;
  if (::send(fd, out.data(), out.size(), MSG_NOSIGNAL) != ssize_t(out.size())) {
    ::close(fd);
    return true;
  }
  uint64_t last_rx = monotonic_ns(), last_tx = last_rx;
  soup::StreamReader reader;
  uint8_t buffer[65536];
  bool accepted = false, ended = false;
  while (!ended && !stop_requested().load()) {
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, 100);
    const uint64_t now = monotonic_ns();
    if (now - last_tx >= 1'000'000'000ull) {  // a client heartbeat a second, as SoupBinTCP asks
      out.clear();
      soup::write_packet(out, soup::kClientHeartbeat);
      ::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      last_tx = now;
    }
    if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) {
      if (now - last_rx >= options_.silence_timeout_ms * 1'000'000ull) break;  // lost: another connection
      continue;
    }
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n <= 0) {
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      break;  // closed under it: another connection takes up from `received`
    }
    last_rx = now;
    result_.bytes += uint64_t(n);
    reader.append(buffer, size_t(n));
    char type;
    const uint8_t* payload;
    size_t len;
    for (;;) {
      const soup::StreamReader::Next next = reader.next(type, payload, len);
      if (next == soup::StreamReader::Next::kIncomplete) break;
      if (next != soup::StreamReader::Next::kPacket) {
        result_.error = "the snapshot server " + where + " sent a broken SoupBinTCP packet";
        ended = true;
        keep_trying = false;
        break;
      }
      if (type == soup::kLoginRejected) {
        const char why = len ? char(payload[0]) : '?';
        result_.error = std::string("the snapshot server rejected the login: ") +
                        (why == soup::kNotAuthorized ? "A (not authorized)"
                         : why == soup::kSessionNotAvailable ? "S (session not available)"
                                                             : std::string(1, why));
        ended = true;
        keep_trying = false;
        break;
      }
      if (type == soup::kLoginAccepted) {
        accepted = true;
      } else if (type == soup::kServerHeartbeat) {
        ++result_.server_heartbeats;
      } else if (type == soup::kEndOfSession) {
        ended = true;
        break;
      } else if (type == soup::kSequencedData && accepted) {
        ++received;
        uint64_t next_seq = 0;
        if (glimpse::parse_end_of_snapshot(payload, len, next_seq)) {
          result_.next_sequence = next_seq;
          result_.ok = true;
          result_.done_ns = now;
        } else {
          result_.messages.emplace_back(payload, payload + len);
          result_.timestamp = itch::header_timestamp_or(payload, len, result_.timestamp);
        }
      }
    }
  }
  if (result_.ok) {  // a logout, politely; the server closes after its end of session anyway
    out.clear();
    soup::write_packet(out, soup::kLogoutRequest);
    ::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  ::close(fd);
  return keep_trying;
}

}  // namespace itchbench
