#include "protocol/moldudp64.hpp"

#include <cstring>

namespace itchbench::mold {

Session make_session(std::string_view name) {
  Session s;
  for (size_t i = 0; i < kSessionLength; ++i) s[i] = i < name.size() ? name[i] : ' ';
  return s;
}

const char* to_string(ParseStatus s) {
  switch (s) {
    case ParseStatus::kOk: return "ok";
    case ParseStatus::kTooShort: return "packet shorter than the 20-byte MoldUDP64 header";
    case ParseStatus::kLengthOverrun: return "message length runs past the end of the packet";
    case ParseStatus::kCountMismatch: return "message count does not match the packet's contents";
    case ParseStatus::kSequenceOverflow: return "sequence number range passes 2^64 - 1";
  }
  return "?";
}

void PacketBuilder::start(const Session& session, uint64_t first_sequence) {
  std::memcpy(buf_, session.data(), kSessionLength);
  store_be64(buf_ + 10, first_sequence);
  used_ = kHeaderLength;
  count_ = 0;
}

bool PacketBuilder::add(const uint8_t* msg, uint16_t len) {
  // 0xFFFE is the largest count that is not a control value.
  if (used_ + 2 + len > cap_ || count_ == kEndOfSessionCount - 1) return false;
  store_be16(buf_ + used_, len);
  if (len) std::memcpy(buf_ + used_ + 2, msg, len);  // msg may be null when len is 0
  used_ += 2 + len;
  ++count_;
  return true;
}

size_t PacketBuilder::finish(uint16_t count_field) {
  store_be16(buf_ + 18, count_field);
  return used_;
}
size_t PacketBuilder::finish_messages() { return finish(count_); }
size_t PacketBuilder::finish_heartbeat() {
  used_ = kHeaderLength;
  count_ = 0;
  return finish(kHeartbeatCount);
}
size_t PacketBuilder::finish_end_of_session() {
  used_ = kHeaderLength;
  count_ = 0;
  return finish(kEndOfSessionCount);
}

}  // namespace itchbench::mold
