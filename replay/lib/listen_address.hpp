// Where an exchange server of a run listens: --address (loopback only: the
// servers never face a real network) and --port, both checked.
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>

#include "util/cli.hpp"

namespace itchbench::replay {

inline sockaddr_in listen_address(const cli::Args& args) {
  const uint64_t port = args.get_u64("port");
  if (port > 65535) args.fail("--port must be 0..65535");
  sockaddr_in self{};
  self.sin_family = AF_INET;
  self.sin_port = htons(uint16_t(port));
  if (inet_pton(AF_INET, args.get("address").c_str(), &self.sin_addr) != 1 || (ntohl(self.sin_addr.s_addr) >> 24) != 127)
    args.fail("--address must be a loopback address (127.0.0.0/8)");
  return self;
}

}  // namespace itchbench::replay
