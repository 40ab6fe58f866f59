// A snapshot client's SoupBinTCP conversation (replay/lib/snapshot_server) on
// any bytes a client may send, in any pieces, with time passing. Each piece:
// a control byte, then bytes from the client. Control low bit 1: time moves
// on (byte >> 1) x 100 ms before the bytes; the server is polled after each
// piece with a budget of (byte >> 4) messages. Invariants: what the server
// writes is whole SoupBinTCP packets; its sequenced messages are the
// stream's, in order, from the sequence the login asked for; nothing is sent
// before a login is accepted or after the client's end.
#include <cstdint>
#include <vector>

#include "fuzz/fuzz_input.hpp"
#include "protocol/soupbintcp.hpp"
#include "replay/lib/snapshot_server.hpp"

using namespace itchbench;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const replay::MessageStore stream = [] {
    std::vector<std::vector<uint8_t>> messages;
    for (uint8_t i = 1; i <= 40; ++i) messages.push_back(std::vector<uint8_t>{'P', i});
    return replay::snapshot_stream(messages, "GLIMPSE");
  }();
  static const replay::SnapshotPolicy policy;
  uint64_t now = 0;
  replay::SnapshotClient client(stream, policy, now);
  std::vector<uint8_t> out;
  soup::StreamReader server_side;  // what the client receives
  bool accepted = false, ended = false;
  uint64_t expect = 0;
  fuzz::for_each_piece(data, size, [&](const uint8_t* p, size_t n) {
    if (n == 0) return;
    if (p[0] & 1) now += uint64_t(p[0] >> 1) * 100'000'000;
    client.on_bytes(p + 1, n - 1, now, out);
    client.on_time(now, p[0] >> 4, out);
    server_side.append(out.data(), out.size());
    out.clear();
    char type;
    const uint8_t* payload;
    size_t len;
    for (;;) {
      const auto next = server_side.next(type, payload, len);
      if (next == soup::StreamReader::Next::kIncomplete) break;
      if (next != soup::StreamReader::Next::kPacket) fuzz::fail("the server wrote a broken packet");
      if (ended) fuzz::fail("the server wrote after the end of session");
      if (type == soup::kLoginAccepted) {
        if (accepted) fuzz::fail("a second login accepted");
        uint64_t seq = 0;
        if (len != 30 || !soup::parse_numeric(payload + 10, 20, seq)) fuzz::fail("a login accepted out of shape");
        accepted = true;
        expect = seq;
      } else if (type == soup::kSequencedData) {
        if (!accepted) fuzz::fail("data before a login was accepted");
        uint16_t want_len = 0;
        const uint8_t* want = stream.message(expect, want_len);
        if (len != want_len || payload[1] != want[1]) fuzz::fail("a sequenced message out of order");
        ++expect;
      } else if (type == soup::kEndOfSession) {
        if (expect != stream.last() + 1) fuzz::fail("the end of session before the last message");
        ended = true;
      } else if (type != soup::kServerHeartbeat && type != soup::kLoginRejected) {
        fuzz::fail("a packet type the server never sends");
      }
    }
  });
  if (client.messages_sent() > stream.last()) fuzz::fail("more messages sent than the snapshot has");
  return 0;
}
