// A socket's receive buffer of the size asked: past net.core.rmem_max where the process may (root,
// SO_RCVBUFFORCE), within it otherwise. A burst the reader has not taken yet then waits in the kernel instead
// of being dropped there.
#pragma once

#include <sys/socket.h>

namespace itchbench::net {

inline void request_receive_buffer(int fd, int bytes) {
  if (bytes <= 0) return;
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0)
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

}  // namespace itchbench::net
