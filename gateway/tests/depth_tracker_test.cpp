// The depth tracker's one-side, below-the-top shortcut against the plain rule (docs/book-and-bbo.md, "Depth"): an
// event exactly when a stock's top N levels, both sides read in full, differ from the last ones emitted, and its
// levels exactly the prices whose shares in the top N differ, best first (0: gone from the top N).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
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

// The plain rule's changes on one side: the top N before and after as maps of price to shares, each price whose
// shares differ (0 where it is only before), best first.
std::vector<std::pair<uint32_t, uint64_t>> plain_changes(const BookLevel* before, const BookLevel* after, bool bid) {
  std::map<uint32_t, uint64_t> was, now;
  for (uint32_t k = 0; k < kLevels; ++k) {
    if (before[k].qty) was[before[k].px] = before[k].qty;
    if (after[k].qty) now[after[k].px] = after[k].qty;
  }
  std::map<uint32_t, uint64_t> all = was;
  for (const auto& [px, qty] : now) all[px] = qty;
  std::vector<std::pair<uint32_t, uint64_t>> out;
  for (const auto& [px, qty] : all) {
    const uint64_t after_qty = now.count(px) ? now[px] : 0;
    if (!was.count(px) || was[px] != after_qty) out.emplace_back(px, after_qty);
  }
  if (bid) std::reverse(out.begin(), out.end());  // the best bid is the highest price
  return out;
}

std::vector<std::pair<uint32_t, uint64_t>> taken(const DepthTracker& tracker, uint32_t n) {
  std::vector<std::pair<uint32_t, uint64_t>> out;
  for (uint32_t k = 0; k < n; ++k) out.emplace_back(tracker.changes()[k].px, tracker.changes()[k].qty);
  return out;
}

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
    BookTouch touch;  // what the book tells of the message
    bool bid;
    if (what == 0) {  // add; now and then one the book refuses (no shares), which changes nothing
      bid = rng() % 2;
      const uint32_t price = price_of(bid, rng);
      const uint32_t shares = rng() % 50 == 0 ? 0 : 100 + rng() % 5;
      book.add(1, next_ref, bid ? 'B' : 'S', shares, price, touch);
      if (shares != 0) live.push_back({next_ref, bid, price});
      ++next_ref;
    } else {
      const size_t at = rng() % live.size();
      Live o = live[at];
      bid = o.bid;
      if (what == 1) {  // delete
        book.remove(o.ref, touch);
        live.erase(live.begin() + long(at));
      } else if (what == 2) {  // a partial cancel
        book.reduce(o.ref, 1, touch);
      } else {  // replace, on the same side at another price of the band (what 3) or at its own (what 4)
        const uint32_t price = what == 3 ? price_of(o.bid, rng) : o.price;
        book.replace(o.ref, next_ref, 100 + rng() % 5, price, touch);
        live[at] = {next_ref++, o.bid, price};
      }
    }
    const size_t side = bid ? 0 : kLevels;
    const std::vector<BookLevel> before = plain.last;
    const bool expected = plain.changed(book);
    const BookLevel nth = plain.last[side + kLevels - 1];
    const uint32_t n = tracker.take_change(book, touch);
    ASSERT_EQ(n != 0, expected) << "message " << i;
    ASSERT_EQ(tracker.bid_changes(), bid ? n : 0u) << "message " << i;
    if (expected) {
      ++events;
      ASSERT_EQ(taken(tracker, n), plain_changes(&before[side], &plain.last[side], bid)) << "message " << i;
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
    BookTouch touch;
    book.add(1, r, 'B', 100, uint32_t(10000 - 100 * r), touch);
    EXPECT_TRUE(tracker.take_change(book, touch));
  }
  // Far below the three, still within five levels (and off the ladder): an event of that one level.
  BookTouch far;
  book.add(1, 4, 'B', 100, 5000, far);
  ASSERT_EQ(tracker.take_change(book, far), 1u);
  EXPECT_EQ(tracker.changes()[0].px, 5000u);
  EXPECT_EQ(tracker.changes()[0].qty, 100u);
}

TEST(DepthTracker, ALevelMadeAtTheTopPushesTheFifthOut) {
  OrderBook book{1024};
  DepthTracker tracker(kLevels);
  for (uint64_t r = 1; r <= kLevels; ++r) {
    BookTouch touch;
    book.add(1, r, 'S', 100, uint32_t(10000 + 100 * r), touch);
    ASSERT_EQ(tracker.take_change(book, touch), 1u);
  }
  // A better offer than all five: it comes in at the top, and the worst of the five (10500) leaves the top five.
  BookTouch top;
  book.add(1, 9, 'S', 300, 10000, top);
  ASSERT_EQ(tracker.take_change(book, top), 2u);
  EXPECT_EQ(tracker.bid_changes(), 0u);
  EXPECT_EQ(tracker.changes()[0].px, 10000u);
  EXPECT_EQ(tracker.changes()[0].qty, 300u);
  EXPECT_EQ(tracker.changes()[1].px, 10500u);
  EXPECT_EQ(tracker.changes()[1].qty, 0u);
  // Deleting it brings 10500 back: two changes again, best first.
  BookTouch gone;
  book.remove(9, gone);
  ASSERT_EQ(tracker.take_change(book, gone), 2u);
  EXPECT_EQ(tracker.changes()[0].px, 10000u);
  EXPECT_EQ(tracker.changes()[0].qty, 0u);
  EXPECT_EQ(tracker.changes()[1].px, 10500u);
  EXPECT_EQ(tracker.changes()[1].qty, 100u);
}

TEST(DepthTracker, AskedForMoreLevelsThanTheDepthLogHoldsItRefuses) {
  // Its arrays hold 64 levels a side (the depth log's limit, FORMAT.md), the most --levels takes.
  EXPECT_NO_THROW(DepthTracker(64));
  EXPECT_THROW(DepthTracker(65), std::invalid_argument);
}
