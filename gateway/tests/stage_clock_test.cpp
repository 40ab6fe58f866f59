// The stage clock stores raw TSC ticks and maps them to ns only when asked
// (or when a log is read): the mapping must land on CLOCK_MONOTONIC, the
// clock every other process of a run stamps with.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>

#include "util/stage_clock.hpp"

using namespace itchbench;

namespace {
// |a - b| in ns.
uint64_t gap(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }
}  // namespace

TEST(StageClock, AStampMapsOntoClockMonotonic) {
  const StageClock clock = StageClock::calibrate(5);
  if (clock.source() != logfmt::StageClock::kTscTicks) GTEST_SKIP() << "no invariant TSC of 1 GHz or more here";
  const uint64_t before = monotonic_ns();
  const uint64_t stamp = clock.now();
  const uint64_t after = monotonic_ns();
  // A rate fitted over 5 ms is off by some ppm: well under 50 us a few ms later. A stamp stored as ns (the
  // conversion skipped) would be off by the whole ratio of ticks to ns.
  EXPECT_LT(gap(clock.to_ns(stamp), before + (after - before) / 2), 50'000u);
  EXPECT_GE(clock.to_ns(stamp), clock.anchor_ns());
}

TEST(StageClock, TheLineIsTheOneALogCarries) {
  const StageClock clock = StageClock::calibrate(5);
  if (clock.source() != logfmt::StageClock::kTscTicks) GTEST_SKIP() << "no invariant TSC of 1 GHz or more here";
  const logfmt::StageClockLine& line = clock.line();
  const uint64_t stamp = clock.now();
  // FORMAT.md's formula, in 64-bit halves as the harness computes it.
  const uint64_t dt = stamp - line.tsc0;
  const uint64_t q = line.ns_per_tick_q32;
  const uint64_t ns = line.ns0 + (dt >> 32) * q + (((dt & 0xffffffffu) * q) >> 32);
  EXPECT_EQ(clock.to_ns(stamp), ns);
  EXPECT_EQ(clock.to_ns(line.tsc0), line.ns0);
  EXPECT_LT(line.ns_per_tick_q32, uint64_t(1) << 32);
}

TEST(StageClock, EarlierMovesBackByNanosecondsNotTicks) {
  const StageClock clock = StageClock::calibrate(5);
  if (clock.source() != logfmt::StageClock::kTscTicks) GTEST_SKIP() << "no invariant TSC of 1 GHz or more here";
  uint64_t stamp = clock.now();
  while (clock.to_ns(stamp) - clock.anchor_ns() < 2'000'000) stamp = clock.now();  // 2 ms past the line's origin
  // Back 1 ms: the mapped stamps differ by 1 ms, give or take the rounding of two conversions.
  EXPECT_LE(gap(clock.to_ns(stamp) - clock.to_ns(clock.earlier(stamp, 1'000'000)), 1'000'000), 2u);
  // Back further than the line goes: its origin, never a wrapped stamp.
  EXPECT_EQ(clock.earlier(stamp, uint64_t(1) << 62), clock.line().tsc0);
}

namespace {
// CLOCK_MONOTONIC read as if the reading thread were preempted for 1 ms before it: on its first `stalls` calls.
struct StalledMonotonic {
  int stalls;
  uint64_t operator()() {
    if (stalls-- > 0) {
      const uint64_t until = monotonic_ns() + 1'000'000;
      while (monotonic_ns() < until) {
      }
    }
    return monotonic_ns();
  }
};
}  // namespace

TEST(StageClock, AnotherClocksStampIsPlacedPastAPreemption) {
  const StageClock clock = StageClock::calibrate(5);
  if (clock.source() != logfmt::StageClock::kTscTicks) GTEST_SKIP() << "no invariant TSC of 1 GHz or more here";
  // 5 ms past the line's origin, which no stamp goes before.
  while (clock.to_ns(clock.now()) - clock.anchor_ns() < 5'000'000) {
  }
  const uint64_t then = monotonic_ns();  // a kernel's arrival stamp on CLOCK_MONOTONIC
  // Read once, the stalled read would put it 1 ms early (its age taken as 1 ms): the bracket around it is too
  // wide, so it is read again.
  const uint64_t placed = clock.from_other_clock(then, StalledMonotonic{1});
  ASSERT_NE(placed, 0u);
  EXPECT_LT(gap(clock.to_ns(placed), then), 50'000u);
}

TEST(StageClock, AStampNeverReadInANarrowBracketIsNotPlaced) {
  const StageClock clock = StageClock::calibrate(5);
  if (clock.source() != logfmt::StageClock::kTscTicks) GTEST_SKIP() << "no invariant TSC of 1 GHz or more here";
  // Every read stalled: no age is trusted, and no stamp is given rather than one up to 1 ms off.
  EXPECT_EQ(clock.from_other_clock(monotonic_ns(), StalledMonotonic{4}), 0u);
}

namespace {
// A CPU whose TSC runs at exactly 2.3 ticks a ns, read together with CLOCK_MONOTONIC: every read takes 10 ns, and
// after any read the thread is held up for 1 ms with probability 1/5 (an interrupt or a preemption), from a seeded
// generator.
struct InterruptedClocks {
  static constexpr double kTicksPerNs = 2.3;
  uint64_t ns = 1'000'000'000;
  uint64_t state;
  explicit InterruptedClocks(uint64_t seed) : state(seed) {}
  uint64_t read(uint64_t value) {
    ns += 10;
    state = state * 6364136223846793005ull + 1442695040888963407ull;  // Knuth's MMIX LCG
    if ((state >> 33) % 5 == 0) ns += 1'000'000;
    return value;
  }
  uint64_t tsc() { return read(uint64_t(double(ns) * kTicksPerNs)); }
  uint64_t monotonic() { return read(ns); }
};
}  // namespace

TEST(StageClock, ACalibrationInterruptedBetweenItsReadsFitsTheRateAndTheOrigin) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    InterruptedClocks clocks(seed);
    const StageClock clock = StageClock::calibrate_with([&] { return clocks.tsc(); },
                                                        [&] { return clocks.monotonic(); }, 20);
    ASSERT_EQ(clock.source(), logfmt::StageClock::kTscTicks);
    // One 1 ms hold-up between a pair's reads would put the rate 5 % off over 20 ms; the narrowest bracket at
    // each end leaves it within the 10 ns a read takes.
    EXPECT_NEAR(clock.ticks_per_ns(), InterruptedClocks::kTicksPerNs, InterruptedClocks::kTicksPerNs * 1e-6)
        << "seed " << seed;
    EXPECT_LT(gap(uint64_t(double(clock.line().ns0) * InterruptedClocks::kTicksPerNs), clock.line().tsc0), 100u)
        << "seed " << seed;
  }
}

TEST(StageClock, MonotonicStampsAreNanosecondsAlready) {
  const StageClock clock = StageClock::monotonic();
  EXPECT_EQ(clock.source(), logfmt::StageClock::kMonotonic);
  const uint64_t before = monotonic_ns();
  const uint64_t stamp = clock.now();
  EXPECT_GE(stamp, before);
  EXPECT_EQ(clock.to_ns(stamp), stamp);
  EXPECT_EQ(clock.earlier(stamp, 1000), stamp - 1000);
  EXPECT_EQ(clock.earlier(1000, 5000), 0u);
  EXPECT_EQ(clock.line().ns_per_tick_q32, 0u);
}

TEST(StageClock, AStampAfterLoadingReadsOnlyTheBytesItIsGiven) {
  // Each range is a heap block of exactly its size, so a read outside it is a finding for the sanitizer build
  // (the test command runs these tests under ASan too); the stamps must still follow each other.
  const StageClock clocks[] = {StageClock::calibrate(2), StageClock::monotonic()};
  for (const StageClock& clock : clocks)
    for (const size_t n : {size_t(1), size_t(17), size_t(64), size_t(65), size_t(200), size_t(4099)}) {
      const auto bytes = std::make_unique<uint8_t[]>(n);
      for (const size_t skip : {size_t(0), size_t(1), n / 2}) {
        const uint64_t before = clock.now();
        EXPECT_GE(clock.now_after_loading(bytes.get() + skip, n - skip), before) << n << " bytes, from " << skip;
      }
    }
}
