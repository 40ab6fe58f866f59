// PriceLadder: which ticks fit its 64-tick window, and the lowest and highest
// present ticks as levels come and go, across the ring's wrap (tick t lives in
// slot t mod 64). Expected values are worked by hand from that rule, or (rank
// and select) taken from a sorted set of the same ticks.
#include <gtest/gtest.h>

#include <iterator>
#include <random>
#include <set>

#include "book/price_ladder.hpp"

using itchbench::PriceLadder;

TEST(PriceLadder, TicksArePricesInWholeCents) {
  EXPECT_TRUE(PriceLadder::on_tick(0));
  EXPECT_TRUE(PriceLadder::on_tick(1234500));  // $123.45
  EXPECT_FALSE(PriceLadder::on_tick(1234501));
  EXPECT_FALSE(PriceLadder::on_tick(99));
  EXPECT_EQ(PriceLadder::tick_of(1234500), 12345u);
  EXPECT_EQ(PriceLadder::tick_of(4294967200u), 42949672u);  // the highest whole cent a price can hold
}

TEST(PriceLadder, NothingFitsWithoutABlockAndAnythingFitsAnEmptyOne) {
  PriceLadder l;
  EXPECT_FALSE(l.has_block());
  for (uint32_t t : {0u, 1u, 63u, 64u, 12345u, 42949672u}) EXPECT_FALSE(l.fits(t)) << t;
  l.set_block(1000);
  EXPECT_TRUE(l.empty());
  for (uint32_t t : {0u, 1u, 63u, 64u, 12345u, 42949672u}) EXPECT_TRUE(l.fits(t)) << t;
}

TEST(PriceLadder, WindowIsSixtyFourTicksWide) {
  PriceLadder l;
  l.set_block(0);
  l.add(100);
  // With 100 present, a tick fits when the span stays at most 63: 37 .. 163.
  EXPECT_FALSE(l.fits(36));
  EXPECT_TRUE(l.fits(37));
  EXPECT_TRUE(l.fits(163));
  EXPECT_FALSE(l.fits(164));
  l.add(130);  // now 67 .. 163
  EXPECT_FALSE(l.fits(66));
  EXPECT_TRUE(l.fits(67));
  EXPECT_TRUE(l.fits(163));
  EXPECT_FALSE(l.fits(164));
  EXPECT_FALSE(l.fits(0));
  EXPECT_FALSE(l.fits(42949672u));
}

TEST(PriceLadder, PlacesAreTheBlockPlusTheSlot) {
  PriceLadder l;
  l.set_block(640);
  EXPECT_EQ(l.place_of(100), 640u + 36u);  // 100 mod 64 = 36
  EXPECT_EQ(l.place_of(128), 640u);
  EXPECT_TRUE(l.owns(640));
  EXPECT_TRUE(l.owns(703));
  EXPECT_FALSE(l.owns(639));
  EXPECT_FALSE(l.owns(704));
  EXPECT_FALSE(PriceLadder{}.owns(0));
}

TEST(PriceLadder, LowestAndHighestFollowRemovalsAcrossTheWrap) {
  PriceLadder l;
  l.set_block(0);
  // Ticks 60 .. 70 at every other tick but 64: slots 60, 62, 2, 4, 6 (66, 68, 70 wrap past slot 63).
  for (uint32_t t : {60u, 62u, 66u, 68u, 70u}) l.add(t);
  EXPECT_EQ(l.lowest(), 60u);
  EXPECT_EQ(l.highest(), 70u);
  EXPECT_TRUE(l.present(62));
  EXPECT_FALSE(l.present(64));
  l.remove(60);
  EXPECT_EQ(l.lowest(), 62u);
  l.remove(62);  // the next above is across the wrap, in slot 2
  EXPECT_EQ(l.lowest(), 66u);
  l.remove(70);
  EXPECT_EQ(l.highest(), 68u);
  l.remove(68);
  EXPECT_EQ(l.lowest(), 66u);
  EXPECT_EQ(l.highest(), 66u);
  l.add(64);  // slot 0
  l.add(63);  // slot 63
  l.remove(66);
  EXPECT_EQ(l.highest(), 64u);
  l.remove(64);  // the next below is across the wrap, in slot 63
  EXPECT_EQ(l.highest(), 63u);
  EXPECT_EQ(l.lowest(), 63u);
}

TEST(PriceLadder, AWindowThatMovesKeepsItsOrder) {
  PriceLadder l;
  l.set_block(0);
  // Ticks 1000 and 1063: the whole window, slots 40 and 39 (1063 mod 64 = 39).
  l.add(1000);
  l.add(1063);
  EXPECT_FALSE(l.fits(999));
  EXPECT_FALSE(l.fits(1064));
  l.remove(1000);  // the window may now move up to 1126
  EXPECT_EQ(l.lowest(), 1063u);
  EXPECT_TRUE(l.fits(1126));
  l.add(1126);  // slot 38, just below 1063's
  EXPECT_EQ(l.highest(), 1126u);
  l.remove(1063);
  EXPECT_EQ(l.lowest(), 1126u);
}

TEST(PriceLadder, AddingAPresentTickChangesNothing) {
  PriceLadder l;
  l.set_block(0);
  l.add(500);
  l.add(510);
  l.add(500);
  EXPECT_EQ(l.lowest(), 500u);
  EXPECT_EQ(l.highest(), 510u);
  l.remove(500);
  EXPECT_EQ(l.lowest(), 510u);
}

TEST(PriceLadder, EmptyAgainFitsAnywhere) {
  PriceLadder l;
  l.set_block(0);
  l.add(5);
  l.add(60);
  l.remove(5);
  l.remove(60);
  EXPECT_TRUE(l.empty());
  EXPECT_TRUE(l.fits(0));
  EXPECT_TRUE(l.fits(42949672u));
  l.add(42949672u);
  EXPECT_EQ(l.lowest(), 42949672u);
  EXPECT_EQ(l.highest(), 42949672u);
  EXPECT_FALSE(l.fits(42949672u - 64));
  EXPECT_TRUE(l.fits(42949672u - 63));
}

// Rank and select, against a std::set of the present ticks, on random windows that wrap the ring (a tick's slot is
// t mod 64, so a window starting at 1000 + k crosses slot 0 for most k).
TEST(PriceLadder, RankAndSelectAgreeWithASortedSetAcrossTheWrap) {
  std::mt19937 rng(3);
  for (int round = 0; round < 2000; ++round) {
    PriceLadder l;
    l.set_block(0);
    std::set<uint32_t> present;
    const uint32_t from = 1000 + rng() % 64;
    for (int k = 0, n = 1 + int(rng() % 40); k < n; ++k) {
      const uint32_t t = from + rng() % 64;
      l.add(t);
      present.insert(t);
    }
    ASSERT_EQ(l.count(), present.size());
    for (uint32_t t = from - 3; t < from + 67; ++t) {
      const auto above = uint32_t(std::distance(present.upper_bound(t), present.end()));
      const auto below = uint32_t(std::distance(present.begin(), present.lower_bound(t)));
      ASSERT_EQ(l.count_better(t, true), above) << "round " << round << " tick " << t;
      ASSERT_EQ(l.count_better(t, false), below) << "round " << round << " tick " << t;
      if (present.count(t)) {
        ASSERT_EQ(l.count_better_present(t, true), above) << "round " << round << " tick " << t;
        ASSERT_EQ(l.count_better_present(t, false), below) << "round " << round << " tick " << t;
      }
    }
    uint32_t k = 0;
    for (auto it = present.begin(); it != present.end(); ++it, ++k) ASSERT_EQ(l.nth_best(k, false), *it);
    k = 0;
    for (auto it = present.rbegin(); it != present.rend(); ++it, ++k) ASSERT_EQ(l.nth_best(k, true), *it);
  }
}
