#include "log/stage_histograms.hpp"

#include <cmath>
#include <utility>

namespace itchbench {

uint64_t TickHistogram::percentile(double p) const {
  if (!count_) return 0;
  const double wanted = std::ceil(p * double(count_));
  const uint64_t rank = wanted < 1 ? 1 : uint64_t(wanted);
  uint64_t seen = 0;
  for (unsigned b = 0; b < kBuckets; ++b) {
    seen += counts_[b];
    if (seen >= rank) return highest_in(b) < max_ ? highest_in(b) : max_;
  }
  return max_;
}

StageHistograms::StageHistograms(uint8_t stages)
    : stages_(checked_latency_stages(stages)), histograms_(std::make_unique<TickHistogram[]>(kIntervals)) {}

const char* StageHistograms::name(Interval i) {
  switch (i) {
    case kWakeup: return "wakeup";
    case kParse: return "parse";
    case kBook: return "book";
    case kPublish: return "publish";
    case kReceiveToBook: return "receive_to_book";
    case kReceiveToPublished: return "receive_to_published";
    case kIntervals: break;
  }
  return "?";
}

void StageHistograms::write_json(JsonWriter& j, double ticks_per_ns) const {
  const double per_tick = ticks_per_ns > 0 ? 1.0 / ticks_per_ns : 1.0;
  static constexpr std::pair<const char*, double> kPercentiles[] = {
      {"p50", 0.50}, {"p90", 0.90}, {"p99", 0.99}, {"p999", 0.999}, {"p9999", 0.9999}};
  j.begin_object();
  j.field("unit", "ns").field("relative_precision", 1.0 / (1u << TickHistogram::kSubBits));
  j.field("percentile_method", "nearest rank, the highest value of its bucket");
  j.field("backwards", backwards_);
  for (unsigned i = 0; i < kIntervals; ++i) {
    const TickHistogram& h = histograms_[i];
    if (!h.count()) continue;
    j.key(name(Interval(i))).begin_object();
    j.field("count", h.count()).field("mean", h.mean() * per_tick);
    for (const auto& [key, p] : kPercentiles) j.field(key, double(h.percentile(p)) * per_tick);
    j.field("max", double(h.max()) * per_tick);
    j.end_object();
  }
  j.end_object();
}

}  // namespace itchbench
