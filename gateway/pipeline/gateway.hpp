// The gateway pipeline: source -> framer -> decoder -> book -> BBO sink.
//
// A source hands over either a UDP payload (on_datagram: MoldUDP64 framing
// and sequence tracking) or one already-sequenced message (on_message: a
// binary ITCH file, a serial line). Every message gets a latency record with
// its stage stamps (or its stage times counted in histograms); every BBO
// change becomes one BboEvent, recorded to the BBO log and handed to the
// publisher, whose return is the last stage stamp.
//
// Publisher: any type with `void publish(const BboEvent&)`; one that also has
// `void publish_depth(const uint8_t* record)` is handed each level change of
// a depth event, too, as a level change record (the version-2 depth record).
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "book/depth_tracker.hpp"
#include "book/level_changes.hpp"
#include "book/order_book.hpp"
#include "log/bbo_record.hpp"
#include "log/latency_log.hpp"
#include "log/level_change_log.hpp"
#include "log/mmap_log.hpp"
#include "log/stage_histograms.hpp"
#include "pipeline/decode_counters.hpp"
#include "pipeline/mold_framer.hpp"
#include "protocol/book_op.hpp"
#include "protocol/itch.hpp"
#include "util/stage_clock.hpp"

namespace itchbench {

// Symbols from the stock directory (R) messages, by locate.
class SymbolTable {
 public:
  SymbolTable() : names_(std::make_unique<std::array<itch::alpha8, OrderBook::kStocks>>()) {}
  void set(uint16_t locate, const itch::alpha8& stock) {
    (*names_)[locate] = stock;
    seen_[locate] = true;
  }
  bool has(uint16_t locate) const { return seen_[locate]; }
  const itch::alpha8& name(uint16_t locate) const { return (*names_)[locate]; }

 private:
  std::unique_ptr<std::array<itch::alpha8, OrderBook::kStocks>> names_;
  std::array<bool, OrderBook::kStocks> seen_{};
};

struct NullPublisher {
  void publish(const BboEvent&) {}
};

template <class P, class = void>
struct PublishesDepth : std::false_type {};
template <class P>
struct PublishesDepth<P, std::void_t<decltype(std::declval<P&>().publish_depth(static_cast<const uint8_t*>(nullptr)))>>
    : std::true_type {};

template <class Publisher>
class Gateway {
 public:
  // latency, bbo_log and histograms may be null (not recorded); a run has at most one of the latency log and
  // the histograms. The stages stamped are that recorder's (the log header's `stages`).
  Gateway(OrderBook& book, const StageClock& clock, LatencyLog* latency, BboLog* bbo_log, Publisher& publisher,
          StageHistograms* histograms = nullptr)
      : book_(book),
        clock_(clock),
        latency_(latency),
        histograms_(latency ? nullptr : histograms),
        bbo_log_(bbo_log),
        publisher_(publisher),
        stages_(latency ? latency->stages() : histograms ? histograms->stages() : 0) {}

  // Depth events too (docs/book-and-bbo.md, "Depth"): after each book message, the touched stock's top levels,
  // logged when they changed (a record for each level changed). Off (null), a predicted branch a message.
  void set_depth(DepthTracker* depth, LevelChangeLog* depth_log) {
    depth_ = depth;
    depth_log_ = depth_log;
  }
  // Or every level's changes (--levels all; docs/book-and-bbo.md, "Every level"), one record a level changed.
  void set_every_level(LevelChangeLog* depth_log) {
    every_level_ = true;
    depth_log_ = depth_log;
  }
  // Events: of the top N, one a message that changed them (however many levels); of every level, one a level.
  uint64_t depth_events() const { return depth_events_; }

  void on_datagram(const uint8_t* data, size_t len, const logfmt::Arrival& arrival) {
    framer_.on_datagram(
        data, len, [&](uint64_t seq, const uint8_t* msg, size_t msg_len) { on_message(seq, msg, msg_len, arrival); },
        [&](const uint8_t* msg, size_t msg_len) { look_ahead(msg, msg_len); });
  }

  // A MoldUDP64 packet parsed and put in sequence order by the recovery stage (gap_recovery.hpp).
  void on_packet(const mold::Packet& pkt, const logfmt::Arrival& arrival) {
    framer_.on_packet(
        pkt, [&](uint64_t seq, const uint8_t* msg, size_t msg_len) { on_message(seq, msg, msg_len, arrival); },
        [&](const uint8_t* msg, size_t msg_len) { look_ahead(msg, msg_len); });
  }

  // A message that will be handed over soon: starts loading the index slot of
  // the order it names, so that the cache miss overlaps the messages before
  // it instead of stalling its own (a large book's slots are mostly misses).
  // Nothing else is read or checked; the message may still prove invalid.
  void look_ahead(const uint8_t* msg, size_t len) const {
    uint64_t ref;
    if (itch::peek_order_ref(msg, len, ref)) book_.prefetch_order(ref);
  }

  // Not inlined into sources: `itchbench compare` and `bisect` count its instructions by name (callgrind).
  __attribute__((noinline))
  void on_message(uint64_t seq, const uint8_t* msg, size_t len, const logfmt::Arrival& arrival) {
    // An instantiation per recorder, and per whether the book tells what it did to the levels (depth): unrecorded,
    // no stamp is taken and no record is built; BBO only, nothing is told (a branch or two per message here, none
    // inside).
    if (__builtin_expect(depth_ != nullptr || every_level_, 0))
      process_recorded<true>(seq, msg, len, arrival);
    else
      process_recorded<false>(seq, msg, len, arrival);
  }

  // A late join (docs/snapshot.md). Each snapshot message is applied to the book with no latency record and no
  // event; then finish_snapshot publishes each stock's book as the snapshot left it (flagged kFromSnapshot, seq
  // the snapshot's last message), which is also the last emitted BBO the events after the join compare with, and
  // starts the sequence at next. Off the hot path: once a run.
  void apply_snapshot(const uint8_t* msg, size_t len) {
    itch::BookOp op;
    ++snapshot_messages_;
    if (itch::decode_book_op(msg, len, op) != itch::DecodeStatus::kOk) {
      ++snapshot_rejected_;
      return;
    }
    BookTouch touch;
    const uint32_t changed = apply(op, msg, touch);  // the book's own word for a stock it holds
    if (changed != OrderBook::kUnchanged) snapshot_stocks_[changed] = true;
    if (touch.levels != 0) snapshot_stocks_[touch.locate] = true;
  }
  void finish_snapshot(uint64_t next, uint64_t timestamp) {
    const uint8_t flags = uint8_t(bbo_flags_ | logfmt::kFromSnapshot);
    for (size_t locate = 0; locate < snapshot_stocks_.size(); ++locate) {
      if (!snapshot_stocks_[locate]) continue;
      Bbo bbo;
      if (book_.take_bbo_change(uint16_t(locate), bbo)) {
        emit(BboEvent{next - 1, timestamp, uint16_t(locate), bbo, flags});
        ++snapshot_events_;
      }
      if (depth_) log_depth(next - 1, timestamp, uint16_t(locate), depth_->take_change(book_, uint16_t(locate)), flags);
      if (every_level_) log_whole_book(next - 1, timestamp, uint16_t(locate), flags);
    }
    framer_.start_at(next);
    last_seq_ = next - 1;
  }
  uint64_t snapshot_messages() const { return snapshot_messages_; }
  uint64_t snapshot_rejected() const { return snapshot_rejected_; }
  uint64_t snapshot_events() const { return snapshot_events_; }

  const MoldFramer& framer() const { return framer_; }
  const DecodeCounters& decode_counters() const { return decode_; }
  const SymbolTable& symbols() const { return symbols_; }
  uint64_t bbo_events() const { return bbo_events_; }
  // The stage-clock reads on_message took (the source's receive stamps are the source's to count): a stamp is
  // taken at each recorded stage a message reaches, and a read is what a stamp costs (recording_cost.py).
  uint64_t clock_reads() const {
    if (!stages_) return 0;
    const uint64_t per_accepted = (stages_ & logfmt::kStageDecoded ? 1 : 0) + (stages_ & logfmt::kStageBook ? 1 : 0);
    return per_accepted * decode_.messages() + (stages_ & logfmt::kStagePublished ? bbo_events_ : 0);
  }

 private:
  enum class Recorder { kNone, kLog, kHistograms };

  template <bool kTouch>
  void process_recorded(uint64_t seq, const uint8_t* msg, size_t len, const logfmt::Arrival& arrival) {
    if (latency_)
      process<Recorder::kLog, kTouch>(seq, msg, len, arrival);
    else if (histograms_)
      process<Recorder::kHistograms, kTouch>(seq, msg, len, arrival);
    else
      process<Recorder::kNone, kTouch>(seq, msg, len, arrival);
  }

  // kTouch: the book tells what it did to the levels, for depth events.
  // Out of line, each instantiation a function of its own with the book's add inline in it: left to GCC, which paths
  // it inlined into on_message, and whether the book's add went with them, turned on the size of the others (the
  // depth path's branch-free log writes left the BBO path's add out of line: BBO only 74.9 to 77.2 ns a message on
  // nasdaq-day 5 M).
  template <Recorder kRecorder, bool kTouch>
  __attribute__((noinline)) void process(uint64_t seq, const uint8_t* msg, size_t len, const logfmt::Arrival& arrival) {
    constexpr bool kTimed = kRecorder != Recorder::kNone;
    // Sources hand over messages in sequence order; a jump means some were lost.
    if (__builtin_expect(seq != last_seq_ + 1, 0) && last_seq_ != 0) bbo_flags_ = logfmt::kBookMayBeStale;
    last_seq_ = seq;
    // Timed, the message's latency is gathered here (the stamps of the stages the log records) and the log
    // encodes it once the message is handled; untimed, nothing touches it.
    MessageLatency r;
    uint64_t unknown_before = 0;
    if constexpr (kTimed) {
      r.seq = seq;
      r.t_origin = arrival.t_origin;
      r.stamp[MessageLatency::kKernel] = arrival.t_kernel;
      r.stamp[MessageLatency::kRead] = arrival.t_read;
      r.stock_locate = len >= 3 ? load_be16(msg + 1) : 0;
      r.msg_type = len ? char(msg[0]) : '\0';
      unknown_before = book_.counters().unknown_refs;
    }
    uint32_t changed = OrderBook::kUnchanged;
    std::conditional_t<kTouch, BookTouch, NoBookTouch> touch;
    const itch::DecodeStatus st = decode_and_apply<kTimed>(msg, len, r, changed, touch);
    if (__builtin_expect(st != itch::DecodeStatus::kOk, 0)) {
      decode_.count_rejection(st);
      bbo_flags_ = logfmt::kBookMayBeStale;
      if constexpr (kTimed) {
        r.flags = logfmt::kRejected;
        record<kRecorder>(r);
      }
      return;
    }
    if constexpr (kTimed) {
      if (stages_ & logfmt::kStageBook) r.stamp[MessageLatency::kBook] = clock_.now();
      if (book_.counters().unknown_refs != unknown_before) r.flags |= logfmt::kUnknownRef;
    }
    Bbo bbo;
    if (changed != OrderBook::kUnchanged && book_.take_bbo_change(uint16_t(changed), bbo)) {
      emit(BboEvent{seq, itch::header_timestamp(msg), uint16_t(changed), bbo, bbo_flags_});
      if constexpr (kTimed) {
        if (stages_ & logfmt::kStagePublished) r.stamp[MessageLatency::kPublished] = clock_.now();
        r.flags |= logfmt::kBboEvent;
      }
    }
    if constexpr (kTouch) {
      if (touch.levels != 0) {
        if (depth_) {
          // A plain touch's changes on a side all on its ladder are written with no branch on whether there are
          // any (DepthTracker::plain).
          const bool unbranched = depth_log_ && !PublishesDepth<Publisher>::value;
          const uint32_t plain = depth_->plain(book_, touch);
          uint32_t changed_levels = 0;
          if (unbranched && plain == 1) {
            log_depth_if<1>(depth_->take_plain_one<true>(book_, touch), seq, itch::header_timestamp(msg), touch.locate);
          } else if (unbranched && plain == 2) {
            log_depth_if<2>(depth_->take_plain_two<true>(book_, touch), seq, itch::header_timestamp(msg), touch.locate);
          } else if (plain == 0) {
            changed_levels = depth_->take_change_otherwise(book_, touch);
          } else {
            changed_levels = depth_->take_change(book_, touch, plain);
          }
          if (changed_levels != 0)
            log_depth(seq, itch::header_timestamp(msg), touch.locate, changed_levels, bbo_flags_);
        } else {
          log_level_changes(seq, itch::header_timestamp(msg), touch, bbo_flags_);
        }
      }
    }
    if constexpr (kTimed) record<kRecorder>(r);
  }

  // One depth event, the levels the tracker just took: a level change record each, the bids' first (a snapshot's
  // event has both sides; a message's, the side it touched).
  void log_depth(uint64_t seq, uint64_t timestamp, uint16_t locate, uint32_t changed_levels, uint8_t flags) {
    if (!changed_levels) return;
    ++depth_events_;
    const LevelChange* changes = depth_->changes();
    for (uint32_t i = 0; i < changed_levels; ++i)
      log_level(seq, timestamp, locate, i < depth_->bid_changes(), changes[i], flags);
  }

  // A plain touch's event to the depth log alone: the first `changed` of the tracker's first kSlots changes.
  template <uint32_t kSlots>
  void log_depth_if(uint32_t changed, uint64_t seq, uint64_t timestamp, uint16_t locate) {
    depth_events_ += changed != 0;
    uint32_t px[kSlots];
    uint64_t qty[kSlots];
    for (uint32_t i = 0; i < kSlots; ++i) {
      px[i] = depth_->changes()[i].px;
      qty[i] = depth_->changes()[i].qty;
    }
    depth_log_->append_first_if<kSlots>(changed, seq, timestamp, locate, bbo_flags_, depth_->bid_changes() != 0, px,
                                        qty);
  }
  // With every level: a level change record for each level the message changed (at most two).
  void log_level_changes(uint64_t seq, uint64_t timestamp, const BookTouch& touch, uint8_t flags) {
    LevelChange changes[2];
    const uint32_t n = level_changes(touch, changes);
    depth_events_ += n;  // with every level, each level changed is an event
    for (uint32_t i = 0; i < n; ++i) log_level(seq, timestamp, touch.locate, touch.bid, changes[i], flags);
  }
  void log_level(uint64_t seq, uint64_t timestamp, uint16_t locate, bool bid, const LevelChange& change,
                 uint8_t flags) {
    if (depth_log_) depth_log_->append(seq, timestamp, locate, flags, bid, change.px, change.qty);
    if constexpr (PublishesDepth<Publisher>::value) {
      depth_frame_ = logfmt::LevelChangeRecord{seq, timestamp, locate, uint8_t(flags | logfmt::kWritten),
                                               uint8_t(bid ? 'B' : 'S'), change.px, change.qty};
      publisher_.publish_depth(reinterpret_cast<const uint8_t*>(&depth_frame_));
    }
  }
  // After a snapshot, with every level: each level of the stock's book as the snapshot left it, bids then asks,
  // best first (nothing was emitted for the stock before: every level is a change). Off the hot path.
  void log_whole_book(uint64_t seq, uint64_t timestamp, uint16_t locate, uint8_t flags) {
    for (const char side : {'B', 'S'})
      for (const OrderBook::LevelView& level : book_.levels(locate, side)) {
        ++depth_events_;
        log_level(seq, timestamp, locate, side == 'B', LevelChange{level.price, level.shares}, flags);
      }
  }

  // One BBO event: to the BBO log, then the publisher.
  void emit(const BboEvent& ev) {
    if (bbo_log_) {
      logfmt::BboRecord& b = bbo_log_->claim();
      fill_bbo_record(b, ev);
      BboLog::commit(b, ev.flags);
    }
    publisher_.publish(ev);
    ++bbo_events_;
  }

  template <Recorder kRecorder>
  void record(const MessageLatency& r) {
    if constexpr (kRecorder == Recorder::kLog) latency_->append(r);
    if constexpr (kRecorder == Recorder::kHistograms) histograms_->add(r);
  }

  // Decode, count and apply one message. Inlined into process(): as a function of its own (which let callgrind
  // tell decoding from the BBO check and logging) the gateway was 1.04x slower on nasdaq-day and 1.05x on
  // deep-book (interleaved, whole process on one CPU).
  template <bool kTimed, class Touch>
  __attribute__((always_inline)) itch::DecodeStatus decode_and_apply(const uint8_t* msg, size_t len,
                                                                     MessageLatency& r, uint32_t& changed,
                                                                     Touch& touch) {
    itch::BookOp op;
    const itch::DecodeStatus st = itch::decode_book_op(msg, len, op);
    if (__builtin_expect(st != itch::DecodeStatus::kOk, 0)) return st;
    if constexpr (kTimed)
      if (stages_ & logfmt::kStageDecoded) r.stamp[MessageLatency::kDecoded] = clock_.now();
    ++decode_.per_type[itch::type_index(char(msg[0]))];
    changed = apply(op, msg, touch);
    return st;
  }

  // Inlined, with the book's operations (book/order_book_ops.hpp), into each recorder's handler: left to itself
  // GCC made it a function of its own, which called them all.
  // touch: told what the message did to the levels (BookTouch), or nothing (NoBookTouch).
  template <class Touch>
  __attribute__((always_inline)) uint32_t apply(const itch::BookOp& op, const uint8_t* msg, Touch& touch) {
    switch (op.kind) {
      case itch::BookOpKind::kAdd:
        return book_.add(op.locate, op.ref, op.side, op.shares, op.price, touch);
      case itch::BookOpKind::kReduce:
        return book_.reduce(op.ref, op.shares, touch);
      case itch::BookOpKind::kDelete:
        return book_.remove(op.ref, touch);
      case itch::BookOpKind::kReplace:
        return book_.replace(op.ref, op.new_ref, op.shares, op.price, touch);
      case itch::BookOpKind::kDirectory:
        symbols_.set(op.locate, itch::StockDirectoryView(msg).stock());
        return OrderBook::kUnchanged;
      case itch::BookOpKind::kNone:
        break;
    }
    return OrderBook::kUnchanged;  // P, Q, B and the rest do not change the book
  }

  OrderBook& book_;
  const StageClock& clock_;
  LatencyLog* latency_;
  StageHistograms* histograms_;
  BboLog* bbo_log_;
  Publisher& publisher_;
  MoldFramer framer_;
  DecodeCounters decode_;
  SymbolTable symbols_;
  uint64_t bbo_events_ = 0;
  DepthTracker* depth_ = nullptr;  // depth events: off when null
  bool every_level_ = false;       // or every level's changes
  LevelChangeLog* depth_log_ = nullptr;
  uint64_t depth_events_ = 0;
  // A level change's frame (the version-2 depth record) for the publisher: the log holds it in half the bytes.
  logfmt::LevelChangeRecord depth_frame_{};
  uint64_t last_seq_ = 0;     // of the last message handed over
  uint64_t snapshot_messages_ = 0, snapshot_rejected_ = 0, snapshot_events_ = 0;
  std::vector<bool> snapshot_stocks_ = std::vector<bool>(OrderBook::kStocks);  // stocks a snapshot touched
  uint8_t bbo_flags_ = 0;     // logfmt::BboFlags for every event from here on
  const uint8_t stages_;  // the latency recorder's: the stages stamped
};

}  // namespace itchbench
