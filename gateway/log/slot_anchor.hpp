// What a log of slots writes its records' seq and timestamp against (FORMAT.md: the depth log's version 3, the BBO
// log's version 2): the last anchor slot's. A record's offsets fit its slot when its seq is 0 to 255 after the
// anchor's and its timestamp 0 to 2^32 - 1 ns after it; otherwise, before the first anchor and after a lost slot,
// an anchor slot goes before it.
#pragma once
#include <cstdint>

namespace itchbench {

struct SlotAnchor {
  // ITCH timestamps are 48 bits: an anchor holds no more.
  static constexpr uint64_t kTimestampMask = 0xffff'ffff'ffffULL;

  // A record's offsets from the anchor (valid when misfit of them is 0).
  uint64_t seq_off(uint64_t record_seq) const { return record_seq - seq; }
  uint64_t timestamp_off(uint64_t record_timestamp) const { return record_timestamp - timestamp; }
  // Nonzero when a record of these offsets needs an anchor slot first: branch-free, for the hot path to fold into
  // its own test of what else sends a record the slow way (shares past 32 bits).
  uint64_t misfit(uint64_t record_seq_off, uint64_t record_timestamp_off) const {
    return (record_seq_off >> 8) | (record_timestamp_off >> 32) | unanchored;
  }
  void set(uint64_t anchor_seq, uint64_t anchor_timestamp) {
    seq = anchor_seq;
    timestamp = anchor_timestamp;
    unanchored = 0;
    ++anchors;
  }
  void lost() { unanchored = 1; }  // a slot lost: the next record starts from an anchor of its own

  uint64_t seq = 0, timestamp = 0;
  uint64_t unanchored = 1;  // 1 until an anchor slot is written, and again after a slot is lost
  uint64_t anchors = 0;     // anchor slots written
};

}  // namespace itchbench
