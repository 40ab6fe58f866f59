// The BBO log's writer (version 2, FORMAT.md "BBO slot"): an event in a 24-byte slot, its seq and timestamp as
// offsets from the last anchor slot, which holds them whole, and its shares' low 32 bits (a high-shares slot before
// it holds the high ones when either side's do not fit). A BboRecord is 48 bytes: on nasdaq-day the BBO log was the
// largest the gateway wrote without a latency log, and its fresh pages, not its stores, were what it cost. In slots,
// 13 more instructions a message and half the bytes: 1.024x as fast, 1.049x with 5 levels (whole process on one CPU,
// docs/benchmarks.md).
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

#include "book/bbo.hpp"
#include "log/log_format.hpp"
#include "log/mmap_log.hpp"
#include "log/slot_anchor.hpp"

namespace itchbench {

class BboLog {
 public:
  // Throws std::runtime_error naming the path on failure (MmapLog). limit_bytes: the file never grows past it.
  BboLog(const std::string& path, const LogIdentity& id, size_t reserve_bytes = MmapLog::kDefaultReserveBytes,
         size_t limit_bytes = MmapLog::kNoLimit);

  // One event (hot path). An anchor slot goes first when there is none yet, after a lost slot, or when the offsets
  // do not fit (a seq 256 or more after the anchor's, a timestamp 2^32 ns or more after it, or either before it);
  // a high-shares slot when either side's shares do not fit 32 bits.
  void append(const BboEvent& e) {
    const uint64_t seq_off = anchor_.seq_off(e.seq), timestamp_off = anchor_.timestamp_off(e.timestamp);
    if (__builtin_expect((anchor_.misfit(seq_off, timestamp_off) | ((e.bbo.bid_qty | e.bbo.ask_qty) >> 32)) != 0, 0)) {
      append_wide(e);
      return;
    }
    write_event(e, seq_off, timestamp_off);
  }

  uint64_t records() const { return events_; }   // events written (a reader's records)
  uint64_t dropped() const { return dropped_; }  // events not written: the log was full
  uint64_t anchors() const { return anchor_.anchors; }
  uint64_t writer_grows() const { return log_.writer_grows(); }
  uint64_t remaps() const { return log_.remaps(); }
  const std::string& drop_reason() const { return log_.drop_reason(); }
  void close() { log_.close(); }

 private:
  void write_event(const BboEvent& e, uint64_t seq_off, uint64_t timestamp_off) {
    uint8_t* p = log_.next();
    if (!p) {
      lost();
      return;
    }
    write_event_at(p, e, seq_off, timestamp_off);
  }
  void write_event_at(uint8_t* p, const BboEvent& e, uint64_t seq_off, uint64_t timestamp_off) {
    // Field by field: packed into words first, the slot took 14 more instructions an event.
    logfmt::BboSlot& slot = *reinterpret_cast<logfmt::BboSlot*>(p);
    slot.bid_px = e.bbo.bid_px;
    slot.ask_px = e.bbo.ask_px;
    slot.bid_qty_low = uint32_t(e.bbo.bid_qty);
    slot.ask_qty_low = uint32_t(e.bbo.ask_qty);
    slot.timestamp_off = uint32_t(timestamp_off);
    slot.stock_locate = e.stock_locate;
    slot.seq_off = uint8_t(seq_off);
    __atomic_signal_fence(__ATOMIC_RELEASE);  // the flags, with the written marker, stored last
    slot.flags = uint8_t(e.flags | logfmt::kWritten);
    ++events_;
  }
  void lost() {
    ++dropped_;
    anchor_.lost();
  }
  // The slots before an event whose seq, timestamp or shares do not fit its own (off the hot path).
  void append_wide(const BboEvent& e);
  // A slot's three words, its flags (the written marker) in the last, stored last.
  static void store(uint8_t* p, uint64_t first, uint64_t second, uint64_t last) {
    std::memcpy(p, &first, 8);
    std::memcpy(p + 8, &second, 8);
    __atomic_signal_fence(__ATOMIC_RELEASE);
    std::memcpy(p + 16, &last, 8);
  }

  MmapLog log_;
  SlotAnchor anchor_;
  uint64_t events_ = 0, dropped_ = 0;
};

}  // namespace itchbench
