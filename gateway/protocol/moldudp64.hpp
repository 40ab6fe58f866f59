// MoldUDP64 downstream packets: session (10) + sequence of the first message
// (8) + message count (2), then per message a 2-byte length and its bytes.
// Count 0 is a heartbeat, 0xFFFF the end of the session.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "protocol/endian.hpp"

namespace itchbench::mold {

constexpr size_t kHeaderLength = 20;
constexpr size_t kSessionLength = 10;
constexpr uint16_t kHeartbeatCount = 0;
constexpr uint16_t kEndOfSessionCount = 0xFFFF;

using Session = std::array<char, kSessionLength>;
Session make_session(std::string_view name);  // space-padded

enum class PacketKind : uint8_t { kMessages, kHeartbeat, kEndOfSession };

enum class ParseStatus : uint8_t {
  kOk,
  kTooShort,        // fewer than 20 bytes: no complete header
  kLengthOverrun,   // a message length runs past the end of the packet
  kCountMismatch,   // fewer messages than the count, or bytes left after them
  kSequenceOverflow,  // the sequence after the packet would pass 2^64 - 1 (found by fuzzing)
};
const char* to_string(ParseStatus s);

class Packet;
inline ParseStatus parse(const uint8_t* data, size_t len, Packet& out);

// A packet whose framing has been checked in full. Iterating it cannot run
// past the buffer, so the hot path trusts it.
class Packet {
 public:
  Packet() = default;

  uint64_t sequence() const { return sequence_; }  // of the first message
  uint16_t count() const { return kind_ == PacketKind::kMessages ? count_ : 0; }
  PacketKind kind() const { return kind_; }

  // Calls f(sequence, bytes, length) for every message, in order.
  template <class F>
  void for_each_message(F&& f) const {
    const uint8_t* p = body_;
    for (uint16_t i = 0; i < count(); ++i) {
      const uint16_t len = load_be16(p);
      f(sequence_ + i, p + 2, size_t(len));
      p += 2 + len;
    }
  }

 private:
  friend ParseStatus parse(const uint8_t* data, size_t len, Packet& out);
  uint64_t sequence_ = 0;
  uint16_t count_ = 0;
  PacketKind kind_ = PacketKind::kHeartbeat;
  const uint8_t* body_ = nullptr;
};

// Checks the whole packet before anything is delivered, so a damaged packet
// is rejected as a unit instead of half applied. Inline: it runs once per
// datagram on the hot path.
inline ParseStatus parse(const uint8_t* data, size_t len, Packet& out) {
  if (len < kHeaderLength) return ParseStatus::kTooShort;
  out.sequence_ = load_be64(data + 10);
  out.count_ = load_be16(data + 18);
  // Sequence arithmetic must never wrap: the tracker's next expected number
  // (sequence + count) has to exist.
  if (out.count_ != kEndOfSessionCount && out.sequence_ > UINT64_MAX - out.count_)
    return ParseStatus::kSequenceOverflow;
  out.body_ = data + kHeaderLength;
  const uint8_t* p = out.body_;
  const uint8_t* end = data + len;
  if (out.count_ == kHeartbeatCount || out.count_ == kEndOfSessionCount) {
    out.kind_ = out.count_ == kHeartbeatCount ? PacketKind::kHeartbeat : PacketKind::kEndOfSession;
    return p == end ? ParseStatus::kOk : ParseStatus::kCountMismatch;
  }
  out.kind_ = PacketKind::kMessages;
  for (uint16_t i = 0; i < out.count_; ++i) {
    if (end - p < 2) return ParseStatus::kCountMismatch;
    const size_t msg_len = load_be16(p);
    if (size_t(end - p) - 2 < msg_len) return ParseStatus::kLengthOverrun;
    p += 2 + msg_len;
  }
  return p == end ? ParseStatus::kOk : ParseStatus::kCountMismatch;
}

// A request for retransmission, sent by a receiver to the session's
// re-request server: session (10) + sequence of the first message wanted
// (8) + how many (2), exactly 20 bytes. The server answers with downstream
// packets sent to the request's source address and port.
constexpr size_t kRequestLength = 20;

struct Request {
  Session session{};
  uint64_t sequence = 0;
  uint16_t count = 0;
};

// Only the framing: a request of any other length is not a request. What its
// fields ask for (the right session, a sequence inside it) is the server's to judge.
inline bool parse_request(const uint8_t* data, size_t len, Request& out) {
  if (len != kRequestLength) return false;
  std::memcpy(out.session.data(), data, kSessionLength);
  out.sequence = load_be64(data + 10);
  out.count = load_be16(data + 18);
  return true;
}

// Writes the 20 bytes of a request into out.
inline void write_request(const Request& r, uint8_t* out) {
  std::memcpy(out, r.session.data(), kSessionLength);
  store_be64(out + 10, r.sequence);
  store_be16(out + 18, r.count);
}

// Builds packets into a caller-owned buffer; no allocation.
class PacketBuilder {
 public:
  PacketBuilder(uint8_t* buffer, size_t capacity) : buf_(buffer), cap_(capacity) {}

  void start(const Session& session, uint64_t first_sequence);
  // False (and nothing written) when the message would not fit.
  bool add(const uint8_t* msg, uint16_t len);
  size_t finish_messages();  // returns the packet length
  size_t finish_heartbeat();
  size_t finish_end_of_session();

  uint16_t count() const { return count_; }

 private:
  size_t finish(uint16_t count_field);
  uint8_t* buf_;
  size_t cap_;
  size_t used_ = 0;
  uint16_t count_ = 0;
};

}  // namespace itchbench::mold
