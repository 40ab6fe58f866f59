#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "protocol/itch.hpp"
#include "patterned_message.hpp"

// Its names kept to itself: the test binary is compiled as unity sources (CMakeLists.txt).
namespace itch_test {

using namespace itchbench;
using namespace itchbench::itch;
using itchbench::testing::patterned;

namespace {

// What decode() made of one message: the view it called with, its header, and its value encoded again. One
// visitor for every message's test: instantiated once a view type (a visitor in each Msg's test was 23 x 23
// lambdas, and made this file the slowest of the build).
struct Seen {
  int calls = 0;
  char type = 0;
  uint16_t locate = 0;
  uint64_t timestamp = 0;
  std::vector<uint8_t> value_encoded;
  DecodeStatus status = DecodeStatus::kOk;
};

Seen decoded(const std::vector<uint8_t>& wire) {
  Seen seen;
  seen.status = decode(wire.data(), wire.size(), [&](auto view) {
    using V = decltype(view);
    ++seen.calls;
    seen.type = V::kType;
    seen.locate = view.stock_locate();
    seen.timestamp = view.timestamp();
    seen.value_encoded.resize(V::Value::kLength);
    view.value().encode(seen.value_encoded.data());
  });
  return seen;
}

template <class Msg>
void expect_round_trip() {
  SCOPED_TRACE(std::string(1, Msg::kType));
  for (uint8_t salt : {0, 1, 0x80, 0xFF}) {
    const std::vector<uint8_t> wire = patterned(Msg::kType, Msg::kLength, salt);
    // bytes -> value -> bytes is the identity when every byte is a field
    const Msg value = Msg::decode(wire.data());
    std::vector<uint8_t> again(Msg::kLength);
    value.encode(again.data());
    EXPECT_EQ(wire, again);
    // The view and the value agree: the header, and every field (the view's value encodes to the same bytes).
    const Seen seen = decoded(wire);
    EXPECT_EQ(seen.status, DecodeStatus::kOk);
    EXPECT_EQ(seen.calls, 1);
    EXPECT_EQ(seen.type, Msg::kType);
    EXPECT_EQ(seen.locate, value.stock_locate);
    EXPECT_EQ(seen.timestamp, value.timestamp);
    EXPECT_EQ(seen.value_encoded, wire);
  }
}

}  // namespace

TEST(Itch, LengthsMatchTheSpec) {
  const std::pair<char, size_t> spec[] = {
      {'S', 12}, {'R', 39}, {'H', 25}, {'Y', 20}, {'L', 26}, {'V', 35}, {'W', 12}, {'K', 28},
      {'J', 35}, {'h', 21}, {'A', 36}, {'F', 40}, {'E', 31}, {'C', 36}, {'X', 23}, {'D', 19},
      {'U', 35}, {'P', 44}, {'Q', 40}, {'B', 19}, {'I', 50}, {'N', 20}, {'O', 48}};
  ASSERT_EQ(std::size(spec), kTypeCount);
  std::set<size_t> indices;
  for (auto [type, len] : spec) {
    EXPECT_EQ(message_length(type), len) << type;
    indices.insert(type_index(type));
  }
  EXPECT_EQ(indices.size(), kTypeCount);  // dense and distinct
  for (int b = 0; b < 256; ++b) {
    bool listed = false;
    for (auto [type, len] : spec) listed |= uint8_t(type) == b;
    EXPECT_EQ(is_known_type(char(b)), listed) << b;
  }
}

TEST(Itch, EveryTypeRoundTrips) {
#define ITCH_MESSAGE(Name, type_char, length, FIELDS) expect_round_trip<Name>();
#include "protocol/itch_messages.def"
#undef ITCH_MESSAGE
}

// Byte vectors assembled by hand from the ITCH 5.0 specification.
TEST(Itch, AddOrderKnownBytes) {
  const uint8_t wire[36] = {
      'A',
      0x00, 0x0D,                          // stock locate 13
      0x00, 0x00,                          // tracking 0
      0x1F, 0x1A, 0xCE, 0xD9, 0xF0, 0x00,  // 34,200,000,000,000 ns = 09:30:00
      0, 0, 0, 0, 0, 0, 0x30, 0x39,        // order ref 12345
      'B',
      0x00, 0x00, 0x01, 0x2C,              // 300 shares
      'A', 'A', 'P', 'L', ' ', ' ', ' ', ' ',
      0x00, 0x16, 0xE3, 0x60,              // 1,500,000 = $150.0000
  };
  AddOrder expected;
  expected.stock_locate = 13;
  expected.timestamp = 34200000000000ull;
  expected.order_ref = 12345;
  expected.side = 'B';
  expected.shares = 300;
  expected.stock = alpha8::from("AAPL");
  expected.price = 1500000;
  EXPECT_EQ(AddOrder::decode(wire), expected);
  uint8_t out[36];
  expected.encode(out);
  EXPECT_EQ(0, std::memcmp(out, wire, 36));
  EXPECT_EQ(AddOrderView(wire).stock().trimmed(), "AAPL");
}

TEST(Itch, ASymbolIsShownAsOneLineOfPrintableText) {
  // The spec's Alpha fields are printable ASCII, right-padded with spaces: shown as they are, trimmed. A damaged
  // capture's bytes (a newline, a carriage return, a NUL, not ASCII) and the backslash that escapes them are written
  // \xNN, so that the name never breaks the line or the CSV row it is written in.
  EXPECT_EQ(alpha8::from("AAPL").printable(), "AAPL");
  EXPECT_EQ(alpha8::from("BRK A").printable(), "BRK A");
  EXPECT_EQ(alpha8::from("A,B\"C\n").printable(), "A,B\"C\\x0A");
  EXPECT_EQ(alpha8::from(std::string_view("x\ty\rz\0\\\xFF", 8)).printable(), "x\\x09y\\x0Dz\\x00\\x5C\\xFF");
  EXPECT_EQ(alpha8::from("        ").printable(), "");
}

TEST(Itch, TheHeaderTimestampIsTheSixBytesAfterTheTrackingNumber) {
  // The spec's header: type, locate (2), tracking number (2), timestamp (6, ns since midnight). A tracking number of
  // all ones and the largest timestamp of a day show that neither spills into the other.
  const uint8_t header[11] = {'D', 0x00, 0x0D, 0xFF, 0xFF, 0x4E, 0x94, 0x91, 0x4E, 0xFF, 0xFF};
  EXPECT_EQ(header_timestamp(header), 86399999999999ull);  // 0x4E94914EFFFF: 23:59:59.999999999
  const uint8_t open[11] = {'A', 0x00, 0x0D, 0x12, 0x34, 0x1F, 0x1A, 0xCE, 0xD9, 0xF0, 0x00};
  EXPECT_EQ(header_timestamp(open), 34200000000000ull);  // 09:30:00
}

TEST(Itch, OrderReplaceKnownBytes) {
  const uint8_t wire[35] = {
      'U', 0x00, 0x02, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x03, 0xE8,  // locate 2, tracking 7, ts 1000
      0, 0, 0, 0, 0, 0, 0, 0x01,                                      // original ref 1
      0, 0, 0, 0, 0, 0, 0, 0x02,                                      // new ref 2
      0x00, 0x00, 0x00, 0x64,                                         // 100 shares
      0x00, 0x01, 0x86, 0xA0,                                         // $10.0000
  };
  const OrderReplaceView v(wire);
  EXPECT_EQ(v.stock_locate(), 2);
  EXPECT_EQ(v.tracking_number(), 7);
  EXPECT_EQ(v.timestamp(), 1000u);
  EXPECT_EQ(v.original_order_ref(), 1u);
  EXPECT_EQ(v.new_order_ref(), 2u);
  EXPECT_EQ(v.shares(), 100u);
  EXPECT_EQ(v.price(), 100000u);
}

TEST(Itch, NoiiKnownBytes) {
  Noii n;
  n.paired_shares = 0x0102030405060708ull;
  n.imbalance_direction = 'S';
  n.stock = alpha8::from("SPY");
  n.far_price = 1;
  n.cross_type = 'O';
  n.price_variation_indicator = 'L';
  uint8_t out[50];
  n.encode(out);
  EXPECT_EQ(out[0], 'I');
  EXPECT_EQ(out[11], 0x01);
  EXPECT_EQ(out[18], 0x08);
  EXPECT_EQ(out[27], 'S');
  EXPECT_EQ(0, std::memcmp(out + 28, "SPY     ", 8));
  EXPECT_EQ(out[39], 0x01);
  EXPECT_EQ(out[48], 'O');
  EXPECT_EQ(out[49], 'L');
}

TEST(Itch, TimestampUsesAllSixBytes) {
  SystemEvent s;
  s.timestamp = 0xFFFFFFFFFFFFull;  // largest 48-bit value
  s.event_code = 'O';
  uint8_t out[12];
  s.encode(out);
  EXPECT_EQ(SystemEvent::decode(out).timestamp, 0xFFFFFFFFFFFFull);
}

TEST(Itch, RejectsUnknownTypeWrongLengthAndEmpty) {
  int calls = 0;
  auto count = [&](auto) { ++calls; };
  const uint8_t unknown[12] = {'Z'};
  EXPECT_EQ(decode(unknown, 12, count), DecodeStatus::kUnknownType);
  EXPECT_EQ(decode(unknown, 0, count), DecodeStatus::kEmpty);
  for (const TypeInfo& t : kTypes) {
    std::vector<uint8_t> b = patterned(t.type, 64, 3);
    EXPECT_EQ(decode(b.data(), t.length - 1, count), DecodeStatus::kWrongLength) << t.type;
    EXPECT_EQ(decode(b.data(), t.length + 1u, count), DecodeStatus::kWrongLength) << t.type;
    EXPECT_EQ(decode(b.data(), 1, count), DecodeStatus::kWrongLength) << t.type;
    EXPECT_EQ(validate(b.data(), t.length), DecodeStatus::kOk) << t.type;
  }
  EXPECT_EQ(calls, 0);  // no view was made for any bad message
}

}  // namespace itch_test
