// bbo-tcp-subscribers: many TCP subscribers of the gateway's BBO publisher in
// one process, one epoll loop, so that hundreds of them cost one thread on
// the harness's side instead of hundreds of processes on two CPUs. Each
// connection writes what a single subscriber writes (subscriber_output.hpp):
// DIR/subscriber-K.bbo, .recv (a stamp per whole frame as the recv that
// completed it returned) and .json (its local port, frames, how it ended).
// With --levels N they subscribe to the depth publisher instead: frames are
// the depth log's level change records, written to DIR/depth-subscriber-K.dep.
// A stuck connection (--stuck) connects with a small receive buffer and is
// never read: the gateway must drop to it, not wait for it. The process ends
// when every reading one has seen its stream end. The loop stamps
// connections in the order epoll reports them, so a subscriber's latency
// includes the reads of the others ready before it: the report ranks them.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "publish/subscriber_output.hpp"
#include "source/stop_flag.hpp"
#include "util/cli.hpp"
#include "util/atomic_file.hpp"
#include "util/json_writer.hpp"
#include "util/realtime.hpp"

namespace {

using itchbench::SubscriberOutput;
namespace logfmt = itchbench::logfmt;
constexpr size_t kReadBytes = 64 * 1024;
constexpr size_t kMostConnections = 10000;
constexpr size_t kLogReserve = 256 * 1024;  // 10,922 events before the first remap

struct Connection {
  int fd = -1;
  uint16_t local_port = 0;
  bool stuck = false;
  bool ended = false;
  std::string ending;
  std::unique_ptr<SubscriberOutput> out;
  std::vector<uint8_t> pending;  // a frame split across reads
  size_t pending_bytes = 0;
};

int connect_to(uint16_t port, bool stuck, std::chrono::steady_clock::time_point deadline, std::string& err) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (;;) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      err = std::string("socket: ") + std::strerror(errno);
      return -1;
    }
    if (stuck) {  // a small window: the gateway's queue for it fills after a few KiB
      const int small = 4096;
      ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    }
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0) return fd;
    err = std::string("connect 127.0.0.1:") + std::to_string(port) + ": " + std::strerror(errno);
    ::close(fd);
    if (std::chrono::steady_clock::now() > deadline || itchbench::stop_requested().load()) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void write_info(const Connection& c) {
  c.out->write_info([&](itchbench::JsonWriter& j) {
    j.key("local_ports").begin_array().value(uint64_t(c.local_port)).end_array();
    j.field("frames", c.out->events()).field("ended", c.ending);
    j.field("partial_bytes", uint64_t(c.pending_bytes));
  });
}

// Whole frames of a read, stamped with the read's return; a partial frame waits for the next read.
void take(Connection& c, const uint8_t* p, size_t n, uint64_t t) {
  const size_t frame = c.out->frame_bytes();
  if (c.pending_bytes) {
    const size_t need = std::min(frame - c.pending_bytes, n);
    std::memcpy(c.pending.data() + c.pending_bytes, p, need);
    c.pending_bytes += need;
    p += need;
    n -= need;
    if (c.pending_bytes < frame) return;
    c.out->on_frame(c.pending.data(), t);
    c.pending_bytes = 0;
  }
  for (; n >= frame; p += frame, n -= frame) c.out->on_frame(p, t);
  std::memcpy(c.pending.data(), p, n);
  c.pending_bytes = n;
}

// What the pool cost the harness, from its own rusage: the figure that says whether the subscribers' side or
// the gateway is the bottleneck of a fan-out.
void write_cost(const std::string& path, size_t connections, uint64_t reads,
                std::chrono::steady_clock::time_point started) {
  rusage me{};
  ::getrusage(RUSAGE_SELF, &me);
  itchbench::JsonWriter j;
  j.begin_object();
  j.field("connections", uint64_t(connections)).field("reads", reads);
  j.field("cpu_user_s", double(me.ru_utime.tv_sec) + me.ru_utime.tv_usec / 1e6);
  j.field("cpu_system_s", double(me.ru_stime.tv_sec) + me.ru_stime.tv_usec / 1e6);
  j.field("max_rss_kib", uint64_t(me.ru_maxrss));
  j.field("read_loop_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  j.end_object();
  itchbench::write_file_atomically(path, j.str());
}

// "0-3,5" -> 0 1 2 3 5; false on anything else.
bool parse_numbers(const std::string& text, std::vector<uint64_t>& out) {
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    if (item.empty()) continue;
    char* endp = nullptr;
    const unsigned long long lo = std::strtoull(item.c_str(), &endp, 10);
    unsigned long long hi = lo;
    if (endp == item.c_str()) return false;
    if (*endp == '-') {
      const char* from = endp + 1;
      hi = std::strtoull(from, &endp, 10);
      if (endp == from || hi < lo || hi - lo >= kMostConnections) return false;
    }
    if (*endp) return false;
    for (unsigned long long k = lo; k <= hi; ++k) out.push_back(k);
    if (out.size() > kMostConnections) return false;
  }
  return true;
}

void end(Connection& c, const std::string& why) {
  if (c.ended) return;
  c.ended = true;
  c.ending = why;
  ::close(c.fd);
  c.out->close();
  write_info(c);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace itchbench;
  cli::Args args("bbo-tcp-subscribers", "bbo-tcp-subscribers --port PORT --dir DIR --numbers LIST [options]",
                 "TCP subscribers of a gateway's BBO stream on 127.0.0.1:PORT, one process, one epoll loop.\n"
                 "Subscriber K writes DIR/subscriber-K.bbo, .recv and .json. Fast ones read until the gateway\n"
                 "closes; stuck ones never read and are held until SIGTERM. Exit status: 0 every fast one saw\n"
                 "the end of its stream (or SIGTERM), 1 a connection or file failed, 2 usage.");
  args.option("port", "PORT", "the gateway's BBO publisher port");
  args.option("dir", "DIR", "where the files go");
  args.option("numbers", "LIST", "the subscribers' numbers: comma-separated numbers and ranges, e.g. 0-3,5,7-499");
  args.option("stuck", "LIST", "those of them that never read, e.g. 2,9", "");
  args.option("connect-timeout-ms", "MS", "how long to keep trying to connect", "10000");
  args.option("cpu", "N", "pin to this CPU");
  args.option("levels", "N", "subscribe to the gateway's depth publisher (--port its depth port; N levels a side, or "
              "all): frames are its depth log's level change records, written to DIR/depth-subscriber-K.dep (0: the BBO)", "0");
  args.parse(argc, argv);
  if (!args.has("port") || !args.has("dir") || !args.has("numbers")) {
    args.fail("--port, --dir and --numbers are required");
  }
  std::vector<uint64_t> numbers, stuck_numbers;
  if (!parse_numbers(args.get("numbers"), numbers) || numbers.empty() || numbers.size() > kMostConnections) {
    args.fail("--numbers takes 1 to 10,000 numbers and ranges, e.g. 0-3,5");
  }
  if (!parse_numbers(args.get("stuck"), stuck_numbers)) args.fail("--stuck takes numbers, e.g. 2,9");
  const uint64_t count = numbers.size();
  std::vector<bool> stuck(count, false);
  for (uint64_t k : stuck_numbers) {
    const auto at = std::find(numbers.begin(), numbers.end(), k);
    if (at == numbers.end()) args.fail("--stuck names " + std::to_string(k) + ", not among --numbers");
    stuck[size_t(at - numbers.begin())] = true;
  }
  if (args.has("cpu")) {
    const std::string err = pin_current_thread(int(args.get_u64("cpu")));
    if (!err.empty()) {
      std::fprintf(stderr, "bbo-tcp-subscribers: %s\n", err.c_str());
      return 2;
    }
  }
  install_stop_signal_handlers();
  // Three descriptors a subscriber (socket, frames, receive log): past the usual soft limit of 1,024 at a few
  // hundred. Raised to the hard limit; what the hard limit still refuses fails at its connection, named.
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  uint32_t levels = 0;
  if (!logfmt::parse_depth_levels(args.get("levels"), levels)) args.fail("--levels takes 0 to 64, or all");
  const std::string prefix = levels ? "depth-subscriber-" : "subscriber-", suffix = levels ? ".dep" : ".bbo";
  const uint16_t port = uint16_t(args.get_u64("port"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(args.get_u64("connect-timeout-ms"));
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  std::vector<Connection> conns(count);
  size_t reading = 0;
  for (uint64_t i = 0; i < count; ++i) {
    Connection& c = conns[i];
    c.stuck = stuck[i];
    const std::string path = args.get("dir") + "/" + prefix + std::to_string(numbers[i]) + suffix;
    try {
      c.out = std::make_unique<SubscriberOutput>(path, kLogReserve, true, levels);
      c.pending.resize(c.out->frame_bytes());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bbo-tcp-subscribers: %s\n", e.what());
      return 1;
    }
    std::string err;
    c.fd = connect_to(port, c.stuck, deadline, err);
    if (c.fd < 0) {
      std::fprintf(stderr, "bbo-tcp-subscribers: subscriber-%llu: %s\n", static_cast<unsigned long long>(numbers[i]),
                   err.c_str());
      return 1;
    }
    sockaddr_in me{};
    socklen_t len = sizeof me;
    ::getsockname(c.fd, reinterpret_cast<sockaddr*>(&me), &len);
    c.local_port = ntohs(me.sin_port);
    write_info(c);
    if (c.stuck) continue;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = i;
    ::epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
    ++reading;
  }
  const auto started = std::chrono::steady_clock::now();
  uint64_t reads = 0;
  std::vector<uint8_t> buf(kReadBytes);
  std::vector<epoll_event> ready(256);
  while (reading && !stop_requested().load()) {
    const int n = ::epoll_wait(ep, ready.data(), int(ready.size()), 100);
    if (n < 0 && errno != EINTR) {
      std::fprintf(stderr, "bbo-tcp-subscribers: epoll_wait: %s\n", std::strerror(errno));
      return 1;
    }
    for (int k = 0; k < n; ++k) {
      Connection& c = conns[ready[k].data.u64];
      const ssize_t got = ::recv(c.fd, buf.data(), buf.size(), MSG_DONTWAIT);
      const uint64_t t = monotonic_ns();
      ++reads;
      if (got > 0) {
        take(c, buf.data(), size_t(got), t);
      } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        end(c, got == 0 ? "end of stream" : std::string("error: ") + std::strerror(errno));
        --reading;
      }
    }
  }
  // Every reader has seen its stream end: the gateway has closed them all, the stuck ones' too. With no reader
  // at all, the stuck ones are held until the harness stops them.
  const bool any_reader = std::find(stuck.begin(), stuck.end(), false) != stuck.end();
  while (!any_reader && !stop_requested().load()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (auto& c : conns) end(c, c.ended ? c.ending : "signal");
  ::close(ep);
  write_cost(args.get("dir") + (levels ? "/depth-tcp-subscribers.json" : "/tcp-subscribers.json"), conns.size(),
             reads, started);
  return 0;
}
