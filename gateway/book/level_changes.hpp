// Depth of every level (--levels all; docs/book-and-bbo.md, "Every level"): the price levels one book message
// changed, each with its new aggregate shares. The shares at the prices the message touches are read before it is
// applied and again after; each price whose shares differ is a change. A message touches one price, or two (a
// replace to another price), so a message makes at most two changes, the old price's first.
//
// A reduce or a delete needs no read of the book: its order gives its level's shares before, and the book takes
// min(shares, the order's) from it (docs/book-and-bbo.md). On deep books, whose levels are mostly off the price
// ladder, reading the shares at a price is a search of the side's other levels: 43 % of the hot thread's samples
// on deep-book with every level, before.
#pragma once
#include <cstdint>

#include "book/depth_tracker.hpp"
#include "book/order_book.hpp"

namespace itchbench {

class LevelChanges {
 public:
  // Before the message is applied: the shares at the prices it touches.
  void before(const OrderBook& book, const DepthTouch& touch) {
    const uint16_t locate = uint16_t(touch.locate);
    before_ = book.shares_at(locate, touch.bid, touch.price);
    other_before_ = touch.other_price == touch.price ? before_ : book.shares_at(locate, touch.bid, touch.other_price);
    known_after_ = false;
  }
  // Or, for a reduce or a delete of a live order: its level's shares, and the shares the message takes from it.
  void before_removal(uint64_t level_shares, uint64_t removed) {
    before_ = other_before_ = level_shares;
    after_ = level_shares - removed;
    known_after_ = true;
  }
  // After it: the levels whose shares differ, into out[0..2); how many.
  uint32_t after(const OrderBook& book, const DepthTouch& touch, LevelChange* out) const {
    const uint16_t locate = uint16_t(touch.locate);
    uint32_t n = 0;
    const uint64_t now = known_after_ ? after_ : book.shares_at(locate, touch.bid, touch.price);
    if (now != before_) out[n++] = {touch.price, now};
    if (touch.other_price != touch.price) {
      const uint64_t other_now = book.shares_at(locate, touch.bid, touch.other_price);
      if (other_now != other_before_) out[n++] = {touch.other_price, other_now};
    }
    return n;
  }

 private:
  uint64_t before_ = 0, other_before_ = 0;
  uint64_t after_ = 0;        // the touched price's shares after a removal, known without reading the book
  bool known_after_ = false;
};

}  // namespace itchbench
