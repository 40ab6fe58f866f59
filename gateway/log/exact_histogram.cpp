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
    counts_[cell] = uint32_t(sum);
    if (sum >> 32) carried_.push_back(cell);
  }
  carried_.insert(carried_.end(), other.carried_.begin(), other.carried_.end());
  merge_pending();
  other.merge_pending();
  tail_ = merged(tail_, other.tail_);
  other = ExactHistogram(0, 0);
}

std::vector<ExactHistogram::Entry> ExactHistogram::table() {
  merge_pending();
  std::sort(carried_.begin(), carried_.end());
  std::vector<Entry> dense;
  size_t w = 0;
  for (size_t cell = 0; cell < counts_.size(); ++cell) {
    uint64_t count = counts_[cell];
    for (; w < carried_.size() && carried_[w] == cell; ++w) count += uint64_t(1) << 32;
    if (count) dense.push_back({int64_t(cell / dense_), int64_t(cell % dense_), int64_t(count)});
  }
  return merged(dense, tail_);
}

}  // namespace itchbench
