#include "log/exact_histogram.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>

namespace itchbench {

namespace {

bool before(const ExactHistogram::Entry& a, const ExactHistogram::Entry& b) {
  return a.key != b.key ? a.key < b.key : a.value < b.value;
}

// Two sorted runs of distinct entries merged into one, counts of equal pairs summed.
std::vector<ExactHistogram::Entry> merged(const std::vector<ExactHistogram::Entry>& a,
                                          const std::vector<ExactHistogram::Entry>& b) {
  std::vector<ExactHistogram::Entry> out;
  out.reserve(a.size() + b.size());
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && before(a[i], b[j]))) {
      out.push_back(a[i++]);
    } else if (i == a.size() || before(b[j], a[i])) {
      out.push_back(b[j++]);
    } else {
      out.push_back({a[i].key, a[i].value, a[i].count + b[j].count});
      ++i, ++j;
    }
  }
  return out;
}

}  // namespace

void ExactHistogram::merge_pending() {
  std::sort(pending_.begin(), pending_.end(),
            [](const Pending& a, const Pending& b) { return a.key != b.key ? a.key < b.key : a.value < b.value; });
  std::vector<Entry> run;
  for (const Pending& p : pending_) {
    if (!run.empty() && run.back().key == p.key && run.back().value == p.value)
      ++run.back().count;
    else
      run.push_back({p.key, p.value, 1});
  }
  pending_.clear();
  tail_ = merged(tail_, run);
}

void ExactHistogram::merge(ExactHistogram& other) {
  if (other.keys_ != keys_ || other.dense_ != dense_) throw std::invalid_argument("merging unlike histograms");
  for (size_t cell = 0; cell < counts_.size(); ++cell) {
    const uint64_t sum = uint64_t(counts_[cell]) + other.counts_[cell];
    counts_[cell] = Count(sum);
    if (sum >> kCountBits) carried_.push_back(cell);
  }
  carried_.insert(carried_.end(), other.carried_.begin(), other.carried_.end());
  merge_pending();
  other.merge_pending();
  tail_ = merged(tail_, other.tail_);
  other = ExactHistogram(0, 0);
}

void ExactHistogram::fold_keys() {
  // A cell's wraps move with its key (table() sorts them back into order); then the rows, each into its half.
  for (size_t& cell : carried_) cell = cell / dense_ / 2 * dense_ + cell % dense_;
  for (uint32_t key = 0; key < keys_; ++key) {
    Count* into = &counts_[size_t(key / 2) * dense_];
    const Count* from = &counts_[size_t(key) * dense_];
    for (uint32_t v = 0; v < dense_; ++v) {
      const uint64_t sum = (key & 1 ? uint64_t(into[v]) : 0) + from[v];  // an even key's row comes first
      into[v] = Count(sum);
      if (sum >> kCountBits) carried_.push_back(size_t(key / 2) * dense_ + v);
    }
  }
  std::fill(counts_.begin() + std::ptrdiff_t(size_t((keys_ + 1) / 2) * dense_), counts_.end(), Count(0));
  merge_pending();
  for (Entry& e : tail_) e.key /= 2;
  std::sort(tail_.begin(), tail_.end(), before);  // a key's values come from two keys now: sorted again
  std::vector<Entry> folded;
  folded.reserve(tail_.size());
  for (const Entry& e : tail_) {
    if (!folded.empty() && folded.back().key == e.key && folded.back().value == e.value)
      folded.back().count += e.count;
    else
      folded.push_back(e);
  }
  tail_ = std::move(folded);
}

std::vector<ExactHistogram::Entry> ExactHistogram::table() {
  merge_pending();
  std::sort(carried_.begin(), carried_.end());
  std::vector<Entry> dense;
  size_t w = 0;
  for (size_t cell = 0; cell < counts_.size(); ++cell) {
    uint64_t count = counts_[cell];
    for (; w < carried_.size() && carried_[w] == cell; ++w) count += uint64_t(1) << kCountBits;
    if (count) dense.push_back({int64_t(cell / dense_), int64_t(cell % dense_), int64_t(count)});
  }
  return merged(dense, tail_);
}

}  // namespace itchbench
