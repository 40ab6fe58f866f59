// Depth events (docs/book-and-bbo.md, "Depth"): after a book message, when any of a stock's top N levels a side
// (price and aggregate shares) differs from what was last emitted for it, one event with the whole top N. N = 1
// is the BBO stream.
//
// The last emitted levels are kept per stock, 2N a stock (bids, then asks), grown when a stock first appears:
// nothing is allocated per message once the session's stocks have been seen. Since every change is emitted, the
// last emitted levels are the book's top N before each message (outside a snapshot): a message that touches one
// side at prices all worse than that side's Nth level, the side holding N levels, cannot change its top N, and
// its side is the only one a message can change.
#pragma once
#include <cstdint>
#include <vector>

#include "book/bbo.hpp"
#include "book/order_book.hpp"

namespace itchbench {

// What one book message touches: a stock's side, at one price or two (a replace leaves one, takes another).
struct DepthTouch {
  uint32_t locate = OrderBook::kUnchanged;
  bool bid = false;
  uint32_t price = 0;
  uint32_t other_price = 0;  // a replace's new price; else price
};

class DepthTracker {
 public:
  explicit DepthTracker(uint32_t levels) : levels_(levels), now_(2 * size_t(levels)) {}
  uint32_t levels() const { return levels_; }

  // True when the touched side's top levels differ from the last taken; then taken() holds the stock's levels
  // (N bids, N asks) until the next take_change. A touch below the side's top N is not read from the book at all.
  bool take_change(const OrderBook& book, const DepthTouch& touch);
  // Both sides read and compared: after a snapshot, whose messages emitted nothing as they were applied.
  bool take_change(const OrderBook& book, uint16_t locate);
  const BookLevel* taken() const { return taken_; }

 private:
  enum class OneLevel { kChanged, kUnchanged, kWalk };
  // A touch at one price, the side's last taken levels being the book's top levels before the message: only the
  // level at that price can have changed, been made or emptied. The first two are told from that level alone;
  // an emptied one (whose place the next level below takes) is left to a walk of the book (kWalk).
  __attribute__((always_inline)) OneLevel update_one_level(const OrderBook& book, const DepthTouch& touch,
                                                          BookLevel* side);
  BookLevel* last_of(uint16_t locate);
  uint32_t levels_;
  std::vector<BookLevel> now_;   // the levels just read from the book: bids, then asks
  std::vector<BookLevel> last_;  // per stock, its last emitted 2N levels
  const BookLevel* taken_ = nullptr;  // the last change's stock's, in last_ (moved only by a first-seen stock)
};

}  // namespace itchbench
