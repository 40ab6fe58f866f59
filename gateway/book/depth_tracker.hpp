// Depth events (docs/book-and-bbo.md, "Depth"): after a book message, when any of a stock's top N levels a side
// (price and aggregate shares) differs from what was last emitted for it, one event. An event is given as the
// levels it changed (the depth log's level change records, gateway/log/FORMAT.md): each price whose shares among
// the side's top N differ, best first, with its shares now (0: it left the top N). N = 1 is the BBO stream.
//
// Nothing is kept per stock. Since every change is emitted, what was last emitted for a side is the book's top N
// before the message, and a message changes one side: the event is what the message did to that side's top N,
// worked out by rank from what the book told of it (BookTouch: the levels it changed, their shares before and
// after). A level is in the top N when fewer than N levels are better; a message at one price can change only
// that level, make it (pushing the Nth out) or empty it (the next level moving up into the Nth place). A replace
// to another price is two such steps, the order leaving one level and then taking the other.
#pragma once
#include <cstdint>
#include <vector>

#include "book/bbo.hpp"
#include "book/book_touch.hpp"
#include "book/level_changes.hpp"
#include "book/order_book.hpp"

namespace itchbench {

class DepthTracker {
 public:
  explicit DepthTracker(uint32_t levels) : levels_(levels), scratch_(size_t(levels) + 1), changes_(4 * size_t(levels)) {}
  uint32_t levels() const { return levels_; }

  // After a message the book told of in touch: how many levels of the touched side's top N it changed (0: no
  // event); then changes() holds them, best first, until the next take. Inline, the common case: one level.
  uint32_t take_change(const OrderBook& book, const BookTouch& touch) {
    uint32_t n = 0;
    const LevelTouch& level = touch.level[0];
    if (__builtin_expect(touch.levels == 1, 1)) {
      const OrderBook::SideView side = book.side_view(touch.locate, touch.bid);
      if (level.before != level.after && side.better_than(level.price, levels_) < levels_) n = one_level(side, level);
    } else if (touch.levels == 2) {
      n = two_levels(book.side_view(touch.locate, touch.bid), level, touch.level[1], touch.bid);
    }
    bid_changes_ = touch.bid ? n : 0;
    return n;
  }
  // Both sides' top N whole: a stock's first event after a snapshot, whose messages emitted nothing as they were
  // applied. The first bid_changes() of changes() are the bids', the rest the asks'.
  uint32_t take_change(const OrderBook& book, uint16_t locate);
  const LevelChange* changes() const { return changes_.data(); }
  uint32_t bid_changes() const { return bid_changes_; }

 private:
  // One level touched within the top N: its change, and the level it pushed out of the top N or that moved up
  // into it.
  uint32_t one_level(const OrderBook::SideView& side, const LevelTouch& level) {
    changes_[0] = {level.price, level.after};
    if (level.before == 0) {  // made: the Nth level, now the (N+1)th, leaves the top N
      if (side.count() <= levels_) return 1;
      changes_[1] = {side.nth(levels_, scratch_.data()).px, 0};
      return 2;
    }
    if (level.after == 0 && side.count() >= levels_) {  // emptied: the level below the top N moves up into it
      changes_[1] = side.nth(levels_ - 1, scratch_.data());
      return 2;
    }
    return 1;
  }
  // A replace to another price: the level left, then the level taken.
  uint32_t two_levels(const OrderBook::SideView& side, const LevelTouch& left, const LevelTouch& taken, bool bid);
  uint32_t levels_;
  std::vector<BookLevel> scratch_;   // levels walked from a side's best (SideView::nth)
  std::vector<LevelChange> changes_; // the last take's: at most 2N a side
  uint32_t bid_changes_ = 0;
};

}  // namespace itchbench
