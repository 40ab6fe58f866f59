// Depth events (docs/book-and-bbo.md, "Depth"): after a book message, when any of a stock's top N levels a side
// (price and aggregate shares) differs from what was last emitted for it, one event with the whole top N. N = 1
// is the BBO stream.
//
// The last emitted levels are kept per stock, 2N a stock (bids, then asks), grown when a stock first appears:
// nothing is allocated per message once the session's stocks have been seen.
#pragma once
#include <cstdint>
#include <vector>

#include "book/bbo.hpp"
#include "book/order_book.hpp"

namespace itchbench {

class DepthTracker {
 public:
  explicit DepthTracker(uint32_t levels) : levels_(levels), now_(2 * size_t(levels)) {}
  uint32_t levels() const { return levels_; }

  // True when the stock's top levels differ from the last taken; then taken() holds them (N bids, N asks).
  bool take_change(const OrderBook& book, uint16_t locate);
  const BookLevel* taken() const { return now_.data(); }

 private:
  uint32_t levels_;
  std::vector<BookLevel> now_;   // the stock's levels just read: bids, then asks
  std::vector<BookLevel> last_;  // per stock, its last emitted 2N levels
};

}  // namespace itchbench
