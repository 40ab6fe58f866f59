#include "log/latency_scan.hpp"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cmath>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <thread>

#include "log/compact_reader.hpp"

namespace itchbench::scan {

namespace {

constexpr uint32_t kBboEventBit = 1u << kStampCount;  // a row's present bit above its stamps'

struct Row {
  uint64_t seq;
  int64_t t[kStampCount];
  uint32_t present;  // present_of: bit k when stamp k is nonzero, kBboEventBit when the message is a BBO event
  uint16_t locate;
  uint8_t type;
  uint8_t flags;
};

// Calls f(row) for each of the log's messages in order, every stamp in ns: plain reads into one buffer (memory
// stays a buffer whatever the log's size), compact slots decoded straight into the row, their state carried
// across reads.
class Rows {
 public:
  static constexpr size_t kBatch = size_t(1) << 16;

  // The slots [from.slot, end) (end 0: to the log's end), decoded from the state at from.
  Rows(const Source& s, const Checkpoint& from = {}, uint64_t end = 0)
      : source_(s), record_size_(logfmt::latency_record_size(s.stages)),
        unit_(s.compact ? sizeof(logfmt::CompactLatencyRecord) : record_size_), raw_(kBatch * unit_),
        first_(from.slot), end_(end ? end : s.stored), state_(from.state) {
    order_count_ = logfmt::stage_order(s.stages, order_);
    fd_ = ::open(s.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) fail(std::string("cannot open: ") + std::strerror(errno));
    if (::lseek(fd_, off_t(s.data_offset + first_ * unit_), SEEK_SET) < 0)
      fail(std::string("cannot seek: ") + std::strerror(errno));
  }
  ~Rows() { ::close(fd_); }
  Rows(const Rows&) = delete;
  Rows& operator=(const Rows&) = delete;

  // Calls f(row) for each message, and before each read at_read(checkpoint): where a reader may start instead.
  template <class F, class AtRead>
  void for_each(F&& f, AtRead&& at_read) {
    CompactState& state = state_;
    size_t carried = 0;  // escape slots at the end of the last read, moved to the buffer's start
    for (uint64_t read = first_; read < end_;) {
      at_read(Checkpoint{read - carried, state, 0});
      const size_t want = std::min<uint64_t>(kBatch - carried, end_ - read);
      read_exactly(raw_.data() + carried * unit_, want * unit_);
      read += want;
      const size_t have = carried + want;
      if (!source_.compact) {
        for (size_t i = 0; i < have; ++i) f(row_of(raw_.data() + i * record_size_));
        continue;
      }
      DecodedSlots d;
      try {
        d = for_each_compact(raw_.data(), have, source_.stages, state,
                             [&](const logfmt::LatencyRecord& head, const uint64_t* t) { f(row_of(head, t)); });
      } catch (const BadEscape& e) {
        fail("escape slot " + std::to_string(read - have + e.slot) + " has kind " + std::to_string(e.kind) +
             ", which a log of these stages does not hold");
      }
      carried = have - d.consumed;
      if (carried == kBatch) fail(std::to_string(carried) + " escape slots in a row, no message after them");
      std::memmove(raw_.data(), raw_.data() + d.consumed * unit_, carried * unit_);
    }
  }
  template <class F>
  void for_each(F&& f) {
    for_each(f, [](const Checkpoint&) {});
  }
  // The decoder's state after the slots read: a compact log's state at the slot where the reading ended.
  const CompactState& state() const { return state_; }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw std::runtime_error(source_.path + ": " + what); }

  void read_exactly(uint8_t* p, size_t bytes) {
    while (bytes) {
      const ssize_t got = ::read(fd_, p, bytes);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) fail(std::string("cannot read: ") + std::strerror(errno));
      if (got == 0) fail("shorter than when it was opened");
      p += got;
      bytes -= size_t(got);
    }
  }

  // A version-3/4 record: its head, then the stamps of its stages in stage order.
  Row row_of(const uint8_t* p) const {
    logfmt::LatencyRecord head;
    std::memcpy(&head, p, sizeof head);
    uint64_t t[logfmt::kStageCount] = {};
    for (unsigned j = 0; j < order_count_; ++j) std::memcpy(&t[order_[j]], p + sizeof head + 8 * j, 8);
    return row_of(head, t);
  }

  Row row_of(const logfmt::LatencyRecord& head, const uint64_t* t) const {
    Row r;
    r.seq = head.seq;
    r.locate = head.stock_locate;
    r.type = uint8_t(head.msg_type);
    r.flags = head.flags;
    r.t[kOrigin] = int64_t(head.t_origin);
    // Which stamps the row has, told as they are mapped: tested afterwards, stamp by stamp from the row, it was 36
    // of the 420 instructions a row of the second pass took (5 M nasdaq-day records, every stamp).
    uint32_t present = (head.flags & logfmt::kBboEvent ? kBboEventBit : 0) | uint32_t(head.t_origin != 0) << kOrigin;
    for (unsigned i = 0; i < logfmt::kStageCount; ++i) {
      r.t[i] = int64_t(source_.has_line ? ticks_to_ns(source_.line, t[i]) : t[i]);
      present |= uint32_t(r.t[i] != 0) << i;
    }
    r.t[kReceive] = r.t[kKernel] ? r.t[kKernel] : r.t[kRead];
    r.present = present | uint32_t(r.t[kReceive] != 0) << kReceive;
    return r;
  }

  const Source& source_;
  size_t record_size_, unit_;
  std::vector<uint8_t> raw_;
  uint64_t first_, end_;
  CompactState state_;
  uint8_t order_[logfmt::kStageCount];
  unsigned order_count_ = 0;
  int fd_ = -1;
};

bool accepted(const Row& r) { return !(r.flags & logfmt::kRejected); }
bool bbo_event(const Row& r) { return r.flags & logfmt::kBboEvent; }

// Which stamps a row has, bit k for stamp k, and above them whether it is a BBO event (Row::present, set as the row
// is read): what a stage or a chain needs of a row is then one test of these bits (a stage's own tests of its
// stamps were a fifth of a row's time in the second pass, 50 M records).
uint32_t present_of(const Row& r) { return r.present; }
// A stage has a value in a row that has both its stamps, and is a BBO event when the stage is one of events.
uint32_t needs_of(const StageSpec& s) { return 1u << s.start | 1u << s.end | (s.bbo_only ? kBboEventBit : 0); }
bool has_all(uint32_t present, uint32_t needs) { return (present & needs) == needs; }

// Which of the run's time bins a receive stamp falls in: bins of 2^shift ns from the origin (a stamp before it
// in the first), at most kMaxTimeBins. A stamp past the last bin doubles the width until it fits, and says how
// many times (the counts so far are folded as often), so a pass that learns the span as it goes ends with the
// bins of one that knew it: the narrowest that hold every stamp. An origin not known (a pass that follows the
// log) is the first stamp placed.
class TimeBins {
 public:
  TimeBins(int64_t origin, uint32_t shift, bool origin_known) : origin_(origin), shift_(shift), known_(origin_known) {}
  struct Placed {
    uint32_t bin;
    uint32_t doublings;
  };
  Placed of(int64_t t) {
    if (!known_) origin_ = t, known_ = true;
    if (t <= origin_) return {0, 0};
    const uint64_t d = uint64_t(t) - uint64_t(origin_);
    uint32_t doublings = 0;
    while ((d >> shift_) >= kMaxTimeBins) ++shift_, ++doublings;
    return {uint32_t(d >> shift_), doublings};
  }
  int64_t origin() const { return origin_; }
  uint32_t shift() const { return shift_; }
  bool known() const { return known_; }

 private:
  int64_t origin_;
  uint32_t shift_;
  bool known_;
};

// The stage clock moved onto CLOCK_MONOTONIC in the harness's float64 arithmetic (np.rint: ties to even).
class Monotonic {
  // Ties to even without a call into libm: adding 1.5 * 2^52 leaves no bits below the units, so the addition
  // itself rounds (in the default rounding mode, the one numpy's rint uses). Exact below 2^51.
  static int64_t rint(double x) {
    constexpr double kShift = 6755399441055744.0;  // 1.5 * 2^52
    if (std::fabs(x) >= 2251799813685248.0) return int64_t(std::nearbyint(x));  // 2^51
    volatile double shifted = x + kShift;  // volatile: kept as two roundings, whatever the optimiser knows
    return int64_t(shifted - kShift);
  }

 public:
  explicit Monotonic(const MonotonicMove& m)
      : on_(m.on && m.at > m.anchor), anchor_(m.anchor), factor_(on_ ? double(m.offset) / double(m.at - m.anchor) : 0) {}
  int64_t operator()(int64_t t) const {
    if (!on_ || t == 0) return t;
    return t - rint(double(t - anchor_) * factor_);
  }

 private:
  bool on_;
  int64_t anchor_;
  double factor_;
};

// The slowest messages along the chain: a bounded heap whose top is the least of those kept (the smallest total;
// of equal totals the latest seq), so the kept are the same whatever order equal totals come in.
class SlowestKept {
 public:
  explicit SlowestKept(uint32_t kept) : kept_(kept) {}
  // Whether a message of this total would be kept, as it is offered.
  bool takes(int64_t total, int64_t seq) const {
    return kept_ && (heap_.size() < kept_ || less(heap_.front(), total, seq));
  }
  void offer(int64_t total, const Row& r, const int64_t* moved, size_t chain) {
    if (!takes(total, int64_t(r.seq))) return;
    Slowest s{total, moved[0], int64_t(r.seq), r.type, std::vector<int64_t>(chain - 1)};
    for (size_t i = 0; i + 1 < chain; ++i) s.hops[i] = moved[i + 1] - moved[i];
    if (heap_.size() == kept_) {
      std::pop_heap(heap_.begin(), heap_.end(), greater);
      heap_.back() = std::move(s);
    } else {
      heap_.push_back(std::move(s));
    }
    std::push_heap(heap_.begin(), heap_.end(), greater);
  }
  std::vector<Slowest> take() { return std::move(heap_); }

 private:
  // a is kept below (total, seq): a smaller total, or an equal one with a later seq.
  static bool less(const Slowest& a, int64_t total, int64_t seq) {
    return a.total != total ? a.total < total : a.seq > seq;
  }
  static bool greater(const Slowest& a, const Slowest& b) { return less(b, a.total, a.seq); }

  uint32_t kept_;
  std::vector<Slowest> heap_;  // a min-heap by (total, -seq)
};

// Finds seqs in a joined table, in about the order they come: the next seq is usually the next entry.
class Lookup {
 public:
  static constexpr size_t kNone = SIZE_MAX;
  explicit Lookup(const JoinedStamps& t) : t_(t) {}
  size_t find(int64_t seq) {
    size_t i = hint_;
    if (!(i < t_.n && t_.seq[i] >= seq && (i == 0 || t_.seq[i - 1] < seq)))
      i = size_t(std::lower_bound(t_.seq, t_.seq + t_.n, seq) - t_.seq);
    const bool found = i < t_.n && t_.seq[i] == seq;
    hint_ = found ? i + 1 : i;
    return found ? i : kNone;
  }

 private:
  const JoinedStamps& t_;
  size_t hint_ = 0;
};

constexpr uint32_t kStageDense = 1u << 16;
constexpr uint32_t kWarmDense = 1u << 12;
constexpr uint32_t kTypeKeys = 256, kTypeDense = 1024;
constexpr uint32_t kTimeDense = 1u << 12;
constexpr size_t kSymbolCells = size_t(1) << 22;  // 16 MiB of counts: 1,024 values a symbol for 4,096 symbols

}  // namespace

namespace {

// The first pass's figures, a message at a time.
struct FirstCounter {
  FirstPass& f;
  uint64_t warmup;
  const std::vector<StageSpec>& stages;
  uint32_t every_stage = uint32_t((uint64_t(1) << stages.size()) - 1);

  void row(const Row& r) {
    ++f.messages;
    if (!accepted(r)) return;
    const bool warm = f.accepted < warmup;
    ++f.accepted;
    f.max_locate = std::max<uint64_t>(f.max_locate, r.locate);
    const uint32_t present = present_of(r);
    f.set_stamps |= present & (kBboEventBit - 1);
    if (f.found_stages != every_stage)  // once each stage has a value, nothing more to find
      for (size_t i = 0; i < stages.size(); ++i)
        if (has_all(present, needs_of(stages[i]))) f.found_stages |= 1u << i;
    if (!warm) receive(r.t[kReceive]);
  }
  // A receive stamp after the warm-up (the first one read is the first message's), into the span.
  void receive(int64_t t) {
    f.t_first = f.any_after_warmup ? f.t_first : t;
    f.t_hi = f.any_after_warmup ? std::max(f.t_hi, t) : t;
    f.any_after_warmup = true;
  }
  // Every message of an index block whose stamps are the set m (logfmt::LatencyBlockRecord::stamp_sets).
  void stamp_set(unsigned m) {
    const auto has = [m](Stamp s) {
      if (s <= kPublished) return (m >> s & 1) != 0;
      return s == kReceive ? (m & 3) != 0 : (m >> logfmt::kStampSetOrigin & 1) != 0;
    };
    for (unsigned s = kKernel; s <= kPublished; ++s) f.set_stamps |= uint32_t(m >> s & 1) << s;
    f.set_stamps |= uint32_t(m >> logfmt::kStampSetOrigin & 1) << kOrigin;
    const bool bbo = m >> logfmt::kStampSetBbo & 1;
    for (size_t i = 0; i < stages.size(); ++i)
      if (has(stages[i].start) && has(stages[i].end) && (bbo || !stages[i].bbo_only)) f.found_stages |= 1u << i;
  }
};

// What is wrong with an index's block that should follow blocks ending at (slot, messages, accepted); empty: none.
std::string block_fault(const logfmt::LatencyBlockRecord& b, uint64_t slot, uint64_t messages, uint64_t accepted) {
  if (!(b.flags & logfmt::kWritten)) return "was never written";
  if (b.accepted > b.messages || b.messages == 0) return "counts more accepted messages than messages";
  if (b.slots < b.messages) return "has fewer slots than messages";
  if (b.slot != slot || b.messages_before != messages || b.accepted_before != accepted)
    return "does not follow the block before it";
  return "";
}

[[noreturn]] void index_fails(const Source& source, uint64_t block, const std::string& what) {
  throw std::runtime_error(source.path + ": its index's block " + std::to_string(block) + " " + what);
}

// The blocks, checked to cover the log's slots from its first in order.
void check_index(const Source& source, const logfmt::LatencyBlockRecord* b, size_t n) {
  uint64_t slot = 0, messages = 0, accepted = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::string fault = block_fault(b[i], slot, messages, accepted);
    if (!fault.empty()) index_fails(source, i, fault);
    slot += b[i].slots, messages += b[i].messages, accepted += b[i].accepted;
  }
  if (slot != source.stored)
    throw std::runtime_error(source.path + ": its index covers " + std::to_string(slot) + " slots, the log holds " +
                             std::to_string(source.stored));
}

Checkpoint checkpoint_of(const logfmt::LatencyBlockRecord& b) {
  return Checkpoint{b.slot, CompactState{b.next_seq, b.prev_origin, b.base}, b.accepted_before};
}

}  // namespace

FirstPass first_pass(const Source& source, uint64_t warmup, const std::vector<StageSpec>& stages,
                     const logfmt::LatencyBlockRecord* blocks, size_t n_blocks) {
  FirstPass f;
  FirstCounter count{f, warmup, stages};
  if (!n_blocks) {
    Rows(source).for_each([&](const Row& r) { count.row(r); }, [&](Checkpoint c) {
      c.accepted_before = f.accepted;
      f.checkpoints.push_back(c);
    });
    f.set_stamps &= ~(1u << kReceive);  // derived, not stored
    return f;
  }
  check_index(source, blocks, n_blocks);
  const auto in_ns = [&](uint64_t t) { return int64_t(source.has_line ? ticks_to_ns(source.line, t) : t); };
  for (size_t i = 0; i < n_blocks; ++i) {
    const logfmt::LatencyBlockRecord& b = blocks[i];
    const Checkpoint at = checkpoint_of(b);
    f.checkpoints.push_back(at);
    f.messages += b.messages;
    f.accepted += b.accepted;
    if (!b.accepted) continue;
    f.max_locate = std::max<uint64_t>(f.max_locate, b.max_locate);
    for (unsigned m = 0; m < 128; ++m)
      if (b.stamp_sets[m >> 6] >> (m & 63) & 1) count.stamp_set(m);
    if (b.accepted_before <= warmup && warmup < b.accepted_before + b.accepted) {
      // The first message after the warm-up is in this block: its messages from that one, read from the log.
      uint64_t seen = b.accepted_before;
      Rows(source, at, i + 1 < n_blocks ? blocks[i + 1].slot : 0).for_each([&](const Row& r) {
        if (accepted(r) && seen++ >= warmup) count.receive(r.t[kReceive]);
      });
    } else if (b.accepted_before > warmup) {
      count.receive(in_ns(b.receive_lo));
      count.receive(in_ns(b.receive_hi));
    }
  }
  return f;
}

namespace {

// Counts over time bins twice as wide (pairs of bins folded into one); the caller widens the shift.
void fold_time_bins(Result& r) {
  r.over_time->fold_keys();
  std::vector<uint64_t>& n = r.throughput;
  for (size_t b = 0; b < n.size(); ++b) n[b / 2] = (b & 1 ? n[b / 2] : 0) + n[b];
  std::fill(n.begin() + std::ptrdiff_t(n.size() / 2), n.end(), 0);
}

// The second pass's counts, a message at a time, from a message whose accepted predecessors are known.
class Counter {
 public:
  Counter(const Params& p, uint64_t accepted_before, bool origin_known)
      : p_(p), seen_(accepted_before), time_bins_(p.time_origin, p.time_shift, origin_known),
        slowest_(!p.chains.empty() && p.chains[0].stamps.size() >= 2 ? p.kept : 0), sent_(p.send),
        received_(p.subscribers.begin(), p.subscribers.end()), at_subscriber_(p.subscribers.size()),
        hops_(!p.chains.empty() || !p.co_starts.empty()), monotonic_(p.monotonic) {
    for (size_t i = 0; i < p.stages.size(); ++i) {
      out_.stage.emplace_back(1, kStageDense);
      out_.warmup.emplace_back(1, kWarmDense);
    }
    // Counts of the locates up to max_locate are dense; any above (a pass that follows the log guesses the
    // largest) are counted too, sparsely.
    const uint32_t symbols = uint32_t(p.max_locate + 1);
    const uint32_t symbol_dense = uint32_t(std::clamp<size_t>(kSymbolCells / symbols, 64, 1024));
    out_.by_type = std::make_unique<ExactHistogram>(p.breakdowns ? kTypeKeys : 1, kTypeDense);
    out_.by_symbol = std::make_unique<ExactHistogram>(p.breakdowns ? symbols : 1, symbol_dense);
    out_.over_time = std::make_unique<ExactHistogram>(kMaxTimeBins, kTimeDense);
    out_.throughput.assign(kMaxTimeBins, 0);
    for (const Chain& c : p.chains) {
      out_.hop.emplace_back();
      out_.cumulative.emplace_back();
      for (size_t i = 0; i + 1 < c.stamps.size(); ++i) {
        out_.hop.back().emplace_back(1, kStageDense);
        out_.cumulative.back().emplace_back(1, i ? kStageDense : 1);  // the first hop is its own cumulative
      }
    }
    for (size_t i = 0; i < p.co_starts.size(); ++i) out_.co.emplace_back(1, kStageDense);
    for (const Chain& c : p.chains) {
      uint32_t needs = c.bbo_only ? kBboEventBit : 0;
      for (const ChainStamp s : c.stamps) needs |= s < kStampCount ? 1u << s : 0;
      chain_needs_.push_back(needs);
    }
    for (size_t i = 0; i < p.stages.size(); ++i) {
      const StageSpec& s = p.stages[i];
      if (int(i) == p.headline && p.breakdowns) headline_ = Sink{needs_of(s), s.start, s.end, nullptr, kAfter};
      sinks_.push_back({needs_of(s), s.start, s.end, &out_.stage[i], kAfter});
      sinks_.push_back({needs_of(s), s.start, s.end, &out_.warmup[i], kWarm});
    }
    if (direct_) {  // the chains' and co-starts' histograms count the warm-up's messages too
      for (size_t c = 0; c < p.chains.size(); ++c) {
        const std::vector<ChainStamp>& at = p.chains[c].stamps;
        for (size_t i = 0; i + 1 < at.size(); ++i) {
          sinks_.push_back({chain_needs_[c], Stamp(at[i]), Stamp(at[i + 1]), &out_.hop[c][i], kWarm | kAfter});
          if (i) sinks_.push_back({chain_needs_[c], Stamp(at[0]), Stamp(at[i + 1]), &out_.cumulative[c][i],
                                   kWarm | kAfter});
        }
      }
      for (size_t i = 0; i < p.co_starts.size(); ++i) {
        const Stamp from = Stamp(p.co_starts[i]);
        sinks_.push_back({1u << from | 1u << kBook, from, kBook, &out_.co[i], kWarm | kAfter});
      }
    }
  }

  Counter(const Counter&) = delete;  // its plans point into its own counts
  Counter& operator=(const Counter&) = delete;

  void row(const Row& r) {
    if (!accepted(r)) return;
    max_locate_ = std::max<uint64_t>(max_locate_, r.locate);
    const bool warm = seen_++ < p_.warmup;
    uint32_t bin = 0;
    if (!warm) {
      const TimeBins::Placed at = time_bins_.of(r.t[kReceive]);
      for (uint32_t k = 0; k < at.doublings; ++k) fold_time_bins(out_);
      bin = at.bin;
      ++out_.throughput[bin];
    }
    const uint32_t present = present_of(r);
    for (const Add& a : plan_of(present | (warm ? kWarmRowBit : 0)).adds) a.into.add(difference(r, a.from, a.to));
    if (headline_.counts_in(present, warm ? kWarm : kAfter)) {
      const int64_t d = difference(r, headline_.from, headline_.to);
      out_.by_type->add(r.type, d);
      by_symbol(r.locate, d);
      out_.over_time->add(bin, d);
    }
    if (!direct_ && hops_) count_hops(r);
    else if (direct_ && !chain_needs_.empty() && has_all(present, chain_needs_[0])) offer_slowest(r);
  }

  uint64_t accepted_through() const { return seen_; }
  uint64_t max_locate() const { return max_locate_; }  // of the accepted messages counted
  // Where the time bins start, once a message after the warm-up has placed it, and how wide they are by now.
  bool time_origin_known() const { return time_bins_.known(); }
  int64_t time_origin() const { return time_bins_.origin(); }
  uint32_t time_shift() const { return time_bins_.shift(); }
  Result take() {
    for (Shared& shared : shared_) {  // the last member takes the counts, the others a copy each
      for (size_t k = 0; k + 1 < shared.members.size(); ++k) {
        ExactHistogram copy = *shared.counts;
        shared.members[k]->merge(copy);
      }
      shared.members.back()->merge(*shared.counts);
    }
    shared_.clear();
    for (uint32_t k = 0; k < kSymbolAhead; ++k) {
      const Delayed& e = delayed_[(delayed_at_ + k) % kSymbolAhead];
      if (e.pending) out_.by_symbol->add(e.locate, e.value);
    }
    delayed_ = {};
    out_.slowest = slowest_.take();
    out_.time_origin = time_bins_.origin();
    out_.time_shift = time_bins_.shift();
    return std::move(out_);
  }

 private:
  // A histogram the pass gives out, as a row counts in it: the stamps (and BBO event) it needs of the row, the
  // difference of two of them, and whether it counts the warm-up's messages, the later ones, or both.
  static constexpr uint8_t kWarm = 1, kAfter = 2;
  struct Sink {
    uint32_t needs = 0;
    Stamp from = kOrigin, to = kOrigin;
    ExactHistogram* out = nullptr;
    uint8_t when = 0;
    // Whether a row of these stamps counts in it, the row in the warm-up (kWarm) or after it (kAfter).
    bool counts_in(uint32_t present, uint8_t row_when) const { return (when & row_when) && has_all(present, needs); }
  };
  // One value of a row into one histogram: a sink's own, or one that sinks counting the same value on the same
  // rows share (Shared).
  struct Add {
    Stamp from, to;
    ExactHistogram::KeyAdder into;  // key 0
  };
  // A value counted once for several sinks, each given the counts in take().
  struct Shared {
    std::unique_ptr<ExactHistogram> counts;
    std::vector<ExactHistogram*> members;
  };
  // What a row of one key counts: every sink whose needs its stamps meet, those of one value (the same two stamps,
  // a receive stamp read as the stamp it is in such a row, and the same dense range) as one add. In a simulation
  // parse, decode and the book chain's first hop are one value, the book stage and its second hop another, and
  // receive-to-book, the chain's cumulative and the read co-start a third: 12 adds a message became 7.
  struct RowPlan {
    bool made = false;
    std::vector<Add> adds;
  };
  static constexpr uint32_t kWarmRowBit = kBboEventBit << 1;  // a key's bit above present_of's

  static int64_t difference(const Row& r, Stamp from, Stamp to) {
    return int64_t(uint64_t(r.t[to]) - uint64_t(r.t[from]));
  }

  const RowPlan& plan_of(uint32_t key) {
    RowPlan& plan = plans_[key];
    if (!plan.made) make_plan(key, plan);
    return plan;
  }
  void make_plan(uint32_t key, RowPlan& plan) {
    const uint32_t present = key & (kWarmRowBit - 1);
    const uint8_t when = key & kWarmRowBit ? kWarm : kAfter;
    const auto stored = [present](Stamp s) { return s != kReceive ? s : present >> kKernel & 1 ? kKernel : kRead; };
    std::vector<bool> placed(sinks_.size());
    for (size_t i = 0; i < sinks_.size(); ++i) {
      const Sink& s = sinks_[i];
      if (placed[i] || !s.counts_in(present, when)) continue;
      std::vector<ExactHistogram*> same{s.out};  // the sinks after it that count its value on this key's rows
      for (size_t j = i + 1; j < sinks_.size(); ++j) {
        const Sink& o = sinks_[j];
        if (placed[j] || !o.counts_in(present, when)) continue;
        if (stored(o.from) == stored(s.from) && stored(o.to) == stored(s.to) && o.out->dense() == s.out->dense()) {
          same.push_back(o.out);
          placed[j] = true;
        }
      }
      plan.adds.push_back({s.from, s.to, {same.size() == 1 ? *s.out : *shared_counts(same), 0}});
    }
    plan.made = true;
  }
  ExactHistogram* shared_counts(const std::vector<ExactHistogram*>& members) {
    for (Shared& shared : shared_)
      if (shared.members == members) return shared.counts.get();
    shared_.push_back({std::make_unique<ExactHistogram>(1, members[0]->dense()), members});
    return shared_.back().counts.get();
  }

  // The book chain's slowest, of the row's own stamps.
  void offer_slowest(const Row& r) {
    const std::vector<ChainStamp>& at = p_.chains[0].stamps;
    const int64_t total = r.t[at.back()] - r.t[at[0]];
    if (!slowest_.takes(total, int64_t(r.seq))) return;  // most messages: the chain's stamps not gathered
    int64_t moved[kMaxChain];
    for (size_t i = 0; i < at.size(); ++i) moved[i] = r.t[at[i]];
    slowest_.offer(total, r, moved, at.size());
  }

  // A message's by-symbol count is added kSymbolAhead messages after its cell is asked for (the array is MiBs,
  // its rows touched at random): on 50 M nasdaq-day messages the add's miss was a third of a row's time.
  void by_symbol(uint16_t locate, int64_t value) {
    out_.by_symbol->prefetch(locate, value);
    Delayed& e = delayed_[delayed_at_];
    if (e.pending) out_.by_symbol->add(e.locate, e.value);
    e = {value, locate, true};
    delayed_at_ = (delayed_at_ + 1) % kSymbolAhead;
  }

  int64_t value(ChainStamp c) const {
    return c <= kPublished ? on_line_[c] : c == kIntended ? intended_ : c == kSent ? actual_
                                                                               : at_subscriber_[c - kSubscriber];
  }

  // The chains and co-starts of moved or joined stamps (not direct_: each histogram its own add), a stamp's value
  // told by value().
  void count_hops(const Row& r) {
    for (unsigned s = kKernel; s <= kPublished; ++s) on_line_[s] = monotonic_(r.t[s]);  // each moved once
    if (p_.send.n) {
      const size_t i = sent_.find(int64_t(r.seq));
      intended_ = i == Lookup::kNone ? 0 : p_.send.first[i];
      actual_ = i == Lookup::kNone ? 0 : p_.send.second[i];
    }
    for (size_t k = 0; k < received_.size(); ++k) {  // a BBO subscriber receives BBO events only
      const bool may_have = bbo_event(r) || !p_.subscribers[k].bbo_events_only;
      const size_t i = may_have ? received_[k].find(int64_t(r.seq)) : Lookup::kNone;
      at_subscriber_[k] = i == Lookup::kNone ? 0 : p_.subscribers[k].first[i];
    }
    int64_t moved[kMaxChain];  // a chain's stamps, in chain order
    for (size_t c = 0; c < p_.chains.size(); ++c) {
      const Chain& chain = p_.chains[c];
      const size_t n = chain.stamps.size();
      if (chain.bbo_only && !bbo_event(r)) continue;
      bool whole = true;
      for (size_t i = 0; i < n; ++i) whole &= (moved[i] = value(chain.stamps[i])) != 0;
      if (!whole) continue;
      for (size_t i = 0; i + 1 < n; ++i) {
        out_.hop[c][i].add(0, moved[i + 1] - moved[i]);
        if (i) out_.cumulative[c][i].add(0, moved[i + 1] - moved[0]);
      }
      if (c == 0) slowest_.offer(moved[n - 1] - moved[0], r, moved, n);
    }
    const int64_t book = value(kBook);
    for (size_t i = 0; i < p_.co_starts.size(); ++i) {
      const int64_t t = value(p_.co_starts[i]);
      if (!t || !book) continue;
      out_.co[i].add(0, book - t);
      if (p_.co_starts[i] == kSent && intended_) out_.served_trend.add(intended_, book - t);
      if (p_.co_starts[i] == kIntended) {
        out_.trend.add(t, book - t);
        out_.served_first = out_.served_any ? std::min(out_.served_first, t) : t;
        out_.served_last = out_.served_any ? std::max(out_.served_last, book) : book;
        out_.served_any = true;
      }
    }
  }

  // Whether every chain and co-start is of the gateway's own stamps, not moved (a simulation's): their histograms
  // are sinks, read from the row.
  static bool direct(const Params& p) {
    if (p.monotonic.on || p.send.n || !p.subscribers.empty()) return false;
    for (const Chain& c : p.chains)
      for (const ChainStamp s : c.stamps)
        if (s > kPublished) return false;
    for (const ChainStamp s : p.co_starts)
      if (s > kPublished) return false;
    return true;
  }

  const Params& p_;
  Result out_;
  std::vector<Sink> sinks_;
  Sink headline_;  // the stage counted by type, by symbol and over time (its when 0: none)
  std::vector<RowPlan> plans_ = std::vector<RowPlan>(kWarmRowBit << 1);  // by present_of, and kWarmRowBit
  std::vector<Shared> shared_;
  std::vector<uint32_t> chain_needs_;  // a direct chain's stamps (and BBO event) as bits of a row's present stamps
  uint64_t seen_;
  uint64_t max_locate_ = 0;
  TimeBins time_bins_;
  SlowestKept slowest_;
  Lookup sent_;
  std::vector<Lookup> received_;
  std::vector<int64_t> at_subscriber_;
  bool hops_;
  const Monotonic monotonic_;
  const bool direct_ = direct(p_);
  int64_t on_line_[kStampCount] = {};  // each stage's stamp on CLOCK_MONOTONIC (the origin and receive unused)
  int64_t intended_ = 0, actual_ = 0;
  static constexpr uint32_t kSymbolAhead = 8;
  struct Delayed {
    int64_t value = 0;
    uint16_t locate = 0;
    bool pending = false;
  };
  std::array<Delayed, kSymbolAhead> delayed_{};
  uint32_t delayed_at_ = 0;
};

// One part of the second pass: its counts, and where its reading ended (the decoder's state and the messages
// accepted by then), which the next part's checkpoint must be.
struct Part {
  Result counts;
  CompactState end;
  uint64_t accepted_through = 0;
};

// The second pass over the slots [from.slot, end) of the log.
Part count_part(const Source& source, const Params& p, const Checkpoint& from, uint64_t end) {
  Counter counter(p, from.accepted_before, true);
  Rows rows(source, from, end);
  rows.for_each([&](const Row& r) { counter.row(r); });
  // The first pass (or the gateway's index) sized the by-symbol counts by the largest locate it found.
  if (p.breakdowns && counter.max_locate() > p.max_locate)
    throw std::runtime_error(source.path + ": a message between slots " + std::to_string(from.slot) + " and " +
                             std::to_string(end) + " has locate " + std::to_string(counter.max_locate()) +
                             ", above the first pass's largest, " + std::to_string(p.max_locate));
  return Part{counter.take(), rows.state(), counter.accepted_through()};
}

void add_into(std::vector<ExactHistogram>& into, std::vector<ExactHistogram>& part) {
  for (size_t i = 0; i < into.size(); ++i) into[i].merge(part[i]);
}

void add_into(std::vector<std::vector<ExactHistogram>>& into, std::vector<std::vector<ExactHistogram>>& part) {
  for (size_t i = 0; i < into.size(); ++i) add_into(into[i], part[i]);
}

// The first part's counts with the next part's added.
void add_into(Result& into, Result& part, uint32_t kept) {
  add_into(into.stage, part.stage);
  add_into(into.warmup, part.warmup);
  add_into(into.hop, part.hop);
  add_into(into.cumulative, part.cumulative);
  add_into(into.co, part.co);
  into.by_type->merge(*part.by_type);
  into.by_symbol->merge(*part.by_symbol);
  into.over_time->merge(*part.over_time);
  for (size_t b = 0; b < into.throughput.size(); ++b) into.throughput[b] += part.throughput[b];
  into.trend.merge(part.trend);
  into.served_trend.merge(part.served_trend);
  if (part.served_any) {
    into.served_first = into.served_any ? std::min(into.served_first, part.served_first) : part.served_first;
    into.served_last = into.served_any ? std::max(into.served_last, part.served_last) : part.served_last;
    into.served_any = true;
  }
  for (Slowest& s : part.slowest) into.slowest.push_back(std::move(s));
  // The kept of the whole are the kept of the parts' kept, by the same order: a larger total, then an earlier seq.
  const auto slower = [](const Slowest& a, const Slowest& b) { return a.total != b.total ? a.total > b.total : a.seq < b.seq; };
  if (into.slowest.size() > kept) {
    std::nth_element(into.slowest.begin(), into.slowest.begin() + kept, into.slowest.end(), slower);
    into.slowest.resize(kept);
  }
}

}  // namespace

Result second_pass(const Source& source, const Params& p, const std::vector<Checkpoint>& checkpoints,
                   unsigned threads) {
  // Each part starts at the first checkpoint past its share of the slots.
  std::vector<Checkpoint> starts{Checkpoint{}};
  for (unsigned k = 1; k < threads; ++k) {
    const uint64_t share = source.stored / threads * k;
    const auto at = std::find_if(checkpoints.begin(), checkpoints.end(),
                                 [&](const Checkpoint& c) { return c.slot >= share && c.slot > starts.back().slot; });
    if (at != checkpoints.end() && at->slot < source.stored) starts.push_back(*at);
  }
  std::vector<Part> parts(starts.size());
  std::vector<std::exception_ptr> failed(starts.size());
  std::vector<std::thread> workers;
  for (size_t k = 0; k < starts.size(); ++k) {
    const uint64_t end = k + 1 < starts.size() ? starts[k + 1].slot : source.stored;
    auto work = [&, k, end] {
      try {
        parts[k] = count_part(source, p, starts[k], end);
      } catch (...) {
        failed[k] = std::current_exception();
      }
    };
    if (k + 1 < starts.size())
      workers.emplace_back(work);
    else
      work();  // the last part on this thread
  }
  for (std::thread& w : workers) w.join();
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
  // Each part began at a checkpoint (the first pass's, or the gateway's index's): it must be where the part
  // before it ended, or the part was decoded from a wrong state and its counts are not the log's.
  for (size_t k = 1; k < parts.size(); ++k) {
    const Part& before = parts[k - 1];
    const CompactState& at = starts[k].state;
    const bool same_state = !source.compact || before.end == at;
    if (!same_state || before.accepted_through != starts[k].accepted_before)
      throw std::runtime_error(source.path + ": the checkpoint at slot " + std::to_string(starts[k].slot) +
                               " is not where reading the log up to it ends (" +
                               (same_state ? "accepted messages" : "the decoder's state") + " differ)");
  }
  for (const Part& part : parts)
    if (part.counts.time_shift != p.time_shift)
      throw std::runtime_error(source.path + ": a receive stamp lies past the first pass's last, " +
                               std::to_string(p.time_origin) + " + " + std::to_string(kMaxTimeBins) + " << " +
                               std::to_string(p.time_shift) + " ns");
  for (size_t k = 1; k < parts.size(); ++k) add_into(parts[0].counts, parts[k].counts, p.kept);
  return std::move(parts[0].counts);
}

namespace {

// An index's records as its writer appends them: a record is read once its flags say it is whole, and read again
// then, so no field is taken from before the writer stored it.
class IndexTail {
 public:
  explicit IndexTail(const std::string& path) : path_(path), fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  }
  ~IndexTail() { ::close(fd_); }
  IndexTail(const IndexTail&) = delete;
  IndexTail& operator=(const IndexTail&) = delete;

  bool written(uint64_t n, logfmt::LatencyBlockRecord& out) {
    const off_t at = off_t(logfmt::kHeaderSize + n * sizeof out);
    uint8_t flags = 0;
    if (!read_at(&flags, 1, at + off_t(offsetof(logfmt::LatencyBlockRecord, flags))) || !(flags & logfmt::kWritten))
      return false;
    if (!read_at(&out, sizeof out, at))
      throw std::runtime_error(path_ + ": record " + std::to_string(n) + " cut short");
    return true;
  }

 private:
  bool read_at(void* p, size_t bytes, off_t at) {
    ssize_t got;
    do got = ::pread(fd_, p, bytes, at);
    while (got < 0 && errno == EINTR);
    if (got < 0) throw std::runtime_error(path_ + ": cannot read: " + std::strerror(errno));
    return size_t(got) == bytes;
  }

  std::string path_;
  int fd_;
};

// Where a counter stands in the log's blocks, counted in order from one of them: the next block's number, and
// the slots and messages before it from the log's start.
struct BlockRun {
  uint64_t block = 0, slots = 0, messages = 0;
  CompactState ended;    // the decoder's state where the last block counted ends
  bool counted = false;  // a block counted: the next must start in that state
};

// Refuses the index unless block b follows the blocks run has counted (which accepted `accepted` messages from the
// log's start): where it begins, the counts before it, and (compact) the decoder's state it begins in.
void check_follows(const Source& source, const logfmt::LatencyBlockRecord& b, const BlockRun& run, uint64_t accepted) {
  const std::string fault = block_fault(b, run.slots, run.messages, accepted);
  if (!fault.empty()) index_fails(source, run.block, fault);
  if (source.compact && run.counted && !(checkpoint_of(b).state == run.ended))
    index_fails(source, run.block, "does not start in the decoder's state where the block before it ends");
}

// Counts block b, the run's next, having checked that it follows the blocks before it; then that it held what
// the index says. followed: messages counted, by every counter of the pass.
void count_block(const Source& source, Counter& counter, const logfmt::LatencyBlockRecord& b, BlockRun& run,
                 uint64_t* followed) {
  check_follows(source, b, run, counter.accepted_through());
  const Checkpoint at = checkpoint_of(b);
  uint64_t messages = 0;
  Rows rows(source, at, b.slot + b.slots);
  rows.for_each([&](const Row& r) {
    ++messages;
    counter.row(r);
  });
  if (messages != b.messages || counter.accepted_through() != b.accepted_before + b.accepted)
    index_fails(source, run.block, "counts other messages than its slots hold");
  run.ended = rows.state();
  run.counted = true;
  ++run.block;
  run.slots += b.slots;
  run.messages += b.messages;
  __atomic_fetch_add(followed, b.messages, __ATOMIC_RELAXED);
}

// A part of the blocks left when the writer ended, counted on a thread of its own from its first block, with the
// time bins the counter before it had placed: its own copy of the parameters, which its counter points into.
struct LaterPart {
  LaterPart(const Params& p, const Counter& before, const logfmt::LatencyBlockRecord& first_block, uint64_t block)
      : params(with_bins(p, before.time_origin(), before.time_shift())),
        counter(params, first_block.accepted_before, true),
        first(first_block),
        first_number(block),
        run{block, first_block.slot, first_block.messages_before, {}, false} {}
  static Params with_bins(Params p, int64_t origin, uint32_t shift) {
    p.time_origin = origin;
    p.time_shift = shift;
    return p;
  }
  Params params;
  Counter counter;
  logfmt::LatencyBlockRecord first;
  uint64_t first_number;  // the index's
  BlockRun run;
  std::exception_ptr failed;
};

constexpr size_t kPartBlocks = 4;  // blocks a later part has at least: 262,144 messages, several ms of counting

// The writer has ended: the blocks its index holds from run's on are the rest of the log. The run waits for them,
// on CPUs the gateway no longer uses: once the bins' origin is known (a message after the warm-up counted), they
// are counted in up to `threads` parts at once, the first by counter, the later ones returned for the caller to
// add. Not when a send log is joined: the trend's floating sums would depend on where the parts begin.
std::vector<std::unique_ptr<LaterPart>> count_rest(const Source& source, const Params& p, IndexTail& index,
                                                   Counter& counter, BlockRun& run, const uint32_t* state,
                                                   uint64_t* followed, unsigned threads) {
  std::vector<logfmt::LatencyBlockRecord> rest;
  for (logfmt::LatencyBlockRecord b; index.written(run.block + rest.size(), b);) rest.push_back(b);
  size_t at = 0;
  while (at < rest.size() && !counter.time_origin_known()) count_block(source, counter, rest[at++], run, followed);
  const size_t left = rest.size() - at;
  const size_t parts = p.send.n ? 1 : std::max<size_t>(1, std::min<size_t>(threads, left / kPartBlocks));
  std::vector<std::unique_ptr<LaterPart>> later;
  std::vector<size_t> bounds{at};  // each part's first block in rest, then the end
  for (size_t k = 1; k < parts; ++k) {
    bounds.push_back(at + left * k / parts);
    later.push_back(std::make_unique<LaterPart>(p, counter, rest[bounds.back()], run.block + (bounds.back() - at)));
  }
  bounds.push_back(rest.size());
  const auto count_blocks = [&](Counter& c, BlockRun& r, size_t part) {
    for (size_t i = bounds[part]; i < bounds[part + 1] && __atomic_load_n(state, __ATOMIC_ACQUIRE) != 2; ++i)
      count_block(source, c, rest[i], r, followed);
  };
  std::vector<std::thread> workers;
  for (size_t k = 0; k < later.size(); ++k)
    workers.emplace_back([&, k] {
      try {
        count_blocks(later[k]->counter, later[k]->run, k + 1);
      } catch (...) {
        later[k]->failed = std::current_exception();
      }
    });
  std::exception_ptr failed;
  try {
    count_blocks(counter, run, 0);
  } catch (...) {
    failed = std::current_exception();
  }
  for (std::thread& w : workers) w.join();
  if (failed) std::rethrow_exception(failed);
  for (const auto& part : later)
    if (part->failed) std::rethrow_exception(part->failed);
  return later;
}

}  // namespace

Followed follow(const Source& source, const Params& p, const std::string& index_path, const uint32_t* state,
                uint64_t* followed, unsigned threads) {
  Followed out;
  Counter counter(p, 0, false);
  IndexTail index(index_path);
  BlockRun run;
  std::vector<std::unique_ptr<LaterPart>> later;
  for (;;) {
    const uint32_t now = __atomic_load_n(state, __ATOMIC_ACQUIRE);
    if (now == 2) break;
    if (now == 1) {
      later = count_rest(source, p, index, counter, run, state, followed, threads);
      break;
    }
    logfmt::LatencyBlockRecord b;
    if (!index.written(run.block, b)) {
      ::usleep(1000);  // a block is 65,536 messages: several milliseconds of a replay at full speed
      continue;
    }
    count_block(source, counter, b, run, followed);
  }
  out.abandoned = __atomic_load_n(state, __ATOMIC_ACQUIRE) == 2;
  out.counts = counter.take();
  out.accepted = counter.accepted_through();
  out.max_locate = counter.max_locate();
  for (const auto& part : later) {
    if (out.abandoned) break;
    // The part began where the index said its first block does: that must be where the part before it ended, as
    // a block read in order is checked to be.
    check_follows(source, part->first, run, out.accepted);
    out.parts_began.push_back(part->first_number);
    run = part->run;
    out.accepted = part->counter.accepted_through();
    out.max_locate = std::max(out.max_locate, part->counter.max_locate());
    Result counts = part->counter.take();
    for (; out.counts.time_shift < counts.time_shift; ++out.counts.time_shift) fold_time_bins(out.counts);
    for (; counts.time_shift < out.counts.time_shift; ++counts.time_shift) fold_time_bins(counts);
    add_into(out.counts, counts, p.kept);
  }
  out.blocks = run.block;
  out.slots = run.slots;
  out.messages = run.messages;
  return out;
}

unsigned default_threads() {
  cpu_set_t cpus;
  const int usable = ::sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  return unsigned(std::clamp(usable, 1, 4));
}

void TrendSums::add(int64_t due_ns, int64_t latency_ns) {
  if (!any) origin = due_ns, any = true;
  const double x = double(due_ns - origin) / 1e9, y = double(latency_ns) / 1e3;
  lo = n ? std::min(lo, x) : x;
  hi = n ? std::max(hi, x) : x;
  ++n;
  sx += x, sy += y, sxx += x * x, sxy += x * y;
}

void TrendSums::merge(const TrendSums& later) {
  if (!later.any) return;
  if (!any) {
    *this = later;
    return;
  }
  const double d = double(later.origin - origin) / 1e9;  // the later part's x, on this origin: x + d
  const double m = double(later.n);
  sxx += later.sxx + 2 * d * later.sx + m * d * d;
  sxy += later.sxy + d * later.sy;
  sx += later.sx + m * d;
  sy += later.sy;
  lo = std::min(lo, later.lo + d);
  hi = std::max(hi, later.hi + d);
  n += later.n;
}

}  // namespace itchbench::scan
