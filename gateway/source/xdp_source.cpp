#include "source/xdp_source.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xdp/xsk.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "net/udp_frame.hpp"
#include "source/stop_flag.hpp"
#include "source/xdp/feed_redirect_shared.h"

namespace itchbench {

namespace {
constexpr uint32_t kFrameSize = XSK_UMEM__DEFAULT_FRAME_SIZE;

std::string next_to_executable(const char* name) {
  std::vector<char> buf(4096);
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return name;
  std::string exe(buf.data(), size_t(n));
  return exe.substr(0, exe.rfind('/') + 1) + name;
}

// What a refusal means, in the words a user can act on.
std::string why(int err) {
  std::string s = std::strerror(err);
  if (err == EPERM || err == EACCES) s += " (needs root, or CAP_NET_ADMIN, CAP_BPF and CAP_NET_RAW)";
  if (err == EOPNOTSUPP) s += " (not supported by this kernel or driver)";
  if (err == EBUSY) s += " (in use: another XDP program or socket holds it; a socket just closed frees it in ~50 ms)";
  return s;
}

bool is_power_of_two(uint32_t v) { return v && !(v & (v - 1)); }
}  // namespace

struct XdpSource::Impl {
  int ifindex = 0;
  uint32_t attach_flags = 0;
  bool attached = false;
  bpf_object* obj = nullptr;
  int counters_fd = -1;
  void* umem_area = nullptr;
  size_t umem_bytes = 0;
  xsk_umem* umem = nullptr;
  xsk_socket* xsk = nullptr;
  xsk_ring_prod fill{};
  xsk_ring_cons comp{};
  xsk_ring_cons rx{};

  ~Impl() {
    if (xsk) xsk_socket__delete(xsk);
    if (umem) xsk_umem__delete(umem);
    if (attached) bpf_xdp_detach(ifindex, attach_flags, nullptr);
    if (obj) bpf_object__close(obj);
    if (umem_area) ::munmap(umem_area, umem_bytes);
  }

  // A UMEM and a socket bound with bind_flags; false (and err) when the bind is refused.
  bool bind(const XdpSourceOptions& o, uint16_t bind_flags, int& err) {
    if (xsk) xsk_socket__delete(xsk);
    if (umem) xsk_umem__delete(umem);
    xsk = nullptr;
    umem = nullptr;
    xsk_umem_config uc{};
    uc.fill_size = o.frames;
    uc.comp_size = XSK_RING_CONS__DEFAULT_NUM_DESCS;
    uc.frame_size = kFrameSize;
    uc.frame_headroom = 0;
    uc.flags = 0;
    if ((err = -xsk_umem__create(&umem, umem_area, umem_bytes, &fill, &comp, &uc)) != 0) {
      umem = nullptr;
      throw std::runtime_error("af_xdp: registering the UMEM failed: " + why(err));
    }
    xsk_socket_config sc{};
    sc.rx_size = o.ring;
    sc.tx_size = 0;
    sc.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;  // our program, not libxdp's
    sc.xdp_flags = attach_flags;
    sc.bind_flags = uint16_t(bind_flags | XDP_USE_NEED_WAKEUP);
    if ((err = -xsk_socket__create(&xsk, o.interface.c_str(), 0, umem, &rx, nullptr, &sc)) != 0) {
      xsk = nullptr;
      return false;
    }
    return true;
  }
};

XdpSource::XdpSource(const XdpSourceOptions& o) : options_(o) {
  if (o.port == 0) throw std::invalid_argument("af_xdp: the feed's UDP port is required (--port)");
  if (!is_power_of_two(o.frames) || !is_power_of_two(o.ring) || o.frames < 2 * o.batch)
    throw std::invalid_argument("af_xdp: --xdp-frames and --xdp-ring must be powers of two, frames >= 2 x batch");
  auto im = std::make_unique<Impl>();
  im->ifindex = int(if_nametoindex(o.interface.c_str()));
  if (!im->ifindex) throw std::runtime_error("af_xdp: no interface " + o.interface + ": " + why(errno));

  const std::string path = o.program.empty() ? next_to_executable("feed_redirect.bpf.o") : o.program;
  libbpf_set_print(nullptr);  // its own messages would go to stderr unasked; errors are ours to word
  im->obj = bpf_object__open_file(path.c_str(), nullptr);
  if (!im->obj) {
    const int err = errno;
    im->obj = nullptr;
    throw std::runtime_error("af_xdp: cannot open the XDP program " + path + ": " + why(err) +
                             " (it is built with the gateway: cmake --build build)");
  }
  if (const int err = -bpf_object__load(im->obj))
    throw std::runtime_error("af_xdp: loading the XDP program failed: " + why(err));
  bpf_program* prog = bpf_object__find_program_by_name(im->obj, "feed_redirect");
  const int config_fd = bpf_object__find_map_fd_by_name(im->obj, "config");
  const int xsks_fd = bpf_object__find_map_fd_by_name(im->obj, "xsks");
  im->counters_fd = bpf_object__find_map_fd_by_name(im->obj, "counters");
  if (!prog || config_fd < 0 || xsks_fd < 0 || im->counters_fd < 0)
    throw std::runtime_error("af_xdp: " + path + " is not the feed_redirect program");
  const uint32_t key = 0, port = o.port;
  if (bpf_map_update_elem(config_fd, &key, &port, 0) != 0)
    throw std::runtime_error("af_xdp: setting the feed port: " + why(errno));

  // Attach: native (driver) mode first unless told, then generic (skb).
  std::vector<std::pair<const char*, uint32_t>> modes;
  if (o.attach != "skb") modes.push_back({"drv", XDP_FLAGS_DRV_MODE});
  if (o.attach != "drv") modes.push_back({"skb", XDP_FLAGS_SKB_MODE});
  std::string refused;
  for (const auto& [name, flags] : modes) {
    const int err = -bpf_xdp_attach(im->ifindex, bpf_program__fd(prog), flags | XDP_FLAGS_UPDATE_IF_NOEXIST, nullptr);
    if (err == 0) {
      im->attached = true;
      im->attach_flags = flags;
      stats_.attach_granted = name;
      break;
    }
    refused += std::string(refused.empty() ? "" : "; ") + name + " mode: " + why(err);
  }
  if (!im->attached)
    throw std::runtime_error("af_xdp: attaching the XDP program to " + o.interface + " was refused: " + refused);

  im->umem_bytes = size_t(o.frames) * kFrameSize;
  im->umem_area = ::mmap(nullptr, im->umem_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (im->umem_area == MAP_FAILED) {
    im->umem_area = nullptr;
    throw std::runtime_error("af_xdp: UMEM of " + std::to_string(im->umem_bytes) + " bytes: " + why(errno));
  }
  // Bind: zero-copy first unless told, then copy.
  refused.clear();
  std::vector<std::pair<const char*, uint16_t>> binds;
  if (o.bind != "copy") binds.push_back({"zerocopy", XDP_ZEROCOPY});
  if (o.bind != "zerocopy") binds.push_back({"copy", XDP_COPY});
  for (const auto& [name, flags] : binds) {
    int err = 0;
    if (im->bind(o, flags, err)) {
      stats_.bind_granted = name;
      break;
    }
    refused += std::string(refused.empty() ? "" : "; ") + name + ": " + why(err);
  }
  if (!im->xsk)
    throw std::runtime_error("af_xdp: binding a socket to " + o.interface + " queue 0 was refused: " + refused);
  if (const int err = -xsk_socket__update_xskmap(im->xsk, xsks_fd))
    throw std::runtime_error("af_xdp: registering the socket with the program: " + why(err));

  // Every frame to the kernel for filling.
  uint32_t idx = 0;
  if (xsk_ring_prod__reserve(&im->fill, o.frames, &idx) != o.frames)
    throw std::runtime_error("af_xdp: the fill ring took fewer frames than it has room for");
  for (uint32_t i = 0; i < o.frames; ++i) *xsk_ring_prod__fill_addr(&im->fill, idx + i) = uint64_t(i) * kFrameSize;
  xsk_ring_prod__submit(&im->fill, o.frames);
  impl_ = im.release();
}

XdpSource::~XdpSource() { delete impl_; }

void XdpSource::run(const StageClock& clock, const OnDatagram& on_datagram) {
  Impl& im = *impl_;
  const int fd = xsk_socket__fd(im.xsk);
  auto last_rx = std::chrono::steady_clock::now();
  using Clock = std::chrono::steady_clock;
  constexpr auto kRtSpinSlice = std::chrono::milliseconds(10);  // as the udp source's busy poll
  Clock::time_point slice_start = Clock::now();
  uint64_t spins = 0;
  for (;;) {
    uint32_t idx_rx = 0;
    const uint32_t n = xsk_ring_cons__peek(&im.rx, options_.batch, &idx_rx);
    if (n == 0) {
      if (xsk_ring_prod__needs_wakeup(&im.fill)) ::recvfrom(fd, nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
      if (!options_.busy_poll || (++spins & 0xFFF) == 0) {
        if (stop_requested().load()) {
          stats_.stop_reason = "signal";
          return;
        }
        if (options_.idle_exit_ms && stats_.datagrams > 0 &&
            Clock::now() - last_rx > std::chrono::milliseconds(options_.idle_exit_ms)) {
          stats_.stop_reason = "idle timeout";
          return;
        }
      }
      if (!options_.busy_poll) {
        pollfd p{fd, POLLIN, 0};
        ::poll(&p, 1, 50);  // wakes at once for a frame; the timeout only bounds the stop checks
      } else if (options_.rt_yield && (spins & 0xFFF) == 0 && Clock::now() - slice_start >= kRtSpinSlice) {
        pollfd p{fd, POLLIN, 0};
        ::poll(&p, 1, 1);
        ++stats_.rt_yields;
        slice_start = Clock::now();
      }
      continue;
    }
    bool go_on = true;
    for (uint32_t i = 0; i < n && go_on; ++i) {
      const xdp_desc* d = xsk_ring_cons__rx_desc(&im.rx, idx_rx + i);
      uint8_t* frame = static_cast<uint8_t*>(xsk_umem__get_data(im.umem_area, d->addr));
      logfmt::Arrival arrival;
      arrival.t_read = clock.now();
      // The hook's stamp (bpf_ktime_get_ns: CLOCK_MONOTONIC), over the frame's first 8 bytes.
      uint64_t hook_ns = 0;
      std::memcpy(&hook_ns, frame, sizeof hook_ns);
      if (hook_ns) {
        const uint64_t placed = clock.from_other_clock(hook_ns, monotonic_ns);
        arrival.t_kernel = placed ? std::min(arrival.t_read, placed) : 0;
        ++stats_.hook_stamps;
        if (!placed) ++stats_.hook_stamps_unplaced;
      }
      net::UdpDatagram dg;
      if (net::extract_udp(net::kLinkEthernet, frame, d->len, dg) != net::FrameStatus::kOk) {
        ++stats_.not_udp;
        continue;
      }
      ++stats_.datagrams;
      stats_.bytes += dg.length;
      if (!on_datagram(dg.payload, dg.length, arrival)) {
        stats_.stop_reason = "end of session";
        go_on = false;
      }
    }
    // The frames go back to the fill ring as they came (aligned mode: the descriptor's frame).
    uint32_t idx_fq = 0;
    while (xsk_ring_prod__reserve(&im.fill, n, &idx_fq) != n) {
    }
    for (uint32_t i = 0; i < n; ++i)
      *xsk_ring_prod__fill_addr(&im.fill, idx_fq + i) =
          xsk_umem__extract_addr(xsk_ring_cons__rx_desc(&im.rx, idx_rx + i)->addr) & ~uint64_t(kFrameSize - 1);
    xsk_ring_prod__submit(&im.fill, n);
    xsk_ring_cons__release(&im.rx, n);
    last_rx = Clock::now();
    if (!go_on) return;
  }
}

const XdpSourceStats& XdpSource::stats() {
  Impl& im = *impl_;
  const int cpus = libbpf_num_possible_cpus();
  if (cpus > 0) {
    std::vector<uint64_t> per_cpu(static_cast<size_t>(cpus));
    uint64_t* fields[XDP_FEED_COUNTERS] = {&stats_.hook_feed_frames, &stats_.hook_redirected, &stats_.hook_no_socket,
                                           &stats_.hook_other};
    for (uint32_t k = 0; k < XDP_FEED_COUNTERS; ++k)
      if (bpf_map_lookup_elem(im.counters_fd, &k, per_cpu.data()) == 0) {
        *fields[k] = 0;
        for (uint64_t v : per_cpu) *fields[k] += v;
      }
  }
  xdp_statistics xs{};
  socklen_t len = sizeof xs;
  if (::getsockopt(xsk_socket__fd(im.xsk), SOL_XDP, XDP_STATISTICS, &xs, &len) == 0) {
    stats_.rx_dropped = xs.rx_dropped;
    stats_.rx_ring_full = xs.rx_ring_full;
    stats_.rx_fill_ring_empty = xs.rx_fill_ring_empty_descs;
    stats_.rx_invalid_descs = xs.rx_invalid_descs;
  }
  return stats_;
}

}  // namespace itchbench
