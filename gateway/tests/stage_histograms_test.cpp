// The histogram recorder against hand-worked bucket edges and against an
// exact nearest-rank percentile of the same values (sorted in the test).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "log/stage_histograms.hpp"
#include "util/json_writer.hpp"

using namespace itchbench;

namespace {
// The value of 1-based rank ceil(n p) of the sorted values: nearest rank, worked out directly.
uint64_t nearest_rank(std::vector<uint64_t> v, double p) {
  std::sort(v.begin(), v.end());
  const auto rank = std::max<uint64_t>(1, uint64_t(std::ceil(p * double(v.size()))));
  return v[rank - 1];
}
}  // namespace

TEST(TickHistogram, BucketsAreExactBelow128ThenSixtyFourAnOctave) {
  // Below 128 a bucket a value; [128, 256) in steps of 2; [256, 512) in steps of 4; ...
  EXPECT_EQ(TickHistogram::bucket_of(0), 0u);
  EXPECT_EQ(TickHistogram::bucket_of(127), 127u);
  EXPECT_EQ(TickHistogram::bucket_of(128), 128u);
  EXPECT_EQ(TickHistogram::bucket_of(129), 128u);
  EXPECT_EQ(TickHistogram::bucket_of(130), 129u);
  EXPECT_EQ(TickHistogram::bucket_of(255), 191u);
  EXPECT_EQ(TickHistogram::bucket_of(256), 192u);
  EXPECT_EQ(TickHistogram::bucket_of(259), 192u);
  EXPECT_EQ(TickHistogram::bucket_of(260), 193u);
  EXPECT_EQ(TickHistogram::bucket_of(UINT64_MAX), TickHistogram::kBuckets - 1);
  EXPECT_EQ(TickHistogram::kBuckets, 128u + 57u * 64u);  // octaves 2^7 .. 2^63
  EXPECT_EQ(TickHistogram::highest_in(127), 127u);
  EXPECT_EQ(TickHistogram::highest_in(128), 129u);
  EXPECT_EQ(TickHistogram::highest_in(191), 255u);
  EXPECT_EQ(TickHistogram::highest_in(192), 259u);
  EXPECT_EQ(TickHistogram::highest_in(TickHistogram::kBuckets - 1), UINT64_MAX);
  // Every bucket's highest value is in it, and the next value starts the next bucket.
  for (unsigned b = 0; b + 1 < TickHistogram::kBuckets; ++b) {
    ASSERT_EQ(TickHistogram::bucket_of(TickHistogram::highest_in(b)), b);
    ASSERT_EQ(TickHistogram::bucket_of(TickHistogram::highest_in(b) + 1), b + 1);
  }
}

TEST(TickHistogram, PercentilesAreTheNearestRankWithinOneSixtyFourth) {
  std::mt19937_64 rng(34);
  std::lognormal_distribution<double> stage_time(5.0, 1.2);  // ticks: most tens to hundreds, a long tail
  std::vector<uint64_t> values(200000);
  auto h = std::make_unique<TickHistogram>();
  for (auto& v : values) {
    v = uint64_t(stage_time(rng));
    h->add(v);
  }
  for (double p : {0.0, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0}) {
    const uint64_t exact = nearest_rank(values, p), got = h->percentile(p);
    EXPECT_GE(got, exact) << p;
    EXPECT_LE(double(got), double(exact) * (1.0 + 1.0 / 64)) << p;
  }
  EXPECT_EQ(h->max(), *std::max_element(values.begin(), values.end()));
  EXPECT_EQ(h->percentile(1.0), h->max());
  EXPECT_EQ(h->count(), values.size());
  EXPECT_EQ(TickHistogram().percentile(0.5), 0u);
}

TEST(StageHistograms, EachTimeNeedsBothItsStamps) {
  StageHistograms s(logfmt::kAllStages);
  MessageLatency m;
  m.stamp[1] = 1000, m.stamp[2] = 1010, m.stamp[3] = 1050;  // read, decoded, book: no kernel stamp
  s.add(m);
  m.stamp[4] = 1070;  // published too
  s.add(m);
  m.stamp[0] = 990;  // a kernel stamp: receive times start there
  s.add(m);
  MessageLatency rejected;
  rejected.stamp[1] = 2000;  // read alone: no time at all
  s.add(rejected);
  using H = StageHistograms;
  EXPECT_EQ(s.of(H::kWakeup).count(), 1u);
  EXPECT_EQ(s.of(H::kWakeup).max(), 10u);
  EXPECT_EQ(s.of(H::kParse).count(), 3u);
  EXPECT_EQ(s.of(H::kParse).max(), 10u);
  EXPECT_EQ(s.of(H::kBook).count(), 3u);
  EXPECT_EQ(s.of(H::kBook).max(), 40u);
  EXPECT_EQ(s.of(H::kPublish).count(), 2u);
  EXPECT_EQ(s.of(H::kPublish).max(), 20u);
  EXPECT_EQ(s.of(H::kReceiveToBook).count(), 3u);
  EXPECT_EQ(s.of(H::kReceiveToBook).max(), 60u);  // 990 -> 1050
  EXPECT_EQ(s.of(H::kReceiveToBook).percentile(0.5), 50u);
  EXPECT_EQ(s.of(H::kReceiveToPublished).count(), 2u);
  EXPECT_EQ(s.backwards(), 0u);
  MessageLatency backwards;
  backwards.stamp[1] = 500, backwards.stamp[3] = 400;
  s.add(backwards);
  EXPECT_EQ(s.backwards(), 1u);
  EXPECT_EQ(s.of(H::kReceiveToBook).count(), 3u);
  EXPECT_THROW(StageHistograms(0), std::invalid_argument);
}

TEST(StageHistograms, JsonGivesNsAndLeavesEmptyTimesOut) {
  StageHistograms s(logfmt::kStageRead | logfmt::kStageBook);
  MessageLatency m;
  m.stamp[1] = 100, m.stamp[3] = 130;
  s.add(m);
  JsonWriter j;
  s.write_json(j, 3.0);  // 3 ticks a ns: 30 ticks are 10 ns
  const auto got = nlohmann::ordered_json::parse(j.str());
  const auto want = nlohmann::ordered_json::parse(
      R"({"unit": "ns", "relative_precision": 0.015625,
          "percentile_method": "nearest rank, the highest value of its bucket", "backwards": 0,
          "receive_to_book": {"count": 1, "mean": 10.0, "p50": 10.0, "p90": 10.0, "p99": 10.0, "p999": 10.0,
                              "p9999": 10.0, "max": 10.0}})");
  EXPECT_EQ(got, want) << j.str();
}

TEST(LatencyStages, EveryRecorderRefusesNoStageOrAnUnknownOneNamingTheBitsInHex) {
  EXPECT_EQ(checked_latency_stages(logfmt::kAllStages), logfmt::kAllStages);
  EXPECT_EQ(checked_latency_stages(logfmt::kStageBook), logfmt::kStageBook);
  for (const auto& [stages, hex] : {std::pair<uint8_t, const char*>{0, "(stages 0x00)"}, {0x20, "(stages 0x20)"},
                                    {0x2a, "(stages 0x2a)"}}) {
    for (int recorder = 0; recorder < 2; ++recorder) {
      try {
        if (recorder == 0) StageHistograms{stages};
        else LatencyLog("/dev/null", LatencyFormat::kCompact, LogIdentity{logfmt::StageClock::kNone,
                                                                          logfmt::OriginClock::kNone, "", "", stages});
        ADD_FAILURE() << "accepted stages " << hex;
      } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find(hex), std::string::npos) << e.what();
      }
    }
  }
}
