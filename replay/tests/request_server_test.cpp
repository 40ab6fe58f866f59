// The re-request server's decisions, on a store written here: ten messages of
// 30 bytes (sequences 1..10) whose first byte is their sequence number. Every
// expected packet is worked out by hand from the MoldUDP64 layout.
#include <gtest/gtest.h>

#include <vector>

#include "protocol/endian.hpp"
#include "replay/lib/request_server.hpp"

using namespace itchbench;
using namespace itchbench::replay;

namespace {

const mold::Session kSession = mold::make_session("TEST000001");

MessageStore ten_messages() {
  MessageStore store(kSession, 1);
  for (uint8_t i = 1; i <= 10; ++i) {
    std::vector<uint8_t> msg(30, 0xAB);
    msg[0] = i;
    store.add(msg.data(), uint16_t(msg.size()));
  }
  return store;
}

std::vector<uint8_t> request(uint64_t seq, uint16_t count, const mold::Session& session = kSession) {
  std::vector<uint8_t> out(mold::kRequestLength);
  mold::write_request({session, seq, count}, out.data());
  return out;
}

struct Asked {
  RequestOutcome outcome;
  std::vector<AnswerPacket> answers;
  std::vector<uint8_t> packets;
};

Asked ask(RequestServer& server, const std::vector<uint8_t>& req, uint64_t now = 1, uint64_t client = 7) {
  Asked a;
  a.outcome = server.handle(req.data(), req.size(), client, now, a.answers, a.packets);
  return a;
}

}  // namespace

TEST(RequestServer, AnswersWithTheMessagesAskedForInOnePacket) {
  const MessageStore store = ten_messages();
  RequestServer server(store, {});
  const Asked a = ask(server, request(3, 4));
  ASSERT_EQ(a.outcome, RequestOutcome::kServed);
  ASSERT_EQ(a.answers.size(), 1u);
  // 20-byte header + 4 x (2-byte length + 30 bytes) = 148 bytes.
  EXPECT_EQ(a.answers[0].length, 148u);
  const uint8_t* p = a.packets.data();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(p), 10), "TEST000001");
  EXPECT_EQ(load_be64(p + 10), 3u);
  EXPECT_EQ(load_be16(p + 18), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(load_be16(p + 20 + i * 32), 30u);
    EXPECT_EQ(p[22 + i * 32], 3 + i);  // message 3, 4, 5, 6 in order
  }
}

TEST(RequestServer, CutsAnswersToThePayloadAndTheCap) {
  const MessageStore store = ten_messages();
  RequestPolicy small;
  small.max_payload = 100;  // 20 + 2 x 32 = 84 fits, 116 does not: two messages a packet
  RequestServer server(store, small);
  Asked a = ask(server, request(2, 5));
  ASSERT_EQ(a.answers.size(), 3u);
  EXPECT_EQ(a.answers[0].sequence, 2u);
  EXPECT_EQ(a.answers[0].count, 2u);
  EXPECT_EQ(a.answers[1].sequence, 4u);
  EXPECT_EQ(a.answers[2].sequence, 6u);
  EXPECT_EQ(a.answers[2].count, 1u);
  EXPECT_EQ(a.answers[2].length, 52u);
  RequestPolicy capped;
  capped.max_messages = 3;
  RequestServer capped_server(store, capped);
  a = ask(capped_server, request(5, 100));  // asks past the end too: three messages, 5..7
  ASSERT_EQ(a.answers.size(), 1u);
  EXPECT_EQ(a.answers[0].count, 3u);
  // Past the end with no cap: 9 and 10 only.
  RequestServer open(store, {});
  a = ask(open, request(9, 100));
  ASSERT_EQ(a.answers.size(), 1u);
  EXPECT_EQ(a.answers[0].count, 2u);
}

TEST(RequestServer, AMessageLargerThanThePayloadGoesAlone) {
  MessageStore store(kSession, 1);
  std::vector<uint8_t> big(300, 1), small(10, 2);
  store.add(small.data(), 10);
  store.add(big.data(), 300);
  store.add(small.data(), 10);
  RequestPolicy p;
  p.max_payload = 100;
  RequestServer server(store, p);
  const Asked a = ask(server, request(1, 3));
  ASSERT_EQ(a.answers.size(), 3u);
  EXPECT_EQ(a.answers[1].count, 1u);
  EXPECT_EQ(a.answers[1].length, 20u + 2 + 300);
}

TEST(RequestServer, RefusesBadRequestsByReason) {
  const MessageStore store = ten_messages();
  RequestPolicy p;
  p.retention = 4;  // holds 7..10
  RequestServer server(store, p);
  std::vector<uint8_t> short_request = request(1, 1);
  short_request.pop_back();
  EXPECT_EQ(ask(server, short_request).outcome, RequestOutcome::kWrongLength);
  EXPECT_EQ(ask(server, request(8, 1, mold::make_session("OTHER"))).outcome, RequestOutcome::kWrongSession);
  EXPECT_EQ(ask(server, request(0, 1)).outcome, RequestOutcome::kSequenceZero);
  EXPECT_EQ(ask(server, request(8, 0)).outcome, RequestOutcome::kCountZero);
  EXPECT_EQ(ask(server, request(11, 1)).outcome, RequestOutcome::kBeyondSession);
  EXPECT_EQ(ask(server, request(6, 2)).outcome, RequestOutcome::kOutsideRetention);
  EXPECT_EQ(ask(server, request(7, 2)).outcome, RequestOutcome::kServed);
  const RequestCounts& c = server.counts();
  EXPECT_EQ(c.requests, 7u);
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(c.by_outcome[i], 1u) << to_string(RequestOutcome(i));
}

TEST(RequestServer, LimitsEachRequestersRateInOneSecondWindows) {
  const MessageStore store = ten_messages();
  RequestPolicy p;
  p.rate_limit = 3;
  RequestServer server(store, p);
  const uint64_t s = 1000000000;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(ask(server, request(1, 1), s + i).outcome, RequestOutcome::kServed);
  EXPECT_EQ(ask(server, request(1, 1), s + 3).outcome, RequestOutcome::kRateLimited);
  EXPECT_EQ(ask(server, request(1, 1), s + 4, 8).outcome, RequestOutcome::kServed);  // another requester
  EXPECT_EQ(ask(server, request(1, 1), 2 * s + 1).outcome, RequestOutcome::kServed);  // a new second
}

TEST(RequestServer, StopsAnsweringAfterTheEndOfSessionWindow) {
  const MessageStore store = ten_messages();
  RequestServer server(store, {});
  std::vector<AnswerPacket> answers;
  std::vector<uint8_t> packets;
  const std::vector<uint8_t> r = request(1, 1);
  EXPECT_EQ(server.handle(r.data(), r.size(), 7, 1500, answers, packets, 1000, 500), RequestOutcome::kServed);
  EXPECT_EQ(server.handle(r.data(), r.size(), 7, 1501, answers, packets, 1000, 500),
            RequestOutcome::kAfterEndOfSession);
  EXPECT_TRUE(answers.empty());
}

TEST(RequestServer, DropsAnswersAsSeededAndCountsThem) {
  const MessageStore store = ten_messages();
  RequestPolicy all, half_a, half_b;
  all.drop_ppm = 1000000;
  half_a.drop_ppm = half_b.drop_ppm = 500000;
  half_a.seed = half_b.seed = 42;
  RequestServer always(store, all), none(store, {}), a(store, half_a), b(store, half_b);
  int dropped = 0;
  for (int i = 0; i < 1000; ++i) {
    EXPECT_TRUE(always.drop_answer());
    EXPECT_FALSE(none.drop_answer());
    const bool x = a.drop_answer();
    EXPECT_EQ(x, b.drop_answer());  // the same seed, the same draws
    dropped += x;
  }
  EXPECT_EQ(always.counts().answers_dropped, 1000u);
  EXPECT_GT(dropped, 400);
  EXPECT_LT(dropped, 600);
}
