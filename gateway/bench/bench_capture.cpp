#include "bench/bench_capture.hpp"

#include <unistd.h>

#include <map>
#include <string>

#include "replay/lib/mold_packetizer.hpp"
#include "replay/lib/session_generator.hpp"
#include "source/capture_file.hpp"

namespace itchbench::bench {

const InMemoryCapture& nasdaq_day_capture(uint64_t messages, uint64_t seed) {
  static std::map<std::pair<uint64_t, uint64_t>, InMemoryCapture> cache;
  auto it = cache.find({messages, seed});
  if (it != cache.end()) return it->second;

  const std::string path = "/tmp/itchbench-bench-" + std::to_string(::getpid()) + ".pcap";
  {
    replay::GeneratorConfig cfg = replay::nasdaq_day_profile();
    cfg.messages = messages;
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
  cap.messages = messages;
  CaptureReader reader(path);
  reader.run(
      [&](uint64_t, const uint8_t* p, size_t n) {
        cap.offsets.push_back(uint32_t(cap.bytes.size()));
        cap.bytes.insert(cap.bytes.end(), p, p + n);
      },
      [](uint64_t, const uint8_t*, size_t) {});
  cap.offsets.push_back(uint32_t(cap.bytes.size()));
  ::unlink(path.c_str());
  return cache.emplace(std::make_pair(messages, seed), std::move(cap)).first->second;
}

}  // namespace itchbench::bench
