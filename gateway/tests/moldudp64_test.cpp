#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipeline/mold_framer.hpp"
#include "protocol/moldudp64.hpp"

// Its names kept to itself: the test binary is compiled as unity sources (CMakeLists.txt).
namespace moldudp64_test {

using namespace itchbench;
using namespace itchbench::mold;

namespace {
std::vector<uint8_t> packet(uint64_t seq, const std::vector<std::vector<uint8_t>>& msgs) {
  std::vector<uint8_t> buf(2000);
  PacketBuilder b(buf.data(), buf.size());
  b.start(make_session("SESSION001"), seq);
  for (const auto& m : msgs) EXPECT_TRUE(b.add(m.data(), uint16_t(m.size())));
  buf.resize(b.finish_messages());
  return buf;
}
std::vector<std::pair<uint64_t, std::vector<uint8_t>>> messages_of(const Packet& p) {
  std::vector<std::pair<uint64_t, std::vector<uint8_t>>> out;
  p.for_each_message([&](uint64_t seq, const uint8_t* m, size_t n) { out.push_back({seq, {m, m + n}}); });
  return out;
}
}  // namespace

TEST(MoldUdp64, BuildThenParse) {
  const auto wire = packet(41, {{'a'}, {'b', 'c'}, {}});
  ASSERT_EQ(wire.size(), 20u + 3 + 4 + 2);
  EXPECT_EQ(std::string(wire.begin(), wire.begin() + 10), "SESSION001");
  Packet p;
  ASSERT_EQ(parse(wire.data(), wire.size(), p), ParseStatus::kOk);
  EXPECT_EQ(p.kind(), PacketKind::kMessages);
  EXPECT_EQ(p.sequence(), 41u);
  EXPECT_EQ(p.count(), 3);
  const auto msgs = messages_of(p);
  ASSERT_EQ(msgs.size(), 3u);
  EXPECT_EQ(msgs[0], (std::pair<uint64_t, std::vector<uint8_t>>{41, {'a'}}));
  EXPECT_EQ(msgs[1], (std::pair<uint64_t, std::vector<uint8_t>>{42, {'b', 'c'}}));
  EXPECT_EQ(msgs[2], (std::pair<uint64_t, std::vector<uint8_t>>{43, {}}));  // zero-length message
}

TEST(MoldUdp64, HeaderKnownBytes) {
  const uint8_t wire[] = {'N', 'A', 'S', 'D', 'A', 'Q', ' ', ' ', ' ', ' ',
                          0, 0, 0, 0, 0, 0, 0x01, 0x00,  // sequence 256
                          0x00, 0x01,                    // one message
                          0x00, 0x02, 'x', 'y'};
  Packet p;
  ASSERT_EQ(parse(wire, sizeof wire, p), ParseStatus::kOk);
  EXPECT_EQ(p.sequence(), 256u);
  EXPECT_EQ(messages_of(p).at(0).second, (std::vector<uint8_t>{'x', 'y'}));
}

TEST(MoldUdp64, HeartbeatAndEndOfSession) {
  uint8_t buf[64];
  PacketBuilder b(buf, sizeof buf);
  b.start(make_session("S"), 100);
  size_t n = b.finish_heartbeat();
  Packet p;
  ASSERT_EQ(parse(buf, n, p), ParseStatus::kOk);
  EXPECT_EQ(p.kind(), PacketKind::kHeartbeat);
  EXPECT_EQ(p.sequence(), 100u);
  EXPECT_TRUE(messages_of(p).empty());

  b.start(make_session("S"), 100);
  n = b.finish_end_of_session();
  ASSERT_EQ(parse(buf, n, p), ParseStatus::kOk);
  EXPECT_EQ(p.kind(), PacketKind::kEndOfSession);
  EXPECT_EQ(p.count(), 0);
  EXPECT_TRUE(messages_of(p).empty());
}

TEST(MoldUdp64, RejectsShortPacket) {
  const auto wire = packet(1, {{'a'}});
  Packet p;
  for (size_t n = 0; n < kHeaderLength; ++n) EXPECT_EQ(parse(wire.data(), n, p), ParseStatus::kTooShort) << n;
}

TEST(MoldUdp64, RejectsLengthPastTheEnd) {
  auto wire = packet(1, {{'a', 'b', 'c'}});
  wire[21] = 4;  // message claims 4 bytes, 3 present
  Packet p;
  EXPECT_EQ(parse(wire.data(), wire.size(), p), ParseStatus::kLengthOverrun);
  wire[20] = 0xFF;  // absurd length
  EXPECT_EQ(parse(wire.data(), wire.size(), p), ParseStatus::kLengthOverrun);
}

TEST(MoldUdp64, RejectsCountMismatch) {
  auto wire = packet(1, {{'a'}, {'b'}});
  Packet p;
  wire[19] = 3;  // count says 3, only 2 present
  EXPECT_EQ(parse(wire.data(), wire.size(), p), ParseStatus::kCountMismatch);
  wire[19] = 1;  // count says 1, a second message trails
  EXPECT_EQ(parse(wire.data(), wire.size(), p), ParseStatus::kCountMismatch);
  // one byte of a length field left dangling
  auto odd = packet(1, {{'a'}});
  odd[19] = 2;
  odd.push_back(0);
  EXPECT_EQ(parse(odd.data(), odd.size(), p), ParseStatus::kCountMismatch);
}

// Found by fuzz_mold_framer: a packet at sequence 2^64 - 1 with 3 messages
// handed on sequence numbers that wrapped to 0 and 1.
TEST(MoldUdp64, RejectsSequenceRangesPastTwoToTheSixtyFour) {
  Packet p;
  auto wrap = packet(UINT64_MAX, {{'a'}, {'b'}, {'c'}});
  EXPECT_EQ(parse(wrap.data(), wrap.size(), p), ParseStatus::kSequenceOverflow);
  auto edge = packet(UINT64_MAX - 2, {{'a'}, {'b'}});  // next expected would be 2^64 - 1: still fine
  EXPECT_EQ(parse(edge.data(), edge.size(), p), ParseStatus::kOk);
  auto past = packet(UINT64_MAX - 1, {{'a'}, {'b'}});  // next expected would be 2^64: wraps
  EXPECT_EQ(parse(past.data(), past.size(), p), ParseStatus::kSequenceOverflow);
  auto heartbeat = packet(UINT64_MAX, {});
  EXPECT_EQ(parse(heartbeat.data(), heartbeat.size(), p), ParseStatus::kOk);

  MoldFramer framer;
  uint64_t handed = 0;
  framer.on_datagram(wrap.data(), wrap.size(), [&](uint64_t, const uint8_t*, size_t) { ++handed; });
  EXPECT_EQ(handed, 0u);
  EXPECT_EQ(framer.counters().rejected_sequence_overflow, 1u);
}

TEST(MoldUdp64, RejectsControlPacketsWithData) {
  auto wire = packet(1, {{'a'}});
  Packet p;
  wire[18] = 0;
  wire[19] = 0;  // heartbeat carrying a message
  EXPECT_EQ(parse(wire.data(), wire.size(), p), ParseStatus::kCountMismatch);
  wire[18] = 0xFF;
  wire[19] = 0xFF;  // end of session carrying a message
  EXPECT_EQ(parse(wire.data(), wire.size(), p), ParseStatus::kCountMismatch);
}

TEST(MoldUdp64, BuilderRefusesWhatDoesNotFit) {
  uint8_t buf[30];
  PacketBuilder b(buf, sizeof buf);
  b.start(make_session("S"), 1);
  const uint8_t m[8] = {};
  EXPECT_TRUE(b.add(m, 8));   // 20 + 10 = 30
  EXPECT_FALSE(b.add(m, 1));  // would be 33
  EXPECT_EQ(b.count(), 1);
  EXPECT_EQ(b.finish_messages(), 30u);
}

// The framer shows every message of an accepted packet to the look-ahead
// before handing on the first; a rejected packet shows nothing.
TEST(MoldUdp64, LookAheadSeesAWholePacketBeforeItsFirstMessage) {
  MoldFramer framer;
  std::vector<std::string> events;
  auto on_message = [&](uint64_t seq, const uint8_t* m, size_t n) {
    events.push_back("message " + std::to_string(seq) + " " + std::string(m, m + n));
  };
  auto look_ahead = [&](const uint8_t* m, size_t n) { events.push_back("ahead " + std::string(m, m + n)); };
  const auto first = packet(1, {{'a'}, {'b', 'c'}, {'d'}});
  framer.on_datagram(first.data(), first.size(), on_message, look_ahead);
  EXPECT_EQ(events, (std::vector<std::string>{"ahead a", "ahead bc", "ahead d", "message 1 a", "message 2 bc",
                                              "message 3 d"}));
  events.clear();
  auto damaged = packet(4, {{'e'}, {'f'}});
  damaged.pop_back();  // the last message runs past the end
  EXPECT_EQ(framer.on_datagram(damaged.data(), damaged.size(), on_message, look_ahead),
            ParseStatus::kLengthOverrun);
  EXPECT_TRUE(events.empty());
}

// A request is exactly 20 bytes: session, first sequence (big-endian), count (big-endian). The bytes below are
// written out by hand from the MoldUDP64 specification's layout.
TEST(MoldRequest, ParsesTheSpecsLayoutAndNothingElse) {
  const uint8_t bytes[20] = {'S', 'E', 'S', 'S', 'I', 'O', 'N', '0', '0', '1',  // session
                             0, 0, 0, 0, 0, 0, 0x01, 0x02,                      // sequence 258
                             0x00, 0x05};                                       // count 5
  mold::Request r;
  ASSERT_TRUE(mold::parse_request(bytes, sizeof bytes, r));
  EXPECT_EQ(std::string(r.session.data(), 10), "SESSION001");
  EXPECT_EQ(r.sequence, 258u);
  EXPECT_EQ(r.count, 5u);
  uint8_t again[20];
  mold::write_request(r, again);
  EXPECT_EQ(std::memcmp(again, bytes, 20), 0);
  EXPECT_FALSE(mold::parse_request(bytes, 19, r));
  uint8_t longer[21] = {};
  EXPECT_FALSE(mold::parse_request(longer, 21, r));
}

}  // namespace moldudp64_test
