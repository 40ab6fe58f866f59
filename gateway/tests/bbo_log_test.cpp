// The BBO log's writer against slots built by hand from FORMAT.md ("BBO slot"), byte by byte.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "log/bbo_log.hpp"
#include "slot_bytes.hpp"
#include "test_files.hpp"

using namespace itchbench;
using namespace itchbench::testing;

namespace {
void bbo_slot(std::vector<uint8_t>& out, uint32_t bid_px, uint32_t ask_px, uint32_t bid_qty_low, uint32_t ask_qty_low,
           uint32_t timestamp_off, uint16_t locate, uint8_t seq_off, uint8_t flags) {
  put(out, bid_px, 4);
  put(out, ask_px, 4);
  put(out, bid_qty_low, 4);
  put(out, ask_qty_low, 4);
  put(out, timestamp_off, 4);
  put(out, locate, 2);
  put(out, seq_off, 1);
  put(out, flags, 1);
}
void bbo_anchor(std::vector<uint8_t>& out, uint64_t seq, uint64_t timestamp) {
  put(out, seq, 8);
  put(out, timestamp, 8);
  zeros(out, 7);
  put(out, 0x90, 1);
}
void bbo_high(std::vector<uint8_t>& out, uint32_t bid_high, uint32_t ask_high) {
  put(out, bid_high, 4);
  put(out, ask_high, 4);
  zeros(out, 15);
  put(out, 0xA0, 1);
}
BboEvent bbo(uint64_t seq, uint64_t timestamp, uint16_t locate, uint32_t bid_px, uint64_t bid_qty, uint32_t ask_px,
             uint64_t ask_qty, uint8_t flags = 0) {
  return BboEvent{seq, timestamp, locate, Bbo{bid_px, ask_px, bid_qty, ask_qty}, flags};
}
LogIdentity bbo_identity() { return LogIdentity{logfmt::StageClock::kNone, logfmt::OriginClock::kNone, "run", "abc"}; }
std::vector<uint8_t> bbo_slots_of(const std::string& path) {
  const std::vector<uint8_t> bytes = itchbench::testing::read_bytes(path);
  return std::vector<uint8_t>(bytes.begin() + logfmt::kHeaderSize, bytes.end());
}
}  // namespace

TEST(BboLog, WritesAnchorsOnlyWhereTheOffsetsDoNotFit) {
  ScratchDir dir;
  const std::string path = dir.file("bbo.bbo");
  BboLog log(path, bbo_identity(), 1 << 20);
  const uint8_t stale = logfmt::kBookMayBeStale, snapshot = logfmt::kFromSnapshot;
  log.append(bbo(1000, kNineThirty, 7, 1234500, 300, 1235000, 200));                 // the first: an anchor
  log.append(bbo(1001, kNineThirty + 5, 8, 0, 0, 1235000, 100, stale));              // no anchor; an empty bid
  log.append(bbo(1255, kNineThirty + 0xFFFF'FFFF, 9, 1, 5, 2, 6));                    // both offsets at their widest
  log.append(bbo(1256, kNineThirty + 10, 9, 3, 7, 4, 8));                             // seq + 256: an anchor
  log.append(bbo(1257, kNineThirty + 9, 9, 5, 9, 6, 10));                             // a timestamp before the anchor's
  log.append(bbo(1257, kNineThirty + 9, 9, 7, 5'000'000'000, 8, 11, snapshot));      // bid shares past 32 bits
  log.append(bbo(1258, kNineThirty + 9, 9, 7, 12, 8, 6'000'000'000));                 // ask shares past 32 bits
  log.append(bbo(999, kNineThirty + 9, 9, 1, 1, 2, 2));                               // a seq before the anchor's
  EXPECT_EQ(log.records(), 8u);
  EXPECT_EQ(log.anchors(), 4u);
  EXPECT_EQ(log.dropped(), 0u);
  log.close();

  std::vector<uint8_t> want;
  bbo_anchor(want, 1000, kNineThirty);
  bbo_slot(want, 1234500, 1235000, 300, 200, 0, 7, 0, 0x80);
  bbo_slot(want, 0, 1235000, 0, 100, 5, 8, 1, 0x81);
  bbo_slot(want, 1, 2, 5, 6, 0xFFFF'FFFF, 9, 255, 0x80);
  bbo_anchor(want, 1256, kNineThirty + 10);
  bbo_slot(want, 3, 4, 7, 8, 0, 9, 0, 0x80);
  bbo_anchor(want, 1257, kNineThirty + 9);
  bbo_slot(want, 5, 6, 9, 10, 0, 9, 0, 0x80);
  bbo_high(want, 1, 0);  // 5,000,000,000 = 0x1_2A05_F200
  bbo_slot(want, 7, 8, 0x2A05'F200, 11, 0, 9, 0, 0x82);
  bbo_high(want, 0, 1);  // 6,000,000,000 = 0x1_65A0_BC00
  bbo_slot(want, 7, 8, 12, 0x65A0'BC00, 0, 9, 1, 0x80);
  bbo_anchor(want, 999, kNineThirty + 9);
  bbo_slot(want, 1, 2, 1, 2, 0, 9, 0, 0x80);

  const std::vector<uint8_t> bytes = itchbench::testing::read_bytes(path);
  ASSERT_EQ(bytes.size(), logfmt::kHeaderSize + want.size());
  logfmt::Header h;
  std::memcpy(&h, bytes.data(), sizeof h);
  EXPECT_EQ(h.version, 2);
  EXPECT_EQ(h.kind, uint16_t(logfmt::Kind::kBbo));
  EXPECT_EQ(h.record_size, 24);
  EXPECT_EQ(h.record_count, want.size() / 24);
  EXPECT_EQ(bbo_slots_of(path), want);
}

TEST(BboLog, AFullLogCountsTheEventsItLostAndKeepsWholeOnes) {
  // Room for three slots: the first event (its anchor and itself), the second; the third is lost, and so is the
  // one after it, whose anchor (an event after a loss starts from one of its own) finds no room either.
  ScratchDir dir;
  const std::string path = dir.file("bbo.bbo");
  BboLog log(path, bbo_identity(), 4096, logfmt::kHeaderSize + 3 * sizeof(logfmt::BboSlot));
  for (uint64_t seq = 1; seq <= 4; ++seq) log.append(bbo(seq, kNineThirty, 1, uint32_t(100 * seq), 10, 0, 0));
  EXPECT_EQ(log.records(), 2u);
  EXPECT_EQ(log.dropped(), 2u);
  EXPECT_NE(log.drop_reason().find("limit"), std::string::npos) << log.drop_reason();
  log.close();
  std::vector<uint8_t> want;
  bbo_anchor(want, 1, kNineThirty);
  bbo_slot(want, 100, 0, 10, 0, 0, 1, 0, 0x80);
  bbo_slot(want, 200, 0, 10, 0, 0, 1, 1, 0x80);
  EXPECT_EQ(bbo_slots_of(path), want);
}

TEST(BboLog, AnEventWithHighSharesIsWrittenWholeOrNotAtAll) {
  // Room for two slots: the anchor, and one of the two an event with shares past 32 bits takes (its high-shares slot
  // and itself). Neither is written, and the event is counted lost: a log never holds a high-shares slot whose event
  // is not after it. The next event, after the loss, starts from an anchor of its own, which takes the last slot,
  // and is lost too.
  ScratchDir dir;
  const std::string path = dir.file("bbo.bbo");
  BboLog log(path, bbo_identity(), 4096, logfmt::kHeaderSize + 2 * sizeof(logfmt::BboSlot));
  log.append(bbo(1, kNineThirty, 1, 100, 5'000'000'000, 0, 0));
  log.append(bbo(2, kNineThirty + 1, 1, 100, 5, 0, 0));
  EXPECT_EQ(log.records(), 0u);
  EXPECT_EQ(log.dropped(), 2u);
  log.close();
  std::vector<uint8_t> want;
  bbo_anchor(want, 1, kNineThirty);
  bbo_anchor(want, 2, kNineThirty + 1);
  EXPECT_EQ(bbo_slots_of(path), want);
}
