// GLIMPSE 5.0's own message: End of Snapshot ('G'), the last of a snapshot,
// carrying the ITCH sequence number from which a late joiner applies the live
// feed — the next message after the snapshot (docs/snapshot.md). Every other
// message of a snapshot is an ITCH 5.0 message.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "protocol/soupbintcp.hpp"

namespace itchbench::glimpse {

constexpr char kEndOfSnapshot = 'G';
constexpr size_t kEndOfSnapshotLength = 21;  // type + the sequence number, 20 ASCII digits right-justified

inline std::string end_of_snapshot(uint64_t next_sequence) {
  return kEndOfSnapshot + soup::numeric(next_sequence, 20);
}

// False when the message is not an End of Snapshot.
inline bool parse_end_of_snapshot(const uint8_t* msg, size_t len, uint64_t& next_sequence) {
  return len == kEndOfSnapshotLength && msg[0] == uint8_t(kEndOfSnapshot) &&
         soup::parse_numeric(msg + 1, 20, next_sequence);
}

}  // namespace itchbench::glimpse
