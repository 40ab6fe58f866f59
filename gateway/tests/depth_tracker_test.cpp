// The depth tracker's one-side, below-the-top shortcut against the plain rule (docs/book-and-bbo.md, "Depth"): an
// event exactly when a stock's top N levels, both sides read in full, differ from the last ones emitted.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "book/depth_tracker.hpp"
#include "book/order_book.hpp"

using namespace itchbench;

namespace {

constexpr uint32_t kLevels = 5;

// The plain rule: both sides read in full after each message, compared with the last levels emitted.
struct PlainRule {
  std::vector<BookLevel> last = std::vector<BookLevel>(2 * kLevels);
  bool changed(const OrderBook& book) {
    std::vector<BookLevel> now(2 * kLevels);
    book.top_levels(1, true, kLevels, now.data());
    book.top_levels(1, false, kLevels, now.data() + kLevels);
    if (now == last) return false;
    last = now;
    return true;
  }
};

struct Live {
  uint64_t ref;
  bool bid;
  uint32_t price;
};

}  // namespace

// Adds, deletes, partial cancels and replaces (to another price of the band or the same one) of one stock, each
// message's touch given to the tracker and checked against the plain rule. price(bid, rng) draws a price.
// off_ladder: the levels the book made off its ladder (an out-parameter: ASSERT_* needs a function returning void).
template <class Price>
void run_in_lockstep(Price price_of, uint32_t seed, uint64_t& off_ladder) {
  std::mt19937 rng(seed);
  OrderBook book{1 << 16};
  DepthTracker tracker(kLevels);
  PlainRule plain;
  std::vector<Live> live;
  uint64_t next_ref = 1;
  int events = 0, skipped_below = 0;
  for (int i = 0; i < 20000; ++i) {
    const int what = live.empty() ? 0 : int(rng() % 5);
    DepthTouch touch;
    if (what == 0) {  // add; now and then one the book refuses (no shares), which changes nothing
      const bool bid = rng() % 2;
      const uint32_t price = price_of(bid, rng);
      const uint32_t shares = rng() % 50 == 0 ? 0 : 100 + rng() % 5;
      book.add(1, next_ref, bid ? 'B' : 'S', shares, price);
      if (shares != 0) live.push_back({next_ref, bid, price});
      ++next_ref;
      touch = {1, bid, price, price};
    } else {
      const size_t at = rng() % live.size();
      Live o = live[at];
      touch = {1, o.bid, o.price, o.price};
      if (what == 1) {  // delete
        book.remove(o.ref);
        live.erase(live.begin() + long(at));
      } else if (what == 2) {  // a partial cancel
        book.reduce(o.ref, 1);
      } else {  // replace, on the same side at another price of the band (what 3) or at its own (what 4)
        const uint32_t price = what == 3 ? price_of(o.bid, rng) : o.price;
        book.replace(o.ref, next_ref, 100 + rng() % 5, price);
        live[at] = {next_ref++, o.bid, price};
        touch.other_price = price;
      }
    }
    const bool expected = plain.changed(book);
    const BookLevel nth = plain.last[(touch.bid ? 0 : kLevels) + kLevels - 1];
    ASSERT_EQ(tracker.take_change(book, touch), expected) << "message " << i;
    if (expected) {
      ++events;
      for (uint32_t k = 0; k < 2 * kLevels; ++k) ASSERT_EQ(tracker.taken()[k], plain.last[k]) << "message " << i;
    } else if (nth.qty != 0) {
      ++skipped_below;
    }
  }
  EXPECT_GT(events, 1000);         // the top moved often,
  EXPECT_GT(skipped_below, 1000);  // and much happened below it
  off_ladder = book.levels_off_ladder();
}

TEST(DepthTracker, TheShortcutEmitsExactlyWhenTheWholeTopChanges) {
  // Whole ticks in a narrow band (the ladder's), so that adds, cancels and replaces keep crossing the fifth level.
  uint64_t off_ladder = 0;
  run_in_lockstep(
      [](bool bid, std::mt19937& rng) { return bid ? 10000 - 100 * (rng() % 12) : 10100 + 100 * (rng() % 12); }, 7,
      off_ladder);
  EXPECT_EQ(off_ladder, 0u);
}

TEST(DepthTracker, LevelsOffTheLadderAreFollowedAsExactly) {
  // Sub-penny prices and ticks too far apart for one ladder window: levels the book keeps off its ladder, mixed
  // with ladder ones at the top.
  uint64_t off_ladder = 0;
  run_in_lockstep(
      [](bool bid, std::mt19937& rng) {
        const uint32_t step = rng() % 3 == 0 ? 37 : rng() % 3 == 0 ? 100 * 70 : 100;
        return bid ? 1000000 - step * (rng() % 10) : 1000100 + step * (rng() % 10);
      },
      11, off_ladder);
  EXPECT_GT(off_ladder, 1000u);
}

TEST(DepthTracker, ASideWithFewerThanNLevelsTakesAnyNewLevel) {
  OrderBook book{1024};
  DepthTracker tracker(kLevels);
  for (uint64_t r = 1; r <= 3; ++r) {
    book.add(1, r, 'B', 100, uint32_t(10000 - 100 * r));
    EXPECT_TRUE(tracker.take_change(book, DepthTouch{1, true, uint32_t(10000 - 100 * r), uint32_t(10000 - 100 * r)}));
  }
  // Far below the three, still within five levels: an event.
  book.add(1, 4, 'B', 100, 5000);
  EXPECT_TRUE(tracker.take_change(book, DepthTouch{1, true, 5000, 5000}));
  EXPECT_EQ(tracker.taken()[3].px, 5000u);
}
