// SoupBinTCP framing and login fields, against byte strings written by hand
// from the protocol's layout (2-byte big-endian length counting the type
// byte, then the type; alpha fields left-justified, numeric right-justified).
#include <gtest/gtest.h>

#include <string>

#include "protocol/soupbintcp.hpp"

using namespace itchbench;

namespace {
std::vector<uint8_t> bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }
}  // namespace

TEST(SoupBinTcp, WritesALoginAcceptedAsTheSpecLaysItOut) {
  std::vector<uint8_t> out;
  soup::write_login_accepted(out, "GLIMPSE", 42);
  const std::string want = std::string("\x00\x1f", 2) + "A" + "GLIMPSE   " + std::string(18, ' ') + "42";
  EXPECT_EQ(std::string(out.begin(), out.end()), want);
}

TEST(SoupBinTcp, ParsesALoginRequestWithOrWithoutItsHeartbeatTimeout) {
  const std::string body = "user01" "secret    " "    GLIMPS" + std::string(19, ' ') + "7";
  soup::LoginRequest r;
  ASSERT_EQ(soup::parse_login_request(bytes(body).data(), body.size(), r), soup::LoginParse::kOk);
  EXPECT_EQ(r.username, "user01");
  EXPECT_EQ(r.password, "secret");
  EXPECT_EQ(r.session, "GLIMPS");
  EXPECT_EQ(r.sequence, 7u);
  const std::string with_timeout = body + "15000";
  EXPECT_EQ(soup::parse_login_request(bytes(with_timeout).data(), with_timeout.size(), r), soup::LoginParse::kOk);
  EXPECT_EQ(soup::parse_login_request(bytes(body).data(), body.size() - 1, r), soup::LoginParse::kWrongLength);
}

TEST(SoupBinTcp, ASequenceFieldIsDigitsBetweenSpacesOrNothing) {
  uint64_t v = 99;
  EXPECT_TRUE(soup::parse_numeric(bytes("   12 ").data(), 6, v));
  EXPECT_EQ(v, 12u);
  EXPECT_TRUE(soup::parse_numeric(bytes("      ").data(), 6, v));
  EXPECT_EQ(v, 0u);
  EXPECT_FALSE(soup::parse_numeric(bytes(" 1 2  ").data(), 6, v));
  EXPECT_FALSE(soup::parse_numeric(bytes("  -1  ").data(), 6, v));
  EXPECT_FALSE(soup::parse_numeric(bytes("99999999999999999999").data(), 20, v));  // past 2^64 - 1
  EXPECT_TRUE(soup::parse_numeric(bytes("18446744073709551615").data(), 20, v));
  EXPECT_EQ(v, UINT64_MAX);
}

TEST(SoupBinTcp, AStreamIsCutIntoPacketsWhateverTheReadsAre) {
  std::vector<uint8_t> wire;
  soup::write_packet(wire, soup::kClientHeartbeat);
  soup::LoginRequest login{"u", "p", "", 1};
  soup::write_login_request(wire, login);
  soup::write_packet(wire, soup::kLogoutRequest);
  soup::StreamReader reader;
  std::string types;
  for (uint8_t b : wire) {  // one byte a read: the worst a TCP stream can do
    reader.append(&b, 1);
    char type;
    const uint8_t* payload;
    size_t len;
    while (reader.next(type, payload, len) == soup::StreamReader::Next::kPacket) {
      types += type;
      if (type == soup::kLoginRequest) {
        soup::LoginRequest back;
        ASSERT_EQ(soup::parse_login_request(payload, len, back), soup::LoginParse::kOk);
        EXPECT_EQ(back.username, "u");
        EXPECT_EQ(back.sequence, 1u);
      }
    }
  }
  EXPECT_EQ(types, "RLO");
  EXPECT_EQ(reader.buffered(), 0u);
}

TEST(SoupBinTcp, AnEmptyOrOversizePacketBreaksTheStream) {
  char type;
  const uint8_t* payload;
  size_t len;
  soup::StreamReader empty;
  const uint8_t zero[2] = {0, 0};
  empty.append(zero, 2);
  EXPECT_EQ(empty.next(type, payload, len), soup::StreamReader::Next::kEmptyPacket);
  soup::StreamReader capped(100);
  const uint8_t big[3] = {0x01, 0x00, 'U'};  // 256 bytes announced
  capped.append(big, 3);
  EXPECT_EQ(capped.next(type, payload, len), soup::StreamReader::Next::kOversize);
}
