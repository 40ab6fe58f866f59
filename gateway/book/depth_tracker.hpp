// Depth events (docs/book-and-bbo.md, "Depth"): after a book message, when any of a stock's top N levels a side
// (price and aggregate shares) differs from what was last emitted for it, one event. An event is given as the
// levels it changed (the depth log's level change records, gateway/log/FORMAT.md): each price whose shares among
// the side's top N differ, best first, with its shares now (0: it left the top N). N = 1 is the BBO stream.
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

// A price level's aggregate shares after a message (0: it left the book, or the top N).
using LevelChange = BookLevel;

class DepthTracker {
 public:
  explicit DepthTracker(uint32_t levels)
      : levels_(levels), now_(2 * size_t(levels)), changes_(4 * size_t(levels)) {}
  uint32_t levels() const { return levels_; }

  // How many levels of the touched side's top N changed since the last take (0: no event); then changes() holds
  // them, best first, until the next take. A touch below the side's top N is not read from the book at all.
  uint32_t take_change(const OrderBook& book, const DepthTouch& touch);
  // Both sides read and compared: after a snapshot, whose messages emitted nothing as they were applied. The
  // first bid_changes() of changes() are the bids', the rest the asks'.
  uint32_t take_change(const OrderBook& book, uint16_t locate);
  const LevelChange* changes() const { return changes_.data(); }
  uint32_t bid_changes() const { return bid_changes_; }

 private:
  enum class OneLevel { kChanged, kUnchanged, kWalk };
  // A touch at one price, the side's last taken levels being the book's top levels before the message: only the
  // level at that price can have changed, been made or emptied. The first two are told from that level alone
  // (a level made pushes the Nth out); an emptied one (whose place the next level below takes) is left to a walk
  // of the book (kWalk).
  __attribute__((always_inline)) OneLevel update_one_level(const OrderBook& book, const DepthTouch& touch,
                                                          BookLevel* side, uint32_t& changed);
  // The side's top levels read from the book into `side` (its last emitted), each difference appended at out.
  uint32_t walk_side(const OrderBook& book, uint16_t locate, bool bid, BookLevel* side, LevelChange* out);
  BookLevel* last_of(uint16_t locate);
  uint32_t levels_;
  std::vector<BookLevel> now_;       // the levels just read from the book: bids, then asks
  std::vector<BookLevel> last_;      // per stock, its last emitted 2N levels
  std::vector<LevelChange> changes_; // the last take's: at most 2N a side
  uint32_t bid_changes_ = 0;
};

}  // namespace itchbench
