// Framer stage: a UDP payload in, MoldUDP64-sequenced messages out.
#pragma once
#include <cstddef>
#include <cstdint>

#include "pipeline/sequence_tracker.hpp"
#include "protocol/moldudp64.hpp"

namespace itchbench {

struct FramerCounters {
  uint64_t packets = 0;
  uint64_t heartbeats = 0;
  uint64_t end_of_session = 0;
  uint64_t rejected_too_short = 0;
  uint64_t rejected_length_overrun = 0;
  uint64_t rejected_count_mismatch = 0;
  uint64_t rejected_sequence_overflow = 0;
  uint64_t messages = 0;  // handed on, in sequence
  uint64_t rejected() const {
    return rejected_too_short + rejected_length_overrun + rejected_count_mismatch + rejected_sequence_overflow;
  }
};

class MoldFramer {
 public:
  // Calls on_message(seq, bytes, len) for each in-sequence message of the
  // packet; returns the parse verdict (rejected packets deliver nothing).
  template <class OnMessage>
  mold::ParseStatus on_datagram(const uint8_t* data, size_t len, OnMessage&& on_message) {
    return on_datagram(data, len, on_message, [](const uint8_t*, size_t) {});
  }
  // The same, first showing look_ahead(bytes, len) every message of an
  // accepted packet (duplicates included), so that what they will touch can
  // start loading before the first is handled.
  template <class OnMessage, class LookAhead>
  mold::ParseStatus on_datagram(const uint8_t* data, size_t len, OnMessage&& on_message, LookAhead&& look_ahead) {
    mold::Packet pkt;
    const mold::ParseStatus st = mold::parse(data, len, pkt);
    if (st != mold::ParseStatus::kOk) {
      ++counters_.packets;
      count_rejection(st);
      return st;
    }
    on_packet(pkt, on_message, look_ahead);
    return st;
  }

  // A packet already parsed (by the recovery stage, gap_recovery.hpp): the same, from the sequence check on.
  template <class OnMessage, class LookAhead>
  void on_packet(const mold::Packet& pkt, OnMessage&& on_message, LookAhead&& look_ahead) {
    ++counters_.packets;
    switch (pkt.kind()) {
      case mold::PacketKind::kHeartbeat:
        ++counters_.heartbeats;
        sequence_.on_packet(pkt.sequence(), 0);
        return;
      case mold::PacketKind::kEndOfSession:
        ++counters_.end_of_session;
        sequence_.on_packet(pkt.sequence(), 0);
        return;
      case mold::PacketKind::kMessages:
        break;
    }
    pkt.for_each_message([&](uint64_t, const uint8_t* msg, size_t msg_len) { look_ahead(msg, msg_len); });
    const uint64_t skip = sequence_.on_packet(pkt.sequence(), pkt.count());
    counters_.messages += pkt.count() - skip;
    if (skip == 0) {
      pkt.for_each_message(on_message);
    } else {
      uint64_t index = 0;
      pkt.for_each_message([&](uint64_t seq, const uint8_t* msg, size_t msg_len) {
        if (index++ >= skip) on_message(seq, msg, msg_len);
      });
    }
  }

  void start_at(uint64_t next) { sequence_.start_at(next); }  // a late join: the snapshot covered what came before
  const FramerCounters& counters() const { return counters_; }
  const SequenceTracker& sequence() const { return sequence_; }

 private:
  void count_rejection(mold::ParseStatus st);
  FramerCounters counters_;
  SequenceTracker sequence_;
};

}  // namespace itchbench
