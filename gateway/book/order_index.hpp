// Live orders by reference number, each order held in the table itself (a
// lookup costs one cache miss, not two).
//
// NASDAQ assigns references sequentially through the day and most live
// orders are recent, so OrderTable is direct-mapped: an order lives in slot
// ref mod capacity. Finding, adding and deleting are one slot each — no probe
// runs, no backward shifts (open addressing over sequential keys made one
// long cluster of the recent orders, and every delete walked it: 136
// instructions a delete on nasdaq-day, callgrind). An order whose slot is
// taken by an older live one (references a multiple of the capacity apart,
// or a hostile power-of-two stride) goes to a small overflow table with a
// mixing hash (ProbingTable). The table doubles when more than half full;
// the overflow grows by itself, so a hostile stride costs what a hash table
// costs, not a primary table grown to chase it.
//
// A slot keeps only the reference's bits above the slot number (its tag, 32
// bits): with a 12-byte order a slot is 16 bytes, four to a cache line and
// none straddling two (24-byte slots made every third order two cache
// misses). Every 64-bit reference is a valid key: one whose tag does not fit
// below the all-ones value that marks an empty slot (beyond 2^32 times the
// capacity, or hostile) lives in the overflow.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "util/huge_page_allocator.hpp"

namespace itchbench {

inline constexpr uint64_t kEmptyRef = UINT64_MAX;  // marks an empty entry of the overflow

inline size_t pow2_at_least(size_t n) {
  size_t p = 16;
  while (p < n) p <<= 1;
  return p;
}

// Open addressing with Fibonacci hashing, linear probing and backward-shift
// deletion: the overflow of OrderTable, where references are anything but
// sequential.
template <class Value>
class ProbingTable {
 public:
  ProbingTable() { rebuild(16); }

  Value* find(uint64_t ref) {
    if (__builtin_expect(ref == kEmptyRef, 0)) return empty_key_live_ ? &empty_key_value_ : nullptr;
    for (size_t i = slot_of(ref);; i = (i + 1) & mask_) {
      Entry& e = entries_[i];
      if (e.ref == ref) return &e.value;
      if (e.ref == kEmptyRef) return nullptr;
    }
  }

  // Caller guarantees ref is absent.
  void insert(uint64_t ref, const Value& value) {
    if (__builtin_expect(ref == kEmptyRef, 0)) {
      empty_key_value_ = value;
      empty_key_live_ = true;
      ++size_;
      return;
    }
    if (size_ + 1 > (mask_ + 1) / 2) rebuild((mask_ + 1) * 2);
    size_t i = slot_of(ref);
    while (entries_[i].ref != kEmptyRef) i = (i + 1) & mask_;
    entries_[i] = {ref, value};
    ++size_;
  }

  // Removes ref, copying its order to *out; false when absent.
  bool erase(uint64_t ref, Value* out) {
    if (__builtin_expect(ref == kEmptyRef, 0)) {
      if (!empty_key_live_) return false;
      *out = empty_key_value_;
      empty_key_live_ = false;
      --size_;
      return true;
    }
    size_t i = slot_of(ref);
    while (entries_[i].ref != ref) {
      if (entries_[i].ref == kEmptyRef) return false;
      i = (i + 1) & mask_;
    }
    *out = entries_[i].value;
    // Backward shift: pull later entries of the cluster into the hole when
    // their home slot is at or before it.
    size_t hole = i;
    for (size_t j = (i + 1) & mask_; entries_[j].ref != kEmptyRef; j = (j + 1) & mask_) {
      const size_t home = slot_of(entries_[j].ref);
      if (((j - home) & mask_) >= ((j - hole) & mask_)) {
        entries_[hole] = entries_[j];
        hole = j;
      }
    }
    entries_[hole].ref = kEmptyRef;
    --size_;
    return true;
  }

  // Room for n entries before the next growth. A table filled from another one's for_each must start at least as
  // large: that order is the other's slot order, which is its hash order, and a smaller table takes those keys
  // bunched into its first slots, each insert walking the run the ones before it made (1.6 M references from
  // 2^63, all in the overflow, took 15 s to move when the index grew once).
  void reserve(size_t n) {
    if (n + 1 > (mask_ + 1) / 2) rebuild(pow2_at_least(2 * (n + 1)));
  }

  // Calls f(ref, value) for every entry.
  template <class F>
  void for_each(F&& f) const {
    for (const Entry& e : entries_)
      if (e.ref != kEmptyRef) f(e.ref, e.value);
    if (empty_key_live_) f(kEmptyRef, empty_key_value_);
  }

  size_t size() const { return size_; }
  size_t bytes() const { return entries_.capacity() * sizeof(Entry); }

 private:
  struct Entry {
    uint64_t ref;
    Value value;
  };
  size_t slot_of(uint64_t ref) const { return size_t((ref * 0x9E3779B97F4A7C15ull) >> shift_); }
  void rebuild(size_t capacity) {
    std::vector<Entry> old;
    old.swap(entries_);
    entries_.assign(capacity, Entry{kEmptyRef, Value{}});
    mask_ = capacity - 1;
    shift_ = unsigned(64 - __builtin_ctzll(capacity));
    size_ = empty_key_live_ ? 1 : 0;
    for (const Entry& e : old)
      if (e.ref != kEmptyRef) insert(e.ref, e.value);
  }

  std::vector<Entry> entries_;
  size_t mask_ = 0;
  unsigned shift_ = 0;
  size_t size_ = 0;
  bool empty_key_live_ = false;  // the order whose reference is kEmptyRef
  Value empty_key_value_{};
};

template <class Value>
class OrderTable {
 public:
  // A reference whose tag is this or more lives in the overflow (so an empty slot never matches it).
  static constexpr uint64_t kEmptyTag = UINT32_MAX;
  struct alignas(16) Slot {
    uint32_t tag;  // ref >> shift_; kEmptyTag when empty
    Value value;
  };
  static_assert(sizeof(Slot) == 16, "an order must fit in 12 bytes: four slots to a cache line");

  explicit OrderTable(size_t expected_orders) { rebuild(pow2_at_least(expected_orders * 2)); }

  // The order, or nullptr; valid until the next insert or erase. Always inline: every message path finds an order
  // (an add, that its reference is not live), and GCC left the call out of line in the BBO path when a change
  // elsewhere grew the functions around it (8.6 more instructions a message, nasdaq-day).
  __attribute__((always_inline)) Value* find(uint64_t ref) {
    Slot& s = slots_[ref & mask_];
    const uint64_t tag = ref >> shift_;
    if (__builtin_expect(s.tag == tag && tag != kEmptyTag, 1)) return &s.value;
    return overflow_.size() ? overflow_.find(ref) : nullptr;
  }
  const Value* find(uint64_t ref) const { return const_cast<OrderTable*>(this)->find(ref); }
  // Starts loading the slot ref lives in (or would): a hint, no effect on contents.
  __attribute__((always_inline)) void prefetch(uint64_t ref) const { __builtin_prefetch(&slots_[ref & mask_]); }

  // An insert in two steps, for a caller that must not call out on its way: the slot an absent ref takes when
  // it needs neither the overflow nor a larger table (else nullptr), then its filling, with no branch.
  Slot* direct_slot(uint64_t ref) {
    Slot& s = slots_[ref & mask_];
    const bool room = size_ + 1 <= (mask_ + 1) / 2;
    return (room & (s.tag == kEmptyTag) & ((ref >> shift_) < kEmptyTag)) ? &s : nullptr;
  }
  void fill(Slot& s, uint64_t ref, const Value& value) {
    s = {uint32_t(ref >> shift_), value};
    ++size_;
  }

  // Caller guarantees ref is absent.
  void insert(uint64_t ref, const Value& value) {
    if (size_ + 1 > (mask_ + 1) / 2) {
      ++grows_;
      rebuild((mask_ + 1) * 2);
    }
    if (place(ref, value)) ++overflowed_;
  }

  // Removes ref, copying its order to *out; false when absent.
  bool erase(uint64_t ref, Value* out) {
    Slot& s = slots_[ref & mask_];
    const uint64_t tag = ref >> shift_;
    if (s.tag == tag && tag != kEmptyTag) {
      *out = s.value;
      s.tag = kEmptyTag;
      --size_;
      return true;
    }
    if (!overflow_.size() || !overflow_.erase(ref, out)) return false;
    --size_;
    return true;
  }

  // Calls f(ref, value) for every order, in no particular order (a snapshot's, not the hot path's).
  template <class F>
  void for_each(F&& f) const {
    for (size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].tag != kEmptyTag) f((uint64_t(slots_[i].tag) << shift_) | i, slots_[i].value);
    overflow_.for_each(f);
  }

  size_t size() const { return size_; }
  size_t bytes() const { return slots_.capacity() * sizeof(Slot) + overflow_.bytes(); }
  uint64_t grows() const { return grows_; }
  uint64_t overflowed() const { return overflowed_; }  // orders that found their slot taken, or whose tag is too large

 private:
  // True when the order went to the overflow.
  bool place(uint64_t ref, const Value& value) {
    Slot& s = slots_[ref & mask_];
    ++size_;
    const uint64_t tag = ref >> shift_;
    if (s.tag == kEmptyTag && tag < kEmptyTag) {
      s = {uint32_t(tag), value};
      return false;
    }
    overflow_.insert(ref, value);
    return true;
  }

  void rebuild(size_t capacity) {
    Slots old;
    old.swap(slots_);
    const unsigned old_shift = shift_;
    ProbingTable<Value> old_overflow;
    std::swap(old_overflow, overflow_);
    overflow_.reserve(old_overflow.size());
    slots_.assign(capacity, Slot{uint32_t(kEmptyTag), Value{}});
    mask_ = capacity - 1;
    shift_ = unsigned(__builtin_ctzll(capacity));
    size_ = 0;
    for (size_t i = 0; i < old.size(); ++i)
      if (old[i].tag != kEmptyTag) place((uint64_t(old[i].tag) << old_shift) | i, old[i].value);
    old_overflow.for_each([&](uint64_t ref, const Value& v) { place(ref, v); });
  }

  using Slots = std::vector<Slot, HugePageAllocator<Slot>>;
  Slots slots_;
  ProbingTable<Value> overflow_;
  size_t mask_ = 0;
  unsigned shift_ = 0;  // log2 of the capacity: a slot's number holds the reference's low bits
  size_t size_ = 0;
  uint64_t grows_ = 0;
  uint64_t overflowed_ = 0;
};

}  // namespace itchbench
