#include "bench/bench_capture.hpp"

#include <unistd.h>

#include <map>
#include <string>
#include <tuple>

#include "replay/lib/mold_packetizer.hpp"
#include "replay/lib/session_generator.hpp"
#include "source/capture_file.hpp"

namespace itchbench::bench {

const InMemoryCapture& session_capture(const std::string& profile, uint64_t messages, uint64_t seed) {
  static std::map<std::tuple<std::string, uint64_t, uint64_t>, InMemoryCapture> cache;
  const auto key = std::make_tuple(profile, messages, seed);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;

  const std::string path = "/tmp/itchbench-bench-" + std::to_string(::getpid()) + ".pcap";
  replay::GeneratorConfig cfg = replay::profile_by_name(profile);
  if (messages) cfg.messages = messages;
  {
    cfg.seed = seed;
    replay::PacketizerConfig pc;
    pc.max_messages_per_packet = 16;
    pc.batch_window_ns = 50000;
    net::PcapWriter writer(path, net::kLinkEthernet);
    replay::MoldPacketizer packetizer(writer, pc);
    replay::generate_session(cfg, [&](const uint8_t* m, uint16_t n, uint64_t ts) { packetizer.add(m, n, ts); });
    packetizer.finish(true);
    writer.commit();
  }
  InMemoryCapture cap;
  CaptureReader reader(path);
  reader.run(
      [&](uint64_t, const uint8_t* p, size_t n) {
        cap.offsets.push_back(uint32_t(cap.bytes.size()));
        cap.bytes.insert(cap.bytes.end(), p, p + n);
      },
      [](uint64_t, const uint8_t*, size_t) {});
  cap.offsets.push_back(uint32_t(cap.bytes.size()));
  cap.messages = cfg.messages;
  ::unlink(path.c_str());
  return cache.emplace(key, std::move(cap)).first->second;
}

}  // namespace itchbench::bench
