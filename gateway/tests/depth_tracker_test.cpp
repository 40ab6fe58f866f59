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

TEST(DepthTracker, TheShortcutEmitsExactlyWhenTheWholeTopChanges) {
  // Prices in a narrow band, so that adds, cancels and replaces keep crossing the fifth level of each side.
  std::mt19937 rng(7);
  OrderBook book{1 << 16};
  DepthTracker tracker(kLevels);
  PlainRule plain;
  std::vector<Live> live;
  uint64_t next_ref = 1;
  int events = 0, skipped_below = 0;
  for (int i = 0; i < 20000; ++i) {
    const int what = live.empty() ? 0 : int(rng() % 4);
    DepthTouch touch;
    if (what == 0) {  // add
      const bool bid = rng() % 2;
      const uint32_t price = bid ? 10000 - 100 * (rng() % 12) : 10100 + 100 * (rng() % 12);
      book.add(1, next_ref, bid ? 'B' : 'S', 100 + rng() % 5, price);
      live.push_back({next_ref++, bid, price});
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
      } else {  // replace, on the same side at another price of the band
        const uint32_t price = o.bid ? 10000 - 100 * (rng() % 12) : 10100 + 100 * (rng() % 12);
        book.replace(o.ref, next_ref, 100, price);
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
