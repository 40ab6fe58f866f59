// The depth log's writer (version 3, FORMAT.md "Level change slot"): a level change in a 16-byte slot, its seq and
// timestamp as offsets from the last anchor slot, which holds them whole. A level change record (the frame the
// publishers send) is 32 bytes; on nasdaq-day at 5 levels, half the bytes a message took the whole process on one
// CPU from 52.5 to 50.2 ns a message (the log's pages and their provisioning, not the stores, were the cost).
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

#include "log/log_format.hpp"
#include "log/mmap_log.hpp"

namespace itchbench {

class LevelChangeLog {
 public:
  // Throws std::runtime_error naming the path on failure (MmapLog). limit_bytes: the file never grows past it.
  LevelChangeLog(const std::string& path, const LogIdentity& id, size_t reserve_bytes,
                 size_t limit_bytes = MmapLog::kNoLimit);

  // One level change (hot path). flags: logfmt::BboFlags. An anchor slot goes first when there is none yet, the
  // offsets do not fit (a seq 256 or more after the anchor's, a timestamp 2^32 ns or more after it, or either
  // before it), and a high-shares slot when the shares do not fit 32 bits.
  void append(uint64_t seq, uint64_t timestamp, uint16_t locate, uint8_t flags, bool bid, uint32_t px, uint64_t qty) {
    const uint64_t seq_off = seq - anchor_seq_, timestamp_off = timestamp - anchor_timestamp_;
    if (__builtin_expect(((seq_off >> 8) | (timestamp_off >> 32) | (qty >> 32) | unanchored_) != 0, 0)) {
      append_wide(seq, timestamp, locate, flags, bid, px, qty);
      return;
    }
    write_change(seq_off, timestamp_off, locate, flags, bid, px, qty);
  }

  // append when kept, and nothing otherwise, with no branch on kept (whether a message changed a stock's top N is a
  // coin toss to the branch predictor): the slot is written either way, marked written only when kept, and the next
  // change writes over one not kept.
  void append_if(bool kept, uint64_t seq, uint64_t timestamp, uint16_t locate, uint8_t flags, bool bid, uint32_t px,
                 uint64_t qty) {
    const uint32_t prices[1] = {px};
    const uint64_t shares[1] = {qty};
    append_first_if<1>(kept, seq, timestamp, locate, flags, bid, prices, shares);
  }
  // append_if of kSlots changes of one event (one message's, so one seq and timestamp, whose anchor is checked
  // once), the first `kept` of them kept.
  template <uint32_t kSlots>
  void append_first_if(uint32_t kept, uint64_t seq, uint64_t timestamp, uint16_t locate, uint8_t flags, bool bid,
                       const uint32_t (&px)[kSlots], const uint64_t (&qty)[kSlots]) {
    const uint64_t seq_off = seq - anchor_seq_, timestamp_off = timestamp - anchor_timestamp_;
    uint8_t* p = log_.peek(kSlots);
    uint64_t wide = (seq_off >> 8) | (timestamp_off >> 32) | unanchored_;
    for (uint32_t i = 0; i < kSlots; ++i) wide |= qty[i] >> 32;
    if (__builtin_expect(wide != 0 || !p, 0)) {
      for (uint32_t i = 0; i < kept; ++i) append(seq, timestamp, locate, flags, bid, px[i], qty[i]);
      return;
    }
    const uint64_t high = timestamp_off | uint64_t(locate) << 32 | seq_off << 48;
    const uint64_t slot_flags = uint64_t(flags | logfmt::kWritten | (bid ? logfmt::kSlotBid : 0)) << 56;
    for (uint32_t i = 0; i < kSlots; ++i)  // the flags masked, not chosen: GCC made the choice a branch
      store(p + i * sizeof(logfmt::LevelChangeSlot), uint64_t(px[i]) | uint64_t(uint32_t(qty[i])) << 32,
            high | (slot_flags & (0 - uint64_t(i < kept))));
    log_.take(kept);
    changes_ += kept;
  }

  uint64_t records() const { return changes_; }  // level changes written (a reader's records)
  uint64_t dropped() const { return dropped_; }   // level changes not written: the log was full
  uint64_t anchors() const { return anchors_; }
  uint64_t writer_grows() const { return log_.writer_grows(); }
  uint64_t remaps() const { return log_.remaps(); }
  const std::string& drop_reason() const { return log_.drop_reason(); }
  void close() { log_.close(); }

 private:
  void write_change(uint64_t seq_off, uint64_t timestamp_off, uint16_t locate, uint8_t flags, bool bid, uint32_t px,
                    uint64_t qty) {
    uint8_t* p = log_.next();
    if (!p) {
      ++dropped_;
      unanchored_ = 1;  // slots lost: the next change starts from an anchor of its own
      return;
    }
    write_change_at(p, seq_off, timestamp_off, locate, flags, bid, px, qty);
  }
  void write_change_at(uint8_t* p, uint64_t seq_off, uint64_t timestamp_off, uint16_t locate, uint8_t flags, bool bid,
                       uint32_t px, uint64_t qty) {
    const uint8_t slot_flags = uint8_t(flags | logfmt::kWritten | (bid ? logfmt::kSlotBid : 0));
    store(p, uint64_t(px) | uint64_t(uint32_t(qty)) << 32,
          timestamp_off | uint64_t(locate) << 32 | seq_off << 48 | uint64_t(slot_flags) << 56);
    ++changes_;
  }
  // The slots before a change whose seq, timestamp or shares do not fit its own (off the hot path).
  void append_wide(uint64_t seq, uint64_t timestamp, uint16_t locate, uint8_t flags, bool bid, uint32_t px,
                   uint64_t qty);
  // A slot's two halves, its flags (the written marker) in the second, stored last.
  static void store(uint8_t* p, uint64_t low, uint64_t high) {
    std::memcpy(p, &low, 8);
    __atomic_signal_fence(__ATOMIC_RELEASE);
    std::memcpy(p + 8, &high, 8);
  }

  MmapLog log_;
  uint64_t anchor_seq_ = 0, anchor_timestamp_ = 0;
  uint64_t unanchored_ = 1;  // 1 until an anchor slot is written, and again after a slot is lost
  uint64_t changes_ = 0, dropped_ = 0, anchors_ = 0;
};

}  // namespace itchbench
