// The whole session as the exchange's servers hold it (the re-request
// server, the snapshot server): every message by sequence number, from the
// capture before any fault.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/moldudp64.hpp"
#include "source/feed.hpp"

namespace itchbench::replay {

// The session's messages by sequence number, from its first on, without gaps.
class MessageStore {
 public:
  MessageStore(const mold::Session& session, uint64_t first_sequence) : session_(session), first_(first_sequence) {}
  void add(const uint8_t* msg, uint16_t len);
  const mold::Session& session() const { return session_; }
  uint64_t first() const { return first_; }
  uint64_t last() const { return first_ + offsets_.size() - 1; }  // first - 1 when empty
  bool empty() const { return offsets_.empty(); }
  const uint8_t* message(uint64_t seq, uint16_t& len) const;  // seq in [first, last]

 private:
  mold::Session session_;
  uint64_t first_;
  std::vector<uint8_t> bytes_;
  std::vector<size_t> offsets_;  // of each message's 2-byte length in bytes_
};

// The session's messages from a capture: a pcap's MoldUDP64 packets (duplicates skipped; a gap is an error,
// since a server must hold every message), or a binary ITCH file's messages numbered from 1 in a session of
// that name. Throws on a capture it cannot read or that holds no message.
MessageStore load_session(const std::string& path, const std::optional<Feed>& feed, const std::string& session_name);

}  // namespace itchbench::replay
