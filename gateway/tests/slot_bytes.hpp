// Bytes of a log's slots built by hand, as FORMAT.md lays them out: what the slot logs' tests compare a file with.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace itchbench::testing {

constexpr uint64_t kNineThirty = 34'200'000'000'000;  // 09:30, ns since midnight

inline void put(std::vector<uint8_t>& out, uint64_t v, int bytes) {  // little-endian, at most 8 bytes
  for (int i = 0; i < bytes; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
inline void zeros(std::vector<uint8_t>& out, int bytes) { out.insert(out.end(), size_t(bytes), uint8_t(0)); }

}  // namespace itchbench::testing
