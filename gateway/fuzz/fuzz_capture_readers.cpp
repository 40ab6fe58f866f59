// The capture readers: the input read as a pcap/pcapng (libpcap from memory,
// then our frame parsing and MoldUDP64 parsing of every record; and read by
// path, where a classic pcap is walked in place, which must hand out exactly
// what libpcap does, records and error alike) and as a binary ITCH file. Neither may crash or read out of bounds; an ITCH walk
// that succeeds must cover the input exactly, and its look-ahead must have
// seen each message before the walk hands it over; the gateway's table decode
// (decode_book_op) must give every message the verdict decode() gives it,
// and its look-ahead (peek_order_ref) must read the reference it decodes.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.hpp"
#include "net/pcap_io.hpp"
#include "net/udp_frame.hpp"
#include "protocol/book_op.hpp"
#include "protocol/itch.hpp"
#include "protocol/itch_file.hpp"
#include "protocol/moldudp64.hpp"

using namespace itchbench;

namespace {

// The input as a file with a path (a memfd), for the reader that maps what it reads.
std::string as_file(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("fuzz-input", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != ssize_t(size)) fuzz::fail("memfd");
  return "/proc/self/fd/" + std::to_string(fd);
}

// Whether the two readers' next records agree; false once both have ended the same way.
bool same_next(net::PcapReader& a, net::PcapReader& b) {
  net::PcapRecord ra, rb;
  const auto na = a.next(ra), nb = b.next(rb);
  if (na != nb) fuzz::fail("in place and libpcap disagree on whether a record follows");
  if (na != net::PcapReader::Next::kRecord) {
    if (a.error() != b.error()) fuzz::fail("in place and libpcap end with different errors");
    return false;
  }
  if (ra.timestamp_ns != rb.timestamp_ns || ra.caplen != rb.caplen || ra.wirelen != rb.wirelen ||
      std::memcmp(ra.data, rb.data, ra.caplen) != 0)
    fuzz::fail("in place and libpcap hand out different records");
  return true;
}

void compare_in_place_with_libpcap(const uint8_t* data, size_t size) {
  std::unique_ptr<net::PcapReader> by_path, by_stream;
  try {
    by_path = std::make_unique<net::PcapReader>(as_file(data, size));
  } catch (const std::runtime_error&) {
  }
  if (FILE* f = fmemopen(const_cast<uint8_t*>(data), size, "rb")) {
    try {
      by_stream = std::make_unique<net::PcapReader>(f, "fuzz input");  // owns f, and closes it if it throws
    } catch (const std::runtime_error&) {
    }
  }
  if (bool(by_path) != bool(by_stream)) fuzz::fail("the path and the stream reader disagree on whether it is a capture");
  if (!by_path) return;
  if (by_path->linktype() != by_stream->linktype()) fuzz::fail("the path and the stream reader see other link types");
  while (same_next(*by_path, *by_stream)) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size) compare_in_place_with_libpcap(data, size);
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
