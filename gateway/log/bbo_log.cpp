#include "log/bbo_log.hpp"

namespace itchbench {

BboLog::BboLog(const std::string& path, const LogIdentity& id, size_t reserve_bytes, size_t limit_bytes)
    : log_(path, logfmt::Kind::kBbo, sizeof(logfmt::BboSlot), offsetof(logfmt::BboSlot, flags), id, reserve_bytes,
           limit_bytes) {}

void BboLog::append_wide(const BboEvent& e) {
  const uint64_t timestamp = e.timestamp & SlotAnchor::kTimestampMask;
  if (anchor_.misfit(anchor_.seq_off(e.seq), anchor_.timestamp_off(timestamp))) {
    uint8_t* p = log_.next();
    if (!p) {
      lost();
      return;
    }
    store(p, e.seq, timestamp, uint64_t(logfmt::kWritten | logfmt::kSlotAnchor) << 56);
    anchor_.set(e.seq, timestamp);
  }
  const uint64_t seq_off = anchor_.seq_off(e.seq), timestamp_off = anchor_.timestamp_off(timestamp);
  if (((e.bbo.bid_qty | e.bbo.ask_qty) >> 32) == 0) {
    write_event(e, seq_off, timestamp_off);
    return;
  }
  // The high-shares slot and its event claimed together: a log never holds the one without the other.
  uint8_t* p = log_.next(2);
  if (!p) {
    lost();
    return;
  }
  store(p, (e.bbo.bid_qty >> 32) | (e.bbo.ask_qty >> 32) << 32, 0,
        uint64_t(logfmt::kWritten | logfmt::kSlotHighShares) << 56);
  write_event_at(p + sizeof(logfmt::BboSlot), e, seq_off, timestamp_off);
}

}  // namespace itchbench
