// The gateway's index of its latency log against a read of the log itself:
// for a log of every kind of message (rejected ones, BBO events, kernel
// stamps present and absent, sequence jumps, stamps and origins that need
// escapes), in both formats and in blocks small enough to have many, the
// first pass taken from the index equals the first pass over the whole log
// for every warm-up, and a second pass cut at the index's checkpoints equals
// one read from the start, and so does a pass that follows the log through
// its index while it is written. An index that does not follow its log is
// refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "log/latency_log.hpp"
#include "log/latency_scan.hpp"
#include "test_files.hpp"

// Its names kept to itself: the test binary is compiled as unity sources (CMakeLists.txt).
namespace latency_index_test {

using namespace itchbench;
using itchbench::testing::ScratchDir;

namespace {

constexpr uint64_t kMessages = 1'000;
constexpr uint32_t kBlock = 7;  // messages a block: 143 of them

struct Written {
  scan::Source source;
  std::vector<logfmt::LatencyBlockRecord> blocks;
};

// A deterministic mix of messages (a fixed LCG), written with its index; after_each(i) once message i is.
Written written(const ScratchDir& dir, LatencyFormat format,
                const std::function<void(uint64_t)>& after_each = [](uint64_t) {}) {
  LogIdentity id;
  id.stages = logfmt::kAllStages;
  id.stage_clock = logfmt::StageClock::kMonotonic;
  const std::string path = dir.file("latency.lat"), index = dir.file("latency.idx");
  {
    LatencyLog log(path, format, id, 0, MmapLog::kNoLimit, index, kBlock);
    uint64_t state = 12345, seq = 1, t = 5'000'000'000, origin = 1'000'000;
    const auto next = [&](uint64_t n) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return (state >> 33) % n;
    };
    for (uint64_t i = 0; i < kMessages; ++i) {
      MessageLatency m;
      seq += next(20) == 0 ? 2 + next(100) : 1;  // now and then a gap: an escaped seq
      m.seq = seq;
      origin = next(30) == 0 ? origin - next(1000) : origin + next(5000);  // an origin that goes back: escaped
      m.t_origin = next(40) == 0 ? 0 : origin;
      t += 50 + next(next(25) == 0 ? 200'000 : 500);  // now and then a stamp beyond 2^16 ticks: escaped
      const bool rejected = next(11) == 0, bbo = !rejected && next(3) == 0;
      m.flags = uint8_t((rejected ? logfmt::kRejected : 0) | (bbo ? logfmt::kBboEvent : 0));
      m.stock_locate = uint16_t(rejected ? 60000 : 1 + next(500));  // a rejected message's locate is not counted
      m.msg_type = "AXDEUFP"[next(7)];
      m.stamp[MessageLatency::kKernel] = !bbo && i > 300 && next(4) ? t - 20 : 0;  // the kernel's, on some non-BBO
      m.stamp[MessageLatency::kRead] = t;
      if (!rejected) {
        m.stamp[MessageLatency::kDecoded] = t + 7 + next(20);
        m.stamp[MessageLatency::kBook] = m.stamp[MessageLatency::kDecoded] + 10 + next(next(50) ? 100 : 100'000);
        if (bbo) m.stamp[MessageLatency::kPublished] = m.stamp[MessageLatency::kBook] + 30;
      }
      log.append(m);
      after_each(i);
    }
    log.close();
  }
  Written w;
  const auto bytes = itchbench::testing::read_bytes(path);
  const size_t slot = LatencyLog::slot_size(format, id.stages);
  w.source = {path, logfmt::kLatencyHeaderSize, (bytes.size() - logfmt::kLatencyHeaderSize) / slot, id.stages,
              format == LatencyFormat::kCompact, false, {}};
  const auto raw = itchbench::testing::read_bytes(index);
  w.blocks.resize((raw.size() - logfmt::kHeaderSize) / sizeof(logfmt::LatencyBlockRecord));
  std::memcpy(w.blocks.data(), raw.data() + logfmt::kHeaderSize, w.blocks.size() * sizeof w.blocks[0]);
  return w;
}

const std::vector<scan::StageSpec> kStages = {
    {scan::kKernel, scan::kRead, false}, {scan::kRead, scan::kDecoded, false},
    {scan::kReceive, scan::kBook, false}, {scan::kBook, scan::kPublished, true},
    {scan::kOrigin, scan::kRead, false}, {scan::kPublished, scan::kKernel, false}};  // the last: never both set

void expect_same(const scan::FirstPass& a, const scan::FirstPass& b, uint64_t warmup) {
  SCOPED_TRACE("warm-up " + std::to_string(warmup));
  EXPECT_EQ(a.messages, b.messages);
  EXPECT_EQ(a.accepted, b.accepted);
  EXPECT_EQ(a.max_locate, b.max_locate);
  EXPECT_EQ(a.any_after_warmup, b.any_after_warmup);
  EXPECT_EQ(a.t_first, b.t_first);
  EXPECT_EQ(a.t_hi, b.t_hi);
  EXPECT_EQ(a.set_stamps, b.set_stamps);
  EXPECT_EQ(a.found_stages, b.found_stages);
}

class LatencyIndex : public ::testing::TestWithParam<LatencyFormat> {};

TEST_P(LatencyIndex, TheFirstPassFromTheIndexIsTheLogsOwnForEveryWarmup) {
  ScratchDir dir;
  const Written w = written(dir, GetParam());
  ASSERT_EQ(w.blocks.size(), (kMessages + kBlock - 1) / kBlock);
  const scan::FirstPass whole = scan::first_pass(w.source, 0, kStages);
  // The mix has what the comparison must cover: rejections, a stage found on BBO events only, one never found.
  ASSERT_LT(whole.accepted, whole.messages);
  ASSERT_EQ(whole.found_stages, 0b011111u);
  ASSERT_LE(whole.max_locate, 500u);
  for (uint64_t warmup = 0; warmup <= whole.accepted + 2; ++warmup)
    expect_same(scan::first_pass(w.source, warmup, kStages),
                scan::first_pass(w.source, warmup, kStages, w.blocks.data(), w.blocks.size()), warmup);
}

TEST_P(LatencyIndex, ASecondPassCutAtTheIndexsCheckpointsCountsWhatOneReadCounts) {
  ScratchDir dir;
  const Written w = written(dir, GetParam());
  const scan::FirstPass f = scan::first_pass(w.source, 100, kStages, w.blocks.data(), w.blocks.size());
  scan::Params p;
  p.warmup = 100;
  p.stages = {kStages[1], kStages[2], kStages[3]};
  p.headline = 1;
  p.time_origin = f.t_first;
  p.time_shift = scan::time_shift_for(f.t_first, f.t_hi);
  p.max_locate = f.max_locate;
  scan::Result one = scan::second_pass(w.source, p);
  scan::Result cut = scan::second_pass(w.source, p, f.checkpoints, 3);
  for (size_t i = 0; i < p.stages.size(); ++i) {
    EXPECT_EQ(one.stage[i].table(), cut.stage[i].table()) << "stage " << i;
    EXPECT_EQ(one.warmup[i].table(), cut.warmup[i].table()) << "stage " << i;
  }
  EXPECT_EQ(one.by_symbol->table(), cut.by_symbol->table());
  EXPECT_EQ(one.throughput, cut.throughput);
}

// What the blocks' own order cannot show: a checkpoint's coder state or accepted count, or a largest locate, that
// the log belies. The second pass finds each where it reads the log, and says so, rather than count from it.
TEST_P(LatencyIndex, ACheckpointOrALocateTheLogBeliesStopsTheSecondPass) {
  ScratchDir dir;
  const Written w = written(dir, GetParam());
  // The first pass takes such an index (its blocks follow one another); the second, cut into 4 parts at its
  // checkpoints, must not.
  const auto second = [&](std::vector<logfmt::LatencyBlockRecord> blocks) {
    const scan::FirstPass f = scan::first_pass(w.source, 0, kStages, blocks.data(), blocks.size());
    scan::Params p;
    p.stages = {kStages[1]};
    p.time_origin = f.t_first;
    p.time_shift = scan::time_shift_for(f.t_first, f.t_hi);
    p.max_locate = f.max_locate;
    return [&w, p, f] { return scan::second_pass(w.source, p, f.checkpoints, 4); };
  };
  EXPECT_NO_THROW(second(w.blocks)());
  auto locate = w.blocks;
  for (auto& b : locate) b.max_locate = 3;  // the mix's locates go to 500
  EXPECT_THROW(second(locate)(), std::runtime_error);
  // Every checkpoint after the first block with a rejection made wrong alike, so whichever the parts start at is;
  // that block counts one accepted message more, as the rest then say.
  auto accepted = w.blocks;
  const size_t i = size_t(std::find_if(accepted.begin(), accepted.end(),
                                       [](const auto& b) { return b.accepted < b.messages; }) - accepted.begin());
  ASSERT_LT(i, accepted.size() / 4);
  accepted[i].accepted += 1;
  for (size_t k = i + 1; k < accepted.size(); ++k) accepted[k].accepted_before += 1;
  EXPECT_THROW(second(accepted)(), std::runtime_error);
  if (GetParam() == LatencyFormat::kCompact) {
    auto state = w.blocks;
    for (size_t k = 1; k < state.size(); ++k) state[k].next_seq += 1;
    EXPECT_THROW(second(state)(), std::runtime_error);
  }
}

scan::Params followed_params(uint64_t warmup, uint64_t max_locate) {
  scan::Params p;
  p.warmup = warmup;
  p.stages = {kStages[0], kStages[1], kStages[2], kStages[3], kStages[4]};
  p.headline = 2;
  p.max_locate = max_locate;
  p.chains = {scan::Chain{{scan::kKernel, scan::kRead, scan::kDecoded, scan::kBook}, false},
              scan::Chain{{scan::kRead, scan::kBook, scan::kPublished}, true}};
  p.co_starts = {scan::kRead};
  p.kept = 50;
  return p;
}

void expect_same(scan::Result& a, scan::Result& b) {
  for (size_t i = 0; i < a.stage.size(); ++i) {
    EXPECT_EQ(a.stage[i].table(), b.stage[i].table()) << "stage " << i;
    EXPECT_EQ(a.warmup[i].table(), b.warmup[i].table()) << "stage " << i;
  }
  EXPECT_EQ(a.by_type->table(), b.by_type->table());
  EXPECT_EQ(a.by_symbol->table(), b.by_symbol->table());
  EXPECT_EQ(a.over_time->table(), b.over_time->table());
  EXPECT_EQ(a.throughput, b.throughput);
  EXPECT_EQ(a.time_shift, b.time_shift);
  for (size_t c = 0; c < a.hop.size(); ++c)
    for (size_t i = 0; i < a.hop[c].size(); ++i) {
      EXPECT_EQ(a.hop[c][i].table(), b.hop[c][i].table()) << "chain " << c << " hop " << i;
      EXPECT_EQ(a.cumulative[c][i].table(), b.cumulative[c][i].table()) << "chain " << c << " hop " << i;
    }
  EXPECT_EQ(a.co[0].table(), b.co[0].table());
  const auto kept = [](const scan::Result& r) {
    std::vector<std::pair<int64_t, int64_t>> out;
    for (const auto& s : r.slowest) out.emplace_back(s.total, s.seq);
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(kept(a), kept(b));
}

// The writer waits, every 50 messages, for the follower to have counted every block written so far, so the
// follower reads blocks while later ones are still being written, whatever the machine's speed.
TEST_P(LatencyIndex, APassThatFollowsTheLogAsItIsWrittenCountsWhatAPassAfterItCounts) {
  ScratchDir dir;
  const std::string path = dir.file("latency.lat"), index = dir.file("latency.idx");
  uint32_t state = 0;
  uint64_t followed = 0;
  Written w;
  std::thread writer([&] {
    w = written(dir, GetParam(), [&](uint64_t i) {
      if (i % 50 != 49) return;
      const uint64_t whole = i / kBlock * kBlock;  // the messages of the blocks the index holds by now
      while (__atomic_load_n(&followed, __ATOMIC_RELAXED) < whole) std::this_thread::yield();
    });
    __atomic_store_n(&state, 1u, __ATOMIC_RELEASE);
  });
  while (!std::filesystem::exists(index)) std::this_thread::yield();
  const scan::Source source{path, logfmt::kLatencyHeaderSize, 0, logfmt::kAllStages,
                            GetParam() == LatencyFormat::kCompact, false, {}};
  const uint64_t warmup = 100;
  scan::Followed f;
  try {
    f = scan::follow(source, followed_params(warmup, 5), index, &state, &followed);
  } catch (const std::exception& e) {
    __atomic_store_n(&followed, UINT64_MAX, __ATOMIC_RELAXED);  // the writer waits no more
    writer.join();
    FAIL() << e.what();
  }
  writer.join();

  const scan::FirstPass first = scan::first_pass(w.source, warmup, kStages, w.blocks.data(), w.blocks.size());
  EXPECT_FALSE(f.abandoned);
  EXPECT_EQ(f.blocks, w.blocks.size());
  EXPECT_EQ(f.slots, w.source.stored);
  EXPECT_EQ(f.messages, first.messages);
  EXPECT_EQ(f.accepted, first.accepted);
  EXPECT_EQ(f.max_locate, first.max_locate);  // above the 5 the dense counts were sized for: counted all the same
  EXPECT_EQ(f.counts.time_origin, first.t_first);
  scan::Params p = followed_params(warmup, first.max_locate);
  p.time_origin = first.t_first;
  p.time_shift = scan::time_shift_for(first.t_first, first.t_hi);
  scan::Result after = scan::second_pass(w.source, p, first.checkpoints, 2);
  ASSERT_GT(p.time_shift, 0u);  // the bins widened as the follower went
  expect_same(f.counts, after);
}

TEST_P(LatencyIndex, APassThatFollowsAnIndexTheLogBeliesStops) {
  ScratchDir dir;
  const Written w = written(dir, GetParam());
  const std::string index = dir.file("latency.idx");
  auto raw = itchbench::testing::read_bytes(index);
  auto* blocks = reinterpret_cast<logfmt::LatencyBlockRecord*>(raw.data() + logfmt::kHeaderSize);
  blocks[9].messages += 1;  // block 9 claims a message its slots do not hold; the next follows it
  for (size_t k = 10; k < w.blocks.size(); ++k) blocks[k].messages_before += 1;
  itchbench::testing::write_bytes(index, raw);
  const uint32_t ended = 1;
  uint64_t followed = 0;
  EXPECT_THROW(scan::follow(w.source, followed_params(0, 500), index, &ended, &followed), std::runtime_error);
  EXPECT_EQ(followed, 9 * kBlock);  // the blocks before it were counted
}

// A writer that has ended before the follower began leaves it every block: counted in parts on 3 threads, whatever
// the warm-up (one that ends inside a later part, and one longer than the log: no time bins to share, one part).
TEST_P(LatencyIndex, APassThatFindsTheWriterEndedCountsTheRestInPartsAsAPassAfterIt) {
  ScratchDir dir;
  const Written w = written(dir, GetParam());
  const std::string index = dir.file("latency.idx");
  const uint32_t ended = 1;
  for (const uint64_t warmup : {uint64_t(0), uint64_t(100), uint64_t(700), kMessages + 1}) {
    SCOPED_TRACE("warm-up " + std::to_string(warmup));
    for (const unsigned threads : {1u, 3u}) {
      uint64_t followed = 0;
      scan::Followed f = scan::follow(w.source, followed_params(warmup, 5), index, &ended, &followed, threads);
      const scan::FirstPass first = scan::first_pass(w.source, warmup, kStages, w.blocks.data(), w.blocks.size());
      EXPECT_FALSE(f.abandoned);
      // In 3 parts once the bins' origin was known: in the first block (a message after the warm-up in it).
      if (threads == 3 && first.any_after_warmup) {
        EXPECT_EQ(f.parts_began.size(), 2u);
      } else {
        EXPECT_TRUE(f.parts_began.empty());
      }
      EXPECT_EQ(followed, first.messages);
      EXPECT_EQ(f.blocks, w.blocks.size());
      EXPECT_EQ(f.slots, w.source.stored);
      EXPECT_EQ(f.messages, first.messages);
      EXPECT_EQ(f.accepted, first.accepted);
      EXPECT_EQ(f.max_locate, first.max_locate);
      scan::Params p = followed_params(warmup, first.max_locate);
      p.time_origin = first.t_first;
      p.time_shift = scan::time_shift_for(first.t_first, first.t_hi);
      scan::Result after = scan::second_pass(w.source, p, first.checkpoints, 1);
      if (first.any_after_warmup) {
        EXPECT_EQ(f.counts.time_origin, first.t_first);
      }
      expect_same(f.counts, after);
    }
  }
}

// The same index belied from block k on, for k where a part begins and within each part: each part checks its own
// blocks, and where each began is checked against where the part before it ended.
TEST_P(LatencyIndex, APassThatCountsTheRestInPartsRefusesAnIndexTheLogBeliesAnywhere) {
  ScratchDir dir;
  const Written w = written(dir, GetParam());
  const std::string index = dir.file("latency.idx");
  const auto raw = itchbench::testing::read_bytes(index);
  const uint32_t ended = 1;
  uint64_t followed = 0;
  const std::vector<uint64_t> began =
      scan::follow(w.source, followed_params(0, 5), index, &ended, &followed, 3).parts_began;
  ASSERT_EQ(began.size(), 2u);
  for (const uint64_t k : {uint64_t(1), began[0] - 1, began[0], began[0] + 1, began[1], w.blocks.size() - 1}) {
    SCOPED_TRACE("from block " + std::to_string(k));
    const auto belied = [&](const std::function<void(logfmt::LatencyBlockRecord&)>& change) {
      auto bytes = raw;
      auto* blocks = reinterpret_cast<logfmt::LatencyBlockRecord*>(bytes.data() + logfmt::kHeaderSize);
      for (size_t i = k; i < w.blocks.size(); ++i) change(blocks[i]);
      itchbench::testing::write_bytes(index, bytes);
      EXPECT_THROW(scan::follow(w.source, followed_params(0, 5), index, &ended, &followed, 3), std::runtime_error);
    };
    belied([](logfmt::LatencyBlockRecord& b) { b.messages_before += 1; });  // block k - 1 held one more
    belied([](logfmt::LatencyBlockRecord& b) { b.accepted_before += 1; });
    if (GetParam() == LatencyFormat::kCompact) belied([](logfmt::LatencyBlockRecord& b) { b.next_seq += 1; });
  }
}

TEST_P(LatencyIndex, AnIndexThatDoesNotFollowItsLogIsRefused) {
  ScratchDir dir;
  const Written w = written(dir, GetParam());
  auto gap = w.blocks;
  gap.erase(gap.begin() + 5);  // a block missing
  EXPECT_THROW(scan::first_pass(w.source, 0, kStages, gap.data(), gap.size()), std::runtime_error);
  auto miscounted = w.blocks;
  miscounted[3].accepted += 1;  // the next block's accepted_before no longer follows
  EXPECT_THROW(scan::first_pass(w.source, 0, kStages, miscounted.data(), miscounted.size()), std::runtime_error);
  auto unwritten = w.blocks;
  unwritten.back().flags = 0;
  EXPECT_THROW(scan::first_pass(w.source, 0, kStages, unwritten.data(), unwritten.size()), std::runtime_error);
  auto short_of_the_end = w.blocks;
  short_of_the_end.pop_back();  // the log goes on past the index
  EXPECT_THROW(scan::first_pass(w.source, 0, kStages, short_of_the_end.data(), short_of_the_end.size()),
               std::runtime_error);
  auto beyond = w.blocks;
  beyond.back().slots += 1;  // an index of a longer log
  EXPECT_THROW(scan::first_pass(w.source, 0, kStages, beyond.data(), beyond.size()), std::runtime_error);
}

INSTANTIATE_TEST_SUITE_P(Formats, LatencyIndex, ::testing::Values(LatencyFormat::kCompact, LatencyFormat::kWide),
                         [](const auto& info) { return info.param == LatencyFormat::kCompact ? "Compact" : "Wide"; });

}  // namespace

}  // namespace latency_index_test
