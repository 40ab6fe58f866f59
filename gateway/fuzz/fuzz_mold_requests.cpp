// The re-request server on any stream of datagrams (pieces), over a session
// of 40 messages of varied lengths, with a small payload, a cap and a rate
// limit. Invariants: every datagram is counted under exactly one outcome;
// every answer packet parses as MoldUDP64, is of the session, holds the
// messages it names with their bytes, within the session and the request;
// a packet is over the payload only when it holds one message.
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz/fuzz_input.hpp"
#include "protocol/moldudp64.hpp"
#include "replay/lib/request_server.hpp"

using namespace itchbench;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const replay::MessageStore store = [] {
    replay::MessageStore s(mold::make_session("FUZZ000001"), 5);
    for (int i = 0; i < 40; ++i) {
      std::vector<uint8_t> msg(size_t(i * 7 % 90), uint8_t(i));
      s.add(msg.data(), uint16_t(msg.size()));
    }
    return s;
  }();
  replay::RequestPolicy policy;
  policy.max_payload = 120;
  policy.max_messages = 17;
  policy.rate_limit = 50;
  policy.retention = 30;
  replay::RequestServer server(store, policy);
  std::vector<replay::AnswerPacket> answers;
  std::vector<uint8_t> packets;
  uint64_t now = 0, datagrams = 0;
  fuzz::for_each_piece(data, size, [&](const uint8_t* p, size_t n) {
    ++datagrams;
    now += 1000000;
    const auto outcome = server.handle(p, n, n % 3, now, answers, packets);
    if (outcome != logfmt::RequestOutcome::kServed && !answers.empty()) fuzz::fail("answers to a refused request");
    const mold::Request& r = server.last_request();
    for (const replay::AnswerPacket& a : answers) {
      mold::Packet packet;
      if (mold::parse(packets.data() + a.offset, a.length, packet) != mold::ParseStatus::kOk)
        fuzz::fail("an answer packet does not parse");
      if (std::memcmp(packets.data() + a.offset, store.session().data(), mold::kSessionLength) != 0)
        fuzz::fail("an answer of another session");
      if (a.length > policy.max_payload && a.count != 1) fuzz::fail("a packet over the payload with several messages");
      if (a.sequence < r.sequence || a.sequence + a.count > r.sequence + r.count) fuzz::fail("answered past the request");
      packet.for_each_message([&](uint64_t seq, const uint8_t* msg, size_t len) {
        if (seq < store.first() || seq > store.last()) fuzz::fail("answered a message the session lacks");
        uint16_t want = 0;
        const uint8_t* held = store.message(seq, want);
        if (len != want || std::memcmp(msg, held, len) != 0) fuzz::fail("answered other bytes than the message's");
      });
    }
  });
  const replay::RequestCounts& c = server.counts();
  uint64_t judged = 0;
  for (uint64_t n : c.by_outcome) judged += n;
  if (c.requests != datagrams || judged != datagrams) fuzz::fail("a datagram not counted under one outcome");
  return 0;
}
