// The per-message latency log: one entry a message, written as compact
// records (version 5, the default) or wide ones (version 4). The gateway hands
// over what it stamped in registers (MessageLatency) and the log encodes it:
// compact, a message is one 20-byte slot of differences, plus an escape slot
// for each value that does not fit (a sequence jump, an origin that went
// back or leapt, a base to move, a stage that took longer than 2^16 ticks).
// Every stamp stays exact; the bytes a message costs (pages zeroed, mapped,
// written back) fall from 56 to about 20 in simulation. Format: FORMAT.md.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "log/log_format.hpp"
#include "log/mmap_log.hpp"

namespace itchbench {

// One message's latency as the gateway saw it.
struct MessageLatency {
  // A stage's index in stamp: its logfmt::Stage bit is 1 << index.
  enum Index : unsigned { kKernel, kRead, kDecoded, kBook, kPublished };
  uint64_t seq = 0;
  uint64_t t_origin = 0;
  uint64_t stamp[logfmt::kStageCount] = {};  // by Index; 0: not stamped
  uint16_t stock_locate = 0;
  char msg_type = 0;
  uint8_t flags = 0;  // logfmt::LatencyFlags
};

enum class LatencyFormat : uint8_t { kCompact, kWide };

// stages, if it names at least one of the five logfmt::Stage bits and nothing else: what every latency recorder
// (the log, the histograms) needs. Otherwise throws std::invalid_argument naming them.
uint8_t checked_latency_stages(uint8_t stages);

class LatencyLog {
 public:
  // id.stages names the stages recorded (at least one); expected_messages sizes the first reservation
  // (0: unknown). Throws std::runtime_error naming the path, std::invalid_argument for no stage.
  // index_path: where its index goes (one LatencyBlockRecord a block; empty: none). block_messages: a block's
  // messages (the format's kLatencyBlockMessages; tests make blocks small).
  LatencyLog(const std::string& path, LatencyFormat format, const LogIdentity& id, uint64_t expected_messages = 0,
             size_t limit_bytes = MmapLog::kNoLimit, const std::string& index_path = "",
             uint32_t block_messages = logfmt::kLatencyBlockMessages);

  void append(const MessageLatency& m) {
    if (__builtin_expect(messages_ == block_end_, 0)) next_block();
    switch (layout_) {
      case Layout::kSimulation:
        return append_compact<kSimulationStages>(m);
      case Layout::kEveryStage:
        return append_compact<logfmt::kAllStages>(m);
      case Layout::kOtherStages:
        return append_compact<0>(m);
      case Layout::kWide:
        return append_wide(m);
    }
  }

  uint8_t stages() const { return log_.stages(); }
  LatencyFormat format() const { return layout_ == Layout::kWide ? LatencyFormat::kWide : LatencyFormat::kCompact; }
  uint64_t records() const { return messages_; }        // messages recorded
  uint64_t dropped() const { return log_.dropped(); }   // messages not recorded (log full)
  uint64_t slots() const { return log_.records(); }      // compact: messages and escapes
  uint64_t escapes() const { return log_.records() - messages_; }
  uint64_t writer_grows() const { return log_.writer_grows(); }
  uint64_t remaps() const { return log_.remaps(); }
  const std::string& drop_reason() const { return log_.drop_reason(); }
  uint64_t provisioner_wakeups() const { return log_.provisioner_wakeups(); }
  void close();

  // Bytes of one slot: 20 (compact) or the wide record of these stages.
  static size_t slot_size(LatencyFormat format, uint8_t stages);

 private:
  // The stages of simulation's default (every stamp but the kernel's) and of a live run's: the two layouts the
  // encoder is unrolled for (the stage tests fold away); any other set is read from stages_ at run time.
  static constexpr uint8_t kSimulationStages = logfmt::kAllStages & ~logfmt::kStageKernel;
  enum class Layout : uint8_t { kSimulation, kEveryStage, kOtherStages, kWide };

  // The common case, inline and branch-free but for the escape test: every value fits, one slot. kStages: the
  // log's stages (0: stages_).
  template <uint8_t kStages>
  void append_compact(const MessageLatency& m) {
    const uint8_t stages = kStages ? kStages : log_.stages();
    uint32_t first = 0;
    uint16_t steps[4] = {0, 0, 0, 0};
    bool escape = (m.seq != next_seq_) | (m.t_origin - prev_origin_ > logfmt::kMaxOriginDelta);
    uint64_t prev = base_;
    unsigned j = 0;
#pragma GCC unroll 5
    for (unsigned i = 0; i < logfmt::kStageCount; ++i) {
      if (!(stages >> i & 1)) continue;
      const uint64_t t = m.stamp[i];
      const uint64_t d = t - prev;  // wraps when t < prev: too large, escaped
      if (j == 0) {
        escape |= (t != 0) & (d > logfmt::kMaxFirst);
        first = t ? uint32_t(d + 1) : 0;
      } else {
        escape |= (t != 0) & (d > logfmt::kMaxStep);
        steps[j - 1] = t ? uint16_t(d + 1) : 0;
      }
      prev = t ? t : prev;
      ++j;
    }
    if (__builtin_expect(escape, 0)) return append_escaped(m);
    if (uint8_t* p = log_.next()) write_message(p, m, uint32_t(m.t_origin - prev_origin_), first, steps);
  }
  // The message's slot at p, its flags byte last, and the coder's state moved past it.
  void write_message(uint8_t* p, const MessageLatency& m, uint32_t origin_delta, uint32_t first,
                     const uint16_t (&steps)[4]) {
    auto& r = *reinterpret_cast<logfmt::CompactLatencyRecord*>(p);
    r.origin_delta = origin_delta;
    r.first = first;
    std::memcpy(r.steps, steps, sizeof steps);
    r.stock_locate = m.stock_locate;
    r.msg_type = m.msg_type;
    commit(r.flags, m.flags);
    next_seq_ = m.seq + 1;
    prev_origin_ = m.t_origin;
    count_in_block(m);
  }
  // A recorded message into its block's counts (the index's): a few compares and moves, no branch but the
  // rejection test.
  void count_in_block(const MessageLatency& m) {
    ++messages_;
    if (!index_ || (m.flags & logfmt::kRejected)) return;
    unsigned set = 0;
    for (unsigned i = 0; i < logfmt::kStageCount; ++i) set |= unsigned(m.stamp[i] != 0) << i;
    set &= log_.stages();  // a stage not recorded reads as 0
    set |= unsigned(m.t_origin != 0) << logfmt::kStampSetOrigin;
    set |= unsigned(m.flags & logfmt::kBboEvent) << logfmt::kStampSetBbo;
    const uint64_t receive = set & 1 ? m.stamp[0] : set & 2 ? m.stamp[1] : 0;
    logfmt::LatencyBlockRecord& b = block_;
    ++b.accepted;
    b.stamp_sets[set >> 6] |= uint64_t(1) << (set & 63);
    b.max_locate = m.stock_locate > b.max_locate ? m.stock_locate : b.max_locate;
    b.receive_lo = receive < b.receive_lo ? receive : b.receive_lo;
    b.receive_hi = receive > b.receive_hi ? receive : b.receive_hi;
  }
  void next_block();  // the block so far to the index, and the next begun at the next slot
  void append_escaped(const MessageLatency& m);  // out of line: a message with escape slots
  void append_wide(const MessageLatency& m);

  // The flags byte, with kWritten, after every other byte of the slot: a crash never leaves a slot that looks whole.
  static void commit(uint8_t& flags_byte, uint8_t flags) {
    __atomic_signal_fence(__ATOMIC_RELEASE);
    flags_byte = uint8_t(flags | logfmt::kWritten);
  }

  MmapLog log_;
  std::unique_ptr<RecordLog<logfmt::LatencyBlockRecord>> index_;
  logfmt::LatencyBlockRecord block_{};  // the block being written: its start and its counts so far
  uint32_t block_messages_;
  uint64_t block_end_ = 0;  // messages_ at which the next block begins
  uint64_t accepted_ = 0;   // accepted in the blocks before this one
  Layout layout_;
  unsigned count_ = 0;                         // stages recorded
  uint8_t order_[logfmt::kStageCount] = {};    // their stage indices, in order
  uint64_t messages_ = 0;
  // The compact coder's state: what the next slot is read against.
  uint64_t next_seq_ = 1;
  uint64_t prev_origin_ = 0;
  uint64_t base_ = 0;
};

}  // namespace itchbench
