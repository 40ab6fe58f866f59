// A version-3 depth log's slots read back into level change records (FORMAT.md, "Level change slot"): the reader
// LevelChangeLog's writer is held to. Slot by slot, with the last anchor carried from slot to slot and from one
// part of a log to the next; the harness reads a log through it (log_reader_c.h), where numpy's passes over the
// slots took 136 ns a slot (a 5 M-message nasdaq-day at 5 levels: 0.51 s of a 2.2 s `itchbench sim`).
#pragma once
#include <cstdint>
#include <cstring>

#include "log/log_format.hpp"

namespace itchbench {

// The last anchor slot read: what the level changes after it are offsets from.
struct SlotAnchor {
  uint64_t seq = 0;
  uint64_t timestamp = 0;
  bool held = false;  // an anchor has been read
};

enum class SlotFault : uint32_t {
  kNone = 0,
  kFlags = 1,             // a flag bit no kind has, or the kind bits 0x30
  kNoAnchor = 2,          // a level change with no anchor before it
  kHighSharesAlone = 3,   // a high-shares slot followed by a slot that is no level change
};

struct SlotsRead {
  uint64_t records = 0;   // level change records written
  uint64_t consumed = 0;  // slots read: all of them, or all but a high-shares slot that ends them
  SlotFault fault = SlotFault::kNone;
  uint64_t fault_at = 0;  // the slot refused
};

// Slots [0, n) into records at out (room for n), from anchor, which is moved past them. A high-shares slot that
// ends them is left unread (consumed n - 1): its change is in the part after, or was never written. Stops at the
// first slot refused.
inline SlotsRead read_level_change_slots(const uint8_t* slots, uint64_t n, SlotAnchor& anchor,
                                         logfmt::LevelChangeRecord* out) {
  constexpr uint8_t kKnown = logfmt::kWritten | logfmt::kBookMayBeStale | logfmt::kFromSnapshot | logfmt::kSlotBid |
                             logfmt::kSlotKindMask;
  constexpr uint8_t kRecordFlags = logfmt::kWritten | logfmt::kBookMayBeStale | logfmt::kFromSnapshot;
  SlotsRead r;
  uint64_t high = 0;  // the shares' high 32 bits a high-shares slot gave the slot after it
  for (uint64_t i = 0; i < n; ++i) {
    logfmt::LevelChangeSlot s;
    std::memcpy(&s, slots + i * sizeof s, sizeof s);
    const uint8_t kind = s.flags & logfmt::kSlotKindMask;
    if ((s.flags & uint8_t(~kKnown)) != 0 || kind == logfmt::kSlotKindMask) {
      r.fault = SlotFault::kFlags;
      r.fault_at = i;
      break;
    }
    if (kind == logfmt::kSlotAnchor) {
      uint64_t timestamp = 0;
      std::memcpy(&anchor.seq, slots + i * sizeof s, 8);
      std::memcpy(&timestamp, slots + i * sizeof s + 8, 6);
      anchor.timestamp = timestamp;
      anchor.held = true;
      high = 0;
      continue;
    }
    if (kind == logfmt::kSlotHighShares) {
      if (i + 1 == n) {  // its change after these slots
        r.consumed = i;
        return r;
      }
      if ((slots[(i + 1) * sizeof s + offsetof(logfmt::LevelChangeSlot, flags)] & logfmt::kSlotKindMask) !=
          logfmt::kSlotLevelChange) {
        r.fault = SlotFault::kHighSharesAlone;
        r.fault_at = i;
        break;
      }
      high = s.px;
      continue;
    }
    if (!anchor.held) {
      r.fault = SlotFault::kNoAnchor;
      r.fault_at = i;
      break;
    }
    logfmt::LevelChangeRecord& c = out[r.records++];
    c.seq = anchor.seq + s.seq_off;
    c.timestamp = anchor.timestamp + s.timestamp_off;
    c.stock_locate = s.stock_locate;
    c.flags = s.flags & kRecordFlags;
    c.side = (s.flags & logfmt::kSlotBid) ? 'B' : 'S';
    c.px = s.px;
    c.qty = high << 32 | s.qty_low;
    high = 0;
  }
  r.consumed = r.fault == SlotFault::kNone ? n : r.fault_at;
  return r;
}

}  // namespace itchbench
