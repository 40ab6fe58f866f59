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
  if (qty >> 32) {
    uint8_t* p = log_.next();
    if (!p) {  // the change without its high bits would read as other shares: it is lost too
      ++dropped_;
      unanchored_ = 1;
      return;
    }
    store(p, qty >> 32, uint64_t(logfmt::kWritten | logfmt::kSlotHighShares) << 56);
  }
  write_change(seq - anchor_seq_, timestamp - anchor_timestamp_, locate, flags, bid, px, qty);
}

}  // namespace itchbench
