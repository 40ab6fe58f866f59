// The other latency recorder: each stage's time counted in a log-linear
// histogram (HdrHistogram's shape, 64 sub-buckets an octave: a value is
// known to within 1/64 of itself), no per-message record. It is what the
// issue's yardstick costs — a histogram records a value in a few ns — in the
// same gateway, on the same stamps, so recording_cost.py can set the
// per-message log against it; and a run that needs only percentiles can
// have them cheaply (gateway.json latency_histogram). Fixed memory,
// allocated once; add() touches a few counters, never allocates.
#pragma once
#include <cstdint>
#include <memory>

#include "log/latency_log.hpp"
#include "log/log_format.hpp"
#include "util/json_writer.hpp"

namespace itchbench {

// One histogram of values in clock ticks.
class TickHistogram {
 public:
  static constexpr unsigned kSubBits = 6;                 // 64 sub-buckets an octave
  static constexpr unsigned kExact = 2u << kSubBits;      // values below 128 have a bucket each
  static constexpr unsigned kBuckets = kExact + (63 - kSubBits) * (1u << kSubBits);  // up to 2^64 - 1

  // The bucket of v: v itself below kExact; above, the octave of v's top bit and v's next kSubBits bits.
  static unsigned bucket_of(uint64_t v) {
    if (v < kExact) return unsigned(v);
    const unsigned shift = unsigned(63 - __builtin_clzll(v)) - kSubBits;  // >= 1: v >> shift in [64, 128)
    return kExact + (shift - 1) * (1u << kSubBits) + unsigned(v >> shift) - (1u << kSubBits);
  }
  // The largest value bucket b holds.
  static uint64_t highest_in(unsigned b) {
    if (b < kExact) return b;
    const unsigned k = b - kExact, shift = k / (1u << kSubBits) + 1;
    const uint64_t top = k % (1u << kSubBits) + (1u << kSubBits);
    return ((top + 1) << shift) - 1;  // wraps to 2^64 - 1 in the last bucket
  }

  void add(uint64_t v) {
    ++counts_[bucket_of(v)];
    ++count_;
    sum_ += v;
    max_ = v > max_ ? v : max_;
  }
  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ ? double(sum_) / double(count_) : 0.0; }
  // Nearest rank, as HdrHistogram reports it: the highest value of the bucket holding the value of 1-based
  // rank ceil(count * p), no more than the largest value added. 0 when empty.
  uint64_t percentile(double p) const;

 private:
  uint64_t counts_[kBuckets] = {};
  uint64_t count_ = 0;
  uint64_t sum_ = 0;  // wraps only past 2^64 ticks in all: centuries of stage time
  uint64_t max_ = 0;
};

// The stage times of the stamps a run takes, named as the reports name them
// (harness analysis/stats.py): wakeup (kernel -> read), parse (read ->
// decoded), book (decoded -> book), publish (book -> published),
// receive_to_book and receive_to_published (from the kernel's stamp where
// there is one, else the read's). A time needs both its stamps taken; one
// that ran backwards (never, on one TSC) is counted apart, not added.
class StageHistograms {
 public:
  enum Interval : unsigned { kWakeup, kParse, kBook, kPublish, kReceiveToBook, kReceiveToPublished, kIntervals };

  explicit StageHistograms(uint8_t stages);  // checked_latency_stages
  uint8_t stages() const { return stages_; }

  void add(const MessageLatency& m) {
    using M = MessageLatency;
    const uint64_t* t = m.stamp;
    const uint64_t receive = t[M::kKernel] ? t[M::kKernel] : t[M::kRead];
    add(kWakeup, t[M::kKernel], t[M::kRead]);
    add(kParse, t[M::kRead], t[M::kDecoded]);
    add(kBook, t[M::kDecoded], t[M::kBook]);
    add(kPublish, t[M::kBook], t[M::kPublished]);
    add(kReceiveToBook, receive, t[M::kBook]);
    add(kReceiveToPublished, receive, t[M::kPublished]);
  }

  const TickHistogram& of(Interval i) const { return histograms_[i]; }
  uint64_t backwards() const { return backwards_; }
  static const char* name(Interval i);

  // {"unit": "ns", "relative_precision": ..., "backwards": n, "<interval>": {count, mean, p50, ..., max}, ...}
  // for each interval with a value; ticks_per_ns 0: the values are ns already.
  void write_json(JsonWriter& j, double ticks_per_ns) const;

 private:
  void add(Interval i, uint64_t from, uint64_t to) {
    if (!from || !to) return;
    if (__builtin_expect(to < from, 0)) {
      ++backwards_;
      return;
    }
    histograms_[i].add(to - from);
  }

  uint8_t stages_;
  std::unique_ptr<TickHistogram[]> histograms_;
  uint64_t backwards_ = 0;
};

}  // namespace itchbench
