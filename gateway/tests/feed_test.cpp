// Feed selection: which flow of a tap-like capture is the feed, and what
// happens to the rest (docs/feeds.md).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "net/pcap_io.hpp"
#include "net/udp_frame.hpp"
#include "protocol/moldudp64.hpp"
#include "source/capture_file.hpp"
#include "source/feed.hpp"
#include "test_files.hpp"

// Its names kept to itself: the test binary is compiled as unity sources (CMakeLists.txt).
namespace feed_test {

using namespace itchbench;
using namespace itchbench::net;
using itchbench::testing::ScratchDir;

namespace {

constexpr uint32_t kFeedAddress = (233u << 24) | (54u << 16) | (12u << 8) | 111u;  // 233.54.12.111

// A MoldUDP64 packet of `count` 12-byte messages, built by hand from the spec's layout.
std::vector<uint8_t> mold_packet(const std::string& session, uint64_t seq, uint16_t count) {
  std::vector<uint8_t> p(20, 0);
  for (size_t i = 0; i < 10; ++i) p[i] = uint8_t(i < session.size() ? session[i] : ' ');
  for (int i = 0; i < 8; ++i) p[10 + i] = uint8_t(seq >> (56 - 8 * i));
  p[18] = uint8_t(count >> 8);
  p[19] = uint8_t(count);
  for (uint16_t m = 0; m < count; ++m) {
    p.push_back(0);
    p.push_back(12);
    p.insert(p.end(), 12, uint8_t('S'));
  }
  return p;
}

std::vector<uint8_t> frame(const std::vector<uint8_t>& payload, uint32_t dst, uint16_t port) {
  Endpoints ep;
  ep.dst_ip = dst;
  ep.dst_port = port;
  std::vector<uint8_t> f(2048);
  f.resize(build_udp_frame(f.data(), f.size(), ep, 1, payload.data(), payload.size()));
  return f;
}

// An 802.1Q tag (or two, QinQ) inserted after the MAC addresses.
std::vector<uint8_t> tagged(std::vector<uint8_t> f, bool qinq) {
  std::vector<uint8_t> tags = {0x81, 0x00, 0x00, 0x0A};
  if (qinq) tags = {0x88, 0xA8, 0x00, 0x64, 0x81, 0x00, 0x00, 0x0A};
  f.insert(f.begin() + 12, tags.begin(), tags.end());
  return f;
}

const FlowCount* find(const std::vector<FlowCount>& flows, const Feed& f) {
  for (const FlowCount& c : flows)
    if (c.destination == f) return &c;
  return nullptr;
}

}  // namespace

TEST(Feed, ParsesAndPrintsAddressAndPort) {
  const Feed f = parse_feed("233.54.12.111:26477");
  EXPECT_EQ(f.address, kFeedAddress);
  EXPECT_EQ(f.port, 26477);
  EXPECT_EQ(to_string(f), "233.54.12.111:26477");
  for (const char* bad : {"233.54.12.111", "233.54.12:1", "1.2.3.4:0", "1.2.3.4:65536", "1.2.3.4:x", ":80", "a:b"})
    EXPECT_THROW(parse_feed(bad), std::invalid_argument) << bad;
}

TEST(Feed, SessionTextDropsPaddingAndEscapesBytes) {
  mold::Session s = mold::make_session("ABC");
  EXPECT_EQ(session_text(s), "ABC");
  s[1] = '\x01';
  EXPECT_EQ(session_text(s), "A\\x01C");
}

TEST(Feed, DefaultIsTheFlowWithTheMostMoldMessagesNotTheMostDatagrams) {
  FlowCensus census;
  const auto feed = mold_packet("SESSION1", 1, 3);
  const std::vector<uint8_t> hsrp(20, 0x11);  // an HSRP hello: 20 bytes that are no MoldUDP64 packet
  for (int i = 0; i < 2; ++i) census.add(Feed{kFeedAddress, 26477}, feed.data(), feed.size());
  for (int i = 0; i < 5; ++i) census.add(Feed{0xE0000002, 1985}, hsrp.data(), hsrp.size());
  const auto flows = census.flows();
  ASSERT_EQ(flows.size(), 2u);
  EXPECT_EQ(flows[0].destination, (Feed{kFeedAddress, 26477}));
  EXPECT_EQ(flows[0].mold_messages, 6u);
  EXPECT_EQ(flows[1].mold_packets, 0u);
  EXPECT_EQ(flows[1].datagrams, 5u);
  EXPECT_EQ(*choose_feed(flows, std::nullopt), (Feed{kFeedAddress, 26477}));
}

TEST(Feed, TwoSessionsAreRefusedByNameUnlessOneIsChosen) {
  FlowCensus census;
  const auto a = mold_packet("ALPHA", 1, 2);
  const auto b = mold_packet("BRAVO", 1, 1);
  census.add(Feed{kFeedAddress, 26477}, a.data(), a.size());
  census.add(Feed{kFeedAddress, 26478}, b.data(), b.size());
  const auto flows = census.flows();
  try {
    choose_feed(flows, std::nullopt);
    ADD_FAILURE() << "two sessions accepted";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'ALPHA'"), std::string::npos) << what;
    EXPECT_NE(what.find("'BRAVO'"), std::string::npos) << what;
    EXPECT_NE(what.find("--feed"), std::string::npos) << what;
  }
  EXPECT_EQ(*choose_feed(flows, Feed{kFeedAddress, 26478}), (Feed{kFeedAddress, 26478}));
  EXPECT_THROW(choose_feed(flows, Feed{kFeedAddress, 1}), std::invalid_argument);  // not in the capture
}

TEST(Feed, OneFlowCarryingTwoSessionsIsRefusedEvenWhenChosen) {
  FlowCensus census;
  const auto a = mold_packet("ALPHA", 1, 1);
  const auto b = mold_packet("BRAVO", 2, 1);
  census.add(Feed{kFeedAddress, 26477}, a.data(), a.size());
  census.add(Feed{kFeedAddress, 26477}, b.data(), b.size());
  EXPECT_THROW(choose_feed(census.flows(), Feed{kFeedAddress, 26477}), std::invalid_argument);
}

TEST(Feed, ATapLikeCaptureDeliversOnlyTheFeedAndCountsTheRest) {
  ScratchDir dir;
  const std::string path = dir.file("tap.pcap");
  const auto feed = mold_packet("SESSION1", 1, 2);
  const auto other = mold_packet("SESSION1", 1, 1);  // the same session on another port (a B line): fewer messages
  {
    PcapWriter w(path, kLinkEthernet);
    w.write(1, frame(feed, kFeedAddress, 26477).data(), frame(feed, kFeedAddress, 26477).size());
    const auto vlan = tagged(frame(feed, kFeedAddress, 26477), false);
    w.write(2, vlan.data(), vlan.size());
    const auto qinq = tagged(frame(feed, kFeedAddress, 26477), true);
    w.write(3, qinq.data(), qinq.size());
    const auto b = frame(other, kFeedAddress, 26478);
    w.write(4, b.data(), b.size());
    auto arp = frame(feed, kFeedAddress, 26477);
    arp[12] = 0x08;
    arp[13] = 0x06;
    w.write(5, arp.data(), arp.size());
    auto tcp = frame(feed, kFeedAddress, 26477);
    tcp[14 + 9] = 6;
    w.write(6, tcp.data(), tcp.size());
    auto frag = frame(feed, kFeedAddress, 26477);
    frag[14 + 6] = 0x20;
    w.write(7, frag.data(), frag.size());
    w.commit();
  }
  CaptureReader r(path);
  const auto flows = r.census();
  ASSERT_EQ(flows.size(), 2u);
  EXPECT_EQ(find(flows, Feed{kFeedAddress, 26477})->datagrams, 3u);  // untagged, 802.1Q and QinQ
  int delivered = 0;
  ASSERT_TRUE(r.run([&](uint64_t, const uint8_t* p, size_t n) {
    ++delivered;
    EXPECT_EQ(std::vector<uint8_t>(p, p + n), feed);
  }, [](uint64_t, const uint8_t*, size_t) {})) << r.error();
  EXPECT_EQ(*r.feed(), (Feed{kFeedAddress, 26477}));
  EXPECT_EQ(delivered, 3);
  const CaptureStats& s = r.stats();
  EXPECT_EQ(s.records, 7u);
  EXPECT_EQ(s.udp_datagrams, 3u);
  EXPECT_EQ(s.other_flow, 1u);
  EXPECT_EQ(s.not_ipv4, 1u);
  EXPECT_EQ(s.not_udp, 1u);
  EXPECT_EQ(s.fragments, 1u);
  EXPECT_EQ(s.bad_frames, 0u);
}

TEST(Feed, AFeedThatIsNotInTheCaptureEndsTheRunWithAnError) {
  ScratchDir dir;
  const std::string path = dir.file("one.pcap");
  const auto feed = mold_packet("SESSION1", 1, 1);
  {
    PcapWriter w(path, kLinkEthernet);
    w.write(1, frame(feed, kFeedAddress, 26477).data(), frame(feed, kFeedAddress, 26477).size());
    w.commit();
  }
  CaptureReader r(path, Feed{kFeedAddress, 9});
  EXPECT_FALSE(r.run([](uint64_t, const uint8_t*, size_t) {}, [](uint64_t, const uint8_t*, size_t) {}));
  EXPECT_NE(r.error().find("233.54.12.111:9"), std::string::npos) << r.error();
}

}  // namespace feed_test
