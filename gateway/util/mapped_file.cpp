#include "util/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace itchbench {

MappedFile::MappedFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw std::runtime_error(path + ": " + std::strerror(e));
  }
  size_ = size_t(st.st_size);
  if (size_ > 0) {
    void* m = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      throw std::runtime_error(path + ": mmap: " + std::strerror(e));
    }
    ::madvise(m, size_, MADV_SEQUENTIAL);
    data_ = released_ = static_cast<const uint8_t*>(m);
    next_window_ = data_ + kWindowBytes;
    map_in(0, 2 * kWindowBytes);
  }
  ::close(fd);
}

void MappedFile::enter_window(const uint8_t* p) {
  const size_t at = size_t(p - data_);
  const size_t window = at / kWindowBytes;
  next_window_ = data_ + (window + 1) * kWindowBytes;
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  auto* behind = reinterpret_cast<const uint8_t*>(uintptr_t(p) & ~(page - 1));
  if (behind > released_) {
    ::madvise(const_cast<uint8_t*>(released_), size_t(behind - released_), MADV_DONTNEED);
    released_ = behind;
  }
  map_in(std::max(mapped_end_, window * kWindowBytes), (window + 2) * kWindowBytes);
}

void MappedFile::map_in(size_t from, size_t to) {
  to = std::min(to, size_);
  if (from >= to) return;
  mapped_end_ = to;
  uint8_t* start = const_cast<uint8_t*>(data_) + from;
  if (::madvise(start, to - from, MADV_POPULATE_READ) == 0) return;
  // A kernel without it (before 5.14): one read a page faults them in here instead.
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  for (size_t at = 0; at < to - from; at += page) static_cast<void>(*static_cast<volatile const uint8_t*>(start + at));
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace itchbench
