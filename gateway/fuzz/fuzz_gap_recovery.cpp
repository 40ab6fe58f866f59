// The recovery stage (A/B arbitration, hold, requests, give-ups) on any stream
// of datagrams from any line, with time passing between them. Each piece:
// a control byte, then a datagram. Control low two bits: 0 line A, 1 line B,
// 2 an answer, 3 no datagram: the clock moves on (byte >> 2) ms and the
// stage is polled. Invariants: the framer behind it sees every message at
// most once and in sequence order; what the stage gave up is exactly what the
// framer counts as its gap messages; the hold never holds more than its slots.
#include <cstdint>

#include "fuzz/fuzz_input.hpp"
#include "pipeline/gap_recovery.hpp"
#include "pipeline/mold_framer.hpp"

using namespace itchbench;

namespace {
uint64_t g_now = 0;
uint64_t fuzz_clock() { return g_now; }

struct Sink {
  MoldFramer framer;
  bool any = false;
  uint64_t last = 0;
  void packet(const mold::Packet& p, const logfmt::Arrival&) {
    framer.on_packet(
        p,
        [&](uint64_t seq, const uint8_t* msg, size_t len) {
          if (any && seq <= last) fuzz::fail("a message reached the framer out of sequence");
          for (size_t i = 0; i < len; ++i) (void)*(volatile const uint8_t*)(msg + i);  // in bounds (ASan)
          any = true;
          last = seq;
        },
        [](const uint8_t*, size_t) {});
  }
  void malformed(const uint8_t* p, size_t n, const logfmt::Arrival&) {
    framer.on_datagram(p, n, [](uint64_t, const uint8_t*, size_t) {}, [](const uint8_t*, size_t) {});
  }
  bool request(const mold::Request& r) {
    if (r.count == 0) fuzz::fail("a request for nothing");
    return true;
  }
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  g_now = 1'000'000'000;
  RecoveryOptions o;
  o.server = true;
  o.line_b = true;
  o.hold_packets = 16;
  o.max_requests = 2;
  o.clock_ns = &fuzz_clock;
  GapRecovery stage(o);
  Sink sink;
  fuzz::for_each_piece(data, size, [&](const uint8_t* p, size_t n) {
    if (n == 0) return;
    const unsigned kind = p[0] & 3;
    if (kind == 3) {
      g_now += uint64_t(p[0] >> 2) * 1'000'000;
      stage.poll(stage.now_ns(), sink);
    } else {
      stage.on_datagram(p + 1, n - 1, Line(kind), {}, sink);
    }
    if (stage.held() > o.hold_packets) fuzz::fail("the hold holds more than its slots");
  });
  if (stage.counters().messages_given_up != sink.framer.sequence().counters().gap_messages)
    fuzz::fail("messages given up differ from the framer's gap messages");
  return 0;
}
