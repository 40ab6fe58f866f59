#include "util/atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <sys/stat.h>

namespace itchbench {

namespace {

// path exists and is something other than a regular file (symlinks followed).
bool taken_by_other_than_a_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
}

std::string not_a_file(const std::string& path) {
  return path + ": not a regular file (a device, a pipe or a folder): an output is written to a file of its own and "
                "renamed into place, which would replace it";
}

}  // namespace

void require_regular_output(const std::string& path) {
  if (taken_by_other_than_a_file(path)) throw std::runtime_error(not_a_file(path));
}

std::FILE* open_temporary(const std::string& tmp, const std::string& path) {
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw std::runtime_error(path + ": cannot be written: " + std::strerror(errno));
  return f;
}

void commit_temporary(const std::string& tmp, const std::string& path, bool write_ok) {
  if (!write_ok || taken_by_other_than_a_file(path)) {
    std::remove(tmp.c_str());
    throw std::runtime_error(write_ok ? not_a_file(path) : path + ": write failed");
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
