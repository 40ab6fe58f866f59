// The exact histogram against a std::map of every (key, value) added: dense
// values, a tail beyond the dense range, negative values and keys, in any
// order, and two halves merged equal the whole.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "log/exact_histogram.hpp"

using namespace itchbench;

namespace {

using Reference = std::map<std::pair<int64_t, int64_t>, int64_t>;

std::vector<ExactHistogram::Entry> entries_of(const Reference& r) {
  std::vector<ExactHistogram::Entry> out;
  for (const auto& [kv, count] : r) out.push_back({kv.first, kv.second, count});
  return out;
}

// Values mostly below the dense range, some far beyond it (past a merge of the gathered tail), some negative.
std::vector<std::pair<uint32_t, int64_t>> drawn(size_t n, uint32_t keys, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::pair<uint32_t, int64_t>> out;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t key = uint32_t(rng() % keys);
    const uint64_t kind = rng() % 10;
    const int64_t value = kind < 7 ? int64_t(rng() % 300) : kind < 9 ? int64_t(rng() % 5000) + 300
                                                                     : -int64_t(rng() % 1000) - 1;
    out.emplace_back(key, value);
  }
  return out;
}

}  // namespace

TEST(ExactHistogram, EveryPairIsCountedExactlyAndSortedByKeyThenValue) {
  ExactHistogram h(7, 64);
  Reference want;
  for (const auto& [key, value] : drawn(1'500'000, 7, 1)) {  // a tail of ~1.2 M: merged once on the way
    h.add(key, value);
    ++want[{key, value}];
  }
  EXPECT_EQ(h.table(), entries_of(want));
}

TEST(ExactHistogram, TwoHalvesMergedAreTheWhole) {
  const auto values = drawn(200'000, 3, 2);
  ExactHistogram whole(3, 128), first(3, 128), second(3, 128);
  for (size_t i = 0; i < values.size(); ++i) {
    whole.add(values[i].first, values[i].second);
    (i < values.size() / 2 ? first : second).add(values[i].first, values[i].second);
  }
  first.merge(second);
  EXPECT_EQ(first.table(), whole.table());
  EXPECT_TRUE(second.table().empty());
}

TEST(ExactHistogram, UnlikeHistogramsAreNotMerged) {
  ExactHistogram a(2, 64), b(2, 128);
  EXPECT_THROW(a.merge(b), std::invalid_argument);
}

// Folding pairs of keys (k -> k / 2) against the reference folded: dense values, the tail, keys past the dense
// array (counted sparsely), and a fold on top of a fold.
TEST(ExactHistogram, FoldedKeysCountWhatTheirPairsCounted) {
  ExactHistogram h(8, 256);
  Reference want;
  const auto values = drawn(300'000, 11, 3);  // keys 8 to 10 lie past the dense array
  for (size_t i = 0; i < values.size(); ++i) {
    const auto [key, value] = values[i];
    h.add(key, value);
    ++want[{key, value}];
    if (i == values.size() / 3 || i == 2 * values.size() / 3) {  // folded twice on the way, with more added after
      h.fold_keys();
      Reference folded;
      for (const auto& [kv, count] : want) folded[{kv.first / 2, kv.second}] += count;
      want = std::move(folded);
    }
  }
  EXPECT_EQ(h.table(), entries_of(want));
}

// A cell counted past its counter's width (its count wraps and the wraps are kept): hundreds of thousands of one
// value, as a busy stage's mode gets, exact after adds, a merge and a fold.
TEST(ExactHistogram, CountsPastTheCounterWidthStayExact) {
  ExactHistogram a(4, 64), b(4, 64);
  for (int i = 0; i < 200003; ++i) a.add(1, 5);
  for (int i = 0; i < 70001; ++i) a.add(0, 5);
  for (int i = 0; i < 65535; ++i) b.add(1, 5);
  for (int i = 0; i < 3; ++i) b.add(1, 6);
  a.merge(b);
  EXPECT_EQ(a.table(), (std::vector<ExactHistogram::Entry>{{0, 5, 70001}, {1, 5, 265538}, {1, 6, 3}}));
  a.fold_keys();  // keys 0 and 1 into 0
  EXPECT_EQ(a.table(), (std::vector<ExactHistogram::Entry>{{0, 5, 335539}, {0, 6, 3}}));
}
