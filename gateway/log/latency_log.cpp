#include "log/latency_log.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace itchbench {

namespace {
LogIdentity versioned(LogIdentity id, LatencyFormat format) {
  id.version = format == LatencyFormat::kCompact ? logfmt::kLatencyCompactVersion : logfmt::kLatencyWideVersion;
  return id;
}

size_t reservation_for(uint64_t expected_messages, size_t slot_size) {
  if (expected_messages == 0) return MmapLog::kDefaultReserveBytes;
  // A compact log's escapes add slots; a short guess is grown past (MmapLog), so this only sizes the first map.
  const size_t bytes = logfmt::kLatencyHeaderSize + size_t(expected_messages) * slot_size * 5 / 4;
  return std::min(MmapLog::kDefaultReserveBytes, bytes);
}

}  // namespace

uint8_t checked_latency_stages(uint8_t stages) {
  if (!(stages & logfmt::kAllStages) || (stages & ~logfmt::kAllStages)) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", unsigned(stages));
    throw std::invalid_argument(std::string("latency records need at least one stage, and only the five known "
                                            "(stages ") + hex + ")");
  }
  return stages;
}

size_t LatencyLog::slot_size(LatencyFormat format, uint8_t stages) {
  return format == LatencyFormat::kCompact ? sizeof(logfmt::CompactLatencyRecord) : logfmt::latency_record_size(stages);
}

LatencyLog::LatencyLog(const std::string& path, LatencyFormat format, const LogIdentity& id, uint64_t expected_messages,
                       size_t limit_bytes, const std::string& index_path, uint32_t block_messages)
    : log_(path, logfmt::Kind::kLatency, slot_size(format, checked_latency_stages(id.stages)),
           format == LatencyFormat::kCompact ? offsetof(logfmt::CompactLatencyRecord, flags)
                                             : offsetof(logfmt::LatencyRecord, flags),
           versioned(id, format), reservation_for(expected_messages, slot_size(format, id.stages)), limit_bytes),
      block_messages_(block_messages ? block_messages : logfmt::kLatencyBlockMessages),
      layout_(format == LatencyFormat::kWide            ? Layout::kWide
              : id.stages == kSimulationStages          ? Layout::kSimulation
              : id.stages == logfmt::kAllStages         ? Layout::kEveryStage
                                                        : Layout::kOtherStages) {
  count_ = logfmt::stage_order(id.stages, order_);
  if (!index_path.empty()) {
    // Small, and grown by the writer itself (one record every block_messages): no provisioning thread.
    const size_t blocks = expected_messages ? size_t(expected_messages / block_messages_) + 2 : 64;
    LogIdentity index_id = id;  // its run and commit; its stamps are the latency log's, read on that log's clock
    index_id.version = 0;
    index_id.stage_clock = logfmt::StageClock::kNone;
    index_id.origin_clock = logfmt::OriginClock::kNone;
    index_ = std::make_unique<RecordLog<logfmt::LatencyBlockRecord>>(
        index_path, logfmt::Kind::kLatencyIndex, index_id,
        logfmt::kHeaderSize + blocks * sizeof(logfmt::LatencyBlockRecord), sizeof(logfmt::LatencyBlockRecord),
        MmapLog::kNoLimit, false);
  }
}

void LatencyLog::next_block() {
  if (index_ && messages_ > block_.messages_before) {  // the block so far, unless none was recorded in it
    block_.messages = uint32_t(messages_ - block_.messages_before);
    block_.slots = uint32_t(log_.records() - block_.slot);
    index_->append(block_);
    accepted_ += block_.accepted;
  }
  block_ = {};
  block_.slot = log_.records();
  block_.messages_before = messages_;
  block_.accepted_before = accepted_;
  if (layout_ != Layout::kWide) {
    block_.next_seq = next_seq_;
    block_.prev_origin = prev_origin_;
    block_.base = base_;
  }
  block_.receive_lo = UINT64_MAX;
  block_end_ = messages_ + block_messages_;
}

void LatencyLog::close() {
  if (index_) {
    next_block();
    index_->close();
  }
  log_.close();
}

void LatencyLog::append_escaped(const MessageLatency& m) {
  struct Escape {
    uint8_t kind;
    uint64_t value;
  } escapes[3 + logfmt::kStageCount];
  unsigned n = 0;
  if (m.seq != next_seq_) escapes[n++] = {logfmt::kEscapeSeq, m.seq};
  uint32_t origin_delta = uint32_t(m.t_origin - prev_origin_);
  if (m.t_origin - prev_origin_ > logfmt::kMaxOriginDelta) {
    escapes[n++] = {logfmt::kEscapeOrigin, m.t_origin};
    origin_delta = 0;
  }
  uint64_t base = base_;
  uint32_t first = 0;
  uint16_t steps[4] = {0, 0, 0, 0};
  uint64_t prev = base;
  for (unsigned j = 0; j < count_; ++j) {
    const uint64_t t = m.stamp[order_[j]];
    if (!t) continue;
    const uint64_t d = t - prev;
    if (j == 0) {
      if (d > logfmt::kMaxFirst) {  // the base moves to this stamp
        escapes[n++] = {logfmt::kEscapeBase, t};
        base = t;
      }
      first = uint32_t(t - base + 1);
    } else if (d > logfmt::kMaxStep) {  // the stamp whole; its step stays 0
      escapes[n++] = {uint8_t(logfmt::kEscapeStamp + order_[j]), t};
    } else {
      steps[j - 1] = uint16_t(d + 1);
    }
    prev = t;
  }
  uint8_t* p = log_.next(n + 1);
  if (!p) return;  // dropped, counted; the coder's state is unchanged, so the next message escapes what it must
  constexpr size_t kSlot = sizeof(logfmt::CompactLatencyRecord);
  for (unsigned i = 0; i < n; ++i) {
    auto& e = *reinterpret_cast<logfmt::LatencyEscape*>(p + i * kSlot);
    e.value_lo = uint32_t(escapes[i].value);
    e.value_hi = uint32_t(escapes[i].value >> 32);
    e.kind = escapes[i].kind;
    commit(e.flags, logfmt::kEscapeSlot);
  }
  write_message(p + n * kSlot, m, origin_delta, first, steps);
  base_ = base;
}

void LatencyLog::append_wide(const MessageLatency& m) {
  uint8_t* p = log_.next();
  if (!p) return;
  auto& r = *reinterpret_cast<logfmt::LatencyRecord*>(p);
  r.seq = m.seq;
  r.t_origin = m.t_origin;
  r.stock_locate = m.stock_locate;
  r.msg_type = m.msg_type;
  uint64_t* stamps = logfmt::stamps_of(r);
  for (unsigned j = 0; j < count_; ++j) stamps[j] = m.stamp[order_[j]];
  commit(r.flags, m.flags);
  count_in_block(m);
}

}  // namespace itchbench
