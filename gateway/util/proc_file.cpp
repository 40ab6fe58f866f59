#include "util/proc_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace itchbench {

std::string read_proc_file(const std::string& path) {
  std::string text;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      text.append(buf, size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;  // the end, or an error: what was read is all there is
  }
  close(fd);
  return text;
}

}  // namespace itchbench
