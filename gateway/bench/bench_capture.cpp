#include "bench/bench_capture.hpp"

#include <unistd.h>

#include <map>
#include <string>
#include <tuple>

#include "protocol/moldudp64.hpp"
#include "source/capture_file.hpp"
#include "tests/synthesized_session.hpp"

namespace itchbench::bench {

const InMemoryCapture& session_capture(const std::string& profile, uint64_t messages, uint64_t seed) {
  static std::map<std::tuple<std::string, uint64_t, uint64_t>, InMemoryCapture> cache;
  const auto key = std::make_tuple(profile, messages, seed);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;

  const std::string path = "/tmp/itchbench-bench-" + std::to_string(::getpid()) + ".pcap";
  // Up to 16 messages a packet within 50 us: how a busy feed batches them.
  std::vector<std::string> args{"--profile", profile, "--seed", std::to_string(seed), "--per-packet", "16",
                                "--batch-window-ns", "50000"};
  if (messages) args.insert(args.end(), {"--messages", std::to_string(messages)});
  testing::synthesize(args, path);
  InMemoryCapture cap;
  CaptureReader reader(path);
  reader.run(
      [&](uint64_t, const uint8_t* p, size_t n) {
        cap.offsets.push_back(uint32_t(cap.bytes.size()));
        cap.bytes.insert(cap.bytes.end(), p, p + n);
        mold::Packet packet;
        if (mold::parse(p, n, packet) == mold::ParseStatus::kOk) cap.messages += packet.count();
      },
      [](uint64_t, const uint8_t*, size_t) {});
  cap.offsets.push_back(uint32_t(cap.bytes.size()));
  ::unlink(path.c_str());
  return cache.emplace(key, std::move(cap)).first->second;
}

}  // namespace itchbench::bench
