// The capture readers: the input read as a pcap/pcapng (libpcap from memory,
// then our frame parsing and MoldUDP64 parsing of every record) and as a
// binary ITCH file. Neither may crash or read out of bounds; an ITCH walk
// that succeeds must cover the input exactly; the gateway's table decode
// (decode_book_op) must give every message the verdict decode() gives it.
#include <cstdint>
#include <cstdio>
#include <stdexcept>

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
          if (itch::decode(m, n, [](const auto&) {}) != itch::decode_book_op(m, n, op))
            fuzz::fail("decode and decode_book_op disagree on a message");
        });
      }
    } catch (const std::runtime_error&) {
      // not a capture: a clear error, as for a user
    }
  }
  uint64_t covered = 0;
  itch::FileError err;
  if (itch::walk_length_prefixed(data, size, [&](uint64_t, const uint8_t*, size_t n) { covered += 2 + n; }, &err) &&
      covered != size)
    fuzz::fail("a complete ITCH walk did not cover the input");
  return 0;
}
