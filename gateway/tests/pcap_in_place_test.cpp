// A classic pcap read from a path is walked in place (PcapReader); libpcap
// itself, reading the same bytes from a stream, is the reference: every
// record, stamp and error must come out the same, damaged files included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "net/pcap_io.hpp"
#include "test_files.hpp"

// Its names kept to itself: the test binary is compiled as unity sources (CMakeLists.txt).
namespace pcap_in_place_test {

using namespace itchbench;
using namespace itchbench::net;
using itchbench::testing::ScratchDir;

namespace {

// A capture written byte by byte, so that it can be damaged in any way.
struct PcapBytes {
  bool swapped = false;  // the other byte order than ours
  bool nano = true;
  uint16_t major = 2, minor = 4;
  uint32_t snaplen = 65535;
  uint32_t linktype = 1;
  std::vector<uint8_t> bytes;

  void u32(uint32_t v) {
    if (swapped) v = __builtin_bswap32(v);
    const auto* b = reinterpret_cast<const uint8_t*>(&v);
    bytes.insert(bytes.end(), b, b + 4);
  }
  void u16(uint16_t v) {
    if (swapped) v = __builtin_bswap16(v);
    const auto* b = reinterpret_cast<const uint8_t*>(&v);
    bytes.insert(bytes.end(), b, b + 2);
  }
  PcapBytes& header() {
    u32(nano ? 0xa1b23c4du : 0xa1b2c3d4u);
    u16(major);
    u16(minor);
    u32(0);  // thiszone
    u32(0);  // sigfigs
    u32(snaplen);
    u32(linktype);
    return *this;
  }
  // A record of caplen bytes (wirelen as given), its bytes a pattern of `seed`.
  PcapBytes& record(uint32_t sec, uint32_t fraction, uint32_t caplen, uint32_t wirelen, uint8_t seed) {
    u32(sec);
    u32(fraction);
    u32(caplen);
    u32(wirelen);
    for (uint32_t i = 0; i < caplen; ++i) bytes.push_back(uint8_t(seed + i * 7));
    return *this;
  }
};

struct Reading {
  std::vector<std::vector<uint8_t>> records;  // stamp, caplen, wirelen, then the bytes
  PcapReader::Next last = PcapReader::Next::kRecord;
  std::string error;
  bool operator==(const Reading& o) const { return records == o.records && last == o.last && error == o.error; }
};

Reading read_all(PcapReader& r, bool* in_place_at_first = nullptr) {
  Reading out;
  if (in_place_at_first) *in_place_at_first = r.in_place();
  PcapRecord rec;
  while ((out.last = r.next(rec)) == PcapReader::Next::kRecord) {
    std::vector<uint8_t> v(24);
    std::memcpy(v.data(), &rec.timestamp_ns, 8);
    const uint64_t caplen = rec.caplen, wirelen = rec.wirelen;
    std::memcpy(v.data() + 8, &caplen, 8);
    std::memcpy(v.data() + 16, &wirelen, 8);
    v.insert(v.end(), rec.data, rec.data + rec.caplen);
    out.records.push_back(std::move(v));
  }
  out.error = r.error();
  return out;
}

// Reads the capture by path (in place where it can) and through libpcap from a stream; both must agree.
// Returns the path's reading; in_place tells whether it began in place.
Reading expect_libpcaps_reading(const std::vector<uint8_t>& bytes, bool& in_place) {
  ScratchDir dir;
  const std::string path = dir.file("c.pcap");
  itchbench::testing::write_bytes(path, bytes);
  PcapReader by_path(path);
  const Reading mine = read_all(by_path, &in_place);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  EXPECT_NE(f, nullptr);
  PcapReader through_libpcap(f, path);
  EXPECT_FALSE(through_libpcap.in_place());
  const Reading reference = read_all(through_libpcap);
  EXPECT_TRUE(mine == reference) << "in place: " << mine.records.size() << " records, error '" << mine.error
                                 << "'; libpcap: " << reference.records.size() << " records, error '"
                                 << reference.error << "'";
  for (size_t i = 0; i < std::min(mine.records.size(), reference.records.size()); ++i) {
    uint64_t a[3], b[3];
    std::memcpy(a, mine.records[i].data(), 24);
    std::memcpy(b, reference.records[i].data(), 24);
    EXPECT_EQ(mine.records[i], reference.records[i]) << "record " << i + 1 << ": stamp " << a[0] << " vs " << b[0]
                                                     << ", caplen " << a[1] << " vs " << b[1] << ", wirelen "
                                                     << a[2] << " vs " << b[2];
  }
  return mine;
}

}  // namespace

TEST(PcapInPlace, EveryByteOrderAndPrecisionReadsAsLibpcapReadsIt) {
  for (const bool swapped : {false, true})
    for (const bool nano : {false, true}) {
      PcapBytes p;
      p.swapped = swapped;
      p.nano = nano;
      p.header()
          .record(1704153600, 123456, 60, 60, 1)
          .record(1704153601, 999999, 0, 0, 2)             // an empty record
          .record(0x90000000u, 0xF0000000u, 14, 1514, 3)  // past 2^31: libpcap's sign depends on byte order
          .record(7, 5, 65535, 65535, 4);                 // exactly the snaplen
      SCOPED_TRACE(std::string(swapped ? "swapped" : "native") + (nano ? ", ns" : ", us"));
      bool in_place = false;
      const Reading r = expect_libpcaps_reading(p.bytes, in_place);
      EXPECT_TRUE(in_place);
      ASSERT_EQ(r.records.size(), 4u);
      EXPECT_EQ(r.last, PcapReader::Next::kEnd);
      uint64_t stamp;
      std::memcpy(&stamp, r.records[0].data(), 8);
      EXPECT_EQ(stamp, 1704153600000000000ull + (nano ? 123456ull : 123456000ull));  // by hand
    }
}

TEST(PcapInPlace, DamageFromAnyRecordOnIsLibpcapsToReport) {
  const auto good = [] {
    PcapBytes p;
    p.header().record(1, 2, 100, 100, 1).record(3, 4, 50, 50, 2);
    return p;
  };
  struct Case {
    std::string name;
    std::vector<uint8_t> bytes;
    size_t whole_records;  // before the damage
  };
  std::vector<Case> cases;
  {
    PcapBytes p = good();
    p.bytes.resize(p.bytes.size() - 10);  // the last body cut short
    cases.push_back({"body cut short", p.bytes, 1});
  }
  {
    PcapBytes p = good();
    p.u32(5);  // a record header cut after 4 bytes
    cases.push_back({"header cut short", p.bytes, 2});
  }
  {
    PcapBytes p = good();
    p.record(5, 6, 70000, 70000, 3).record(7, 8, 20, 20, 4);  // over the snaplen: libpcap's to judge
    cases.push_back({"over the snaplen", p.bytes, 2});
  }
  {
    PcapBytes p = good();
    p.record(5, 6, 300000, 300000, 3);  // over any snaplen libpcap allows for Ethernet
    cases.push_back({"over the maximum", p.bytes, 2});
  }
  {
    PcapBytes p;
    p.snaplen = 0;  // an impossible snaplen, which libpcap replaces
    p.header().record(1, 2, 100, 100, 1).record(3, 4, 50, 50, 2);
    cases.push_back({"snaplen 0", p.bytes, 2});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    bool in_place = false;
    const Reading r = expect_libpcaps_reading(c.bytes, in_place);
    EXPECT_TRUE(in_place);
    EXPECT_GE(r.records.size(), c.whole_records) << "the records before the damage come out";
  }
}

TEST(PcapInPlace, OtherVersionsAndAFileHeaderAloneStayWithLibpcap) {
  {
    PcapBytes p;
    p.minor = 2;  // version 2.2: libpcap's own rules for its records
    p.header().record(1, 2, 10, 20, 1);
    bool in_place = true;
    expect_libpcaps_reading(p.bytes, in_place);
    EXPECT_FALSE(in_place);
  }
  {
    PcapBytes p;
    p.header();  // no records at all
    bool in_place = false;
    const Reading r = expect_libpcaps_reading(p.bytes, in_place);
    EXPECT_TRUE(r.records.empty());
    EXPECT_EQ(r.last, PcapReader::Next::kEnd);
  }
}

TEST(PcapInPlace, LinkTypesWhoseRecordsLibpcapRewritesStayWithIt) {
  // A swapped file's pseudo-headers come out in our byte order from libpcap (found by fuzz_capture_readers:
  // a USB capture); a Linux cooked header's CAN frame id too. Records of 64 patterned bytes, the cooked one
  // with the CAN protocol (0x000C) at its offset 14.
  struct Case {
    uint32_t linktype;
    bool swapped;
    bool in_place;
  };
  for (const Case c : {Case{220, true, false}, Case{189, false, false}, Case{239, false, false},
                       Case{113, true, false}, Case{276, true, false}, Case{113, false, true}, Case{1, true, true}}) {
    SCOPED_TRACE("link type " + std::to_string(c.linktype) + (c.swapped ? ", swapped" : ""));
    PcapBytes p;
    p.swapped = c.swapped;
    p.linktype = c.linktype;
    p.header().record(1, 2, 64, 64, 9);
    if (c.linktype == 113) {
      p.bytes[24 + 16 + 14] = 0x00;
      p.bytes[24 + 16 + 15] = 0x0C;
    }
    p.record(3, 4, 64, 64, 10);
    bool in_place = !c.in_place;
    const Reading r = expect_libpcaps_reading(p.bytes, in_place);
    EXPECT_EQ(in_place, c.in_place);
    EXPECT_EQ(r.records.size(), 2u);
  }
}

TEST(PcapInPlace, AReaderThatMetDamageNoLongerReadsInPlace) {
  PcapBytes p;
  p.header().record(1, 2, 10, 10, 1);
  p.bytes.resize(p.bytes.size() - 1);
  ScratchDir dir;
  const std::string path = dir.file("d.pcap");
  itchbench::testing::write_bytes(path, p.bytes);
  PcapReader r(path);
  EXPECT_TRUE(r.in_place());
  PcapRecord rec;
  EXPECT_EQ(r.next(rec), PcapReader::Next::kError);
  EXPECT_FALSE(r.in_place());
  EXPECT_NE(r.error().find("record 1: truncated"), std::string::npos) << r.error();
}

}  // namespace pcap_in_place_test
