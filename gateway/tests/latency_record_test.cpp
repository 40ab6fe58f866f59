// The latency record: wide (format version 4: a 24-byte head, then one 8-byte
// stamp per stage the log records) and compact (version 5) (gateway/log/FORMAT.md).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "log/mmap_log.hpp"
#include "pipeline/gateway.hpp"
#include "pipeline/stamps.hpp"
#include "test_files.hpp"

using namespace itchbench;
using itchbench::testing::ScratchDir;

TEST(LatencyRecord, WideRecordSizeFollowsTheStagesRecorded) {
  // Expected values worked out from FORMAT.md's layout by hand: 24 + 8 per stage; compact slots are 20 bytes.
  EXPECT_EQ(logfmt::latency_record_size(0), 24u);
  EXPECT_EQ(logfmt::latency_record_size(kStampBook), 32u);
  EXPECT_EQ(logfmt::latency_record_size(kAllStamps), 56u);  // simulation's every stamp: no kernel stamp
  EXPECT_EQ(logfmt::latency_record_size(logfmt::kAllStages), 64u);
  EXPECT_EQ(LatencyLog::slot_size(LatencyFormat::kWide, kAllStamps), 56u);
  EXPECT_EQ(LatencyLog::slot_size(LatencyFormat::kCompact, logfmt::kAllStages), 20u);
}

TEST(LatencyRecord, AGatewayWritesTheStagesOfItsLogAndNoOthers) {
  // A log recording `decoded` and `published`: 40-byte records whose two stamps are the decode stamp (always)
  // and the publish stamp (only for a message that changed the BBO); the header names the stages.
  ScratchDir dir;
  const std::string path = dir.file("stages.lat");
  const uint8_t stages = kStampDecoded | kStampPublished;
  // A calibrated clock, as in every run: stamps are raw ticks and the header carries the line that maps them.
  const StageClock clock = StageClock::calibrate(5);
  const uint64_t before = monotonic_ns();
  {
    LogIdentity id;
    id.stages = stages;
    id.stage_clock = clock.source();
    id.clock_line = clock.line();
    LatencyLog log(path, LatencyFormat::kWide, id);
    OrderBook book(1024);
    NullPublisher pub;
    Gateway<NullPublisher> gw(book, clock, &log, nullptr, pub);
    auto add = [&](uint64_t seq, uint64_t ref, uint32_t price) {
      itch::AddOrder a;
      a.stock_locate = 7;
      a.order_ref = ref;
      a.side = 'B';
      a.shares = 100;
      a.price = price;
      a.stock = itch::alpha8::from("TEST");
      uint8_t buf[itch::kMaxMessageLength];
      a.encode(buf);
      gw.on_message(seq, buf, itch::AddOrder::kLength, logfmt::Arrival{0, 0, 1000 + seq});
    };
    add(1, 11, 10000);  // the first bid: a BBO event
    add(2, 12, 9900);   // below it: no event
    log.close();
  }
  const uint64_t after = monotonic_ns();
  const auto bytes = itchbench::testing::read_bytes(path);
  logfmt::Header h;
  std::memcpy(&h, bytes.data(), sizeof h);
  EXPECT_EQ(h.version, 4u);
  EXPECT_EQ(h.header_size, logfmt::kLatencyHeaderSize);
  EXPECT_EQ(h.stage_clock, uint16_t(clock.source()));
  logfmt::StageClockLine line;
  std::memcpy(&line, bytes.data() + sizeof h, sizeof line);
  EXPECT_EQ(line.tsc0, clock.line().tsc0);
  EXPECT_EQ(line.ns0, clock.line().ns0);
  EXPECT_EQ(line.ns_per_tick_q32, clock.line().ns_per_tick_q32);
  EXPECT_EQ(h.stages, stages);
  EXPECT_EQ(h.record_size, 40u);
  ASSERT_EQ(bytes.size(), logfmt::kLatencyHeaderSize + 2 * 40u);
  struct Record {
    logfmt::LatencyRecord head;
    uint64_t decoded, published;
  };
  static_assert(sizeof(Record) == 40);
  Record r[2];
  std::memcpy(r, bytes.data() + logfmt::kLatencyHeaderSize, sizeof r);
  EXPECT_EQ(r[0].head.seq, 1u);
  EXPECT_EQ(r[0].head.t_origin, 1001u);
  EXPECT_EQ(r[0].head.stock_locate, 7u);
  EXPECT_EQ(r[0].head.msg_type, 'A');
  EXPECT_EQ(r[0].head.flags, logfmt::kWritten | logfmt::kBboEvent);
  EXPECT_NE(r[0].decoded, 0u);
  EXPECT_GE(r[0].published, r[0].decoded);
  // Mapped with the header's line, the stamps fall between the CLOCK_MONOTONIC reads around the run (a rate fitted
  // over 5 ms is off by some ppm: far below the 50 us allowed).
  EXPECT_GE(clock.to_ns(r[0].decoded) + 50'000, before);
  EXPECT_LE(clock.to_ns(r[0].published), after + 50'000);
  EXPECT_EQ(r[1].head.seq, 2u);
  EXPECT_EQ(r[1].head.flags, logfmt::kWritten);
  EXPECT_GE(r[1].decoded, r[0].published);
  EXPECT_EQ(r[1].published, 0u);
}

TEST(LatencyRecord, ARecordSizeItsTypeCannotHoldIsRefused) {
  using WideLatencyRecords = RecordLog<logfmt::LatencyRecord>;
  ScratchDir dir;
  EXPECT_THROW(WideLatencyRecords(dir.file("a"), logfmt::Kind::kLatency, {}, MmapLog::kDefaultReserveBytes, 16),
               std::invalid_argument);
  EXPECT_THROW(WideLatencyRecords(dir.file("b"), logfmt::Kind::kLatency, {}, MmapLog::kDefaultReserveBytes, 72),
               std::invalid_argument);
  EXPECT_THROW(WideLatencyRecords(dir.file("c"), logfmt::Kind::kLatency, {}, MmapLog::kDefaultReserveBytes, 28),
               std::invalid_argument);
}

TEST(LatencyLog, AFullCompactLogDropsWholeMessagesNeverTheirEscapesAlone) {
  // A page of room: 160 header bytes and 196 slots of 20. Every message below takes two slots (a sequence jump's
  // escape, and the first message's base), so 98 fit; the rest are dropped and counted, each whole.
  ScratchDir dir;
  const std::string path = dir.file("full.lat");
  LogIdentity id;
  id.stages = kStampRead;
  uint64_t recorded = 0, dropped = 0, slots = 0;
  {
    LatencyLog log(path, LatencyFormat::kCompact, id, 0, 4096);
    for (uint64_t i = 0; i < 300; ++i) {
      MessageLatency m;
      m.seq = 2 * i + 1;
      m.stamp[1] = 1'000'000'000'000 + i;  // the first is 10^12 from the base (0): too far, the base moves
      log.append(m);
    }
    recorded = log.records();
    dropped = log.dropped();
    slots = log.slots();
    log.close();
  }
  EXPECT_EQ(recorded, 98u);
  EXPECT_EQ(dropped, 202u);
  EXPECT_EQ(slots, 196u);
  const auto bytes = itchbench::testing::read_bytes(path);
  ASSERT_EQ(bytes.size(), logfmt::kLatencyHeaderSize + 196 * sizeof(logfmt::CompactLatencyRecord));
  // Escape, message, escape, message ...: the last slot is a message.
  for (size_t k = 0; k < 196; ++k) {
    const uint8_t flags = bytes[logfmt::kLatencyHeaderSize + k * 20 + 19];
    EXPECT_EQ(flags & logfmt::kEscapeSlot, k % 2 == 0 ? logfmt::kEscapeSlot : 0) << "slot " << k;
  }
}
