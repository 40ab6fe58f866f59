// The price levels of one stock side that lie on whole ticks within a
// window of kTicks ticks of each other, each at a fixed place in a ring: a
// level is found from its price by arithmetic, not by a search, and the next
// best after an emptied best is the next set bit of an occupancy bitmap.
//
// A tick is a cent ($0.01, 100 in ITCH's 4-decimal prices), the price step
// of every stock at $1 or more. The ring holds tick t at slot t mod kTicks;
// while all its ticks lie within kTicks of each other no two share a slot,
// and walking the slots from one tick's slot in one direction meets the other
// ticks in price order. A price that is not a whole tick, or would stretch
// the ring beyond kTicks, is the order book's to keep elsewhere.
//
// The ladder keeps only which ticks are present; the levels themselves are
// the order book's, at places base .. base + kTicks - 1 of its level pool.
#pragma once
#include <cstdint>

#include "util/set_bits.hpp"

namespace itchbench {

class PriceLadder {
 public:
  static constexpr uint32_t kTickPrice = 100;
  static constexpr uint32_t kTicks = 64;
  static constexpr uint32_t kNoBase = UINT32_MAX;

  bool has_block() const { return base_ != kNoBase; }
  void set_block(uint32_t base) {
    base_ = base;
    lo_ = kEmptyLo;
  }
  bool empty() const { return bits_ == 0; }
  uint32_t lowest() const { return lo_; }   // lowest tick present (not empty())
  uint32_t highest() const { return hi_; }  // highest tick present (not empty())

  static bool on_tick(uint32_t price) { return price % kTickPrice == 0; }
  static uint32_t tick_of(uint32_t price) { return price / kTickPrice; }
  uint32_t place_of(uint32_t tick) const { return base_ + (tick & kMask); }
  // Whether a pool place is one of this ladder's.
  bool owns(uint32_t place) const { return has_block() && place - base_ < kTicks; }

  // Whether tick t can take a slot: the ladder has its block and, with t, its ticks stay within the window.
  // Ticks are below 2^26 (prices are 32 bits), so differences of ticks and of the bounds' sentinels are
  // exact as 32-bit signed values: empty, lo_ above every tick and hi_ below; without a block, lo_ so far
  // below every tick that none is within the window of it.
  bool fits(uint32_t t) const { return int32_t(t - lo_) < int32_t(kTicks) && int32_t(hi_ - t) < int32_t(kTicks); }

  bool present(uint32_t t) const { return (bits_ >> (t & kMask)) & 1; }

  // t fits and is absent.
  void add(uint32_t t) {
    bits_ |= uint64_t(1) << (t & kMask);
    lo_ = t < lo_ ? t : lo_;
    hi_ = t > hi_ ? t : hi_;
  }

  // The nearest present tick above t (one exists: t is below highest()): the ring rotated so that t's slot is
  // bit 0, one bit scan however many ticks lie between.
  uint32_t next_above(uint32_t t) const {
    const uint32_t s = t & kMask;
    const uint64_t rotated = (bits_ >> s) | (s ? bits_ << (kTicks - s) : 0);
    return t + uint32_t(__builtin_ctzll(rotated >> 1)) + 1;
  }
  // The nearest present tick below t (one exists: t is above lowest()): rotated so that t's slot is the top bit.
  uint32_t next_below(uint32_t t) const {
    const uint32_t s = kMask - (t & kMask);
    const uint64_t rotated = (bits_ << s) | (s ? bits_ >> (kTicks - s) : 0);
    return t - uint32_t(__builtin_clzll(rotated << 1)) - 1;
  }

  uint32_t count() const { return set_bits(bits_); }
  // How many present ticks are better than t: above it for bids, below it for asks (t need not be present, nor
  // within the window).
  uint32_t count_better(uint32_t t, bool bid) const {
    if (bits_ == 0) return 0;
    const uint64_t from_lowest = from_lowest_bits();
    if (bid) return t >= hi_ ? 0 : t < lo_ ? count() : set_bits(from_lowest >> (t - lo_ + 1));
    return t <= lo_ ? 0 : t > hi_ ? count() : set_bits(from_lowest & ((uint64_t(1) << (t - lo_)) - 1));
  }
  // count_better of a present tick, in a few instructions and without a branch (depth's common case).
  uint32_t count_better_present(uint32_t t, bool bid) const {
    const uint64_t bit = uint64_t(1) << (t - lo_);  // t's bit in from_lowest_bits(): t - lo_ is below kTicks
    return set_bits(from_lowest_bits() & (bid ? 0 - (bit << 1) : bit - 1));  // bits above t, or below it
  }
  // The k-th best present tick, 0 the best (k < count()): for asks the k-th lowest, for bids the k-th highest.
  uint32_t nth_best(uint32_t k, bool bid) const {
    uint64_t from_lowest = from_lowest_bits();
    if (bid) {  // the k highest cleared, from the top
      for (; k != 0; --k) from_lowest ^= uint64_t(1) << (63 - __builtin_clzll(from_lowest));
      return lo_ + uint32_t(63 - __builtin_clzll(from_lowest));
    }
    for (; k != 0; --k) from_lowest &= from_lowest - 1;  // the k lowest cleared
    return lo_ + uint32_t(__builtin_ctzll(from_lowest));
  }

  // t is present.
  void remove(uint32_t t) {
    bits_ &= ~(uint64_t(1) << (t & kMask));
    if (bits_ == 0) {
      lo_ = kEmptyLo;
      hi_ = 0;
      return;
    }
    if (t == lo_) lo_ = next_above(t);
    if (t == hi_) hi_ = next_below(t);
  }

 private:
  static constexpr uint32_t kMask = kTicks - 1;
  static_assert(kTicks == 64, "one occupancy word");
  static_assert(uint64_t(UINT32_MAX) / kTickPrice < (1u << 26), "ticks below 2^26");

  // The occupancy rotated so that bit i is tick lowest() + i (every present tick lies within kTicks of it).
  uint64_t from_lowest_bits() const {
    const uint32_t s = lo_ & kMask;
    return (bits_ >> s) | (bits_ << ((kTicks - s) & kMask));
  }

  static constexpr uint32_t kEmptyLo = 1u << 30;      // above every tick
  static constexpr uint32_t kNoBlockLo = 0xFC000000u;  // -2^26: every tick is more than kTicks above it

  uint64_t bits_ = 0;        // slot t mod kTicks is taken
  uint32_t base_ = kNoBase;  // pool place of slot 0
  uint32_t lo_ = kNoBlockLo;
  uint32_t hi_ = 0;
};

}  // namespace itchbench
