// The compiled report scan on a log written through LatencyLog with
// stamps chosen so every figure is known by hand: read stamps 100 ns
// apart, decoded 5 ns later, the book 10 + (i % 50) ns after that, one
// message in 7 rejected. Then the same log counted in one part and in
// three (threads, from the first pass's checkpoints) must agree.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <vector>

#include "log/latency_log.hpp"
#include "log/latency_scan.hpp"
#include "test_files.hpp"

// Its names kept to itself: the test binary is compiled as unity sources (CMakeLists.txt).
namespace latency_scan_test {

using namespace itchbench;
using itchbench::testing::ScratchDir;

namespace {

constexpr uint64_t kMessages = 300'000;  // about five reads of the log: parts to cut it into
constexpr int64_t kBase = 1'000'000'000;

bool rejected(uint64_t i) { return i % 7 == 3; }

// without_book: messages i in [first, last) decoded but not stamped at the book.
scan::Source written(const std::string& path, std::pair<uint64_t, uint64_t> without_book = {0, 0}) {
  LogIdentity id;
  id.stages = logfmt::kStageRead | logfmt::kStageDecoded | logfmt::kStageBook;
  id.stage_clock = logfmt::StageClock::kMonotonic;
  LatencyLog log(path, LatencyFormat::kCompact, id);
  for (uint64_t i = 0; i < kMessages; ++i) {
    MessageLatency m;
    m.seq = i + 1;
    m.stock_locate = uint16_t(1 + i % 9);
    m.msg_type = "AXDEU"[i % 5];
    m.flags = rejected(i) ? logfmt::kRejected : 0;
    m.stamp[MessageLatency::kRead] = uint64_t(kBase + int64_t(100 * i));
    if (!rejected(i)) {
      m.stamp[MessageLatency::kDecoded] = m.stamp[MessageLatency::kRead] + 5;
      const bool booked = i < without_book.first || i >= without_book.second;
      m.stamp[MessageLatency::kBook] = booked ? m.stamp[MessageLatency::kDecoded] + 10 + i % 50 : 0;
    }
    log.append(m);
  }
  log.close();
  const auto bytes = itchbench::testing::read_bytes(path);
  scan::Source s;
  s.path = path;
  s.data_offset = logfmt::kLatencyHeaderSize;
  s.stored = (bytes.size() - logfmt::kLatencyHeaderSize) / sizeof(logfmt::CompactLatencyRecord);
  s.stages = id.stages;
  s.compact = true;
  return s;
}

const std::vector<scan::StageSpec> kStages = {{scan::kRead, scan::kDecoded, false},
                                              {scan::kDecoded, scan::kBook, false},
                                              {scan::kReceive, scan::kBook, false},
                                              {scan::kBook, scan::kPublished, true}};  // never stamped

scan::Params params_of(const scan::FirstPass& f, uint64_t warmup) {
  scan::Params p;
  p.warmup = warmup;
  p.stages = {kStages[0], kStages[1], kStages[2]};
  p.headline = 2;
  p.time_origin = f.t_first;
  p.time_shift = scan::time_shift_for(f.t_first, f.t_hi);
  p.max_locate = f.max_locate;
  p.chains = {scan::Chain{{scan::kRead, scan::kDecoded, scan::kBook}, false}};
  p.co_starts = {scan::kRead};
  p.kept = 100;
  return p;
}

std::vector<std::tuple<int64_t, int64_t>> slowest_of(const scan::Result& r) {
  std::vector<std::tuple<int64_t, int64_t>> out;
  for (const auto& s : r.slowest) out.emplace_back(s.total, s.seq);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(LatencyScan, EveryFigureOfAHandMadeLogIsTheOneWorkedOutByHand) {
  ScratchDir dir;
  const scan::Source source = written(dir.file("latency.lat"));
  const uint64_t warmup = 1000;
  const scan::FirstPass f = scan::first_pass(source, warmup, kStages);
  const uint64_t accepted = kMessages - (kMessages + 3) / 7;  // i % 7 == 3 for i in [0, kMessages)
  EXPECT_EQ(f.messages, kMessages);
  EXPECT_EQ(f.accepted, accepted);
  EXPECT_EQ(f.max_locate, 9u);
  EXPECT_EQ(f.found_stages, 0b0111u);  // book -> published never stamped
  EXPECT_EQ(f.set_stamps, (1u << scan::kRead) | (1u << scan::kDecoded) | (1u << scan::kBook));
  EXPECT_GT(f.checkpoints.size(), 3u);

  scan::Result r = scan::second_pass(source, params_of(f, warmup), f.checkpoints, 1);
  // read -> decoded: 5 ns, every accepted message after the warm-up.
  const auto parse = r.stage[0].table();
  ASSERT_EQ(parse.size(), 1u);
  EXPECT_EQ(parse[0].value, 5);
  EXPECT_EQ(uint64_t(parse[0].count), accepted - warmup);
  // decoded -> book: 10 + i % 50 over every accepted message, the warm-up's apart: 50 values.
  const auto book = r.stage[1].table(), warm = r.warmup[1].table();
  ASSERT_EQ(book.size(), 50u);
  int64_t counted = 0;
  for (const auto& e : book) counted += e.count;
  for (const auto& e : warm) counted += e.count;
  EXPECT_EQ(uint64_t(counted), accepted);
  EXPECT_EQ(book.front().value, 10);
  EXPECT_EQ(book.back().value, 59);
  // The hop chain read -> decoded -> book counts the warm-up too; its slowest are the 59 ns ones, earliest first.
  std::vector<std::tuple<int64_t, int64_t>> earliest;
  for (uint64_t i = 0; earliest.size() < 100; ++i)
    if (i % 50 == 49 && !rejected(i)) earliest.emplace_back(5 + 59, int64_t(i + 1));
  EXPECT_EQ(slowest_of(r), earliest);
  // Messages evenly spaced in time, 100 ns apart from the first after the warm-up (the 1,001st accepted: index
  // 1,167) to the last (index 299,999, accepted): a span of 29,883,200 ns, which 128 bins of 2^18 ns hold and of
  // 2^17 ns do not. A whole bin spans 2,621.44 indices, six in seven of them accepted.
  EXPECT_EQ(f.t_first, kBase + 100 * 1167);
  EXPECT_EQ(f.t_hi, kBase + 100 * 299'999);
  EXPECT_EQ(r.time_shift, 18u);
  const uint64_t bins = 29'883'200 / (1 << 18) + 1;
  uint64_t messages = 0;
  for (uint64_t b = 0; b < r.throughput.size(); ++b) {
    messages += r.throughput[b];
    if (b + 1 < bins) {
      EXPECT_NEAR(double(r.throughput[b]), 2621.44 * 6 / 7, 2) << "bin " << b;
    } else if (b >= bins) {
      EXPECT_EQ(r.throughput[b], 0u) << "bin " << b;
    }
  }
  EXPECT_GT(r.throughput[bins - 1], 0u);
  EXPECT_EQ(messages, accepted - warmup);

  // Counted in three parts, added: the same tables, bins and slowest.
  scan::Result parts = scan::second_pass(source, params_of(f, warmup), f.checkpoints, 3);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(parts.stage[i].table(), r.stage[i].table()) << i;
    EXPECT_EQ(parts.warmup[i].table(), r.warmup[i].table()) << i;
  }
  EXPECT_EQ(parts.by_symbol->table(), r.by_symbol->table());
  EXPECT_EQ(parts.by_type->table(), r.by_type->table());
  EXPECT_EQ(parts.over_time->table(), r.over_time->table());
  EXPECT_EQ(parts.hop[0][1].table(), r.hop[0][1].table());
  EXPECT_EQ(parts.cumulative[0][1].table(), r.cumulative[0][1].table());
  EXPECT_EQ(parts.co[0].table(), r.co[0].table());
  EXPECT_EQ(parts.throughput, r.throughput);
  EXPECT_EQ(slowest_of(parts), slowest_of(r));
}

// Warm-up 0: the chain read -> decoded -> book's hops and cumulative, and the table from the read to the book, count
// what the stages over the same stamps count, except messages 150,000 to 150,099, which have no book stamp: the
// chain's first hop (it needs every stamp of the chain) leaves them out, and has their 5 ns fewer than the
// read -> decoded stage; the tables to the book have none of them. The same in one part and in three.
TEST(LatencyScan, AMessageWithoutAChainsStampIsLeftOutOfTheChainsHops) {
  ScratchDir dir;
  const std::pair<uint64_t, uint64_t> gap{150'000, 150'100};
  const scan::Source source = written(dir.file("latency.lat"), gap);
  const scan::FirstPass f = scan::first_pass(source, 0, kStages);
  const uint64_t accepted = kMessages - (kMessages + 3) / 7;
  uint64_t unbooked = 0;
  for (uint64_t i = gap.first; i < gap.second; ++i) unbooked += !rejected(i);
  for (const unsigned threads : {1u, 3u}) {
    scan::Result r = scan::second_pass(source, params_of(f, 0), f.checkpoints, threads);
    using Entry = ExactHistogram::Entry;
    EXPECT_EQ(r.stage[0].table(), (std::vector<Entry>{{0, 5, int64_t(accepted)}})) << threads;
    EXPECT_EQ(r.hop[0][0].table(), (std::vector<Entry>{{0, 5, int64_t(accepted - unbooked)}})) << threads;
    EXPECT_EQ(r.hop[0][1].table(), r.stage[1].table()) << threads;
    // read -> book, the receive stamp being the read's: i % 50 + 15 ns over the booked messages.
    std::vector<Entry> to_book;
    for (int64_t v = 15; v < 65; ++v) to_book.push_back({0, v, 0});
    for (uint64_t i = 0; i < kMessages; ++i)
      if (!rejected(i) && (i < gap.first || i >= gap.second)) ++to_book[i % 50].count;
    EXPECT_EQ(r.stage[2].table(), to_book) << threads;
    EXPECT_EQ(r.cumulative[0][1].table(), to_book) << threads;
    EXPECT_EQ(r.co[0].table(), to_book) << threads;
  }
}

}  // namespace latency_scan_test
