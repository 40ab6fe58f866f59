// A GLIMPSE-5.0-shaped snapshot of a session after one of its messages
// (docs/snapshot.md): the last system event, the stock directory, every live
// order as an Add Order, then the End of Snapshot message carrying the ITCH
// sequence number from which to apply the live feed: the next message after
// the snapshot, `through + 1`. The book is the gateway's own (OrderBook), fed
// the session's messages up to `through`, so the snapshot has the book's
// semantics exactly (docs/book-and-bbo.md).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "replay/lib/session_store.hpp"

namespace itchbench::replay {

struct Snapshot {
  std::vector<std::vector<uint8_t>> messages;  // ITCH messages, in the order they are sent; the last is 'G'
  uint64_t through = 0;        // the session's messages it reflects: first .. through
  uint64_t next_sequence = 0;  // what 'G' carries: through + 1
  size_t system_events = 0, directory = 0, orders = 0;
  size_t bytes = 0;  // of its messages
};

// The last message of the session stamped before time_ns (ITCH timestamp, ns since midnight); first - 1 when none
// is. Messages too short to carry a timestamp take their predecessor's.
uint64_t last_before(const MessageStore& session, uint64_t time_ns);

// Throws std::invalid_argument when `through` is outside [first - 1, last] of the session.
Snapshot make_snapshot(const MessageStore& session, uint64_t through);

}  // namespace itchbench::replay
