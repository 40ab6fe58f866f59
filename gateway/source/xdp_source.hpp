// AF_XDP source: the feed's UDP datagrams taken at the XDP hook of an
// interface (our own program, source/xdp/feed_redirect.bpf.c, redirects
// only the feed's port; ARP and everything else go on to the kernel) and
// read from an AF_XDP socket's receive ring, past the kernel's IP and UDP
// stacks. Each frame carries the hook's CLOCK_MONOTONIC stamp over its
// first 8 bytes: the run's "kernel receive" stamp, as SO_TIMESTAMPNS is for
// the udp source, so both read the same in the hop table.
//
// Attach mode (native driver or generic skb) and bind mode (zero-copy or
// copy) are tried best first unless asked for; what was granted is
// reported. A request the kernel refuses is an error that names what is
// missing (privilege, kernel support), never a fall back to UDP.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "log/log_format.hpp"
#include "util/stage_clock.hpp"

namespace itchbench {

struct XdpSourceOptions {
  std::string interface = "lo";
  uint16_t port = 0;                // the feed's UDP destination port
  std::string attach = "auto";      // auto | drv | skb
  std::string bind = "auto";        // auto | zerocopy | copy
  uint32_t frames = 4096;           // UMEM frames of 4 KiB (a power of two): the fill ring's size too
  uint32_t ring = 2048;             // receive ring entries (a power of two)
  uint32_t batch = 64;              // descriptors taken from the ring at a time
  bool busy_poll = false;           // spin on the ring instead of waiting in poll()
  bool rt_yield = false;            // as UdpSourceOptions::rt_yield
  uint64_t idle_exit_ms = 0;
  std::string program;              // the XDP object file; empty: next to the executable
};

struct XdpSourceStats {
  uint64_t datagrams = 0;        // frames read from the ring and handed on
  uint64_t bytes = 0;            // their UDP payload bytes
  uint64_t not_udp = 0;          // frames on the ring whose headers did not parse (none expected)
  uint64_t hook_stamps = 0;      // frames that carried the hook's stamp
  uint64_t hook_stamps_unplaced = 0;  // of those, ones not put on the stage clock (t_kernel left 0)
  uint64_t rt_yields = 0;
  // The program's counters, summed over CPUs, read at the end.
  uint64_t hook_feed_frames = 0, hook_redirected = 0, hook_no_socket = 0, hook_other = 0;
  // The socket's (XDP_STATISTICS).
  uint64_t rx_dropped = 0, rx_ring_full = 0, rx_fill_ring_empty = 0, rx_invalid_descs = 0;
  std::string attach_granted;    // drv | skb
  std::string bind_granted;      // zerocopy | copy
  std::string stop_reason;
};

class XdpSource {
 public:
  explicit XdpSource(const XdpSourceOptions& options);  // loads, attaches, binds; throws with what is missing
  ~XdpSource();                                         // detaches the program
  XdpSource(const XdpSource&) = delete;
  XdpSource& operator=(const XdpSource&) = delete;

  // As UdpSource::run: the UDP payload of every feed frame, until on_datagram returns false, a stop is
  // requested or the idle timeout passes. arrival.t_kernel is the XDP hook's stamp on the stage clock.
  using OnDatagram = std::function<bool(const uint8_t*, size_t, const logfmt::Arrival&)>;
  void run(const StageClock& clock, const OnDatagram& on_datagram);
  const XdpSourceStats& stats();  // reads the program's and the socket's counters first
  uint16_t port() const { return options_.port; }

 private:
  struct Impl;
  Impl* impl_ = nullptr;
  XdpSourceOptions options_;
  XdpSourceStats stats_;
};

}  // namespace itchbench
