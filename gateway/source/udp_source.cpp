#include "source/udp_source.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include <boost/asio.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "source/stop_flag.hpp"
#include "source/stop_timer.hpp"

namespace itchbench {

namespace asio = boost::asio;
using asio::ip::udp;

struct UdpSource::Impl {
  asio::io_context io;
  udp::socket socket{io};
  asio::steady_timer timer{io};
  alignas(64) uint8_t buffer[65536];
  alignas(8) uint8_t control[256];
};

namespace {
constexpr uint64_t kMaxBracketNs = 2000;  // a clock_gettime between two TSC reads takes ~40 ns
uint64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}
}  // namespace

UdpSource::UdpSource(const UdpSourceOptions& options) : impl_(new Impl), options_(options) {
  try {
    // A multicast receiver binds the wildcard address, so that a unicast answer to its source address (a
    // re-request's) reaches it too; bound to the group it would miss that.
    const bool multicast = !options.join_group.empty();
    udp::endpoint ep(multicast ? asio::ip::address_v4::any() : asio::ip::address_v4::loopback(), options.port);
    impl_->socket.open(ep.protocol());
    if (options.rcvbuf_bytes > 0) impl_->socket.set_option(asio::socket_base::receive_buffer_size(options.rcvbuf_bytes));
    const int on = 1;
    if (::setsockopt(impl_->socket.native_handle(), SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) != 0)
      throw std::runtime_error(std::string("SO_TIMESTAMPNS: ") + std::strerror(errno));
    impl_->socket.bind(ep);
    if (multicast) {
      const auto group = asio::ip::make_address_v4(options.join_group);
      if (!group.is_multicast()) throw std::runtime_error(options.join_group + " is not a multicast group");
      impl_->socket.set_option(asio::ip::multicast::join_group(group, asio::ip::address_v4::loopback()));
      const int off = 0;  // only the groups this socket joined, not every group any socket on the host joined
      if (::setsockopt(impl_->socket.native_handle(), IPPROTO_IP, IP_MULTICAST_ALL, &off, sizeof off) != 0)
        throw std::runtime_error(std::string("IP_MULTICAST_ALL: ") + std::strerror(errno));
    }
    impl_->socket.non_blocking(true);
    asio::socket_base::receive_buffer_size granted;
    impl_->socket.get_option(granted);
    stats_.rcvbuf_granted = granted.value();
    port_ = impl_->socket.local_endpoint().port();
  } catch (const std::exception& e) {
    delete impl_;
    throw std::runtime_error("UDP " + (options.join_group.empty() ? "127.0.0.1" : "0.0.0.0 joining " +
                             options.join_group) + ":" + std::to_string(options.port) + ": " + e.what());
  }
}

UdpSource::~UdpSource() { delete impl_; }

void UdpSource::run(const StageClock& clock, const OnDatagram& on_datagram) {
  Impl& im = *impl_;
  const int fd = im.socket.native_handle();
  auto last_rx = std::chrono::steady_clock::now();
  bool done = false;

  // Reads every datagram waiting now; false when the consumer said stop.
  auto drain = [&]() -> bool {
    for (;;) {
      iovec iov{im.buffer, sizeof im.buffer};
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = im.control;
      msg.msg_controllen = sizeof im.control;
      const ssize_t n = ::recvmsg(fd, &msg, MSG_DONTWAIT);
      if (n < 0) return true;  // EAGAIN: nothing more now
      logfmt::Arrival arrival;
      arrival.t_read = clock.now();
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
          timespec ts;
          std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
          // The kernel stamps in CLOCK_REALTIME: its age on that clock, taken between two stage-clock reads
          // close together (a preemption between them would misplace it by its length), moves it onto the
          // stage clock.
          const uint64_t kernel = uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
          uint64_t mid = 0, now_rt = 0;
          for (int attempt = 0; attempt < 4; ++attempt) {
            const uint64_t before = clock.now();
            now_rt = realtime_ns();
            const uint64_t after = clock.now();
            mid = before + (after - before) / 2;
            if (clock.to_ns(after) - clock.to_ns(before) < kMaxBracketNs) break;
          }
          const uint64_t age = now_rt > kernel ? now_rt - kernel : 0;
          arrival.t_kernel = std::min(arrival.t_read, clock.earlier(mid, age));
          ++stats_.kernel_timestamps;
        }
      }
      ++stats_.datagrams;
      stats_.bytes += size_t(n);
      if (msg.msg_flags & MSG_TRUNC) ++stats_.truncated;
      last_rx = std::chrono::steady_clock::now();
      if (!on_datagram(im.buffer, size_t(n), arrival)) {
        stats_.stop_reason = "end of session";
        return false;
      }
    }
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
      if (!drain()) break;
      if ((++spins & 0xFFF) == 0) {
        if (should_stop()) break;
        if (options_.rt_yield && Clock::now() - slice_start >= kRtSpinSlice) {
          pollfd p{fd, POLLIN, 0};
          ::poll(&p, 1, kRtPauseMs);
          ++stats_.rt_yields;
          slice_start = Clock::now();
        }
      }
    }
    return;
  }

  std::function<void()> arm_read = [&] {
    im.socket.async_wait(udp::socket::wait_read, [&](const boost::system::error_code& ec) {
      if (ec || done) return;
      if (!drain()) {
        done = true;
        im.io.stop();
        return;
      }
      arm_read();
    });
  };
  arm_read();
  arm_stop_timer(im.timer, [&] { return done || should_stop(); }, [&] {
    done = true;
    im.io.stop();
  });
  im.io.run();
}

}  // namespace itchbench
