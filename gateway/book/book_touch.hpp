// What a book message did to the price levels, told by the order book as it applies the message: the stock side it
// touched and, at each price it touched (one, or two for a replace to another price), the level's aggregate shares
// before and after. Depth of book is derived from it (DepthTracker, LevelChanges) with no lookup of its own: the
// book has the order, its level and its side at hand when it applies the message.
#pragma once
#include <cstdint>

namespace itchbench {

struct LevelTouch {
  uint32_t price;
  uint64_t before;  // the level's shares before the message (0: no level there)
  uint64_t after;   // and after it (0: the level is gone)
};

// Made for every book message of a run with depth, so only `levels` is set at first: the rest is written by
// touch() before it is read (zeroing it all was 5 instructions a message, nasdaq-day at 5 levels).
struct BookTouch {
  uint16_t locate;
  bool bid;
  uint32_t levels = 0;  // 0: the message changed no level (it named no live order, or the book refused it)
  LevelTouch level[2];  // a replace's old price first; level[0, levels) written

  // A level of the side was changed. A replace at its own price leaves the level and takes it again: one level,
  // from its shares before the first to its shares after the second.
  void touch(uint16_t stock, bool bid_side, uint32_t price, uint64_t before, uint64_t after) {
    if (levels == 1 && level[0].price == price) {
      level[0].after = after;
      return;
    }
    locate = stock;
    bid = bid_side;
    level[levels++] = LevelTouch{price, before, after};
  }
};

// Told to a book that is not asked (BBO only): nothing kept.
struct NoBookTouch {
  void touch(uint16_t, bool, uint32_t, uint64_t, uint64_t) {}
};

}  // namespace itchbench
