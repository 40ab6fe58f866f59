// Order reference -> pool slot, open addressing with linear probing and
// backward-shift deletion (no tombstones, so probe lengths stay short under
// churn). Pre-sized; it doubles only when more than half full, which does
// not happen on the hot path when sized for the session.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace itchbench {

class OrderIndex {
 public:
  static constexpr uint32_t kNotFound = UINT32_MAX;

  explicit OrderIndex(size_t expected_orders);

  uint32_t find(uint64_t ref) const {
    for (size_t i = slot_of(ref);; i = (i + 1) & mask_) {
      const Entry& e = entries_[i];
      if (e.ref == ref) return e.value;
      if (e.ref == kEmpty) return kNotFound;
    }
  }
  // Caller guarantees ref is absent and not kEmpty.
  void insert(uint64_t ref, uint32_t value) {
    if (size_ + 1 > (mask_ + 1) / 2) grow();
    size_t i = slot_of(ref);
    while (entries_[i].ref != kEmpty) i = (i + 1) & mask_;
    entries_[i] = {ref, value};
    ++size_;
  }
  // Returns the value removed, kNotFound if absent.
  uint32_t erase(uint64_t ref);

  size_t size() const { return size_; }
  size_t capacity() const { return mask_ + 1; }
  size_t bytes() const { return entries_.capacity() * sizeof(Entry); }
  uint64_t grows() const { return grows_; }

  static constexpr uint64_t kEmpty = UINT64_MAX;  // not a usable order reference

 private:
  struct Entry {
    uint64_t ref;
    uint32_t value;
  };
  size_t slot_of(uint64_t ref) const {
    // Fibonacci hashing: references are mostly sequential, this spreads them.
    return size_t((ref * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void grow();

  std::vector<Entry> entries_;
  size_t mask_ = 0;
  unsigned shift_ = 0;
  size_t size_ = 0;
  uint64_t grows_ = 0;
};

}  // namespace itchbench
