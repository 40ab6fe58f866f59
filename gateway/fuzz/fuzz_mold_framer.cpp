// MoldUDP64 framing with sequence tracking: any stream of datagrams.
// Invariants: messages handed on arrive in strictly increasing sequence; the
// counters add up (late messages never exceed the gaps they fill); every
// message handed on was shown to the look-ahead first, whose reading of the
// order reference stays inside the message (ASan).
#include <cstdint>
#include <set>

#include "fuzz/fuzz_input.hpp"
#include "pipeline/mold_framer.hpp"
#include "protocol/book_op.hpp"

using namespace itchbench;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  MoldFramer framer;
  bool any = false;
  uint64_t last = 0, delivered = 0;
  fuzz::for_each_piece(data, size, [&](const uint8_t* p, size_t n) {
    std::set<const uint8_t*> looked_at;
    auto look_ahead = [&](const uint8_t* msg, size_t len) {
      uint64_t ref;
      (void)itch::peek_order_ref(msg, len, ref);
      looked_at.insert(msg);
    };
    framer.on_datagram(p, n, [&](uint64_t seq, const uint8_t* msg, size_t len) {
      if (!looked_at.count(msg)) fuzz::fail("a message was handed on before the look-ahead saw it");
      if (any && seq <= last) fuzz::fail("a message was handed on out of sequence");
      if (len && msg == nullptr) fuzz::fail("null message bytes");
      for (size_t i = 0; i < len; ++i) (void)*(volatile const uint8_t*)(msg + i);  // in bounds (ASan)
      any = true;
      last = seq;
      ++delivered;
    }, look_ahead);
  });
  const SequenceCounters& sc = framer.sequence().counters();
  if (sc.reordered_messages > sc.gap_messages) fuzz::fail("more late messages than gaps");
  if (framer.counters().messages != delivered) fuzz::fail("message counter differs from messages handed on");
  return 0;
}
