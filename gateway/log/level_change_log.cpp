#include "log/level_change_log.hpp"

namespace itchbench {

LevelChangeLog::LevelChangeLog(const std::string& path, const LogIdentity& id, size_t reserve_bytes,
                               size_t limit_bytes)
    : log_(path, logfmt::Kind::kDepth, sizeof(logfmt::LevelChangeSlot), offsetof(logfmt::LevelChangeSlot, flags), id,
           reserve_bytes, limit_bytes) {}

void LevelChangeLog::append_wide(uint64_t seq, uint64_t timestamp, uint16_t locate, uint8_t flags, bool bid,
                                 uint32_t px, uint64_t qty) {
  timestamp &= 0xffff'ffff'ffffULL;  // ITCH timestamps are 48 bits: an anchor holds no more
  if (unanchored_ || (seq - anchor_seq_) >> 8 || (timestamp - anchor_timestamp_) >> 32) {
    uint8_t* p = log_.next();
    if (!p) {
      ++dropped_;
      unanchored_ = 1;
      return;
    }
    store(p, seq, timestamp | uint64_t(logfmt::kWritten | logfmt::kSlotAnchor) << 56);
    anchor_seq_ = seq;
    anchor_timestamp_ = timestamp;
    unanchored_ = 0;
    ++anchors_;
  }
  if ((qty >> 32) == 0) {
    write_change(seq - anchor_seq_, timestamp - anchor_timestamp_, locate, flags, bid, px, qty);
    return;
  }
  // The high-shares slot and its change claimed together: a log never holds the one without the other (a closed
  // log ending in a high-shares slot is refused by its readers).
  uint8_t* p = log_.next(2);
  if (!p) {
    ++dropped_;
    unanchored_ = 1;
    return;
  }
  store(p, qty >> 32, uint64_t(logfmt::kWritten | logfmt::kSlotHighShares) << 56);
  write_change_at(p + sizeof(logfmt::LevelChangeSlot), seq - anchor_seq_, timestamp - anchor_timestamp_, locate,
                  flags, bid, px, qty);
}

}  // namespace itchbench
