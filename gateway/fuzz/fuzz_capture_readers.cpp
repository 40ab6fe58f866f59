// The capture readers: the input read as a pcap/pcapng (libpcap from memory,
// then our frame parsing and MoldUDP64 parsing of every record) and as a
// binary ITCH file. Neither may crash or read out of bounds; an ITCH walk
// that succeeds must cover the input exactly, and its look-ahead must have
// seen each message before the walk hands it over; the gateway's table decode
// (decode_book_op) must give every message the verdict decode() gives it,
// and its look-ahead (peek_order_ref) must read the reference it decodes.
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "fuzz/fuzz_input.hpp"
#include "net/pcap_io.hpp"
#include "net/udp_frame.hpp"
#include "protocol/book_op.hpp"
#include "protocol/itch.hpp"
#include "protocol/itch_file.hpp"
#include "protocol/moldudp64.hpp"

using namespace itchbench;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (FILE* f = size ? fmemopen(const_cast<uint8_t*>(data), size, "rb") : nullptr) {
    try {
      net::PcapReader reader(f, "fuzz input");
      net::PcapRecord rec;
      while (reader.next(rec) == net::PcapReader::Next::kRecord) {
        net::UdpDatagram dg;
        if (net::extract_udp(reader.linktype(), rec.data, rec.caplen, dg) != net::FrameStatus::kOk) continue;
        mold::Packet pkt;
        if (mold::parse(dg.payload, dg.length, pkt) != mold::ParseStatus::kOk) continue;
        pkt.for_each_message([](uint64_t, const uint8_t* m, size_t n) {
          itch::BookOp op;
          const itch::DecodeStatus st = itch::decode_book_op(m, n, op);
          if (itch::decode(m, n, [](const auto&) {}) != st) fuzz::fail("decode and decode_book_op disagree on a message");
          uint64_t ref = 0;
          const bool peeked = itch::peek_order_ref(m, n, ref);
          if (st == itch::DecodeStatus::kOk && op.kind != itch::BookOpKind::kNone &&
              op.kind != itch::BookOpKind::kDirectory && (!peeked || ref != op.ref))
            fuzz::fail("the look-ahead did not read the order reference the decode did");
        });
      }
    } catch (const std::runtime_error&) {
      // not a capture: a clear error, as for a user
    }
  }
  uint64_t covered = 0;
  itch::FileError err;
  std::vector<const uint8_t*> ahead;  // what the look-ahead saw, in order
  constexpr int kDistance = 3;
  if (itch::walk_length_prefixed(
          data, size,
          [&](uint64_t position, const uint8_t* m, size_t n) {
            covered += 2 + n;
            if (ahead.size() < position || ahead[position - 1] != m)
              fuzz::fail("the walk handed over a message its look-ahead had not seen");
          },
          &err, [&](const uint8_t* m, size_t) { ahead.push_back(m); }, kDistance) &&
      covered != size)
    fuzz::fail("a complete ITCH walk did not cover the input");
  return 0;
}
