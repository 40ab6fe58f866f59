#include "book/order_index.hpp"

namespace itchbench {

namespace {
size_t pow2_at_least(size_t n) {
  size_t p = 16;
  while (p < n) p <<= 1;
  return p;
}
}  // namespace

OrderIndex::OrderIndex(size_t expected_orders) {
  const size_t cap = pow2_at_least(expected_orders * 2);
  entries_.assign(cap, Entry{kEmpty, 0});
  mask_ = cap - 1;
  shift_ = unsigned(64 - __builtin_ctzll(cap));
}

uint32_t OrderIndex::erase(uint64_t ref) {
  size_t i = slot_of(ref);
  while (entries_[i].ref != ref) {
    if (entries_[i].ref == kEmpty) return kNotFound;
    i = (i + 1) & mask_;
  }
  const uint32_t value = entries_[i].value;
  // Backward-shift: pull later entries of the cluster into the hole when
  // their home slot is at or before it.
  size_t hole = i;
  for (size_t j = (i + 1) & mask_; entries_[j].ref != kEmpty; j = (j + 1) & mask_) {
    const size_t home = slot_of(entries_[j].ref);
    if (((j - home) & mask_) >= ((j - hole) & mask_)) {
      entries_[hole] = entries_[j];
      hole = j;
    }
  }
  entries_[hole].ref = kEmpty;
  --size_;
  return value;
}

void OrderIndex::rebuild(size_t capacity) {
  std::vector<Entry> old;
  old.swap(entries_);
  entries_.assign(capacity, Entry{kEmpty, 0});
  mask_ = capacity - 1;
  shift_ = unsigned(64 - __builtin_ctzll(capacity));
  size_ = 0;
  for (const Entry& e : old)
    if (e.ref != kEmpty) insert(e.ref, e.value);
}

void OrderIndex::grow() {
  ++grows_;
  rebuild(entries_.size() * 2);
}

void OrderIndex::switch_to_mixed_hash() {
  mixed_ = true;
  rebuild(entries_.size());
}

}  // namespace itchbench
