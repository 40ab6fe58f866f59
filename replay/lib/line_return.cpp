#include "replay/lib/line_return.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace itchbench::replay {

LineReturn::LineReturn(int fd) : fd_(fd) {
  if (!::isatty(fd)) return;
  wake_ = ::eventfd(0, EFD_CLOEXEC);
  if (wake_ < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
  // The thread is made with the stop signals blocked (it inherits the mask), then they are unblocked here again.
  sigset_t stops, before;
  sigemptyset(&stops);
  sigaddset(&stops, SIGINT);
  sigaddset(&stops, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stops, &before);
  thread_ = std::thread([this] { run(); });
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

LineReturn::~LineReturn() { stop(); }

void LineReturn::stop() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  static_cast<void>(::write(wake_, &one, sizeof one));
  thread_.join();
  ::close(wake_);
}

void LineReturn::run() {
  char buf[4096];
  pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_, POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents & POLLIN) {
      const ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n > 0) {
        bytes_.fetch_add(uint64_t(n), std::memory_order_relaxed);
        continue;  // what is waiting is read before a stop is looked at
      }
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      return;  // the far end closed (EIO on a pty), or the line failed: nothing more comes back
    }
    if (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL)) return;
    if (fds[1].revents & POLLIN) return;
  }
}

}  // namespace itchbench::replay
