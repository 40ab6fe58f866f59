// UDP source: datagrams from a socket bound on loopback, each stamped with
// the kernel's receive time (SO_TIMESTAMPNS) converted to the stage clock.
//
// Receive: Boost.Asio waits for readiness (epoll) and the datagrams are then
// drained with recvmsg() — Asio has no access to control messages, which
// carry the kernel timestamp. With busy_poll the thread spins on a
// non-blocking recvmsg() instead — and, where it runs real-time under the
// kernel's RT throttling (rt_yield), gives the CPU back for a moment every
// kRtSpinSlice: a real-time thread that never sleeps is otherwise stopped for
// the rest of each period once it has used the kernel's budget (50 ms of
// every second by default), and every datagram arriving then waits for it.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "source/feed_line.hpp"
#include "source/kernel_stamps.hpp"
#include "util/stage_clock.hpp"

namespace itchbench {

struct UdpSourceOptions {
  uint16_t port = 0;          // 0: any free port
  std::string join_group;     // a multicast group (224.0.0.0/4) to join on the loopback interface; "": unicast
  // The session's B line: a second socket, on its own group (port = port) or, unicast, on 127.0.0.1:port_b.
  std::string join_group_b;
  uint16_t port_b = 0;        // 0 with no group B: no B line
  // The re-request server, asked from a socket of its own, where its answers come back. Port 0: none.
  std::string rerequest_addr;
  uint16_t rerequest_port = 0;
  int rcvbuf_bytes = 0;       // SO_RCVBUF request; 0 leaves the default
  bool busy_poll = false;
  bool rt_yield = false;      // busy_poll under SCHED_FIFO/RR with RT throttling on (realtime.hpp rt_throttling)
  uint64_t idle_exit_ms = 0;  // stop after this long without a datagram (once one came); 0: never
};

struct UdpSourceStats {
  uint64_t datagrams = 0;
  uint64_t bytes = 0;
  uint64_t truncated = 0;          // datagrams larger than the buffer (MSG_TRUNC)
  uint64_t kernel_timestamps = 0;  // datagrams that carried SO_TIMESTAMPNS
  uint64_t kernel_timestamps_unplaced = 0;  // of those, ones not put on the stage clock (t_kernel left 0)
  uint64_t kernel_timestamps_across_step = 0;  // of those, ones that may have waited across a step
  uint64_t realtime_steps = 0;            // times CLOCK_REALTIME was seen set (kernel_stamps.hpp)
  uint64_t realtime_largest_step_ns = 0;  // the largest of those steps, either way
  uint64_t rt_yields = 0;          // times the busy poll gave the CPU back (rt_yield)
  uint64_t per_line[kLines] = {};  // datagrams by the way they came (A, B, the server's answers)
  int rcvbuf_granted = 0;          // what the kernel gave (it doubles the request)
  // Datagrams still queued on its sockets when it stopped (a copy after the end of session, an answer too late),
  // read and dropped at once before the sockets close: the kernel counts a datagram only when it is read, and
  // one closed in with a socket would be counted nowhere.
  uint64_t unread_at_stop = 0;
  std::string stop_reason;
};

class UdpSource {
 public:
  explicit UdpSource(const UdpSourceOptions& options);  // binds 127.0.0.1; throws
  ~UdpSource();
  uint16_t port() const { return port_; }

  // Calls on_datagram(data, len, line, arrival) until it returns false, a
  // stop is requested (stop_flag.hpp) or the idle timeout passes; and, when
  // given, on_tick() about every millisecond (false: stop, as at the end of
  // the session). arrival.t_read is when recvmsg returned; t_kernel the
  // kernel's receive stamp on the same clock (0 when the kernel gave none).
  // Then it reads what is still queued, uncounted as datagrams (stats().unread_at_stop), and closes its sockets.
  using OnDatagram = std::function<bool(const uint8_t*, size_t, Line, const logfmt::Arrival&)>;
  using OnTick = std::function<bool()>;
  void run(const StageClock& clock, const OnDatagram& on_datagram, const OnTick& on_tick = nullptr);
  // Sends a datagram to the re-request server from the answers' socket; false when it could not be sent.
  bool send_request(const uint8_t* data, size_t len);
  bool has_line_b() const;
  const UdpSourceStats& stats() const { return stats_; }

 private:
  void receive(const StageClock& clock, RealtimeKernelStamps& kernel_stamps, const OnDatagram& on_datagram,
               const OnTick& on_tick);
  void close_reading_what_is_left();
  struct Impl;
  Impl* impl_;
  UdpSourceOptions options_;
  uint16_t port_ = 0;
  UdpSourceStats stats_;
};

}  // namespace itchbench
