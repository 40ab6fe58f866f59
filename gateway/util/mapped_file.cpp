#include "util/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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
  }
  ::close(fd);
}

void MappedFile::release(const uint8_t* p) {
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  auto* end = reinterpret_cast<uint8_t*>(uintptr_t(p) & ~(page - 1));
  if (end <= released_) return;
  ::madvise(const_cast<uint8_t*>(released_), size_t(end - released_), MADV_DONTNEED);
  released_ = end;
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace itchbench
