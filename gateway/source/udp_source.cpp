#include "source/udp_source.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include <boost/asio.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "net/receive_buffer.hpp"
#include "source/kernel_stamps.hpp"
#include "source/stop_flag.hpp"
#include "source/stop_timer.hpp"

namespace itchbench {

namespace asio = boost::asio;
using asio::ip::udp;

struct UdpSource::Impl {
  asio::io_context io;
  udp::socket socket{io};
  udp::socket socket_b{io};  // open only with a B line
  udp::socket socket_requests{io};  // open only with a re-request server: its answers come back here
  asio::steady_timer timer{io};
  asio::steady_timer tick_timer{io};
  sockaddr_in server{};      // the re-request server; port 0: none
  alignas(64) uint8_t buffer[65536];
  alignas(8) uint8_t control[256];
};

namespace {
// Binds a feed socket: on 127.0.0.1:port, or — joining `group` on the loopback interface — on the wildcard
// address, so that a unicast answer to its source address (a re-request's) reaches it too; bound to the group it
// would miss that. Two lines of one port (A and B on their own groups) share it: SO_REUSEADDR.
void open_feed_socket(udp::socket& socket, const std::string& group, uint16_t port, int rcvbuf_bytes) {
  const bool multicast = !group.empty();
  udp::endpoint ep(multicast ? asio::ip::address_v4::any() : asio::ip::address_v4::loopback(), port);
  socket.open(ep.protocol());
  itchbench::net::request_receive_buffer(socket.native_handle(), rcvbuf_bytes);
  const int on = 1;
  if (::setsockopt(socket.native_handle(), SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) != 0)
    throw std::runtime_error(std::string("SO_TIMESTAMPNS: ") + std::strerror(errno));
  if (multicast) socket.set_option(asio::socket_base::reuse_address(true));
  socket.bind(ep);
  if (multicast) {
    const auto g = asio::ip::make_address_v4(group);
    if (!g.is_multicast()) throw std::runtime_error(group + " is not a multicast group");
    socket.set_option(asio::ip::multicast::join_group(g, asio::ip::address_v4::loopback()));
    const int off = 0;  // only the groups this socket joined, not every group any socket on the host joined
    if (::setsockopt(socket.native_handle(), IPPROTO_IP, IP_MULTICAST_ALL, &off, sizeof off) != 0)
      throw std::runtime_error(std::string("IP_MULTICAST_ALL: ") + std::strerror(errno));
  }
  socket.non_blocking(true);
}

std::string where(const std::string& group, uint16_t port) {
  return (group.empty() ? "127.0.0.1" : "0.0.0.0 joining " + group) + ":" + std::to_string(port);
}
}  // namespace

UdpSource::UdpSource(const UdpSourceOptions& options) : impl_(new Impl), options_(options) {
  std::string opening = where(options.join_group, options.port);
  try {
    open_feed_socket(impl_->socket, options.join_group, options.port, options.rcvbuf_bytes);
    asio::socket_base::receive_buffer_size granted;
    impl_->socket.get_option(granted);
    stats_.rcvbuf_granted = granted.value();
    port_ = impl_->socket.local_endpoint().port();
    if (!options.join_group_b.empty() || options.port_b) {
      const uint16_t port_b = options.join_group_b.empty() ? options.port_b : port_;
      opening = "line B " + where(options.join_group_b, port_b);
      open_feed_socket(impl_->socket_b, options.join_group_b, port_b, options.rcvbuf_bytes);
    }
    if (options.rerequest_port) {
      opening = "the re-request server " + options.rerequest_addr;
      impl_->server.sin_family = AF_INET;
      impl_->server.sin_port = htons(options.rerequest_port);
      if (inet_pton(AF_INET, options.rerequest_addr.c_str(), &impl_->server.sin_addr) != 1)
        throw std::runtime_error("not an IPv4 address");
      // A socket of its own (any free port), not the feed's: two lines sharing a port would split the answers.
      open_feed_socket(impl_->socket_requests, "", 0, options.rcvbuf_bytes);
    }
  } catch (const std::exception& e) {
    delete impl_;
    throw std::runtime_error("UDP " + opening + ": " + e.what());
  }
}

bool UdpSource::has_line_b() const { return impl_->socket_b.is_open(); }

bool UdpSource::send_request(const uint8_t* data, size_t len) {
  const sockaddr_in& to = impl_->server;
  return ::sendto(impl_->socket_requests.native_handle(), data, len, MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(&to),
                  sizeof to) == ssize_t(len);
}

UdpSource::~UdpSource() { delete impl_; }

void UdpSource::run(const StageClock& clock, const OnDatagram& on_datagram, const OnTick& on_tick) {
  KernelStamps kernel_stamps(clock, realtime_ns);
  receive(clock, kernel_stamps, on_datagram, on_tick);
  stats_.kernel_timestamps_unplaced = kernel_stamps.unplaced();
  stats_.kernel_timestamps_across_step = kernel_stamps.across_step();
  stats_.realtime_steps = kernel_stamps.steps();
  stats_.realtime_largest_step_ns = kernel_stamps.largest_step_ns();
  close_reading_what_is_left();
}

void UdpSource::close_reading_what_is_left() {
  for (udp::socket* s : {&impl_->socket, &impl_->socket_b, &impl_->socket_requests}) {
    if (!s->is_open()) continue;
    while (::recv(s->native_handle(), impl_->buffer, sizeof impl_->buffer, MSG_DONTWAIT) >= 0) ++stats_.unread_at_stop;
    boost::system::error_code ignored;
    s->close(ignored);
  }
}

void UdpSource::receive(const StageClock& clock, RealtimeKernelStamps& kernel_stamps, const OnDatagram& on_datagram,
                        const OnTick& on_tick) {
  Impl& im = *impl_;
  const bool line_b = im.socket_b.is_open();
  const bool server = im.server.sin_port != 0;
  auto last_rx = std::chrono::steady_clock::now();
  bool done = false;

  // Reads every datagram waiting now on one socket; false when the consumer said stop.
  auto drain = [&](udp::socket& socket, Line line) -> bool {
    const int fd = socket.native_handle();
    for (;;) {
      iovec iov{im.buffer, sizeof im.buffer};
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = im.control;
      msg.msg_controllen = sizeof im.control;
      const ssize_t n = ::recvmsg(fd, &msg, MSG_DONTWAIT);
      if (n < 0) {  // EAGAIN: nothing more now
        kernel_stamps.emptied(line);
        return true;
      }
      logfmt::Arrival arrival;
      arrival.t_read = clock.now();
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
          timespec ts;
          std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
          const uint64_t kernel = uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
          const uint64_t placed = kernel_stamps.place(line, kernel);
          arrival.t_kernel = placed ? std::min(arrival.t_read, placed) : 0;
          ++stats_.kernel_timestamps;
        }
      }
      ++stats_.datagrams;
      ++stats_.per_line[size_t(line)];
      stats_.bytes += size_t(n);
      if (msg.msg_flags & MSG_TRUNC) ++stats_.truncated;
      last_rx = std::chrono::steady_clock::now();
      if (!on_datagram(im.buffer, size_t(n), line, arrival)) {
        stats_.stop_reason = "end of session";
        return false;
      }
    }
  };
  auto drain_all = [&]() -> bool {
    return drain(im.socket, Line::kA) && (!line_b || drain(im.socket_b, Line::kB)) &&
           (!server || drain(im.socket_requests, Line::kAnswer));
  };
  // CLOCK_REALTIME looked at before anything is read, then every 20 ms (the stop timer's period) or 4,096 spins
  // (KernelStamps::look): a set while the first datagram waits is seen, and, while idle, a set and its undoing
  // are seen apart; what waited across a set is left out by the read after.
  kernel_stamps.look();
  auto tick = [&]() -> bool {
    if (!on_tick || on_tick()) return true;
    stats_.stop_reason = "end of session";
    return false;
  };
  auto should_stop = [&]() -> bool {
    if (stop_requested().load()) {
      stats_.stop_reason = "signal";
      return true;
    }
    if (options_.idle_exit_ms && stats_.datagrams > 0 &&
        std::chrono::steady_clock::now() - last_rx > std::chrono::milliseconds(options_.idle_exit_ms)) {
      stats_.stop_reason = "idle timeout";
      return true;
    }
    return false;
  };

  if (options_.busy_poll) {
    // Under RT throttling the kernel lets real-time threads use 95 % of each period (by default): every slice of
    // spinning ends in a poll() of at most kRtPauseMs — 9 % of the time while idle, under the budget, and at once
    // when a datagram arrives — instead of a 50 ms stop a second. Fed without a pause the thread can still
    // exhaust the budget; the run's noise figures say so.
    using Clock = std::chrono::steady_clock;
    constexpr auto kRtSpinSlice = std::chrono::milliseconds(10);
    constexpr int kRtPauseMs = 1;
    uint64_t spins = 0;
    Clock::time_point slice_start = Clock::now();
    while (!done) {
      if (!drain_all()) break;
      if ((++spins & 0xFFF) == 0) {
        kernel_stamps.look();
        if (should_stop() || !tick()) break;
        if (options_.rt_yield && Clock::now() - slice_start >= kRtSpinSlice) {
          pollfd p[3] = {{im.socket.native_handle(), POLLIN, 0},
                         {line_b ? im.socket_b.native_handle() : -1, POLLIN, 0},
                         {server ? im.socket_requests.native_handle() : -1, POLLIN, 0}};
          ::poll(p, 3, kRtPauseMs);
          ++stats_.rt_yields;
          slice_start = Clock::now();
        }
      }
    }
    return;
  }

  auto finish = [&] {
    done = true;
    im.io.stop();
  };
  std::function<void(udp::socket&, Line)> arm_read = [&](udp::socket& socket, Line line) {
    socket.async_wait(udp::socket::wait_read, [&, line](const boost::system::error_code& ec) {
      if (ec || done) return;
      if (!drain(socket, line)) return finish();
      arm_read(socket, line);
    });
  };
  arm_read(im.socket, Line::kA);
  if (line_b) arm_read(im.socket_b, Line::kB);
  if (server) arm_read(im.socket_requests, Line::kAnswer);
  // The consumer's clock-driven work (requests due, gaps given up) runs between reads, every millisecond; first
  // every datagram already waiting is read: after the thread was off its CPU past a deadline, the timer can
  // fire before the reads, and a gap whose filling copy sits queued would be given up as lost.
  std::function<void()> arm_tick = [&] {
    im.tick_timer.expires_after(std::chrono::milliseconds(1));
    im.tick_timer.async_wait([&](const boost::system::error_code& ec) {
      if (ec || done) return;
      if (!drain_all() || !tick()) return finish();
      arm_tick();
    });
  };
  if (on_tick) arm_tick();
  arm_stop_timer(
      im.timer,
      [&] {
        kernel_stamps.look();
        return done || should_stop();
      },
      finish);
  im.io.run();
}

}  // namespace itchbench
