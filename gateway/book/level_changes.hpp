// Depth of every level (--levels all; docs/book-and-bbo.md, "Every level"): the price levels one book message
// changed, each with its new aggregate shares: the levels the book told of (BookTouch) whose shares differ before
// and after. A message touches one price, or two (a replace to another price), so a message makes at most two
// changes, the old price's first. Nothing is read from the book: the book told the shares as it applied the
// message (on deep books, whose levels are mostly off the price ladder, reading the shares at a price is a search
// of the side's other levels: it took 43 % of the hot thread's samples on deep-book with every level).
#pragma once
#include <cstdint>

#include "book/bbo.hpp"
#include "book/book_touch.hpp"

namespace itchbench {

// A price level's aggregate shares after a message (0: it left the book, or the top N).
using LevelChange = BookLevel;

// The levels touch changed, into out[0..2); how many.
inline uint32_t level_changes(const BookTouch& touch, LevelChange* out) {
  uint32_t n = 0;
  for (uint32_t t = 0; t < touch.levels; ++t)
    if (touch.level[t].before != touch.level[t].after) out[n++] = {touch.level[t].price, touch.level[t].after};
  return n;
}

}  // namespace itchbench
