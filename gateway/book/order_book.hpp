// Full-depth order book for all stocks of an ITCH session, with the BBO
// semantics of docs/book-and-bbo.md:
//  - A/F add; E and C reduce by the executed shares; X by the cancelled
//    shares; a reduction never goes below zero and an order at zero is
//    removed; D removes; U removes the original and adds the new reference
//    with the same side and stock, the new shares and price.
//  - A message naming an unknown order reference changes nothing and is
//    counted; so is an add reusing a live reference, or with a side other
//    than B/S or zero shares.
//
// Layout for speed: orders live inside the reference table (OrderTable,
// direct-mapped by reference), so finding one is one cache miss. Price
// levels live in a pool at stable places, and an order keeps its level's
// place, which is also where its price is: a delete or reduction reaches its
// level without searching for it. A stock side keeps the place of its best
// level, so the BBO is two loads a side. Its levels on whole cents within 64
// cents of each other (on the generated nasdaq-day session, every level) sit
// in a PriceLadder: a block of the pool indexed by price, so an add finds or
// makes its level by arithmetic and an emptied best finds the next by a bit
// scan, with no search and no data-dependent loop. Any other level (a
// sub-penny price, or one too far from the ladder's) goes to the side's
// sorted array of (key, place), best at the back; one at a whole cent is also
// known by its cent modulo 512 (OffLadderTicks), so that an add at a whole
// cent to a side with levels off its ladder seldom searches the array. Nothing
// is allocated per message once the table, the pool and the side arrays have
// reached the session's size.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "book/bbo.hpp"
#include "book/book_touch.hpp"
#include "book/order_index.hpp"
#include "book/price_ladder.hpp"
#include "util/huge_page_allocator.hpp"

namespace itchbench {

struct BookCounters {
  uint64_t unknown_refs = 0;    // E/C/X/D/U naming an order not in the book
  uint64_t duplicate_refs = 0;  // A/F/U adding a reference that is already live
  uint64_t invalid_orders = 0;  // A/F with a side other than B/S, or zero shares
};

class OrderBook {
 public:
  static constexpr uint32_t kUnchanged = UINT32_MAX;
  static constexpr size_t kStocks = 65536;

  explicit OrderBook(size_t expected_orders = 1 << 20);

  // Each returns the stock locate whose BBO may have changed — the message
  // touched a best level, made one or emptied one — or kUnchanged: a change
  // deeper in the book cannot move the BBO, so the caller skips the check.
  // Each tells touch what it did to the levels (a BookTouch, for depth; by
  // default nothing is told).
  // add is always inline: each message path is one function (Gateway::process) with its add in it.
  template <class Touch = NoBookTouch>
  __attribute__((always_inline)) uint32_t add(uint16_t locate, uint64_t ref, char side, uint32_t shares, uint32_t price,
                                              Touch&& touch = {});
  template <class Touch = NoBookTouch>
  uint32_t reduce(uint64_t ref, uint32_t shares, Touch&& touch = {});  // E, C (executed shares), X (cancelled shares)
  template <class Touch = NoBookTouch>
  uint32_t remove(uint64_t ref, Touch&& touch = {});  // D
  template <class Touch = NoBookTouch>
  uint32_t replace(uint64_t original_ref, uint64_t new_ref, uint32_t shares, uint32_t price,
                   Touch&& touch = {});  // U

  Bbo bbo(uint16_t locate) const;
  // Calls f(ref, locate, side 'B'/'S', shares, price) for every live order, in no particular order: what a
  // snapshot of the book is made of.
  template <class F>
  void for_each_order(F&& f) const {
    orders_.for_each([&](uint64_t ref, const Order& o) {
      const bool bid = o.side == 1;
      f(ref, o.locate, bid ? 'B' : 'S', o.shares, price_of(levels_[o.level].key, bid));
    });
  }
  // A message naming ref comes soon: start loading its order's index slot. Always inlined: GCC counts a
  // prefetch as no side effect, so a hint left out of line is a call to a pure function whose result is unused,
  // and is deleted (a level prefetch once was, unnoticed until the disassembly showed it missing).
  __attribute__((always_inline)) void prefetch_order(uint64_t ref) const { orders_.prefetch(ref); }
  // True when the stock's BBO differs from the last one taken; out = the new
  // (a best level can change and change back within one replace).
  // locate is one that a book method returned (so its stock exists).
  bool take_bbo_change(uint16_t locate, Bbo& out) {
    Bbo& last = last_emitted_[locate];
    out = bbo_of(stocks_[locate]);
    // Field by field, in registers: compared or copied as a whole, the Bbo went through stack memory in
    // narrow stores read back wide, which stalls (no store-to-load forwarding).
    const uint64_t differs = uint64_t(out.bid_px ^ last.bid_px) | uint64_t(out.ask_px ^ last.ask_px) |
                             (out.bid_qty ^ last.bid_qty) | (out.ask_qty ^ last.ask_qty);
    if (differs == 0) return false;
    last.bid_px = out.bid_px;
    last.ask_px = out.ask_px;
    last.bid_qty = out.bid_qty;
    last.ask_qty = out.ask_qty;
    return true;
  }

  struct LevelView {
    uint32_t price;
    uint32_t orders;
    uint64_t shares;
  };
  // Levels of one side, best first (for tests and dumps, not the hot path).
  std::vector<LevelView> levels(uint16_t locate, char side) const;
  // The side's best n levels into out[0..n), best first; past the side's last level, empty ones (0, 0). Walks
  // the ladder's present ticks and the side's off-ladder levels together, from the best: no allocation.
  void top_levels(uint16_t locate, bool bid, uint32_t n, BookLevel* out) const;
  // The aggregate shares of the side's level at price; 0 when the side has no level there.
  uint64_t shares_at(uint16_t locate, bool bid, uint32_t price) const;
  // One side of a stock, read by rank: how a depth of N levels is followed without a copy of it (DepthTracker).
  // Valid until the book next changes.
  class SideView;
  SideView side_view(uint16_t locate, bool bid) const;  // a stock the book holds (one a book method returned)
  struct OrderView {
    uint16_t locate;
    char side;
    uint32_t shares;
    uint32_t price;
  };
  bool find_order(uint64_t ref, OrderView& out) const;

  size_t live_orders() const { return orders_.size(); }
  size_t memory_bytes() const;
  const BookCounters& counters() const { return counters_; }
  uint64_t index_grows() const { return orders_.grows(); }
  uint64_t index_overflowed() const { return orders_.overflowed(); }  // orders kept in the overflow (OrderTable)
  uint64_t levels_off_ladder() const { return levels_off_ladder_; }   // levels made in a side's sorted array

 private:
  // Places 0 and 1 of the pool hold no level: each is the best of an empty side (0 asks, 1 bids), whose
  // price and shares read as 0 (an ask's key is ~price), so the BBO is read without a branch.
  static constexpr uint32_t kFirstLevel = 2;
  struct Level {
    uint32_t key;  // bid: price; ask: ~price, so that on both sides the greater key is the better price
    uint32_t orders;
    uint64_t shares;
  };
  // A level off the ladder: its key, and where it lives in the pool.
  struct Entry {
    uint32_t key;
    uint32_t level;
  };
  struct Order {
    uint32_t shares;
    uint32_t level;  // its price level's place in the pool, where its price is too
    uint16_t locate;
    uint8_t side;  // 0 ask, 1 bid
  };
  struct Side {
    PriceLadder ladder;
    uint32_t best;            // place of the best level, on the ladder or off it; the side's number when it has none
    uint32_t off_ladder = 0;  // how many of its levels are off the ladder (others_of)
  };
  // Both sides of a stock in one cache line: a message reads its side, and a BBO check both sides' best. (With
  // the off-ladder levels' array and the last BBO emitted in it, a stock was 136 bytes, three lines.)
  struct alignas(64) Stock {
    Stock() {
      sides[0].best = 0;
      sides[1].best = 1;
    }
    Side sides[2];  // [0] asks, [1] bids
  };
  static_assert(sizeof(Stock) == 64 && sizeof(Side) == 32, "a stock's sides in one cache line");

  // A side's levels off its ladder at whole ticks, by tick modulo kSlots: how many at each residue, and the place of
  // one of them (0: none known). An add at a whole tick to a side with levels off its ladder then finds its level
  // there, or knows none is off the ladder, without searching the side's array. Made at a side's first such level:
  // 2.5 KiB. 512 residues: deep-book's sides hold about 400 cents each (at 64, 1.6 % more instructions than a search
  // alone, at 512 17 % fewer). A count that reaches kMany stays there: the residue is searched from then on.
  struct OffLadderTicks {
    static constexpr uint32_t kSlots = 512;
    static constexpr uint8_t kMany = 255;
    uint32_t place[kSlots] = {};
    uint8_t count[kSlots] = {};
  };

  static uint32_t key_of(uint32_t price, bool bid) { return bid ? price : ~price; }
  // A side's place among all stocks' sides: where its off-ladder levels are kept.
  size_t side_index(const Side& s) const {
    return (reinterpret_cast<uintptr_t>(&s) - reinterpret_cast<uintptr_t>(stocks_.data())) / sizeof(Side);
  }
  // A side's levels off its ladder, in key order, the best at the back.
  std::vector<Entry>& others_of(const Side& s) { return others_[side_index(s)]; }
  const std::vector<Entry>& others_of(const Side& s) const { return const_cast<OrderBook*>(this)->others_of(s); }
  static uint32_t price_of(uint32_t key, bool bid) { return bid ? key : ~key; }
  Bbo bbo_of(const Stock& s) const {
    const Level& bid = levels_[s.sides[1].best];
    const Level& ask = levels_[s.sides[0].best];
    return Bbo{bid.key, ~ask.key, bid.shares, ask.shares};
  }

  bool at_best(const Order& o) const { return stocks_[o.locate].sides[o.side].best == o.level; }
  // place: where the order's level is.
  __attribute__((always_inline)) uint32_t insert_order(uint16_t locate, uint64_t ref, uint8_t side, uint32_t shares,
                                                      uint32_t price, uint32_t& place);
  // Every case insert_order's own does not take: a new stock, a level off the ladder, a slot taken, a full index.
  __attribute__((noinline)) uint32_t insert_order_general(uint16_t locate, uint64_t ref, uint8_t side,
                                                          uint32_t shares, uint32_t price, uint32_t& place);
  // Tell touch that order o left removed shares at its level, or that added shares were taken at the level at
  // place (each level as it is now). Nothing is read when nothing is told (NoBookTouch).
  template <class Touch>
  void tell_left(Touch& touch, const Order& o, uint64_t removed) const {
    const Level& l = levels_[o.level];
    const bool bid = o.side == 1;
    touch.touch(o.locate, bid, price_of(l.key, bid), l.shares + removed, l.shares);
  }
  template <class Touch>
  void tell_taken(Touch& touch, uint16_t locate, bool bid, uint32_t price, uint32_t place, uint64_t added) const {
    const uint64_t after = levels_[place].shares;
    touch.touch(locate, bid, price, after - added, after);
  }
  // A new order's level at place becomes the side's best when it was made and beats the best; true when the
  // order's level is the best now.
  bool settle_best(Side& s, uint32_t place, uint32_t key, bool made) {
    const bool better = made & ((s.best < kFirstLevel) | (key > levels_[s.best].key));
    s.best = better ? place : s.best;
    return s.best == place;
  }
  // The place of the side's level at a price (its key), made when absent (made says which): on the ladder at
  // tick (one that fits), or wherever else it is or goes.
  uint32_t ladder_level(PriceLadder& ladder, uint32_t tick, uint32_t key, uint32_t shares, bool& made);
  // insert_order_general's: inlined there, out of the common add's code (a call fewer per add to a side with
  // levels off its ladder, most of deep-book's).
  __attribute__((always_inline)) uint32_t level_elsewhere(Side& side, uint32_t price, uint32_t key, uint32_t shares,
                                                          bool& made);
  uint32_t add_to(uint32_t place, uint32_t shares, bool& made);  // an order's shares to the level at place
  // Takes an order's shares off its price level; true when it was a best one. Inlined into remove, reduce and
  // replace: a call fewer per delete (2.2 % fewer instructions on nasdaq-day, callgrind).
  __attribute__((always_inline)) bool leave_level(const Order& o);
  uint32_t side_best(const Side& side, bool bid) const;  // place of the side's best level, or its empty place
  void grow_stocks(uint16_t locate);  // room for stocks up to locate (first order of a new stock)
  uint32_t new_level(uint32_t key, uint32_t shares);  // a level of one order off the ladder, from the pool
  // A level off the side's ladder left the book (its place about to be freed): forgotten by the side's
  // OffLadderTicks when at a whole tick.
  void forget_off_ladder(const Side& s, uint32_t price, uint32_t place);
  // The entry of key in a side's off-ladder levels, or where it would go (const or not).
  template <class Entries>
  static auto find_entry(Entries& side, uint32_t key) -> decltype(side.begin());
  uint64_t shares_off_ladder(const Side& s, uint32_t key) const;  // shares_at's rare case

  std::vector<Stock> stocks_;  // by locate, up to the highest that has had an order: memory in proportion
  std::vector<std::vector<Entry>> others_;  // each side's levels off its ladder (others_of), as stocks_ by side
  std::vector<std::unique_ptr<OffLadderTicks>> off_ticks_;  // as others_: those at whole ticks, by residue
  std::vector<Bbo> last_emitted_;           // by locate: the BBO last taken (take_bbo_change)
  uint32_t stock_count_ = 0;   // stocks_.size(), kept: the size is a division by sizeof(Stock)
  std::vector<Level, HugePageAllocator<Level>> levels_;        // every stock's price levels, at stable places
  std::vector<uint32_t> free_levels_;  // places in levels_ of off-ladder levels that emptied
  OrderTable<Order> orders_;
  BookCounters counters_;
  uint64_t levels_off_ladder_ = 0;
};

class OrderBook::SideView {
 public:
  // How many of the side's levels are better than price (which need not be a level's), counted up to `enough`.
  uint32_t better_than(uint32_t price, uint32_t enough) const {
    const uint32_t on = ladder_better_than(price);
    if (side_->off_ladder == 0 || on >= enough) return on;
    // The off-ladder levels better than it are the back of the side's array (in key order, the best last): a deep
    // book has many, and a search among them all would be a dozen unpredictable branches.
    const std::vector<Entry>& others = book_->others_of(*side_);
    const uint32_t key = key_of(price, bid_);
    uint32_t off = 0;
    for (size_t i = others.size(); i > 0 && on + off < enough && others[i - 1].key > key; --i) ++off;
    return on + off;
  }
  // better_than for a price that is one of the side's levels, all of whose levels are on its ladder (ladder_only).
  uint32_t better_than_level(uint32_t price) const {
    return side_->ladder.count_better_present(PriceLadder::tick_of(price), bid_);
  }
  // Whether fewer than n of the side's levels are better than price, a level of a side with levels off its
  // ladder: the ladder's count, then one look at the off-ladder levels instead of a walk down them (a deep
  // book's touches are mostly below the top N, and a walk's exit a branch on how far down).
  bool in_top_with_others(uint32_t price, uint32_t n) const {
    const uint32_t on = ladder_better_than(price);
    if (on >= n) return false;
    // Fewer than n - on off-ladder levels are better exactly when the (n - on)th best of them is not: they are
    // in key order, the best at the back.
    const std::vector<Entry>& others = book_->others_of(*side_);
    const size_t need = n - on;
    return others.size() < need || others[others.size() - need].key <= key_of(price, bid_);
  }
  bool ladder_only() const { return side_->off_ladder == 0; }
  uint32_t count() const { return side_->ladder.count() + side_->off_ladder; }
  // The k-th best level, 0 the best (k < count()). A side with levels off its ladder is walked from its best
  // level into scratch (k + 1 levels).
  BookLevel nth(uint32_t k, BookLevel* scratch) const {
    if (side_->off_ladder != 0) {
      book_->top_levels(locate_, bid_, k + 1, scratch);
      return scratch[k];
    }
    const uint32_t tick = side_->ladder.nth_best(k, bid_);
    return BookLevel{tick * PriceLadder::kTickPrice, book_->levels_[side_->ladder.place_of(tick)].shares};
  }

 private:
  friend class OrderBook;
  // How many of the ladder's ticks are better than price: a tick t is better than a bid at price when
  // t * 100 > price, than an offer when t * 100 < price. `&`, not `&&`: the side would be a branch, a coin toss.
  uint32_t ladder_better_than(uint32_t price) const {
    return side_->ladder.count_better(PriceLadder::tick_of(price) + (!bid_ & !PriceLadder::on_tick(price)), bid_);
  }
  const OrderBook* book_;
  const Side* side_;
  uint16_t locate_;
  bool bid_;
};

inline OrderBook::SideView OrderBook::side_view(uint16_t locate, bool bid) const {
  SideView v;
  v.book_ = this;
  v.side_ = &stocks_[locate].sides[bid ? 1 : 0];
  v.locate_ = locate;
  v.bid_ = bid;
  return v;
}

}  // namespace itchbench

#include "book/order_book_ops.hpp"  // the message path's operations, inline
