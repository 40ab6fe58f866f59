#include "publish/doorbell.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace itchbench {

Doorbell::Doorbell() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (fd_ < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
}

Doorbell::~Doorbell() {
  if (fd_ >= 0) ::close(fd_);
}

void Doorbell::wake() {
  const uint64_t one = 1;
  ++rings_;
  // A full counter (2^64 - 2 rings unread) cannot happen here: the consumer reads it on every wake.
  [[maybe_unused]] ssize_t n = ::write(fd_, &one, sizeof one);
}

void Doorbell::clear() {
  uint64_t count;
  [[maybe_unused]] ssize_t n = ::read(fd_, &count, sizeof count);  // EAGAIN when nothing rang: fine
}

}  // namespace itchbench
