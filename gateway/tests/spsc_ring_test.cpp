#include <gtest/gtest.h>

#include <thread>

#include "pipeline/spsc_ring.hpp"

using itchbench::SpscRing;

TEST(SpscRing, RefusesWhenFullAndKeepsOrder) {
  SpscRing<int> ring(4);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(ring.push(i));
  EXPECT_FALSE(ring.push(99));
  int v = -1;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(ring.pop(v));
    EXPECT_EQ(v, i);
  }
  EXPECT_FALSE(ring.pop(v));
}

TEST(SpscRing, TwoThreadsLoseNothing) {
  SpscRing<uint64_t> ring(64);
  constexpr uint64_t kN = 1000000;
  std::thread producer([&] {
    for (uint64_t i = 1; i <= kN; ++i)
      while (!ring.push(i)) std::this_thread::yield();
  });
  uint64_t expected = 1, v = 0;
  while (expected <= kN) {
    if (ring.pop(v)) {
      ASSERT_EQ(v, expected);
      ++expected;
    }
  }
  producer.join();
}
