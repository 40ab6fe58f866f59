// Exact counts of int64 values per small integer key: the compiled twin of
// the harness's KeyedHistogram (harness analysis/histogram.py), so a report
// read in one compiled pass gives every statistic a sort of all the values
// would. Values in [0, dense) are counted in a dense key x value array; the
// rest (a tail, anything negative, any key past the dense array's) are
// gathered and merged, sorted, into distinct (key, value, count) triples.
// Nothing is bucketed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace itchbench {

class ExactHistogram {
  // A quarter of the bytes of u64 counts, so that the by-symbol array (a row of up to 1,024 values for each of
  // hundreds of symbols, touched at random) stays in cache; a count wraps every 65,536 and carried_ keeps the
  // wraps. On 50 M nasdaq-day records the compiled scan took 1.91 s with u32 counts.
  using Count = uint16_t;
  static constexpr unsigned kCountBits = 16;

 public:
  struct Entry {
    int64_t key, value, count;
    friend bool operator==(const Entry& a, const Entry& b) {
      return a.key == b.key && a.value == b.value && a.count == b.count;
    }
  };

  ExactHistogram(uint32_t keys, uint32_t dense) : keys_(keys), dense_(dense), counts_(size_t(keys) * dense) {}
  uint32_t dense() const { return dense_; }

  // The adds of one key: its cells and dense range taken once, for a caller adding to the same key row after row
  // (the second pass's stages), which would otherwise read them through the histogram on every add.
  class KeyAdder {
   public:
    KeyAdder(ExactHistogram& h, uint32_t key)
        : cells_(key < h.keys_ ? h.counts_.data() + size_t(key) * h.dense_ : nullptr),
          dense_(key < h.keys_ ? h.dense_ : 0),  // a key past the dense array: every value spills
          key_(key),
          h_(&h) {}
    // A value in [0, dense) is counted in its cell; the rest are gathered.
    void add(int64_t value) const {
      if (uint64_t(value) < dense_) {
        // 2^kCountBits more in that cell
        if (__builtin_expect(++cells_[value] == 0, 0)) h_->carried_.push_back(size_t(key_) * dense_ + uint64_t(value));
      } else {
        h_->spill(key_, value);
      }
    }

   private:
    Count* cells_;
    uint32_t dense_, key_;
    ExactHistogram* h_;
  };
  void add(uint32_t key, int64_t value) { KeyAdder(*this, key).add(value); }

  // Asks for the cell add(key, value) will count in, ahead of the add: a key-by-value array larger than the cache,
  // touched at random (by symbol), costs a miss an add otherwise.
  void prefetch(uint32_t key, int64_t value) const {
    if (uint64_t(value) < dense_ && key < keys_) __builtin_prefetch(&counts_[size_t(key) * dense_ + uint64_t(value)], 1);
  }
  // Adds other's counts to these (a histogram of the same keys and dense range); other is left empty.
  void merge(ExactHistogram& other);

  // Each key k counted as k / 2 from now on (pairs of keys folded into one): time bins of twice the width.
  void fold_keys();

  // Every distinct (key, value) with its count, sorted by key then value.
  std::vector<Entry> table();

 private:
  struct Pending {
    int64_t key, value;
  };
  static constexpr size_t kPendingMerge = size_t(1) << 20;  // tail values gathered before a merge

  void spill(uint32_t key, int64_t value) {
    pending_.push_back({key, value});
    if (pending_.size() >= kPendingMerge) merge_pending();
  }
  void merge_pending();

  uint32_t keys_, dense_;
  std::vector<Count> counts_;
  std::vector<size_t> carried_;   // a cell each time its count wrapped past 2^kCountBits - 1
  std::vector<Pending> pending_;
  std::vector<Entry> tail_;  // sorted, distinct
};

}  // namespace itchbench
