// A generated session capture held in memory for benchmarks: UDP payloads
// back to back, built through the same generator, packetizer and pcap reader
// the tools use (written to a scratch pcap, read back, file removed).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace itchbench::bench {

struct InMemoryCapture {
  std::vector<uint8_t> bytes;
  std::vector<uint32_t> offsets;  // datagram i is bytes[offsets[i] .. offsets[i+1])
  uint64_t messages = 0;
  size_t datagrams() const { return offsets.size() - 1; }
};

// An itch-synth profile (nasdaq-day, deep-book, ...), cached per (profile,
// messages, seed) for the life of the process; messages 0 keeps the
// profile's own count.
const InMemoryCapture& session_capture(const std::string& profile, uint64_t messages, uint64_t seed = 1);
inline const InMemoryCapture& nasdaq_day_capture(uint64_t messages, uint64_t seed = 1) {
  return session_capture("nasdaq-day", messages, seed);
}

}  // namespace itchbench::bench
