// One snapshot client's SoupBinTCP conversation, on a stream of five messages
// written here. Every expected packet is worked out from the SoupBinTCP layout
// (2-byte length counting the type, the type, the payload).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/soupbintcp.hpp"
#include "replay/lib/snapshot_server.hpp"

using namespace itchbench;
using namespace itchbench::replay;

namespace {

constexpr uint64_t kSecond = 1'000'000'000;

struct Conversation {
  Conversation() : stream(snapshot_stream(five(), "GLIMPSE")), client(stream, policy, 0) {}
  static std::vector<std::vector<uint8_t>> five() {
    std::vector<std::vector<uint8_t>> m;
    for (uint8_t i = 1; i <= 5; ++i) m.push_back(std::vector<uint8_t>{'P', i});
    return m;
  }
  void send(const std::vector<uint8_t>& bytes, uint64_t now = 0) { client.on_bytes(bytes.data(), bytes.size(), now, out); }
  void login(const std::string& user, const std::string& password, const std::string& session, uint64_t seq) {
    std::vector<uint8_t> b;
    soup::write_login_request(b, {user, password, session, seq});
    send(b);
  }
  // The server's packets so far, as (type, payload) strings; consumes them.
  std::vector<std::string> packets() {
    std::vector<std::string> got;
    soup::StreamReader r;
    r.append(out.data(), out.size());
    out.clear();
    char type;
    const uint8_t* p;
    size_t n;
    while (r.next(type, p, n) == soup::StreamReader::Next::kPacket) got.push_back(std::string(1, type) + std::string(p, p + n));
    return got;
  }
  SnapshotPolicy policy;
  MessageStore stream;
  SnapshotClient client;
  std::vector<uint8_t> out;
};

std::string accepted(uint64_t next) { return "AGLIMPSE   " + std::string(20 - std::to_string(next).size(), ' ') + std::to_string(next); }
std::string data(uint8_t i) { return std::string("SP") + char(i); }

}  // namespace

TEST(SnapshotServer, ALoginGetsTheWholeSnapshotThenTheEndOfSession) {
  Conversation c;
  c.login("itch", "bench", "", 0);
  EXPECT_EQ(c.packets(), std::vector<std::string>{accepted(1)});
  EXPECT_EQ(c.client.on_time(1, 3, c.out), 3u);  // a budget of three
  EXPECT_EQ(c.client.on_time(2, 100, c.out), 2u);
  EXPECT_EQ(c.packets(), (std::vector<std::string>{data(1), data(2), data(3), data(4), data(5), "Z"}));
  EXPECT_EQ(c.client.end(), ClientEnd::kCompleted);
  EXPECT_EQ(c.client.messages_sent(), 5u);
}

TEST(SnapshotServer, ALoginAtASequenceResumesThere) {
  Conversation c;
  c.login("itch", "bench", "GLIMPSE", 4);
  c.client.on_time(1, 100, c.out);
  EXPECT_EQ(c.packets(), (std::vector<std::string>{accepted(4), data(4), data(5), "Z"}));
}

TEST(SnapshotServer, BadLoginsGetSoupBinTcpsRejectionCodes) {
  struct Case {
    const char *user, *password, *session;
    uint64_t seq;
    char code;
  } cases[] = {{"itch", "wrong", "", 1, 'A'},   {"nobody", "bench", "", 1, 'A'},
               {"itch", "bench", "OTHER", 1, 'S'}, {"itch", "bench", "", 7, 'S'}};  // 6 would be the end itself
  for (const Case& k : cases) {
    Conversation c;
    c.login(k.user, k.password, k.session, k.seq);
    EXPECT_EQ(c.packets(), std::vector<std::string>{std::string("J") + k.code});
    EXPECT_EQ(c.client.end(), ClientEnd::kRejected);
    EXPECT_EQ(c.client.rejected_with(), k.code);
  }
  Conversation at_end;
  at_end.login("itch", "bench", "", 6);
  at_end.client.on_time(1, 100, at_end.out);
  EXPECT_EQ(at_end.packets(), (std::vector<std::string>{accepted(6), "Z"}));
}

TEST(SnapshotServer, HeartbeatsWhileIdleAndASilentClientIsDropped) {
  Conversation c;
  c.client.on_time(kSecond, 100, c.out);
  EXPECT_TRUE(c.packets().empty());  // no heartbeat before a login
  c.login("itch", "bench", "", 1);
  c.packets();
  c.client.on_time(0, 0, c.out);  // a budget of none: nothing to send yet
  c.client.on_time(kSecond - 1, 0, c.out);
  EXPECT_TRUE(c.packets().empty());
  c.client.on_time(kSecond, 0, c.out);
  EXPECT_EQ(c.packets(), std::vector<std::string>{"H"});
  std::vector<uint8_t> hb;
  soup::write_packet(hb, soup::kClientHeartbeat);
  c.send(hb, 10 * kSecond);  // the client's heartbeat keeps it alive
  c.client.on_time(24 * kSecond, 0, c.out);
  EXPECT_EQ(c.client.end(), ClientEnd::kOpen);
  c.client.on_time(25 * kSecond, 0, c.out);  // 15 s of silence
  EXPECT_EQ(c.client.end(), ClientEnd::kTimedOut);
  EXPECT_EQ(c.client.client_heartbeats(), 1u);
}

TEST(SnapshotServer, ALogoutEndsTheClient) {
  Conversation c;
  c.login("itch", "bench", "", 1);
  std::vector<uint8_t> bye;
  soup::write_packet(bye, soup::kLogoutRequest);
  c.send(bye);
  EXPECT_EQ(c.client.end(), ClientEnd::kLoggedOut);
}

TEST(SnapshotServer, WhatAClientMayNotSendEndsItWithTheReasonCounted) {
  auto after_login = [](std::vector<uint8_t> bytes, bool login_first) {
    Conversation c;
    if (login_first) c.login("itch", "bench", "", 1);
    c.send(bytes);
    return c.client.malformed() ? std::string(to_string(c.client.malformed_reason())) : std::string("none");
  };
  auto packet = [](char type, const std::string& payload = "") {
    std::vector<uint8_t> b;
    soup::write_packet(b, type, reinterpret_cast<const uint8_t*>(payload.data()), payload.size());
    return b;
  };
  EXPECT_EQ(after_login({0, 0}, false), "empty_packet");
  EXPECT_EQ(after_login({0x10, 0x00, 'U'}, false), "oversize");  // 4 KiB announced
  EXPECT_EQ(after_login(packet('x'), false), "unknown_type");
  EXPECT_EQ(after_login(packet('S', "P"), true), "server_packet_type");
  EXPECT_EQ(after_login(packet('L', "short"), false), "login_length");
  EXPECT_EQ(after_login(packet('L', std::string(26, ' ') + "  12x               "), false), "login_sequence");
  EXPECT_EQ(after_login(packet('U', "hello"), false), "before_login");
  std::vector<uint8_t> again;
  soup::write_login_request(again, {"itch", "bench", "", 1});
  EXPECT_EQ(after_login(again, true), "second_login");
  EXPECT_EQ(after_login(packet('U', "hello"), true), "none");  // after a login: ignored, counted
}
