// The compact log reader against the writer: messages chosen by hand to need
// every kind of escape are written through LatencyLog and must come back
// exactly; the expected values are the messages themselves.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "log/compact_reader.hpp"
#include "log/latency_log.hpp"
#include "test_files.hpp"

using namespace itchbench;
using itchbench::testing::ScratchDir;

namespace {

MessageLatency message(uint64_t seq, uint64_t origin, std::vector<uint64_t> stamps, uint16_t locate = 3) {
  MessageLatency m;
  m.seq = seq;
  m.t_origin = origin;
  for (size_t i = 0; i < stamps.size(); ++i) m.stamp[i] = stamps[i];
  m.stock_locate = locate;
  m.msg_type = 'A';
  return m;
}

std::vector<uint8_t> written(const std::string& path, uint8_t stages, const logfmt::StageClockLine& line,
                             const std::vector<MessageLatency>& ms) {
  LogIdentity id;
  id.stages = stages;
  id.stage_clock = logfmt::StageClock::kTscTicks;
  id.clock_line = line;
  LatencyLog log(path, LatencyFormat::kCompact, id);
  for (const auto& m : ms) log.append(m);
  log.close();
  return itchbench::testing::read_bytes(path);
}

const uint8_t kEvery = logfmt::kAllStages;

// Sequence jumps, an origin that goes back and one that leaps, a base that moves, a stage 70,000 ticks after the
// one before (past a 16-bit step), a stage not stamped, and a seq of 2^64 - 1 after which the count wraps to 0.
const std::vector<MessageLatency> kMessages = {
    message(1, 1000, {5000, 5010, 5020, 5030, 5040}),
    message(2, 1500, {5100, 5110, 0, 5130, 0}),
    message(9, 900, {6000, 6005, 76005, 76010, 76020}),
    message(10, 900 + (uint64_t(1) << 40), {uint64_t(1) << 50, (uint64_t(1) << 50) + 1, 0, 0, 0}),
    message(~uint64_t(0), 5, {7000, 7001, 7002, 7003, 7004}),
    message(0, 6, {7100, 7101, 7102, 7103, 7104}),
};

}  // namespace

TEST(CompactReader, EveryStampOfHandChosenMessagesComesBackAsWritten) {
  ScratchDir dir;
  const auto bytes = written(dir.file("a.lat"), kEvery, {}, kMessages);
  const size_t slots = (bytes.size() - logfmt::kLatencyHeaderSize) / sizeof(logfmt::CompactLatencyRecord);
  ASSERT_GT(slots, kMessages.size());  // escapes were needed
  std::vector<uint8_t> out(slots * logfmt::latency_record_size(kEvery));
  CompactState state;
  const DecodedSlots d =
      decode_compact(bytes.data() + logfmt::kLatencyHeaderSize, slots, kEvery, nullptr, state, out.data());
  ASSERT_EQ(d.records, kMessages.size());
  EXPECT_EQ(d.consumed, slots);
  for (size_t i = 0; i < kMessages.size(); ++i) {
    logfmt::LatencyRecord r;
    std::memcpy(&r, out.data() + i * logfmt::latency_record_size(kEvery), sizeof r);
    EXPECT_EQ(r.seq, kMessages[i].seq) << i;
    EXPECT_EQ(r.t_origin, kMessages[i].t_origin) << i;
    EXPECT_EQ(r.stock_locate, 3);
    EXPECT_EQ(r.msg_type, 'A');
    EXPECT_EQ(r.flags, logfmt::kWritten);
    for (unsigned s = 0; s < logfmt::kStageCount; ++s) {
      uint64_t t;
      std::memcpy(&t, out.data() + i * logfmt::latency_record_size(kEvery) + sizeof r + 8 * s, 8);
      EXPECT_EQ(t, kMessages[i].stamp[s]) << "message " << i << " stage " << s;
    }
  }
  EXPECT_EQ(state.next_seq, 1u);  // after seq 0
  EXPECT_EQ(state.prev_origin, 6u);
}

TEST(CompactReader, SlotsReadInPiecesCarryTheirStateAndLeaveTrailingEscapesForLater) {
  ScratchDir dir;
  const auto bytes = written(dir.file("b.lat"), kEvery, {}, kMessages);
  const uint8_t* slots = bytes.data() + logfmt::kLatencyHeaderSize;
  const size_t n = (bytes.size() - logfmt::kLatencyHeaderSize) / sizeof(logfmt::CompactLatencyRecord);
  const size_t record = logfmt::latency_record_size(kEvery);
  std::vector<uint8_t> whole(n * record), pieces(n * record);
  CompactState all;
  ASSERT_EQ(decode_compact(slots, n, kEvery, nullptr, all, whole.data()).records, kMessages.size());
  // Two slots at a time: a piece ending in escapes gives them back (consumed < its length) for the next piece.
  CompactState state;
  size_t at = 0, records = 0;
  while (at < n) {
    size_t take = std::min<size_t>(2, n - at);
    DecodedSlots d = decode_compact(slots + at * sizeof(logfmt::CompactLatencyRecord), take, kEvery, nullptr, state,
                                    pieces.data() + records * record);
    while (d.records == 0 && at + take < n) {  // only escapes: read on with more slots
      ++take;
      d = decode_compact(slots + at * sizeof(logfmt::CompactLatencyRecord), take, kEvery, nullptr, state,
                         pieces.data() + records * record);
    }
    ASSERT_GT(d.records, 0u);
    records += d.records;
    at += d.consumed;
  }
  EXPECT_EQ(records, kMessages.size());
  EXPECT_EQ(0, std::memcmp(whole.data(), pieces.data(), records * record));
}

TEST(CompactReader, StampsAreMappedToNsByTheClockLineAndUnstampedOnesStayZero) {
  ScratchDir dir;
  // 2.5 ticks a ns: ns_per_tick = 0.4 = 1717986918.4 / 2^32, the q32 rounded down.
  const logfmt::StageClockLine line{4000, 1000000, 1717986918, 0};
  const uint8_t stages = logfmt::kStageRead | logfmt::kStageBook;
  const auto bytes = written(dir.file("c.lat"), stages, line, {message(1, 1, {0, 4000, 0, 6500, 0})});
  std::vector<uint8_t> out(4 * logfmt::latency_record_size(stages));
  CompactState state;
  const size_t n = (bytes.size() - logfmt::kLatencyHeaderSize) / sizeof(logfmt::CompactLatencyRecord);
  ASSERT_EQ(decode_compact(bytes.data() + logfmt::kLatencyHeaderSize, n, stages, &line, state, out.data()).records,
            1u);
  uint64_t read, book;
  std::memcpy(&read, out.data() + sizeof(logfmt::LatencyRecord), 8);
  std::memcpy(&book, out.data() + sizeof(logfmt::LatencyRecord) + 8, 8);
  EXPECT_EQ(read, 1000000u);  // at tsc0: ns0
  // 2500 ticks after tsc0: floor(2500 * 1717986918 / 2^32) = floor(999.99999976...) = 999 ns.
  EXPECT_EQ(book, 1000999u);
}

TEST(CompactReader, AnEscapeOfAKindTheStagesCannotHoldIsNamedWithItsSlot) {
  ScratchDir dir;
  const uint64_t t = uint64_t(1) << 40;  // past `first`'s 32 bits from the base 0: the message escapes a new base
  auto bytes = written(dir.file("d.lat"), kEvery, {}, {message(1, 1, {t, t + 1, t + 2, t + 3, t + 4})});
  const size_t n = (bytes.size() - logfmt::kLatencyHeaderSize) / sizeof(logfmt::CompactLatencyRecord);
  ASSERT_EQ(n, 2u);
  bytes[logfmt::kLatencyHeaderSize + offsetof(logfmt::LatencyEscape, kind)] = 5;  // no such kind
  std::vector<uint8_t> out(n * logfmt::latency_record_size(kEvery));
  CompactState state;
  try {
    decode_compact(bytes.data() + logfmt::kLatencyHeaderSize, n, kEvery, nullptr, state, out.data());
    FAIL() << "an escape of kind 5 was read";
  } catch (const BadEscape& e) {
    EXPECT_EQ(e.slot, 0u);
    EXPECT_EQ(e.kind, 5);
  }
}
