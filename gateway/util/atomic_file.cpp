#include "util/atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace itchbench {

void commit_temporary(const std::string& tmp, const std::string& path, bool write_ok) {
  if (!write_ok) {
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": rename: " + std::strerror(e));
  }
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = temporary_path(path);
  std::ofstream out(tmp, std::ios::binary);
  out << text;
  const bool ok = static_cast<bool>(out.flush());
  const int e = errno;  // the write's (a disk full: ENOSPC)
  out.close();
  if (!ok) {
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot write: " + (e ? std::strerror(e) : "write failed"));
  }
  commit_temporary(tmp, path);
}

}  // namespace itchbench
