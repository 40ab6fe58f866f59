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
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "book/bbo.hpp"
#include "book/book_touch.hpp"
#include "book/level_changes.hpp"
#include "book/order_book.hpp"

namespace itchbench {

class DepthTracker {
 public:
  static constexpr uint32_t kMaxLevels = 64;  // a side's; the depth log's limit too (logfmt::kMaxDepthLevels)
  // levels: at most kMaxLevels (0: a tracker never taken from).
  explicit DepthTracker(uint32_t levels) : levels_(levels) {
    if (levels > kMaxLevels)
      throw std::invalid_argument("depth of more than " + std::to_string(kMaxLevels) + " levels a side");
  }
  uint32_t levels() const { return levels_; }

  // After a message the book told of in touch: how many levels of the touched side's top N it changed (0: no
  // event); then changes() holds them, best first, until the next take.
  uint32_t take_change(const OrderBook& book, const BookTouch& touch) {
    return take_change(book, touch, touch.levels != 0 ? plain(book, touch) : 0);
  }
  // take_change of a touch that plain() has told of.
  uint32_t take_change(const OrderBook& book, const BookTouch& touch, uint32_t plain) {
    switch (plain) {
      case 1: return take_plain_one<true>(book, touch);
      case 2: return take_plain_two<true>(book, touch);
      case 1 + kOffLadder: return take_plain_one<false>(book, touch);
      case 2 + kOffLadder: return take_plain_two<false>(book, touch);
      default: return take_change_otherwise(book, touch);
    }
  }
  // The common cases, taken inline: the levels the message changed (1, or 2 for a replace to another price), none
  // made or emptied. Nothing then moves into or out of the top N, so the event is the touched levels' own changes
  // that are in it, each known by its rank alone. On a side whose levels are all on its price ladder (85 % of
  // nasdaq-day's book messages, none of deep-book's) a rank is one population count, and the event is logged with
  // no branch on whether a level is in the top N (for 73 % of nasdaq-day's book messages it is: a coin toss to the
  // branch predictor); on a side with levels off its ladder, kOffLadder is added (a deep book's touches are mostly
  // below the top N, a branch well predicted). How many levels, or 0. Only of a touch of some level (levels != 0):
  // the rest of one of none was never written.
  static constexpr uint32_t kOffLadder = 2;
  uint32_t plain(const OrderBook& book, const BookTouch& touch) const {
    const LevelTouch& first = touch.level[0];
    const LevelTouch& second = touch.level[touch.levels == 2];
    const bool kept = (first.before != 0) & (first.after != 0) & (second.before != 0) & (second.after != 0);
    if (!kept) return 0;
    return touch.levels + (book.side_view(touch.locate, touch.bid).ladder_only() ? 0 : kOffLadder);
  }
  // take_change of a plain touch of one level: 0 or 1. kLadderOnly: plain() said the side has no level off its
  // ladder.
  template <bool kLadderOnly>
  uint32_t take_plain_one(const OrderBook& book, const BookTouch& touch) {
    const LevelTouch& level = touch.level[0];
    const uint32_t n = in_top<kLadderOnly>(book.side_view(touch.locate, touch.bid), level);
    changes_[0] = {level.price, level.after};
    bid_changes_ = n & (0u - touch.bid);
    return n;
  }
  // take_change of a plain touch of two levels: the two levels' own changes that are in the top N, best first. 0,
  // 1 or 2; changes() holds both levels either way, the ones in the top N first.
  template <bool kLadderOnly>
  uint32_t take_plain_two(const OrderBook& book, const BookTouch& touch) {
    const OrderBook::SideView side = book.side_view(touch.locate, touch.bid);
    const LevelTouch &left = touch.level[0], &taken = touch.level[1];
    const bool taken_first = touch.bid ? taken.price > left.price : taken.price < left.price;
    const LevelTouch& first = taken_first ? taken : left;
    const LevelTouch& second = taken_first ? left : taken;
    const uint32_t first_in = in_top<kLadderOnly>(side, first), second_in = in_top<kLadderOnly>(side, second);
    changes_[0] = first_in ? LevelChange{first.price, first.after} : LevelChange{second.price, second.after};
    changes_[1] = {second.price, second.after};
    const uint32_t n = first_in + second_in;
    bid_changes_ = n & (0u - touch.bid);
    return n;
  }
  // take_change of a touch that is not plain (a level made or emptied, or no level changed). Out of line.
  uint32_t take_change_otherwise(const OrderBook& book, const BookTouch& touch);
  // Both sides' top N whole: a stock's first event after a snapshot, whose messages emitted nothing as they were
  // applied. The first bid_changes() of changes() are the bids', the rest the asks'.
  uint32_t take_change(const OrderBook& book, uint16_t locate);
  const LevelChange* changes() const { return changes_.data(); }
  uint32_t bid_changes() const { return bid_changes_; }

 private:
  // A plain touch's level changed shares within the top N.
  template <bool kLadderOnly>
  uint32_t in_top(const OrderBook::SideView& side, const LevelTouch& level) const {
    const bool top = kLadderOnly ? side.better_than_level(level.price) < levels_
                                 : side.in_top_with_others(level.price, levels_);
    return top & (level.before != level.after);
  }
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
  // Arrays, not vectors: the message path stores into changes_ and reads it back, and through a vector every access
  // loaded its data pointer again (6 instructions a message at 5 levels, nasdaq-day).
  std::array<BookLevel, kMaxLevels + 1> scratch_;    // levels walked from a side's best (SideView::nth)
  std::array<LevelChange, 4 * kMaxLevels> changes_;  // the last take's: at most 2N a side
  uint32_t bid_changes_ = 0;
};

}  // namespace itchbench
