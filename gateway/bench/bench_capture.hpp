// A generated nasdaq-day capture held in memory for benchmarks: UDP payloads
// back to back, built through the same generator, packetizer and pcap reader
// the tools use (written to a scratch pcap, read back, file removed).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace itchbench::bench {

struct InMemoryCapture {
  std::vector<uint8_t> bytes;
  std::vector<uint32_t> offsets;  // datagram i is bytes[offsets[i] .. offsets[i+1])
  uint64_t messages = 0;
  size_t datagrams() const { return offsets.size() - 1; }
};

// Cached per (messages, seed) for the life of the process.
const InMemoryCapture& nasdaq_day_capture(uint64_t messages, uint64_t seed = 1);

}  // namespace itchbench::bench
