// The harness's reading of a top-N depth log (FORMAT.md, "Level change record"): each event's whole top N
// rebuilt from its level changes equals the book's own top N read in full after the message, and malformed
// records are refused, named.
#include "log/depth_event_builder.hpp"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <vector>

#include "book/depth_tracker.hpp"
#include "book/order_book.hpp"

// Its names kept to itself: the test binary is compiled as unity sources (CMakeLists.txt).
namespace depth_event_builder_test {

using namespace itchbench;

namespace {

constexpr uint32_t kLevels = 3;

logfmt::LevelChangeRecord change(uint64_t seq, char side, uint32_t px, uint64_t qty, uint16_t locate = 1) {
  logfmt::LevelChangeRecord r{};
  r.seq = seq;
  r.timestamp = 1000 + seq;
  r.stock_locate = locate;
  r.flags = logfmt::kWritten;
  r.side = uint8_t(side);
  r.px = px;
  r.qty = qty;
  return r;
}

// The events of records, or the builder's words for what is malformed in them.
std::string refusal(const std::vector<logfmt::LevelChangeRecord>& records) {
  DepthEventBuilder builder(kLevels);
  std::vector<uint8_t> out(records.size() * logfmt::depth_event_size(kLevels));
  try {
    builder.apply(records.data(), records.size(), out.data(), records.size());
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// A tracker's changes over 20,000 random messages of one stock, read back whole, are the book's top N after each.
TEST(DepthEventBuilder, RebuildsTheBooksTopLevelsFromTheTrackersChanges) {
  std::mt19937 rng(5);
  OrderBook book{1 << 16};
  DepthTracker tracker(kLevels);
  DepthEventBuilder builder(kLevels);
  std::vector<uint64_t> live;
  uint64_t next_ref = 1, events = 0;
  std::vector<uint8_t> out(logfmt::depth_event_size(kLevels));
  for (uint64_t seq = 1; seq <= 20000; ++seq) {
    const bool bid = rng() % 2;
    const uint32_t price = bid ? 10000 - 100 * (rng() % 8) : 10100 + 100 * (rng() % 8);
    BookTouch touch;
    if (live.empty() || rng() % 2) {
      book.add(1, next_ref, bid ? 'B' : 'S', 100 + rng() % 5, price, touch);
      live.push_back(next_ref++);
    } else {
      const size_t at = rng() % live.size();
      book.remove(live[at], touch);
      live.erase(live.begin() + long(at));
    }
    const uint32_t n = tracker.take_change(book, touch);
    if (!n) continue;
    std::vector<logfmt::LevelChangeRecord> records;
    for (uint32_t k = 0; k < n; ++k)
      records.push_back(change(seq, k < tracker.bid_changes() ? 'B' : 'S', tracker.changes()[k].px,
                               tracker.changes()[k].qty));
    ASSERT_EQ(builder.apply(records.data(), records.size(), out.data(), 1), 1u) << "seq " << seq;
    logfmt::DepthRecord head;
    std::memcpy(&head, out.data(), sizeof head);
    EXPECT_EQ(head.seq, seq);
    EXPECT_EQ(head.timestamp, 1000 + seq);
    BookLevel want[2 * kLevels];
    book.top_levels(1, true, kLevels, want);
    book.top_levels(1, false, kLevels, want + kLevels);
    for (uint32_t k = 0; k < 2 * kLevels; ++k) {
      logfmt::DepthLevel got;
      std::memcpy(&got, out.data() + sizeof head + k * sizeof got, sizeof got);
      ASSERT_EQ(got.px, want[k].px) << "seq " << seq << " level " << k;
      ASSERT_EQ(got.qty, want[k].qty) << "seq " << seq << " level " << k;
    }
    ++events;
  }
  EXPECT_GT(events, 5000u);
}

TEST(DepthEventBuilder, RefusesMalformedRecordsNamingThem) {
  // Sound: a level made, another better one, then both gone and a third made, each side best first.
  EXPECT_EQ(refusal({change(1, 'B', 100, 5), change(2, 'B', 101, 7), change(3, 'B', 101, 0), change(3, 'B', 100, 0),
                     change(3, 'S', 200, 1)}),
            "");
  EXPECT_EQ(refusal({change(1, 'B', 100, 5), change(2, 'B', 99, 0)}),
            "depth record 1 takes price 99 out of the top levels, which do not hold it");
  EXPECT_EQ(refusal({change(1, 'B', 100, 5), change(2, 'B', 100, 5)}),
            "depth record 1 changes nothing (price 100 already has 5 shares)");
  EXPECT_EQ(refusal({change(1, 'B', 100, 5), change(1, 'B', 101, 5)}),
            "depth record 1 is out of its event's order (bids before asks, each side best first)");
  EXPECT_EQ(refusal({change(1, 'S', 200, 5), change(1, 'B', 100, 5)}),
            "depth record 1 is out of its event's order (bids before asks, each side best first)");
  EXPECT_EQ(refusal({change(1, 'S', 200, 1), change(1, 'S', 201, 1), change(1, 'S', 202, 1), change(1, 'S', 203, 1)}),
            "depth record 3 leaves stock 1 with more than 3 levels a side");
  EXPECT_EQ(refusal({change(1, 'X', 200, 1)}), "depth record 0 has side byte 88, not B or S");
  std::vector<logfmt::LevelChangeRecord> mixed{change(1, 'B', 100, 5), change(1, 'B', 99, 5)};
  mixed[1].flags = logfmt::kWritten | logfmt::kBookMayBeStale;
  EXPECT_EQ(refusal(mixed), "depth record 1 has other flags than its event's first record");
}

TEST(DepthEventBuilder, CarriesEachStocksLevelsFromCallToCall) {
  DepthEventBuilder builder(kLevels);
  std::vector<uint8_t> out(2 * logfmt::depth_event_size(kLevels));
  const std::vector<logfmt::LevelChangeRecord> first{change(1, 'B', 100, 5), change(2, 'S', 200, 9, 2)};
  ASSERT_EQ(builder.apply(first.data(), first.size(), out.data(), 2), 2u);
  // Stock 1's bid, made in the call before, is changed in this one: one event, its level there.
  const logfmt::LevelChangeRecord later = change(3, 'B', 100, 6);
  ASSERT_EQ(builder.apply(&later, 1, out.data(), 1), 1u);
  logfmt::DepthLevel best_bid;
  std::memcpy(&best_bid, out.data() + sizeof(logfmt::DepthRecord), sizeof best_bid);
  EXPECT_EQ(best_bid.px, 100u);
  EXPECT_EQ(best_bid.qty, 6u);
  // A record past the room made for its event is refused, counted from the first record this builder was given.
  const std::vector<logfmt::LevelChangeRecord> two{change(4, 'B', 100, 1), change(5, 'B', 100, 2)};
  EXPECT_THROW(builder.apply(two.data(), two.size(), out.data(), 1), std::runtime_error);
}

}  // namespace depth_event_builder_test
