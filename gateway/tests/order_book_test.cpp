#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "book/order_book.hpp"
#include "pipeline/gateway.hpp"
#include "lockstep_book.hpp"
#include "reference_book.hpp"
#include "protocol/itch_file.hpp"
#include "synthesized_session.hpp"
#include "test_files.hpp"

using namespace itchbench;
using itchbench::testing::ReferenceBook;

namespace {

struct CollectingPublisher {
  std::vector<BboEvent> events;
  void publish(const BboEvent& e) { events.push_back(e); }
};

// Drives a Gateway with hand-built messages, one sequence number each.
class Harness {
 public:
  Harness() : clock_(StageClock::monotonic()), gw_(book, clock_, nullptr, nullptr, pub) {}

  template <class Msg>
  void send(Msg m, uint16_t locate = 1) {
    m.stock_locate = locate;
    m.timestamp = 1000 + seq_;
    uint8_t buf[itch::kMaxMessageLength];
    m.encode(buf);
    gw_.on_message(++seq_, buf, Msg::kLength, logfmt::Arrival{});
  }
  void add(uint64_t ref, char side, uint32_t shares, uint32_t price, uint16_t locate = 1) {
    itch::AddOrder a;
    a.order_ref = ref;
    a.side = uint8_t(side);
    a.shares = shares;
    a.price = price;
    a.stock = itch::alpha8::from("TEST");
    send(a, locate);
  }
  void exec(uint64_t ref, uint32_t shares) {
    itch::OrderExecuted e;
    e.order_ref = ref;
    e.executed_shares = shares;
    send(e);
  }
  void exec_px(uint64_t ref, uint32_t shares) {
    itch::OrderExecutedWithPrice c;
    c.order_ref = ref;
    c.executed_shares = shares;
    c.printable = 'Y';
    send(c);
  }
  void cancel(uint64_t ref, uint32_t shares) {
    itch::OrderCancel x;
    x.order_ref = ref;
    x.cancelled_shares = shares;
    send(x);
  }
  void del(uint64_t ref) {
    itch::OrderDelete d;
    d.order_ref = ref;
    send(d);
  }
  void replace(uint64_t orig, uint64_t fresh, uint32_t shares, uint32_t price) {
    itch::OrderReplace u;
    u.original_order_ref = orig;
    u.new_order_ref = fresh;
    u.shares = shares;
    u.price = price;
    send(u);
  }
  // The BBO of the last event, checking that the last message produced one.
  Bbo last_event_bbo() {
    EXPECT_FALSE(pub.events.empty());
    EXPECT_EQ(pub.events.back().seq, seq_) << "the last message emitted no event";
    return pub.events.back().bbo;
  }
  size_t events() const { return pub.events.size(); }

  OrderBook book{1024};
  CollectingPublisher pub;

 private:
  StageClock clock_;
  Gateway<CollectingPublisher> gw_;
  uint64_t seq_ = 0;

 public:
  const Gateway<CollectingPublisher>& gateway() const { return gw_; }
};

Bbo make_bbo(uint32_t bp, uint64_t bq, uint32_t ap, uint64_t aq) {
  Bbo b;
  b.bid_px = bp;
  b.bid_qty = bq;
  b.ask_px = ap;
  b.ask_qty = aq;
  return b;
}

}  // namespace

TEST(OrderBook, AddsAggregateAtTheBestLevel) {
  Harness h;
  h.add(1, 'B', 100, 10000);
  EXPECT_EQ(h.last_event_bbo(), make_bbo(10000, 100, 0, 0));
  h.add(2, 'B', 50, 10000);
  EXPECT_EQ(h.last_event_bbo(), make_bbo(10000, 150, 0, 0));
  h.add(3, 'S', 70, 10100);
  EXPECT_EQ(h.last_event_bbo(), make_bbo(10000, 150, 10100, 70));
  h.add(4, 'B', 10, 9900);  // below the best bid: BBO unchanged, no event
  EXPECT_EQ(h.events(), 3u);
  h.add(5, 'S', 5, 10050);  // better ask
  EXPECT_EQ(h.last_event_bbo(), make_bbo(10000, 150, 10050, 5));
  const auto bids = h.book.levels(1, 'B');
  ASSERT_EQ(bids.size(), 2u);
  EXPECT_EQ(bids[0].price, 10000u);
  EXPECT_EQ(bids[0].orders, 2u);
  EXPECT_EQ(bids[1].price, 9900u);
}

TEST(OrderBook, PartialAndFullExecutions) {
  Harness h;
  h.add(1, 'S', 300, 20000);
  h.exec(1, 100);
  EXPECT_EQ(h.last_event_bbo(), make_bbo(0, 0, 20000, 200));
  h.exec_px(1, 150);
  EXPECT_EQ(h.last_event_bbo(), make_bbo(0, 0, 20000, 50));
  h.exec(1, 50);  // exactly the rest: removed, side empty
  EXPECT_EQ(h.last_event_bbo(), make_bbo(0, 0, 0, 0));
  EXPECT_EQ(h.book.live_orders(), 0u);
}

TEST(OrderBook, ExecutionOrCancelBeyondRemainingStopsAtZero) {
  Harness h;
  h.add(1, 'B', 100, 10000);
  h.add(2, 'B', 100, 9000);
  h.exec(1, 500);
  EXPECT_EQ(h.last_event_bbo(), make_bbo(9000, 100, 0, 0));
  h.cancel(2, 101);
  EXPECT_EQ(h.last_event_bbo(), make_bbo(0, 0, 0, 0));
  EXPECT_EQ(h.book.live_orders(), 0u);
  EXPECT_EQ(h.book.counters().unknown_refs, 0u);
}

TEST(OrderBook, PartialCancelAndDelete) {
  Harness h;
  h.add(1, 'B', 100, 10000);
  h.add(2, 'B', 40, 10000);
  h.cancel(1, 30);
  EXPECT_EQ(h.last_event_bbo(), make_bbo(10000, 110, 0, 0));
  h.del(2);
  EXPECT_EQ(h.last_event_bbo(), make_bbo(10000, 70, 0, 0));
  h.del(1);
  EXPECT_EQ(h.last_event_bbo(), make_bbo(0, 0, 0, 0));
}

TEST(OrderBook, ReplaceKeepsSideAndMayCrossTheSpread) {
  Harness h;
  h.add(1, 'B', 100, 10000);
  h.add(2, 'S', 100, 10100);
  // Replace the bid to a price above the best ask: it stays a bid.
  h.replace(1, 3, 60, 10200);
  EXPECT_EQ(h.last_event_bbo(), make_bbo(10200, 60, 10100, 100));
  OrderBook::OrderView o;
  EXPECT_FALSE(h.book.find_order(1, o));
  ASSERT_TRUE(h.book.find_order(3, o));
  EXPECT_EQ(o.side, 'B');
  EXPECT_EQ(o.shares, 60u);
  EXPECT_EQ(o.locate, 1);
  // Replace to zero shares leaves nothing behind.
  h.replace(3, 4, 0, 10000);
  EXPECT_EQ(h.last_event_bbo(), make_bbo(0, 0, 10100, 100));
  EXPECT_FALSE(h.book.find_order(4, o));
}

TEST(OrderBook, UnknownReferencesChangeNothing) {
  Harness h;
  h.add(1, 'B', 100, 10000);
  const size_t events = h.events();
  h.exec(99, 10);
  h.exec_px(99, 10);
  h.cancel(99, 10);
  h.del(99);
  h.replace(99, 100, 10, 20000);
  EXPECT_EQ(h.events(), events);
  EXPECT_EQ(h.book.counters().unknown_refs, 5u);
  EXPECT_EQ(h.book.bbo(1), make_bbo(10000, 100, 0, 0));
  OrderBook::OrderView o;
  EXPECT_FALSE(h.book.find_order(100, o));
}

TEST(OrderBook, DuplicateReferencesAndInvalidAddsAreCounted) {
  Harness h;
  h.add(1, 'B', 100, 10000);
  h.add(1, 'S', 100, 20000);  // reuse of a live reference
  h.add(2, 'X', 100, 10000);  // no such side
  h.add(3, 'B', 0, 10000);    // zero shares
  h.add(4, 'S', 10, 20000);
  h.replace(4, 1, 10, 21000);  // new reference already live
  EXPECT_EQ(h.book.counters().duplicate_refs, 2u);
  EXPECT_EQ(h.book.counters().invalid_orders, 2u);
  EXPECT_EQ(h.book.live_orders(), 2u);
  EXPECT_EQ(h.book.bbo(1), make_bbo(10000, 100, 20000, 10));
}

// The references an open-addressing table is tempted to use as markers
// (all ones, zero) are ordinary orders to the feed: they must add, execute,
// replace and delete like any other, next to orders in normal slots.
TEST(OrderBook, SentinelReferencesAreOrdinaryOrders) {
  Harness h;
  h.add(UINT64_MAX, 'B', 100, 10000);
  h.add(0, 'B', 50, 10000);
  EXPECT_EQ(h.last_event_bbo(), make_bbo(10000, 150, 0, 0));
  h.exec(UINT64_MAX, 30);
  EXPECT_EQ(h.last_event_bbo(), make_bbo(10000, 120, 0, 0));
  h.replace(UINT64_MAX, UINT64_MAX, 10, 10100);  // onto itself: new price, new shares
  EXPECT_EQ(h.last_event_bbo(), make_bbo(10100, 10, 0, 0));
  h.replace(0, UINT64_MAX, 5, 9000);  // onto a live reference: refused
  EXPECT_EQ(h.book.counters().duplicate_refs, 1u);
  h.del(UINT64_MAX);
  EXPECT_EQ(h.last_event_bbo(), make_bbo(10000, 50, 0, 0));
  h.del(UINT64_MAX);  // gone now: unknown
  EXPECT_EQ(h.book.counters().unknown_refs, 1u);
  h.cancel(0, 50);
  EXPECT_EQ(h.last_event_bbo(), make_bbo(0, 0, 0, 0));
  EXPECT_EQ(h.book.live_orders(), 0u);
}

// A slot keeps only the reference's bits above the slot number; a reference
// too large for that lives in the overflow. Each is absent until added (an
// empty slot never matches one), then found, through the index's growth
// (which changes which bits a slot keeps), and deleted.
TEST(OrderBook, ReferencesOfEveryMagnitudeSurviveGrowth) {
  OrderBook book(16);  // 32 slots: a slot keeps ref >> 5 until the index grows
  const uint64_t top = uint64_t(UINT32_MAX) << 5;
  const std::vector<uint64_t> refs = {1, 31, 32, top - 1, top, top | 7, top + 32, uint64_t(1) << 40,
                                      uint64_t(1) << 63, UINT64_MAX - 1, UINT64_MAX};
  OrderBook::OrderView o;
  for (size_t i = 0; i < refs.size(); ++i) {
    ASSERT_FALSE(book.find_order(refs[i], o)) << refs[i];
    book.add(1, refs[i], 'B', uint32_t(100 + i), 10000);
    ASSERT_TRUE(book.find_order(refs[i], o)) << refs[i];
    EXPECT_EQ(o.shares, 100 + i);
  }
  for (uint64_t ref = 1000; ref < 1200; ++ref) book.add(2, ref, 'S', 1, 20000);  // 211 live: grows to 512 slots
  EXPECT_GE(book.index_grows(), 4u);
  for (size_t i = 0; i < refs.size(); ++i) {
    ASSERT_TRUE(book.find_order(refs[i], o)) << refs[i];
    EXPECT_EQ(o.shares, 100 + i);
    book.remove(refs[i]);
    EXPECT_FALSE(book.find_order(refs[i], o)) << refs[i];
  }
  EXPECT_EQ(book.counters().unknown_refs, 0u);
  EXPECT_EQ(book.counters().duplicate_refs, 0u);
  EXPECT_EQ(book.live_orders(), 200u);
}

TEST(OrderBook, AnIndexWhollyInItsOverflowKeepsEveryOrderAsItGrows) {
  // References from 2^63 (the wide-fields profile's) carry tags too large for a slot: every order lives in the
  // overflow, which a growth of the index moves whole into a table reserved as large (ProbingTable::reserve).
  OrderBook book(1 << 10);
  const uint64_t first = uint64_t(1) << 63;
  for (uint64_t i = 0; i < 100000; ++i) book.add(uint16_t(1 + i % 7), first + i, 'B', uint32_t(1 + i % 1000), 10000);
  EXPECT_GE(book.index_grows(), 6u);
  EXPECT_EQ(book.index_overflowed(), 100000u);  // every one
  OrderBook::OrderView o;
  for (uint64_t i = 0; i < 100000; i += 2) book.remove(first + i);
  for (uint64_t i = 0; i < 100000; ++i) {
    ASSERT_EQ(book.find_order(first + i, o), i % 2 == 1) << i;
    if (i % 2) {
      ASSERT_EQ(o.shares, 1 + i % 1000) << i;
    }
  }
  EXPECT_EQ(book.live_orders(), 50000u);
  EXPECT_EQ(book.counters().unknown_refs, 0u);
}

TEST(OrderBook, ExtremePricesSharesAndLocates) {
  Harness h;
  h.add(1, 'S', UINT32_MAX, UINT32_MAX, 0xFFFF);
  EXPECT_EQ(h.last_event_bbo(), make_bbo(0, 0, UINT32_MAX, UINT32_MAX));
  h.add(2, 'S', UINT32_MAX, UINT32_MAX, 0xFFFF);  // aggregate beyond 32 bits
  EXPECT_EQ(h.last_event_bbo(), make_bbo(0, 0, UINT32_MAX, 2ull * UINT32_MAX));
  h.add(3, 'B', 7, 0, 0);  // a bid at price zero is a real level
  EXPECT_EQ(h.last_event_bbo(), make_bbo(0, 7, 0, 0));
  EXPECT_EQ(h.book.bbo(0xFFFF), make_bbo(0, 0, UINT32_MAX, 2ull * UINT32_MAX));
  h.exec(1, UINT32_MAX);
  EXPECT_EQ(h.book.bbo(0xFFFF), make_bbo(0, 0, UINT32_MAX, UINT32_MAX));
}

TEST(OrderBook, StocksAreIndependentAndEventsCarrySequenceNumbers) {
  Harness h;
  h.add(1, 'B', 100, 10000, 1);
  h.add(2, 'B', 100, 50000, 2);
  ASSERT_EQ(h.pub.events.size(), 2u);
  EXPECT_EQ(h.pub.events[0].stock_locate, 1);
  EXPECT_EQ(h.pub.events[0].seq, 1u);
  EXPECT_EQ(h.pub.events[1].stock_locate, 2);
  EXPECT_EQ(h.pub.events[1].seq, 2u);
  EXPECT_EQ(h.pub.events[1].timestamp, 1001u);
  EXPECT_EQ(h.book.bbo(1), make_bbo(10000, 100, 0, 0));
  EXPECT_EQ(h.book.bbo(2), make_bbo(50000, 100, 0, 0));
}

TEST(OrderBook, NonBookMessagesDoNotChangeIt) {
  Harness h;
  h.add(1, 'B', 100, 10000);
  itch::Trade p;
  p.order_ref = 1;
  p.shares = 100;
  h.send(p);
  itch::CrossTrade q;
  q.shares = 100;
  h.send(q);
  itch::BrokenTrade b;
  h.send(b);
  EXPECT_EQ(h.events(), 1u);
  EXPECT_EQ(h.book.bbo(1), make_bbo(10000, 100, 0, 0));
}

// A message names its stock only when it touched, made or emptied a best
// level: deeper changes cannot move the BBO, and the gateway skips its check.
TEST(OrderBook, NamesTheStockOnlyWhenABestLevelIsTouched) {
  constexpr uint32_t kNone = OrderBook::kUnchanged;
  OrderBook book;
  EXPECT_EQ(book.add(3, 1, 'B', 100, 10000), 3u);   // first bid: the best
  EXPECT_EQ(book.add(3, 2, 'B', 50, 9900), kNone);  // below it
  EXPECT_EQ(book.add(3, 3, 'B', 70, 9900), kNone);  // joins the level below
  EXPECT_EQ(book.add(3, 4, 'B', 10, 10000), 3u);    // joins the best
  EXPECT_EQ(book.add(3, 5, 'S', 20, 10100), 3u);    // first ask
  EXPECT_EQ(book.add(3, 6, 'S', 20, 10200), kNone);
  EXPECT_EQ(book.reduce(2, 10), kNone);  // a partial execution below the best bid
  EXPECT_EQ(book.reduce(6, 5), kNone);   // ... above the best ask
  EXPECT_EQ(book.reduce(4, 5), 3u);      // at the best bid
  EXPECT_EQ(book.remove(3), kNone);      // 9900 keeps order 2
  EXPECT_EQ(book.remove(2), kNone);      // 9900 empties, but it was not the best
  EXPECT_EQ(book.add(3, 7, 'B', 30, 9800), kNone);
  EXPECT_EQ(book.replace(7, 8, 30, 9700), kNone);  // deep to deeper
  EXPECT_EQ(book.replace(8, 9, 30, 10050), 3u);    // deep to a new best bid
  EXPECT_EQ(book.replace(5, 10, 20, 10300), 3u);   // the best ask moves behind 10200
  EXPECT_EQ(book.reduce(9, 30), 3u);               // the best bid empties: 10000 is best again
  EXPECT_EQ(book.remove(6), 3u);                   // the best ask (10200) empties
  EXPECT_EQ(book.bbo(3), make_bbo(10000, 105, 10300, 20));
  EXPECT_EQ(book.remove(99), kNone);               // unknown
  EXPECT_EQ(book.counters().unknown_refs, 1u);
}

// A side keeps its levels on whole cents within 64 cents of each other on its
// ladder, and any other level (sub-penny, or beyond the window) in a sorted
// array; the side's best, its level order and the BBO span both. Prices are
// chosen at the window's edges: with $10.00 (tick 1000) on the ladder, $9.36
// (tick 936) is 64 ticks away and goes off it, $9.37 fits.
namespace {
using Levels = std::vector<std::tuple<uint32_t, uint32_t, uint64_t>>;  // price, orders, shares, best first
Levels levels_of(const OrderBook& book, char side) {
  Levels out;
  for (const auto& l : book.levels(1, side)) out.emplace_back(l.price, l.orders, l.shares);
  return out;
}
}  // namespace

TEST(OrderBook, BidsOnAndOffTheLadderKeepPriceOrder) {
  OrderBook book{64};
  const uint32_t kUnchanged = OrderBook::kUnchanged;
  EXPECT_EQ(book.add(1, 1, 'B', 100, 100000), 1u);           // $10.00: ladder, the best
  EXPECT_EQ(book.add(1, 2, 'B', 200, 99950), kUnchanged);    // $9.995: sub-penny, off
  EXPECT_EQ(book.add(1, 3, 'B', 300, 93600), kUnchanged);    // $9.36: 64 ticks below, off
  EXPECT_EQ(book.add(1, 4, 'B', 400, 93700), kUnchanged);    // $9.37: fits, ladder
  EXPECT_EQ(book.add(1, 5, 'B', 50, 100100), 1u);            // $10.01: 64 above $9.37, off; the best
  EXPECT_EQ(book.levels_off_ladder(), 3u);
  EXPECT_EQ(levels_of(book, 'B'),
            (Levels{{100100, 1, 50}, {100000, 1, 100}, {99950, 1, 200}, {93700, 1, 400}, {93600, 1, 300}}));
  EXPECT_EQ(book.bbo(1), make_bbo(100100, 50, 0, 0));
  EXPECT_EQ(book.remove(5), 1u);  // the best was off the ladder: the next is on it
  EXPECT_EQ(book.bbo(1), make_bbo(100000, 100, 0, 0));
  EXPECT_EQ(book.remove(4), kUnchanged);
  EXPECT_EQ(book.remove(1), 1u);  // the ladder is empty: the best is off it
  EXPECT_EQ(book.bbo(1), make_bbo(99950, 200, 0, 0));
  // $9.36 would fit the empty ladder, but its level is off it already: the order joins that level.
  EXPECT_EQ(book.add(1, 6, 'B', 10, 93600), kUnchanged);
  EXPECT_EQ(book.levels_off_ladder(), 3u);
  EXPECT_EQ(levels_of(book, 'B'), (Levels{{99950, 1, 200}, {93600, 2, 310}}));
  EXPECT_EQ(book.remove(2), 1u);
  EXPECT_EQ(book.bbo(1), make_bbo(93600, 310, 0, 0));
  EXPECT_EQ(book.add(1, 7, 'B', 5, 93500), kUnchanged);  // ladder, below the best off it
  EXPECT_EQ(levels_of(book, 'B'), (Levels{{93600, 2, 310}, {93500, 1, 5}}));
  EXPECT_EQ(book.remove(3), 1u);
  EXPECT_EQ(book.bbo(1), make_bbo(93600, 10, 0, 0));
  EXPECT_EQ(book.remove(6), 1u);
  EXPECT_EQ(book.bbo(1), make_bbo(93500, 5, 0, 0));
  EXPECT_EQ(book.remove(7), 1u);
  EXPECT_EQ(book.bbo(1), make_bbo(0, 0, 0, 0));
  EXPECT_EQ(book.levels_off_ladder(), 3u);
}

TEST(OrderBook, AsksOnAndOffTheLadderKeepPriceOrder) {
  OrderBook book{64};
  const uint32_t kUnchanged = OrderBook::kUnchanged;
  EXPECT_EQ(book.add(1, 1, 'S', 100, 100000), 1u);         // $10.00: ladder, the best
  EXPECT_EQ(book.add(1, 2, 'S', 200, 100050), kUnchanged);  // $10.005: sub-penny, off
  EXPECT_EQ(book.add(1, 3, 'S', 300, 106400), kUnchanged);  // $10.64: 64 ticks above, off
  EXPECT_EQ(book.add(1, 4, 'S', 400, 99900), 1u);           // $9.99: ladder, the best
  EXPECT_EQ(book.levels_off_ladder(), 2u);
  EXPECT_EQ(levels_of(book, 'S'), (Levels{{99900, 1, 400}, {100000, 1, 100}, {100050, 1, 200}, {106400, 1, 300}}));
  EXPECT_EQ(book.bbo(1), make_bbo(0, 0, 99900, 400));
  EXPECT_EQ(book.reduce(4, 150), 1u);
  EXPECT_EQ(book.bbo(1), make_bbo(0, 0, 99900, 250));
  EXPECT_EQ(book.reduce(4, 250), 1u);  // to zero: the level goes
  EXPECT_EQ(book.bbo(1), make_bbo(0, 0, 100000, 100));
  EXPECT_EQ(book.replace(1, 8, 100, 106300), 1u);  // $10.63: ladder; the best is $10.005, off it
  EXPECT_EQ(book.bbo(1), make_bbo(0, 0, 100050, 200));
  EXPECT_EQ(levels_of(book, 'S'), (Levels{{100050, 1, 200}, {106300, 1, 100}, {106400, 1, 300}}));
  EXPECT_EQ(book.levels_off_ladder(), 2u);
  EXPECT_EQ(book.remove(2), 1u);
  EXPECT_EQ(book.bbo(1), make_bbo(0, 0, 106300, 100));
}

// A side's off-ladder levels at whole ticks are known by tick modulo 512: ticks 1488, 2000, 2512 and 3024 share a
// residue. A level off the ladder is found there, however many share it, and never made again on the ladder; a
// tick whose residue holds only another tick's level has none off the ladder.
TEST(OrderBook, OffLadderLevelsSharingAResidueAreFoundNotMadeAgain) {
  OrderBook book{64};
  const uint32_t kUnchanged = OrderBook::kUnchanged;
  EXPECT_EQ(book.add(1, 1, 'B', 100, 300000), 1u);          // $30.00: ladder, the best
  EXPECT_EQ(book.add(1, 2, 'B', 200, 200000), kUnchanged);  // $20.00: 1,000 ticks below, off
  EXPECT_EQ(book.add(1, 3, 'B', 300, 148800), kUnchanged);  // $14.88: off, the same residue
  EXPECT_EQ(book.add(1, 4, 'B', 10, 200000), kUnchanged);   // joins $20.00
  EXPECT_EQ(levels_of(book, 'B'), (Levels{{300000, 1, 100}, {200000, 2, 210}, {148800, 1, 300}}));
  EXPECT_EQ(book.remove(1), 1u);  // the ladder is empty: $14.88 would fit it, but its level is off it
  EXPECT_EQ(book.add(1, 5, 'B', 20, 148800), kUnchanged);
  EXPECT_EQ(levels_of(book, 'B'), (Levels{{200000, 2, 210}, {148800, 2, 320}}));
  EXPECT_EQ(book.remove(3), kUnchanged);
  EXPECT_EQ(book.remove(5), kUnchanged);  // $14.88 gone: $20.00 alone in the residue
  EXPECT_EQ(book.add(1, 6, 'B', 30, 251200), 1u);           // $25.12: none off the ladder there; the ladder
  EXPECT_EQ(book.add(1, 7, 'B', 40, 200000), kUnchanged);   // joins $20.00, off (512 ticks from $25.12)
  EXPECT_EQ(book.add(1, 8, 'B', 50, 302400), 1u);           // $30.24: 512 above $25.12, off; the best
  EXPECT_EQ(book.add(1, 9, 'B', 5, 251200), kUnchanged);    // joins $25.12 on the ladder
  EXPECT_EQ(book.levels_off_ladder(), 3u);
  EXPECT_EQ(levels_of(book, 'B'), (Levels{{302400, 1, 50}, {251200, 2, 35}, {200000, 3, 250}}));
  EXPECT_EQ(book.bbo(1), make_bbo(302400, 50, 0, 0));
  EXPECT_EQ(book.remove(8), 1u);
  EXPECT_EQ(book.bbo(1), make_bbo(251200, 35, 0, 0));
  EXPECT_EQ(book.add(1, 10, 'B', 1, 200000), kUnchanged);   // joins $20.00 again
  EXPECT_EQ(levels_of(book, 'B'), (Levels{{251200, 2, 35}, {200000, 4, 251}}));
  EXPECT_EQ(book.levels_off_ladder(), 3u);
}

// More levels off the ladder at one residue than its count holds: the count stays at its ceiling, and a level there
// is still found rather than made again on the (empty) ladder.
TEST(OrderBook, AResidueWithMoreOffLadderLevelsThanItCountsStillFindsThem) {
  OrderBook book{1024};
  const auto price = [](uint32_t k) { return (1000 + 512 * k) * 100; };  // one residue modulo 512
  for (uint32_t k = 0; k <= 256; ++k) book.add(1, 1 + k, 'B', 10, price(k));  // the first on the ladder
  EXPECT_EQ(book.levels_off_ladder(), 256u);
  book.remove(1);  // the ladder is empty: every tick would fit it
  book.add(1, 1000, 'B', 5, price(100));
  const Levels levels = levels_of(book, 'B');
  ASSERT_EQ(levels.size(), 256u);
  EXPECT_EQ(levels[256 - 100], std::make_tuple(price(100), 2u, uint64_t(15)));
  EXPECT_EQ(book.levels_off_ladder(), 256u);
}

TEST(OrderBook, IndexSurvivesChurnAndGrowth) {
  OrderBook book(16);  // deliberately small: forces the index to grow
  for (uint64_t ref = 1; ref <= 5000; ++ref) book.add(uint16_t(ref % 7), ref * 7919, ref % 2 ? 'B' : 'S', 100, uint32_t(10000 + ref % 50));
  EXPECT_GT(book.index_grows(), 0u);
  for (uint64_t ref = 1; ref <= 5000; ref += 2) book.remove(ref * 7919);
  EXPECT_EQ(book.counters().unknown_refs, 0u);
  EXPECT_EQ(book.live_orders(), 2500u);
  OrderBook::OrderView o;
  for (uint64_t ref = 2; ref <= 5000; ref += 2) ASSERT_TRUE(book.find_order(ref * 7919, o)) << ref;
  for (uint64_t ref = 1; ref <= 5000; ref += 2) ASSERT_FALSE(book.find_order(ref * 7919, o)) << ref;
}

TEST(OrderBook, PowerOfTwoStrideReferencesShareASlotAndLiveInTheOverflow) {
  OrderBook book(1 << 12);
  for (uint64_t i = 1; i <= 3000; ++i) book.add(1, i << 16, 'B', 100, uint32_t(10000 + i % 10));
  EXPECT_GT(book.index_overflowed(), 2900u);  // all map to one slot of the 8,192
  OrderBook::OrderView o;
  for (uint64_t i = 1; i <= 3000; ++i) ASSERT_TRUE(book.find_order(i << 16, o)) << i;
  for (uint64_t i = 1; i <= 3000; i += 3) book.remove(i << 16);
  EXPECT_EQ(book.counters().unknown_refs, 0u);
  for (uint64_t i = 1; i <= 3000; ++i) ASSERT_EQ(book.find_order(i << 16, o), i % 3 != 1) << i;
  OrderBook sequential(1 << 12);
  for (uint64_t i = 1; i <= 3000; ++i) sequential.add(1, i, 'B', 100, 10000);
  EXPECT_EQ(sequential.index_overflowed(), 0u);
}

// Differential test: the real book against the naive reference, in
// lockstep, on generated sessions with edge cases injected.
namespace {

// Injects what a clean generated stream never has: over-cancels and
// over-executions, duplicate adds, bad sides, zero-share replaces, replaces
// to a live reference and onto themselves, and extreme values: the
// references a hash table might use as sentinels (0, all ones), the largest
// prices and share counts, the first and last stock locates; and prices off
// a side's ladder (sub-penny, or near the edge of its 64-cent window).
constexpr uint64_t kExtremeRefs[] = {0, UINT64_MAX, UINT64_MAX - 1, uint64_t(1) << 63};

// The mutations' dice: seeded explicitly, the same draws on every machine.
class Dice {
 public:
  explicit Dice(uint64_t seed) : engine_(seed) {}
  uint64_t below(uint64_t n) { return engine_() % n; }
  uint64_t between(uint64_t lo, uint64_t hi) { return lo + below(hi - lo + 1); }
  bool chance_ppm(uint32_t ppm) { return below(1'000'000) < ppm; }

 private:
  std::mt19937_64 engine_;
};
constexpr uint32_t kExtremeU32[] = {0, 1, UINT32_MAX, UINT32_MAX - 1, 0x7FFFFFFF};

void mutate(std::vector<uint8_t>& m, Dice& rng, uint64_t& last_add_ref) {
  const char type = char(m[0]);
  const auto extreme_ref = [&] { return kExtremeRefs[rng.below(4)]; };
  const auto extreme_u32 = [&] { return kExtremeU32[rng.below(5)]; };
  // A price the side's ladder cannot take, or only just: sub-penny, or 60 to 70 cents away.
  const auto off_the_ladder = [&](uint32_t price) {
    if (rng.below(2)) return price + uint32_t(rng.between(1, 99));
    const uint32_t away = 100 * uint32_t(rng.between(60, 70));
    return rng.below(2) && price > away ? price - away : price + away;
  };
  if (type == 'A') {
    if (last_add_ref && rng.chance_ppm(20000)) store_be64(&m[11], last_add_ref);  // duplicate
    else if (rng.chance_ppm(5000)) m[19] = 'Z';                                     // bad side
    else if (rng.chance_ppm(10000)) store_be64(&m[11], extreme_ref());
    if (rng.chance_ppm(5000)) store_be32(&m[20], extreme_u32());  // shares
    if (rng.chance_ppm(5000)) store_be32(&m[32], extreme_u32());  // price
    else if (rng.chance_ppm(50000)) store_be32(&m[32], off_the_ladder(load_be32(&m[32])));
    if (rng.chance_ppm(2000)) store_be16(&m[1], rng.chance_ppm(500000) ? 0 : 0xFFFF);  // locate
    last_add_ref = load_be64(&m[11]);
  } else if ((type == 'X' || type == 'E') && rng.chance_ppm(100000)) {
    store_be32(&m[19], load_be32(&m[19]) + uint32_t(rng.between(1, 1000)));  // beyond remaining
  } else if ((type == 'X' || type == 'E' || type == 'D') && rng.chance_ppm(10000)) {
    store_be64(&m[11], extreme_ref());
  } else if (type == 'U') {
    if (rng.chance_ppm(20000)) store_be32(&m[27], 0);                          // to zero shares
    else if (last_add_ref && rng.chance_ppm(20000)) store_be64(&m[19], last_add_ref);  // onto a live ref
    else if (rng.chance_ppm(10000)) store_be64(&m[19], load_be64(&m[11]));    // onto itself
    else if (rng.chance_ppm(10000)) store_be64(&m[rng.chance_ppm(500000) ? 11 : 19], extreme_ref());
    if (rng.chance_ppm(5000)) store_be32(&m[27], extreme_u32());  // shares
    if (rng.chance_ppm(5000)) store_be32(&m[31], extreme_u32());  // price
    else if (rng.chance_ppm(50000)) store_be32(&m[31], off_the_ladder(load_be32(&m[31])));
  }
}

}  // namespace

TEST(OrderBook, MatchesNaiveReferenceOnGeneratedSessions) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    // Every fourth a deep book: prices anywhere in 400 cents, so levels on and off the ladders mix.
    itchbench::testing::ScratchDir dir;
    std::vector<std::string> args{"--format", "itch", "--messages", "15000", "--seed", std::to_string(seed)};
    if (seed % 4 == 0) args.insert(args.end(), {"--profile", "deep-book"});
    else args.insert(args.end(), {"--profile", "nasdaq-day", "--symbol-count", seed % 2 ? "5" : "40"});
    if (seed % 3 == 0) args.insert(args.end(), {"--unknown-ref-ppm", "20000"});
    const auto file = itchbench::testing::read_bytes(itchbench::testing::synthesize(args, dir.file("s.itch")));
    itchbench::testing::LockstepBooks ls;
    Dice rng(seed * 101);
    uint64_t last_add = 0;
    uint64_t n = 0;
    itch::FileError error;
    const bool whole = itch::walk_length_prefixed(file.data(), file.size(), [&](uint64_t, const uint8_t* m,
                                                                                     size_t len) {
      std::vector<uint8_t> msg(m, m + len);
      mutate(msg, rng, last_add);
      EXPECT_EQ(ls.apply(msg.data(), msg.size()), "");
      if (++n % 2500 == 0) {
        EXPECT_EQ(ls.compare_state(), "");
      }
    }, &error);
    ASSERT_TRUE(whole);
    ASSERT_EQ(n, 15000u);
    ASSERT_EQ(ls.compare_state(), "");
    ASSERT_EQ(ls.real_events.size(), ls.ref_events.size());
    for (size_t i = 0; i < ls.real_events.size(); ++i) ASSERT_EQ(ls.real_events[i], ls.ref_events[i]) << "event " << i;
    EXPECT_EQ(ls.book.counters().unknown_refs, ls.ref.unknown);
    EXPECT_EQ(ls.book.counters().duplicate_refs, ls.ref.duplicate);
    EXPECT_EQ(ls.book.counters().invalid_orders, ls.ref.invalid);
    EXPECT_GT(ls.ref.duplicate + ls.ref.invalid, 0u);  // the mutations did happen
    EXPECT_GT(ls.book.levels_off_ladder(), 0u);
    EXPECT_GT(ls.real_events.size(), 500u);
  }
}
