#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <vector>

#include "net/pcap_io.hpp"
#include "net/udp_frame.hpp"
#include "protocol/endian.hpp"
#include "source/capture_file.hpp"
#include "test_files.hpp"
#include "util/atomic_file.hpp"

// Its names kept to itself: the test binary is compiled as unity sources (CMakeLists.txt).
namespace capture_test {

using namespace itchbench;
using namespace itchbench::net;
using itchbench::testing::ScratchDir;

namespace {

std::vector<uint8_t> udp_frame(const std::vector<uint8_t>& payload, uint16_t port = 26477) {
  Endpoints ep;
  ep.dst_port = port;
  std::vector<uint8_t> f(2048);
  f.resize(build_udp_frame(f.data(), f.size(), ep, 1, payload.data(), payload.size()));
  return f;
}

std::vector<std::vector<uint8_t>> read_payloads(const std::string& path) {
  CaptureReader r(path);
  std::vector<std::vector<uint8_t>> out;
  EXPECT_TRUE(r.run([&](uint64_t, const uint8_t* p, size_t n) { out.emplace_back(p, p + n); },
                    [](uint64_t, const uint8_t*, size_t) {}))
      << r.error();
  return out;
}

}  // namespace

TEST(UdpFrame, ChecksumsVerify) {
  const std::vector<uint8_t> payload = {1, 2, 3, 4, 5};  // odd length exercises padding
  const auto f = udp_frame(payload);
  ASSERT_EQ(f.size(), kUdpFrameOverhead + 5);
  // A correct header checksums to zero when summed with its checksum field.
  EXPECT_EQ(ipv4_header_checksum(f.data() + 14, 20), 0);
  const uint16_t stored = load_be16(f.data() + 14 + 20 + 6);
  std::vector<uint8_t> udp(f.begin() + 34, f.end());
  udp[6] = udp[7] = 0;
  EXPECT_EQ(udp_checksum(0x7F000002, 0x7F000001, udp.data(), udp.size()), stored);
  EXPECT_NE(stored, 0);
}

TEST(UdpFrame, KnownChecksum) {
  // IPv4 header example from RFC 1071 practice: 4500 0073 0000 4000 4011 b861 c0a8 0001 c0a8 00c7
  const uint8_t hdr[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                           0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
  EXPECT_EQ(ipv4_header_checksum(hdr, 20), 0xb861);
}

TEST(UdpFrame, ExtractsFromEveryLinkType) {
  const std::vector<uint8_t> payload = {9, 8, 7};
  const auto eth = udp_frame(payload);
  const std::vector<uint8_t> ip(eth.begin() + 14, eth.end());
  UdpDatagram d;

  ASSERT_EQ(extract_udp(kLinkEthernet, eth.data(), eth.size(), d), FrameStatus::kOk);
  EXPECT_EQ(std::vector<uint8_t>(d.payload, d.payload + d.length), payload);
  EXPECT_EQ(d.dst_port, 26477);
  EXPECT_EQ(d.dst_ip, 0x7F000001u);

  std::vector<uint8_t> vlan(eth.begin(), eth.begin() + 12);  // two stacked tags
  for (uint8_t b : {0x88, 0xA8, 0x00, 0x64, 0x81, 0x00, 0x00, 0x0A}) vlan.push_back(b);
  vlan.insert(vlan.end(), eth.begin() + 12, eth.end());
  ASSERT_EQ(extract_udp(kLinkEthernet, vlan.data(), vlan.size(), d), FrameStatus::kOk);
  EXPECT_EQ(d.length, 3u);

  ASSERT_EQ(extract_udp(kLinkRaw, ip.data(), ip.size(), d), FrameStatus::kOk);
  ASSERT_EQ(extract_udp(kLinkIpv4, ip.data(), ip.size(), d), FrameStatus::kOk);

  std::vector<uint8_t> sll(16, 0);
  sll[14] = 0x08;
  sll.insert(sll.end(), ip.begin(), ip.end());
  ASSERT_EQ(extract_udp(kLinkLinuxSll, sll.data(), sll.size(), d), FrameStatus::kOk);

  std::vector<uint8_t> sll2(20, 0);
  sll2[0] = 0x08;
  sll2.insert(sll2.end(), ip.begin(), ip.end());
  ASSERT_EQ(extract_udp(kLinkLinuxSll2, sll2.data(), sll2.size(), d), FrameStatus::kOk);
  EXPECT_EQ(std::vector<uint8_t>(d.payload, d.payload + d.length), payload);
}

TEST(UdpFrame, RejectsDamagedFrames) {
  const auto eth = udp_frame({1, 2, 3, 4});
  UdpDatagram d;
  for (size_t n = 0; n < eth.size(); ++n)
    EXPECT_EQ(extract_udp(kLinkEthernet, eth.data(), n, d), FrameStatus::kTruncated) << n;
  auto tcp = eth;
  tcp[14 + 9] = 6;
  EXPECT_EQ(extract_udp(kLinkEthernet, tcp.data(), tcp.size(), d), FrameStatus::kNotUdp);
  auto arp = eth;
  arp[12] = 0x08;
  arp[13] = 0x06;
  EXPECT_EQ(extract_udp(kLinkEthernet, arp.data(), arp.size(), d), FrameStatus::kNotIpv4);
  auto frag = eth;
  frag[14 + 6] = 0x20;  // more fragments
  EXPECT_EQ(extract_udp(kLinkEthernet, frag.data(), frag.size(), d), FrameStatus::kFragment);
  auto ihl = eth;
  ihl[14] = 0x44;  // IHL 16 bytes
  EXPECT_EQ(extract_udp(kLinkEthernet, ihl.data(), ihl.size(), d), FrameStatus::kBadIpHeader);
  auto ulen = eth;
  ulen[14 + 20 + 5] = 0xFF;  // UDP length beyond the IP datagram
  EXPECT_EQ(extract_udp(kLinkEthernet, ulen.data(), ulen.size(), d), FrameStatus::kBadUdpLength);
}

// A capture several times the reader's stdio buffer, records of changing
// lengths so that some straddle each refill: every record comes back whole,
// in order, with its own timestamp and bytes.
TEST(Pcap, RecordsAcrossReadBufferRefillsComeBackWhole) {
  ScratchDir dir;
  const std::string path = dir.file("big.pcap");
  std::vector<std::vector<uint8_t>> payloads;
  for (size_t i = 0, bytes = 0; bytes < (size_t(3) << 20) + 777; ++i) {
    std::vector<uint8_t> p(1 + (i * 97) % 1400);
    for (size_t k = 0; k < p.size(); ++k) p[k] = uint8_t(i * 31 + k);
    bytes += 16 + kUdpFrameOverhead + p.size();  // record header + frame
    payloads.push_back(std::move(p));
  }
  {
    PcapWriter w(path, kLinkEthernet);
    for (size_t i = 0; i < payloads.size(); ++i) {
      const auto f = udp_frame(payloads[i]);
      w.write(1000 + i, f.data(), f.size());
    }
    w.commit();
  }
  PcapReader r(path);
  PcapRecord rec;
  for (size_t i = 0; i < payloads.size(); ++i) {
    ASSERT_EQ(r.next(rec), PcapReader::Next::kRecord) << "record " << i << ": " << r.error();
    ASSERT_EQ(rec.timestamp_ns, 1000 + i);
    ASSERT_EQ(rec.caplen, kUdpFrameOverhead + payloads[i].size()) << "record " << i;
    ASSERT_TRUE(std::equal(payloads[i].begin(), payloads[i].end(), rec.data + kUdpFrameOverhead)) << "record " << i;
  }
  EXPECT_EQ(r.next(rec), PcapReader::Next::kEnd);
  EXPECT_EQ(read_payloads(path), payloads);
}

TEST(Pcap, WriteThenReadKeepsNanosecondsAndBytes) {
  ScratchDir dir;
  const std::string path = dir.file("a.pcap");
  {
    PcapWriter w(path, kLinkEthernet);
    w.write(1704153600123456789ull, udp_frame({1}).data(), udp_frame({1}).size());
    w.write(1704153600123456790ull, udp_frame({2, 2}).data(), udp_frame({2, 2}).size());
    w.commit();
  }
  PcapReader r(path);
  EXPECT_EQ(r.linktype(), kLinkEthernet);
  PcapRecord rec;
  ASSERT_EQ(r.next(rec), PcapReader::Next::kRecord);
  EXPECT_EQ(rec.timestamp_ns, 1704153600123456789ull);
  ASSERT_EQ(r.next(rec), PcapReader::Next::kRecord);
  EXPECT_EQ(rec.timestamp_ns, 1704153600123456790ull);
  EXPECT_EQ(rec.caplen, kUdpFrameOverhead + 2);
  EXPECT_EQ(r.next(rec), PcapReader::Next::kEnd);
  EXPECT_EQ(read_payloads(path), (std::vector<std::vector<uint8_t>>{{1}, {2, 2}}));
}

// Alexey Kuznetzov's modified pcap (magic 0xa1b2cd34, a 24-byte record header: the classic 16 bytes, then the
// interface index, protocol, packet type and a pad byte), written here byte by byte as libpcap's savefile format
// describes it: a capture of it is read as the classic one (libpcap reads it; it had been refused as no capture).
TEST(Pcap, KuznetzovsModifiedFormatIsRead) {
  ScratchDir dir;
  std::vector<uint8_t> bytes;
  const auto put = [&](uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes.push_back(uint8_t(v >> (8 * i)));
  };
  put(0xa1b2cd34u, 4), put(2, 2), put(4, 2), put(0, 4), put(0, 4), put(65535, 4), put(kLinkEthernet, 4);
  const std::vector<std::vector<uint8_t>> payloads = {{1}, {2, 2}, {3, 3, 3}};
  uint32_t usec = 250;
  for (const auto& payload : payloads) {
    const std::vector<uint8_t> f = udp_frame(payload);
    put(1704153600, 4), put(usec++, 4), put(f.size(), 4), put(f.size(), 4);
    put(1, 4), put(0x0800, 2), put(0, 1), put(0, 1);  // ifindex, protocol, packet type, pad
    bytes.insert(bytes.end(), f.begin(), f.end());
  }
  const std::string path = dir.file("kuznetzov.pcap");
  itchbench::testing::write_bytes(path, bytes);
  EXPECT_EQ(read_payloads(path), payloads);
  PcapReader r(path);
  PcapRecord rec;
  ASSERT_EQ(r.next(rec), PcapReader::Next::kRecord);
  EXPECT_EQ(rec.timestamp_ns, 1704153600000250000ull);
}

TEST(Pcap, UncommittedWriterLeavesNothing) {
  ScratchDir dir;
  const std::string path = dir.file("b.pcap");
  {
    PcapWriter w(path, kLinkEthernet);
    w.write(1, udp_frame({1}).data(), udp_frame({1}).size());
  }  // destroyed without commit, as when a writer fails half way
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(temporary_path(path)));
}

TEST(Pcap, TruncatedRecordIsAnExplainedErrorAfterTheGoodOnes) {
  ScratchDir dir;
  const std::string path = dir.file("t.pcap");
  {
    PcapWriter w(path, kLinkEthernet);
    for (int i = 0; i < 3; ++i) w.write(uint64_t(i), udp_frame({uint8_t(i)}).data(), udp_frame({1}).size());
    w.commit();
  }
  auto bytes = itchbench::testing::read_bytes(path);
  bytes.resize(bytes.size() - 10);  // cut into the last record
  itchbench::testing::write_bytes(path, bytes);
  CaptureReader r(path);
  int delivered = 0;
  EXPECT_FALSE(r.run([&](uint64_t, const uint8_t*, size_t) { ++delivered; }, [](uint64_t, const uint8_t*, size_t) {}));
  EXPECT_EQ(delivered, 2);
  EXPECT_NE(r.error().find("record 3"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("truncated"), std::string::npos) << r.error();
}

TEST(Capture, ClearErrorsForBadInputs) {
  ScratchDir dir;
  auto expect_error = [](const std::string& path, const std::string& fragment) {
    try {
      CaptureReader r(path);
      ADD_FAILURE() << "no error for " << path;
    } catch (const CaptureError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error(dir.file("missing.pcap"), "No such file");
  itchbench::testing::write_bytes(dir.file("empty"), {});
  expect_error(dir.file("empty"), "empty capture");
  itchbench::testing::write_bytes(dir.file("text"), {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'});
  expect_error(dir.file("text"), "not a capture");
  // pcap magic followed by garbage: libpcap's own explanation comes through
  itchbench::testing::write_bytes(dir.file("badhdr.pcap"), {0xd4, 0xc3, 0xb2, 0xa1, 1, 2});
  expect_error(dir.file("badhdr.pcap"), "not a readable capture");
  expect_error(dir.file(""), "is a directory");
  expect_error("/dev/zero", "not a regular file (a pipe or a device)");  // not "empty capture (0 bytes)"
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
  expect_error(dir.file("fifo"), "not a regular file (a pipe or a device)");
}

TEST(Capture, WhatIsNotTheFeedIsCountedByKindNotDelivered) {
  ScratchDir dir;
  const std::string path = dir.file("mixed.pcap");
  {
    PcapWriter w(path, kLinkEthernet);
    auto f = udp_frame({1});
    w.write(1, f.data(), f.size());
    auto tcp = f;
    tcp[14 + 9] = 6;
    w.write(2, tcp.data(), tcp.size());
    auto other = udp_frame({2}, 9999);
    w.write(3, other.data(), other.size());
    auto bad = f;
    bad[14 + 20 + 5] = 0xFF;
    w.write(4, bad.data(), bad.size());
    w.write(5, f.data(), 14 + 20 + 4, f.size());  // cut by a 38-byte snaplen, inside the UDP header
    w.write(6, f.data(), f.size() - 1, f.size());  // cut one byte short of the datagram
    auto frag = f;
    frag[14 + 6] = 0x20;  // more fragments follow
    w.write(7, frag.data(), frag.size());
    w.commit();
  }
  CaptureReader r(path, Feed{0x7F000001, 26477});
  int delivered = 0;
  EXPECT_TRUE(r.run([&](uint64_t, const uint8_t*, size_t) { ++delivered; }, [](uint64_t, const uint8_t*, size_t) {}));
  EXPECT_EQ(delivered, 1);
  EXPECT_EQ(r.stats().records, 7u);
  EXPECT_EQ(r.stats().not_udp, 1u);
  EXPECT_EQ(r.stats().other_flow, 1u);
  EXPECT_EQ(r.stats().bad_frames, 3u);
  EXPECT_EQ(r.stats().malformed_frames, 1u);
  EXPECT_EQ(r.stats().truncated_frames, 2u);
  EXPECT_EQ(r.stats().fragments, 1u);
}

// An ITCH file is read ahead: when message p is handed over, the look-ahead
// has seen every message up to p + kLookAheadMessages (or the last), each
// once and in file order.
TEST(CaptureReader, AnItchFileIsReadAheadByAFixedNumberOfMessages) {
  ScratchDir dir;
  const std::string path = dir.file("s.itch");
  constexpr int kMessages = 20;
  std::vector<uint8_t> file;
  for (int i = 0; i < kMessages; ++i) {
    const uint8_t event[14] = {0, 12, 'S', 0, 0, 0, 0, 0, 0, 0, 0, 0, uint8_t(i), 'O'};  // system event, timestamp i
    file.insert(file.end(), event, event + sizeof event);
  }
  itchbench::testing::write_bytes(path, file);
  CaptureReader r(path);
  std::vector<int> ahead;
  ASSERT_TRUE(r.run([](uint64_t, const uint8_t*, size_t) {},
                    [&](uint64_t position, const uint8_t* m, size_t) {
                      EXPECT_EQ(m[10], position - 1);
                      EXPECT_EQ(ahead.size(), std::min<size_t>(position + CaptureReader::kLookAheadMessages, kMessages))
                          << "message " << position;
                    },
                    [&](const uint8_t* m, size_t n) {
                      EXPECT_EQ(n, 12u);
                      ahead.push_back(m[10]);
                    }))
      << r.error();
  std::vector<int> in_order(kMessages);
  for (int i = 0; i < kMessages; ++i) in_order[i] = i;
  EXPECT_EQ(ahead, in_order);
}

}  // namespace capture_test
