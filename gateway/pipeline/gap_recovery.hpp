// Recovery stage, between the live sources and the framer, for a run with
// more than one way to a message: the session's A and B lines and the
// exchange's re-request server (docs/exchange.md). It hands the framer
// MoldUDP64 packets in sequence order:
//   - the first copy of a message wins, whichever line brought it; the other
//     copies are counted and dropped;
//   - a packet past a gap waits in a fixed hold (no allocation per packet);
//   - a gap is asked of the server (after the other line has had line_wait to
//     fill it), asked again after request_timeout, up to max_requests times;
//   - a gap is given up when its requests are spent (or, without a server,
//     when line_wait passes), or when the hold is full: the framer then sees
//     the jump, counts it as lost and the book is marked stale from there.
// The in-sequence packet with nothing held takes one branch and no copy.
#pragma once
#include <algorithm>
#include <array>
#include <cstring>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "log/log_format.hpp"
#include "protocol/moldudp64.hpp"
#include "source/feed_line.hpp"

namespace itchbench {

struct RecoveryOptions {
  bool server = false;                        // a re-request server to ask
  bool line_b = false;                        // a B line that may fill a gap on its own
  uint64_t line_wait_ns = 5'000'000;          // how long the other line has before a gap is asked for (or given up)
  uint64_t request_timeout_ns = 20'000'000;   // a first request unanswered this long is sent again (then 2x, 4x, ..16x)
  uint32_t max_requests = 8;                  // requests for one gap that bring nothing, before it is given up
  uint32_t hold_packets = 4096;               // packets held past gaps at most
  uint64_t (*clock_ns)() = nullptr;           // the stage's clock (ns); null: CLOCK_MONOTONIC. Tests set their own
  bool join = false;  // a late join (docs/snapshot.md): everything is held until start_at(the snapshot's next)
};

struct RecoveryCounters {
  std::array<uint64_t, kLines> packets{};           // read, per line
  std::array<uint64_t, kLines> messages_first{};    // messages handed on, by the line whose copy came first
  uint64_t duplicate_packets = 0;   // nothing new in them: every message already handed on or held
  uint64_t duplicate_messages = 0;
  uint64_t held_packets = 0;        // waited behind a gap
  uint64_t held_most = 0;           // held at once, at most
  uint64_t hold_full = 0;           // a packet found the hold full: the oldest gap was given up
  uint64_t too_large = 0;           // a packet past a gap larger than a hold slot: the gaps before it given up
  uint64_t gaps = 0;                // opened (a packet, heartbeat or end of session past the highest seen)
  uint64_t gaps_filled = 0;         // closed with every message of them handed on
  uint64_t gaps_given_up = 0;       // closed with some of their messages given up
  uint64_t messages_given_up = 0;   // skipped over: the framer counts them as its gap messages
  uint64_t requests = 0;            // sent to the server, retries included
  uint64_t request_retries = 0;
  uint64_t messages_requested = 0;  // summed over the requests
  uint64_t request_errors = 0;      // requests the socket would not send
  // A late join: packets held while the snapshot came, messages among them the snapshot already covered, and
  // packets dropped because the hold was full before it came (the oldest: they are asked for like any gap).
  uint64_t join_held_packets = 0;
  uint64_t join_covered_messages = 0;
  uint64_t join_dropped_packets = 0;
};

// The stage's way out. Sink: any type with
//   void packet(const mold::Packet&, const logfmt::Arrival&);      // in sequence order, to the framer
//   void malformed(const uint8_t*, size_t, const logfmt::Arrival&); // for the framer to count
//   bool request(const mold::Request&);                              // to the server; false: not sent
class GapRecovery {
 public:
  static constexpr size_t kSlotBytes = 2048;  // a hold slot: an Ethernet frame's UDP payload fits
  static constexpr size_t kMaxGaps = 1024;    // gaps open at once; past that the newest takes in the next
  static constexpr uint64_t kAnswerPauseNs = 2'000'000;  // after a partial answer, before the rest is asked for

  explicit GapRecovery(const RecoveryOptions& options);

  template <class Sink>
  void on_datagram(const uint8_t* data, size_t len, Line line, const logfmt::Arrival& arrival, Sink& sink) {
    ++counters_.packets[size_t(line)];
    mold::Packet pkt;
    if (__builtin_expect(mold::parse(data, len, pkt) != mold::ParseStatus::kOk, 0)) {
      sink.malformed(data, len, arrival);
      return;
    }
    if (__builtin_expect(pkt.kind() == mold::PacketKind::kEndOfSession, 0)) ended_[size_t(line)] = true;
    // The in-sequence packet with nothing waiting: straight on.
    if (__builtin_expect(pkt.sequence() == expected_ && held_ == 0 && started_, 1)) {
      expected_ += pkt.count();
      if (expected_ > high_) high_ = expected_;
      counters_.messages_first[size_t(line)] += pkt.count();
      sink.packet(pkt, arrival);
      return;
    }
    on_datagram_out_of_line(data, len, pkt, line, arrival, sink);
  }

  // A late join: the snapshot covered every message before next. What was held before it is dropped, the rest
  // handed on from next, and a gap between next and the first packet held is asked for like any other.
  template <class Sink>
  void start_at(uint64_t next, Sink& sink);
  bool joining() const { return joining_; }

  // Requests due, gaps whose time is up: called on every packet off the fast path and every millisecond or so
  // by the source while a gap is open.
  template <class Sink>
  void poll(uint64_t now_ns, Sink& sink);

  bool gaps_open() const { return gap_count_ != 0; }
  // Every line has sent its end of session: nothing more will come on them (the server may still answer).
  bool every_line_ended() const { return ended_[size_t(Line::kA)] && (!options_.line_b || ended_[size_t(Line::kB)]); }
  uint64_t expected() const { return expected_; }
  size_t held() const { return held_; }
  const RecoveryCounters& counters() const { return counters_; }
  const RecoveryOptions& options() const { return options_; }

  // Now on the stage's clock: what poll() is to be given.
  uint64_t now_ns() const { return options_.clock_ns(); }

 private:
  struct Held {
    uint64_t first = 0, end = 0;  // [first, end): end == first for a heartbeat or end of session
    uint32_t slot = 0;
  };
  struct SlotInfo {
    uint32_t len = 0;
    Line line = Line::kA;
    logfmt::Arrival arrival;
  };
  struct Gap {
    uint64_t lo = 0, hi = 0;  // [lo, hi): missing when opened
    uint64_t due_ns = 0;      // next request (or the give-up)
    uint32_t requests = 0;
    bool given_up = false;    // some of it was skipped
  };

  template <class Sink>
  void on_datagram_out_of_line(const uint8_t* data, size_t len, const mold::Packet& pkt, Line line,
                               const logfmt::Arrival& arrival, Sink& sink);
  // Hands on what the hold has at or before expected_, in order.
  template <class Sink>
  void drain(Sink& sink);
  // Skips to `to` (nothing before it will come): counts the skipped messages, hands on what was held.
  template <class Sink>
  void give_up_to(uint64_t to, Sink& sink);
  template <class Sink>
  void deliver(const mold::Packet& pkt, Line line, const logfmt::Arrival& arrival, Sink& sink);

  // Keeps a copy of the packet in a free slot (the caller has made sure there is one).
  void hold(const uint8_t* data, size_t len, uint64_t first, uint64_t end, Line line, const logfmt::Arrival& arrival);
  bool held_copy(uint64_t first, uint64_t end) const;
  void open_gap(uint64_t lo, uint64_t hi, uint64_t now_ns);
  void close_gaps();
  // An answer moved the stream on and the gap it was for (the one holding its first sequence) is still open: the
  // server answers only part of a request
  // (its cap), so the rest is asked for soon — when the rest of a multi-packet answer had its time to come — and
  // the gap's request count starts again (it counts requests that brought nothing).
  void answered_in_part(uint64_t answer_first, uint64_t now_ns);
  // The first run of sequence numbers in [lo, hi) that is neither handed on nor held.
  void missing_run(uint64_t lo, uint64_t hi, uint64_t& run_lo, uint64_t& run_hi) const;
  uint64_t front_first() const { return order_[head_].first; }
  void drop_front();  // the oldest held packet, its slot freed

  RecoveryOptions options_;
  RecoveryCounters counters_;
  bool started_ = false;
  bool joining_ = false;
  bool session_set_ = false;
  uint64_t expected_ = 0;  // the next sequence to hand on
  uint64_t high_ = 0;      // one past the highest sequence any packet has shown
  mold::Session session_{};
  std::array<bool, kLines> ended_{};
  // The hold: packets by first sequence in order_[head_, order_.size()), their bytes in fixed slots.
  std::unique_ptr<uint8_t[]> bytes_;
  std::unique_ptr<SlotInfo[]> slots_;
  std::vector<uint32_t> free_;
  std::vector<Held> order_;
  size_t head_ = 0;
  size_t held_ = 0;
  std::array<Gap, kMaxGaps> gaps_{};  // by lo, oldest first
  size_t gap_count_ = 0;
};

// ---- templates ----

template <class Sink>
void GapRecovery::deliver(const mold::Packet& pkt, Line line, const logfmt::Arrival& arrival, Sink& sink) {
  const uint64_t end = pkt.sequence() + pkt.count();
  if (end > expected_) {
    counters_.messages_first[size_t(line)] += end - (pkt.sequence() > expected_ ? pkt.sequence() : expected_);
    expected_ = end;
  }
  if (expected_ > high_) high_ = expected_;
  sink.packet(pkt, arrival);
}

template <class Sink>
void GapRecovery::on_datagram_out_of_line(const uint8_t* data, size_t len, const mold::Packet& pkt, Line line,
                                          const logfmt::Arrival& arrival, Sink& sink) {
  const uint64_t first = pkt.sequence(), end = first + pkt.count();
  if (!session_set_) {  // the session requests name: the feed's own
    std::memcpy(session_.data(), data, mold::kSessionLength);
    session_set_ = true;
  }
  if (joining_) {
    if (held_copy(first, end)) {
      ++counters_.duplicate_packets;
      counters_.duplicate_messages += pkt.count();
      return;
    }
    if (len > kSlotBytes) {  // cannot be held: asked for once the join has its number
      ++counters_.join_dropped_packets;
      return;
    }
    if (held_ == options_.hold_packets) {
      drop_front();
      ++counters_.join_dropped_packets;
    }
    hold(data, len, first, end, line, arrival);
    ++counters_.join_held_packets;
    return;
  }
  if (!started_) {
    // A receiver may join mid-session: the first sequence seen is where it starts.
    started_ = true;
    expected_ = high_ = first;
  }
  if (first <= expected_) {
    if (pkt.count() != 0 && end <= expected_) {  // every message already handed on: the other line's copy
      ++counters_.duplicate_packets;
      counters_.duplicate_messages += pkt.count();
      return;
    }
    deliver(pkt, line, arrival, sink);  // new, or partly new: the framer skips the part already handed on
    drain(sink);
    close_gaps();
    if (gap_count_) {  // the clock is read only while a gap is open
      const uint64_t now = now_ns();
      if (line == Line::kAnswer) answered_in_part(first, now);
      poll(now, sink);
    }
    return;
  }
  // Past a gap.
  if (held_copy(first, end)) {
    ++counters_.duplicate_packets;
    counters_.duplicate_messages += pkt.count();
    return;
  }
  const uint64_t now = now_ns();
  if (first > high_) open_gap(high_, first, now);
  if (end > high_) high_ = end;
  if (len > kSlotBytes) {
    ++counters_.too_large;
    give_up_to(first, sink);
    deliver(pkt, line, arrival, sink);
    drain(sink);
  } else {
    if (held_ == options_.hold_packets) {
      ++counters_.hold_full;
      give_up_to(front_first(), sink);  // hands on the oldest held packet at least
    }
    if (first <= expected_)
      deliver(pkt, line, arrival, sink);  // what the give-up handed on reached this packet
    else
      hold(data, len, first, end, line, arrival);
    drain(sink);
  }
  close_gaps();
  if (line == Line::kAnswer) answered_in_part(first, now);  // an answer to a later gap, held behind an earlier one
  poll(now, sink);
}

template <class Sink>
void GapRecovery::start_at(uint64_t next, Sink& sink) {
  joining_ = false;
  started_ = true;
  expected_ = next;
  while (held_ && order_[head_].end <= next) {  // wholly before next (a heartbeat at next included)
    counters_.join_covered_messages += order_[head_].end - order_[head_].first;
    drop_front();
  }
  // Every hole in what was held (the feed lost packets while the snapshot came), and before it, is a gap.
  const uint64_t now = now_ns();
  high_ = next;
  for (size_t i = head_; i < order_.size(); ++i) {
    if (order_[i].first > high_) open_gap(high_, order_[i].first, now);
    high_ = std::max(high_, std::max(order_[i].first, order_[i].end));
  }
  drain(sink);
  close_gaps();
  poll(now, sink);
}

template <class Sink>
void GapRecovery::drain(Sink& sink) {
  while (held_ && front_first() <= expected_) {
    const Held h = order_[head_++];
    --held_;
    if (held_ == 0) {
      order_.clear();
      head_ = 0;
    }
    SlotInfo& s = slots_[h.slot];
    free_.push_back(h.slot);  // reserved: no allocation
    if (h.end > h.first && h.end <= expected_) {  // both copies were held, or the gap's answer covered it
      ++counters_.duplicate_packets;
      counters_.duplicate_messages += h.end - h.first;
      continue;
    }
    mold::Packet pkt;
    mold::parse(bytes_.get() + size_t(h.slot) * kSlotBytes, s.len, pkt);  // parsed once already: cannot fail
    deliver(pkt, s.line, s.arrival, sink);
  }
}

template <class Sink>
void GapRecovery::give_up_to(uint64_t to, Sink& sink) {
  while (expected_ < to) {
    const uint64_t next = held_ && front_first() < to ? front_first() : to;
    if (next > expected_) {
      counters_.messages_given_up += next - expected_;
      for (size_t i = 0; i < gap_count_; ++i)
        if (gaps_[i].lo < next && gaps_[i].hi > expected_) gaps_[i].given_up = true;
      expected_ = next;
    }
    drain(sink);
  }
}

template <class Sink>
void GapRecovery::poll(uint64_t now_ns, Sink& sink) {
  close_gaps();
  for (size_t i = 0; i < gap_count_;) {
    Gap& g = gaps_[i];
    if (g.hi <= expected_ || now_ns < g.due_ns) {
      ++i;
      continue;
    }
    uint64_t lo = 0, hi = 0;
    missing_run(g.lo > expected_ ? g.lo : expected_, g.hi, lo, hi);
    const bool spent = !options_.server || g.requests >= options_.max_requests;
    if (lo != hi && spent && lo == expected_) {
      // Its time is up and it is the head of the stream: skipped, and the same gap looked at again for what it
      // still misses past the packets held inside it (give_up_to moved expected_ on: the loop ends).
      give_up_to(hi, sink);
      continue;
    }
    ++i;
    // All held (it closes as the hold drains), or spent but an older gap still open keeps it waiting.
    if (lo == hi || spent) continue;
    {
      mold::Request r;
      r.session = session_;
      r.sequence = lo;
      r.count = uint16_t(hi - lo < 0xFFFE ? hi - lo : 0xFFFE);
      if (sink.request(r)) {
        ++counters_.requests;
        counters_.request_retries += g.requests != 0;
        counters_.messages_requested += r.count;
      } else {
        ++counters_.request_errors;
      }
      // Each request unanswered doubles the wait for the next (up to 16 timeouts): a slow server is not flooded.
      g.due_ns = now_ns + (options_.request_timeout_ns << (g.requests < 4 ? g.requests : 4));
      ++g.requests;
    }
  }
  close_gaps();
}

}  // namespace itchbench
