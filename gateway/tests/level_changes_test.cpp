// Every level's changes (--levels all; docs/book-and-bbo.md, "Every level") against the plain rule: both sides of
// the book read whole before and after each message, and every price whose shares differ is a change.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "book/level_changes.hpp"
#include "book/order_book.hpp"

// Its names kept to itself: the test binary is compiled as unity sources (CMakeLists.txt).
namespace level_changes_test {

using namespace itchbench;

namespace {

// A side of the whole book, price -> shares.
std::map<uint32_t, uint64_t> whole_side(const OrderBook& book, char side) {
  std::map<uint32_t, uint64_t> out;
  for (const OrderBook::LevelView& l : book.levels(1, side)) out[l.price] = l.shares;
  return out;
}

struct Change {
  uint32_t px;
  uint64_t qty;
  bool operator==(const Change& o) const { return px == o.px && qty == o.qty; }
};

// The plain rule's changes of one side: each price present before or after whose shares differ (0: gone).
std::vector<Change> plain_changes(const std::map<uint32_t, uint64_t>& before,
                                  const std::map<uint32_t, uint64_t>& after) {
  std::vector<Change> out;
  std::map<uint32_t, uint64_t> prices = before;
  prices.insert(after.begin(), after.end());
  for (const auto& [px, unused] : prices) {
    const auto b = before.find(px), a = after.find(px);
    const uint64_t was = b == before.end() ? 0 : b->second, now = a == after.end() ? 0 : a->second;
    if (was != now) out.push_back({px, now});
  }
  return out;
}

struct Live {
  uint64_t ref;
  bool bid;
  uint32_t price;
  uint32_t shares;
};

}  // namespace

TEST(LevelChanges, EveryLevelAMessageChangesAndNoOther) {
  std::mt19937 rng(5);
  OrderBook book{1 << 16};
  std::vector<Live> live;
  uint64_t next_ref = 1;
  int none = 0, two = 0;
  // Whole ticks and sub-penny prices far apart: levels on the ladder and off it.
  const auto price_of = [&](bool bid) {
    const uint32_t step = rng() % 4 == 0 ? 37 : rng() % 4 == 0 ? 100 * 70 : 100;
    return bid ? 1000000 - step * (rng() % 10) : 1000100 + step * (rng() % 10);
  };
  for (int i = 0; i < 20000; ++i) {
    const int what = live.empty() ? 0 : int(rng() % 5);
    BookTouch touch;  // what the book tells of the message
    bool bid;
    uint32_t old_price = 0;  // a replace's
    const std::map<uint32_t, uint64_t> bids = whole_side(book, 'B'), asks = whole_side(book, 'S');
    if (what == 0) {  // add; now and then one the book refuses (no shares), which changes nothing
      bid = rng() % 2;
      const uint32_t price = price_of(bid), shares = rng() % 50 == 0 ? 0 : 100 + rng() % 5;
      book.add(1, next_ref, bid ? 'B' : 'S', shares, price, touch);
      if (shares != 0) live.push_back({next_ref, bid, price, shares});
      ++next_ref;
    } else {
      const size_t at = rng() % live.size();
      const Live o = live[at];
      bid = o.bid;
      old_price = o.price;
      // A replace goes to another price of the band (what 3), or stays at its own (what 4) with the order's own
      // shares half the time: that changes no level. A cancel takes 1 to 150 shares, at times more than it has.
      const uint32_t price = what == 3 ? price_of(o.bid) : o.price;
      const uint32_t cancel = 1 + rng() % 150;
      if (what == 1 || (what == 2 && cancel >= o.shares)) {
        if (what == 1) book.remove(o.ref, touch);
        else book.reduce(o.ref, cancel, touch);
        live.erase(live.begin() + long(at));
      } else if (what == 2) {  // a partial cancel
        book.reduce(o.ref, cancel, touch);
        live[at].shares -= cancel;
      } else {
        const uint32_t shares = what == 4 && rng() % 2 ? o.shares : 100 + rng() % 5;
        book.replace(o.ref, next_ref, shares, price, touch);
        live[at] = {next_ref++, o.bid, price, shares};
      }
    }
    const std::vector<Change> expected = bid ? plain_changes(bids, whole_side(book, 'B'))
                                             : plain_changes(asks, whole_side(book, 'S'));
    // The side not touched is left as it was.
    ASSERT_EQ(bid ? asks : bids, whole_side(book, bid ? 'S' : 'B')) << "message " << i;
    if (touch.levels != 0) {
      ASSERT_EQ(touch.bid, bid) << "message " << i;
    }
    LevelChange got[2];
    const uint32_t n = level_changes(touch, got);
    ASSERT_EQ(n, expected.size()) << "message " << i;
    // The old price's change first (the plain rule lists by price: match either order, then check ours).
    for (uint32_t k = 0; k < n; ++k) {
      const Change c{got[k].px, got[k].qty};
      ASSERT_NE(std::find(expected.begin(), expected.end(), c), expected.end()) << "message " << i;
    }
    if (n == 2) {
      ASSERT_EQ(got[0].px, old_price) << "message " << i;
      ++two;
    }
    none += n == 0;
  }
  EXPECT_GT(two, 500);   // replaces to another price moved two levels,
  EXPECT_GT(none, 100);  // and refused adds and some replaces moved none
}

}  // namespace level_changes_test
