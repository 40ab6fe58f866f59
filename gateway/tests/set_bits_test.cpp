// set_bits, both ways it counts (the CPU's instruction where it has one, and the portable count), against the
// bits tested one at a time.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "util/set_bits.hpp"

namespace set_bits_test {

uint32_t bit_by_bit(uint64_t x) {
  uint32_t n = 0;
  for (int i = 0; i < 64; ++i) n += (x >> i) & 1;
  return n;
}

TEST(SetBits, CountsEachWordsBitsBothWays) {
  std::vector<uint64_t> words = {0, ~uint64_t(0), 1, uint64_t(1) << 63, 0x5555555555555555u, 0xaaaaaaaaaaaaaaaau,
                                 0x8000000000000001u, 0x00ff00ff00ff00ffu};
  for (int i = 0; i < 64; ++i) words.push_back((uint64_t(1) << i) - 1);  // the i lowest bits
  std::mt19937_64 rng(20261201);
  for (int i = 0; i < 10000; ++i) words.push_back(rng() & rng());  // sparse and dense words alike
  for (const uint64_t w : words) {
    EXPECT_EQ(itchbench::set_bits(w), bit_by_bit(w)) << std::hex << w;
    EXPECT_EQ(itchbench::set_bits_portable(w), bit_by_bit(w)) << std::hex << w;
  }
#if defined(__x86_64__) && !defined(__POPCNT__)
  RecordProperty("cpu_has_popcnt", itchbench::kCpuHasPopcnt ? "yes" : "no");
#endif
}

}  // namespace set_bits_test
