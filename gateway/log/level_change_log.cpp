#include "log/level_change_log.hpp"

namespace itchbench {

LevelChangeLog::LevelChangeLog(const std::string& path, const LogIdentity& id, size_t reserve_bytes,
                               size_t limit_bytes)
    : log_(path, logfmt::Kind::kDepth, sizeof(logfmt::LevelChangeSlot), offsetof(logfmt::LevelChangeSlot, flags), id,
           reserve_bytes, limit_bytes) {}

void LevelChangeLog::append_wide(uint64_t seq, uint64_t timestamp, uint16_t locate, uint8_t flags, bool bid,
                                 uint32_t px, uint64_t qty) {
  timestamp &= SlotAnchor::kTimestampMask;
  if (anchor_.misfit(anchor_.seq_off(seq), anchor_.timestamp_off(timestamp))) {
    uint8_t* p = log_.next();
    if (!p) {
      ++dropped_;
      anchor_.lost();
      return;
    }
    store(p, seq, timestamp | uint64_t(logfmt::kWritten | logfmt::kSlotAnchor) << 56);
    anchor_.set(seq, timestamp);
  }
  if ((qty >> 32) == 0) {
    write_change(anchor_.seq_off(seq), anchor_.timestamp_off(timestamp), locate, flags, bid, px, qty);
    return;
  }
  // The high-shares slot and its change claimed together: a log never holds the one without the other (a closed
  // log ending in a high-shares slot is refused by its readers).
  uint8_t* p = log_.next(2);
  if (!p) {
    ++dropped_;
    anchor_.lost();
    return;
  }
  store(p, qty >> 32, uint64_t(logfmt::kWritten | logfmt::kSlotHighShares) << 56);
  write_change_at(p + sizeof(logfmt::LevelChangeSlot), anchor_.seq_off(seq), anchor_.timestamp_off(timestamp),
                  locate, flags, bid, px, qty);
}

}  // namespace itchbench
