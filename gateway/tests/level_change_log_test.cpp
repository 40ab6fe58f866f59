// The depth log's writer and reader against slots built by hand from FORMAT.md ("Level change slot"), byte by
// byte.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "log/level_change_log.hpp"
#include "log/level_change_slots.hpp"
#include "test_files.hpp"

using namespace itchbench;
using itchbench::testing::ScratchDir;

namespace {
constexpr uint64_t kNineThirty = 34'200'000'000'000;  // 09:30, ns since midnight

void put(std::vector<uint8_t>& out, uint64_t v, int bytes) {  // little-endian, at most 8 bytes
  for (int i = 0; i < bytes; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
void zeros(std::vector<uint8_t>& out, int bytes) { out.insert(out.end(), size_t(bytes), uint8_t(0)); }
void change(std::vector<uint8_t>& out, uint32_t px, uint32_t qty_low, uint32_t timestamp_off, uint16_t locate,
            uint8_t seq_off, uint8_t flags) {
  put(out, px, 4);
  put(out, qty_low, 4);
  put(out, timestamp_off, 4);
  put(out, locate, 2);
  put(out, seq_off, 1);
  put(out, flags, 1);
}
void anchor(std::vector<uint8_t>& out, uint64_t seq, uint64_t timestamp) {
  put(out, seq, 8);
  put(out, timestamp, 6);
  zeros(out, 1);
  put(out, 0x90, 1);
}
void high(std::vector<uint8_t>& out, uint32_t shares_high) {
  put(out, shares_high, 4);
  zeros(out, 11);
  put(out, 0xA0, 1);
}
LogIdentity identity() {
  LogIdentity id{logfmt::StageClock::kNone, logfmt::OriginClock::kNone, "run", "abc"};
  id.levels = 5;
  return id;
}
}  // namespace

TEST(LevelChangeLog, WritesAnchorsOnlyWhereTheOffsetsDoNotFit) {
  ScratchDir dir;
  const std::string path = dir.file("depth.dep");
  LevelChangeLog log(path, identity(), 1 << 20);
  const uint8_t stale = logfmt::kBookMayBeStale, snapshot = logfmt::kFromSnapshot;
  log.append(1000, kNineThirty, 7, 0, true, 1234500, 300);              // the first: an anchor before it
  log.append(1000, kNineThirty, 7, stale, false, 1235000, 0);           // the same event: no anchor
  log.append(1255, kNineThirty + 0xFFFF'FFFF, 9, 0, false, 1, 5);       // both offsets at their widest
  log.append(1256, kNineThirty + 10, 9, 0, false, 2, 6);                // seq + 256: an anchor
  log.append(1257, kNineThirty + 9, 9, 0, false, 3, 7);                 // a timestamp before the anchor's
  log.append(1257, kNineThirty + 9, 9, snapshot, true, 4, 5'000'000'000);  // shares past 32 bits: a high slot
  log.append(999, kNineThirty + 9, 9, 0, true, 5, 8);                   // a seq before the anchor's
  EXPECT_EQ(log.records(), 7u);
  EXPECT_EQ(log.anchors(), 4u);
  EXPECT_EQ(log.dropped(), 0u);
  log.close();

  std::vector<uint8_t> want;
  anchor(want, 1000, kNineThirty);
  change(want, 1234500, 300, 0, 7, 0, 0x84);
  change(want, 1235000, 0, 0, 7, 0, 0x81);
  change(want, 1, 5, 0xFFFF'FFFF, 9, 255, 0x80);
  anchor(want, 1256, kNineThirty + 10);
  change(want, 2, 6, 0, 9, 0, 0x80);
  anchor(want, 1257, kNineThirty + 9);
  change(want, 3, 7, 0, 9, 0, 0x80);
  high(want, 1);                                  // 5,000,000,000 = 0x1_2A05_F200
  change(want, 4, 0x2A05'F200, 0, 9, 0, 0x86);
  anchor(want, 999, kNineThirty + 9);
  change(want, 5, 8, 0, 9, 0, 0x84);

  const std::vector<uint8_t> bytes = itchbench::testing::read_bytes(path);
  ASSERT_EQ(bytes.size(), logfmt::kHeaderSize + want.size());
  logfmt::Header h;
  std::memcpy(&h, bytes.data(), sizeof h);
  EXPECT_EQ(h.version, 3);
  EXPECT_EQ(h.kind, uint16_t(logfmt::Kind::kDepth));
  EXPECT_EQ(h.record_size, 16);
  EXPECT_EQ(h.record_count, want.size() / 16);
  EXPECT_EQ(h.levels, 5);
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin() + logfmt::kHeaderSize, bytes.end()), want);
}

TEST(LevelChangeLog, AFullLogCountsTheChangesItLostAndKeepsWholeOnes) {
  // Room for three slots: the first change (its anchor and itself), the second; the third is lost, and so is
  // the one after it, whose anchor (a change after a loss starts from one of its own) finds no room either.
  ScratchDir dir;
  const std::string path = dir.file("depth.dep");
  LevelChangeLog log(path, identity(), 4096, logfmt::kHeaderSize + 3 * sizeof(logfmt::LevelChangeSlot));
  for (uint64_t seq = 1; seq <= 4; ++seq) log.append(seq, kNineThirty, 1, 0, true, uint32_t(100 * seq), 10);
  EXPECT_EQ(log.records(), 2u);
  EXPECT_EQ(log.dropped(), 2u);
  EXPECT_NE(log.drop_reason().find("limit"), std::string::npos) << log.drop_reason();
  log.close();
  std::vector<uint8_t> want;
  anchor(want, 1, kNineThirty);
  change(want, 100, 10, 0, 1, 0, 0x84);
  change(want, 200, 10, 0, 1, 1, 0x84);
  const std::vector<uint8_t> bytes = itchbench::testing::read_bytes(path);
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin() + logfmt::kHeaderSize, bytes.end()), want);
}

TEST(LevelChangeLog, ChangesNotKeptLeaveNoTrace) {
  // append_if writes every slot and marks only the kept ones: the file is the kept changes' alone, anchors and all,
  // as append writes them; a change not kept writes no anchor, and one lost to a full log is counted only if kept.
  ScratchDir dir;
  const std::string path = dir.file("depth.dep");
  LevelChangeLog log(path, identity(), 4096, logfmt::kHeaderSize + 5 * sizeof(logfmt::LevelChangeSlot));
  log.append_if(false, 1000, kNineThirty, 7, 0, true, 1, 1);        // before any anchor
  log.append_if(true, 1000, kNineThirty, 7, 0, true, 1234500, 300);  // anchor, change
  log.append_if(false, 1001, kNineThirty + 1, 7, 0, false, 2, 2);
  {  // what a reader following the log sees meanwhile: the slot after the two written, not marked written
    const std::vector<uint8_t> live = itchbench::testing::read_bytes(path);
    const size_t flags_at = logfmt::kHeaderSize + 2 * sizeof(logfmt::LevelChangeSlot) + 15;
    ASSERT_GT(live.size(), flags_at);
    EXPECT_EQ(live[flags_at] & logfmt::kWritten, 0);
  }
  log.append_if(false, 1300, kNineThirty + 2, 7, 0, false, 3, 3);    // seq + 300: would need an anchor
  log.append_if(true, 1002, kNineThirty + 3, 8, 0, false, 1235000, 0);
  log.append_if(true, 1400, kNineThirty + 4, 8, 0, true, 1234400, 100);  // anchor, change: the log is full
  log.append_if(false, 1401, kNineThirty + 5, 8, 0, true, 4, 4);     // full, not kept: not counted
  log.append_if(true, 1402, kNineThirty + 6, 8, 0, true, 5, 5);      // full, kept: counted
  EXPECT_EQ(log.records(), 3u);
  EXPECT_EQ(log.dropped(), 1u);
  log.close();
  std::vector<uint8_t> want;
  anchor(want, 1000, kNineThirty);
  change(want, 1234500, 300, 0, 7, 0, 0x84);
  change(want, 1235000, 0, 3, 8, 2, 0x80);
  anchor(want, 1400, kNineThirty + 4);
  change(want, 1234400, 100, 0, 8, 0, 0x84);
  const std::vector<uint8_t> bytes = itchbench::testing::read_bytes(path);
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin() + logfmt::kHeaderSize, bytes.end()), want);
}

TEST(LevelChangeLog, AnEventsChangesAreKeptAsAPrefix) {
  // append_first_if writes an event's changes at once and marks the first `kept`: the file holds those alone, as
  // append writes them one by one, anchors and high-shares slots included.
  ScratchDir dir;
  const std::string path = dir.file("depth.dep");
  LevelChangeLog log(path, identity(), 1 << 20);
  log.append_first_if<2>(2, 1000, kNineThirty, 7, 0, true, {1234500, 1234400}, {300, 200});       // anchor, both
  log.append_first_if<2>(1, 1001, kNineThirty + 1, 7, 0, false, {1235000, 1235100}, {100, 50});    // the first
  log.append_first_if<2>(0, 1002, kNineThirty + 2, 7, 0, false, {1, 2}, {3, 4});                   // neither
  log.append_first_if<2>(2, 1003, kNineThirty + 3, 8, 0, true, {1234300, 1234200}, {5'000'000'000, 9});
  log.append_first_if<2>(2, 1004, kNineThirty + 5, 8, 0, false, {1235400, 1235500}, {7, 6'000'000'000});
  log.append_first_if<2>(2, 1300, kNineThirty + 4, 8, 0, false, {1235200, 1235300}, {1, 2});       // seq + 300
  EXPECT_EQ(log.records(), 9u);
  EXPECT_EQ(log.anchors(), 2u);
  log.close();
  std::vector<uint8_t> want;
  anchor(want, 1000, kNineThirty);
  change(want, 1234500, 300, 0, 7, 0, 0x84);
  change(want, 1234400, 200, 0, 7, 0, 0x84);
  change(want, 1235000, 100, 1, 7, 1, 0x80);
  high(want, 1);  // 5,000,000,000 = 0x1_2A05_F200
  change(want, 1234300, 0x2A05'F200, 3, 8, 3, 0x84);
  change(want, 1234200, 9, 3, 8, 3, 0x84);
  change(want, 1235400, 7, 5, 8, 4, 0x80);
  high(want, 1);  // 6,000,000,000 = 0x1_65A0_BC00
  change(want, 1235500, 0x65A0'BC00, 5, 8, 4, 0x80);
  anchor(want, 1300, kNineThirty + 4);
  change(want, 1235200, 1, 0, 8, 0, 0x80);
  change(want, 1235300, 2, 0, 8, 0, 0x80);
  const std::vector<uint8_t> bytes = itchbench::testing::read_bytes(path);
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin() + logfmt::kHeaderSize, bytes.end()), want);
}

TEST(LevelChangeLog, AChangeWithHighSharesIsWrittenWholeOrNotAtAll) {
  // Room for two slots: the anchor, and one of the two a change of shares past 32 bits takes (its high-shares slot
  // and itself). Neither is written and the change is counted lost: a closed log ending in a high-shares slot is
  // refused by its readers. The next change, after the loss, starts from an anchor of its own and is lost too.
  ScratchDir dir;
  const std::string path = dir.file("depth.dep");
  LevelChangeLog log(path, identity(), 4096, logfmt::kHeaderSize + 2 * sizeof(logfmt::LevelChangeSlot));
  log.append(1, kNineThirty, 1, 0, true, 100, 5'000'000'000);
  log.append(2, kNineThirty + 1, 1, 0, true, 100, 5);
  EXPECT_EQ(log.records(), 0u);
  EXPECT_EQ(log.dropped(), 2u);
  log.close();
  std::vector<uint8_t> want;
  anchor(want, 1, kNineThirty);
  anchor(want, 2, kNineThirty + 1);
  const std::vector<uint8_t> bytes = itchbench::testing::read_bytes(path);
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin() + logfmt::kHeaderSize, bytes.end()), want);
}

namespace {
// Slots as FORMAT.md's example reads them: offsets at their widest, an anchor moving both on, shares of
// 5,000,000,000 (0x1_2A05_F200) over a high-shares slot and the change's low 32 bits, each kind of flag and side.
std::vector<uint8_t> example_slots() {
  std::vector<uint8_t> s;
  anchor(s, 1000, kNineThirty);
  change(s, 1234500, 300, 0, 7, 0, 0x84);
  change(s, 1235000, 0, 0, 7, 0, 0x81);
  change(s, 1, 5, 0xFFFF'FFFF, 9, 255, 0x80);
  anchor(s, 1256, kNineThirty + 10);
  high(s, 1);
  change(s, 2, 0x2A05'F200, 3, 9, 1, 0x86);
  change(s, 3, 7, 4, 9, 2, 0x80);
  return s;
}
struct Change {
  uint64_t seq, timestamp;
  uint16_t locate;
  uint8_t flags;
  char side;
  uint32_t px;
  uint64_t qty;
  bool operator==(const Change& o) const {
    return seq == o.seq && timestamp == o.timestamp && locate == o.locate && flags == o.flags && side == o.side &&
           px == o.px && qty == o.qty;
  }
};
const std::vector<Change> kExampleRead = {
    {1000, kNineThirty, 7, 0x80, 'B', 1234500, 300},
    {1000, kNineThirty, 7, 0x81, 'S', 1235000, 0},
    {1255, kNineThirty + 0xFFFF'FFFF, 9, 0x80, 'S', 1, 5},
    {1257, kNineThirty + 13, 9, 0x82, 'B', 2, 5'000'000'000},
    {1258, kNineThirty + 14, 9, 0x80, 'S', 3, 7},
};
std::vector<Change> changes_of(const std::vector<logfmt::LevelChangeRecord>& records, uint64_t n) {
  std::vector<Change> out;
  for (uint64_t i = 0; i < n; ++i) {
    const logfmt::LevelChangeRecord& r = records[i];
    out.push_back({r.seq, r.timestamp, r.stock_locate, r.flags, char(r.side), r.px, r.qty});
  }
  return out;
}
}  // namespace

TEST(LevelChangeSlots, ReadBackAsTheFormatSays) {
  const std::vector<uint8_t> slots = example_slots();
  const uint64_t n = slots.size() / 16;
  std::vector<logfmt::LevelChangeRecord> out(n);
  SlotAnchor a;
  const SlotsRead r = read_level_change_slots(slots.data(), n, a, out.data());
  EXPECT_EQ(r.fault, SlotFault::kNone);
  EXPECT_EQ(r.consumed, n);
  EXPECT_EQ(changes_of(out, r.records), kExampleRead);
}

TEST(LevelChangeSlots, ReadAPartAtATimeAsWhole) {
  // Every part size: parts with no anchor of their own (the last one carried), a part ending in a high-shares slot
  // (left for the next part, as a reader carries it), parts of anchors alone.
  const std::vector<uint8_t> slots = example_slots();
  const uint64_t n = slots.size() / 16;
  for (uint64_t part = 1; part <= n; ++part) {
    SlotAnchor a;
    std::vector<Change> read;
    for (uint64_t at = 0; at < n;) {
      std::vector<logfmt::LevelChangeRecord> out(part + 1);
      SlotsRead r = read_level_change_slots(slots.data() + at * 16, std::min(part, n - at), a, out.data());
      if (r.consumed == 0)  // a part of one high-shares slot: read again with the slot after it, as a reader carries it
        r = read_level_change_slots(slots.data() + at * 16, std::min(part + 1, n - at), a, out.data());
      ASSERT_EQ(r.fault, SlotFault::kNone) << "part " << part << " at " << at;
      ASSERT_GT(r.consumed, 0u);
      for (const Change& c : changes_of(out, r.records)) read.push_back(c);
      at += r.consumed;
    }
    EXPECT_EQ(read, kExampleRead) << "part " << part;
  }
}

TEST(LevelChangeSlots, AHighSharesSlotThatEndsThemIsLeftForTheNext) {
  std::vector<uint8_t> slots;
  anchor(slots, 5, 100);
  change(slots, 1, 1, 0, 1, 0, 0x80);
  high(slots, 3);
  std::vector<logfmt::LevelChangeRecord> out(3);
  SlotAnchor a;
  const SlotsRead r = read_level_change_slots(slots.data(), 3, a, out.data());
  EXPECT_EQ(r.fault, SlotFault::kNone);
  EXPECT_EQ(r.records, 1u);
  EXPECT_EQ(r.consumed, 2u);
}

TEST(LevelChangeSlots, SlotsOutOfTheirOrderAreRefusedWithTheSlotNamed) {
  struct Case {
    std::vector<uint8_t> slots;
    SlotFault fault;
    uint64_t at;
  };
  std::vector<Case> cases(4);
  change(cases[0].slots, 1, 1, 0, 1, 0, 0x80);  // no anchor before it
  anchor(cases[0].slots, 5, 0);
  cases[0].fault = SlotFault::kNoAnchor;
  cases[0].at = 0;
  anchor(cases[1].slots, 5, 0);  // a high-shares slot, then an anchor
  high(cases[1].slots, 1);
  anchor(cases[1].slots, 6, 0);
  change(cases[1].slots, 1, 1, 0, 1, 0, 0x80);
  cases[1].fault = SlotFault::kHighSharesAlone;
  cases[1].at = 1;
  anchor(cases[2].slots, 5, 0);  // a flag bit no kind has
  change(cases[2].slots, 1, 1, 0, 1, 0, 0x80 | 0x40);
  cases[2].fault = SlotFault::kFlags;
  cases[2].at = 1;
  anchor(cases[3].slots, 5, 0);  // the kind bits both set
  change(cases[3].slots, 1, 1, 0, 1, 0, 0x80 | 0x30);
  cases[3].fault = SlotFault::kFlags;
  cases[3].at = 1;
  for (const Case& c : cases) {
    const uint64_t n = c.slots.size() / 16;
    std::vector<logfmt::LevelChangeRecord> out(n);
    SlotAnchor a;
    const SlotsRead r = read_level_change_slots(c.slots.data(), n, a, out.data());
    EXPECT_EQ(r.fault, c.fault);
    EXPECT_EQ(r.fault_at, c.at);
  }
}
