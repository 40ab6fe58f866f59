#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/serial_line.hpp"
#include "protocol/itch.hpp"

// Its names kept to itself: the test binary is compiled as unity sources (CMakeLists.txt).
namespace serial_line_test {

using namespace itchbench;
using namespace itchbench::serial;

namespace {

std::string line_of(uint64_t seq, uint64_t t, const std::vector<uint8_t>& msg) {
  uint8_t buf[kMaxLine];
  const size_t n = encode_line(buf, seq, t, msg.empty() ? nullptr : msg.data(), msg.size());
  return std::string(reinterpret_cast<char*>(buf), n);
}

struct Collected {
  std::vector<std::tuple<uint64_t, uint64_t, std::vector<uint8_t>>> lines;
  std::vector<uint64_t> ends;
};

Collected feed(LineReader& r, const std::string& bytes, size_t piece = 1000) {
  Collected c;
  for (size_t off = 0; off < bytes.size(); off += piece) {
    const std::string part = bytes.substr(off, piece);
    r.feed(reinterpret_cast<const uint8_t*>(part.data()), part.size(),
           [&](uint64_t seq, uint64_t t, const uint8_t* m, size_t n) { c.lines.emplace_back(seq, t, std::vector<uint8_t>(m, m + n)); },
           [&](uint64_t seq) { c.ends.push_back(seq); });
  }
  return c;
}

}  // namespace

TEST(SerialLine, KnownLine) {
  // XOR of the bytes of "7,99,0aff" is 0x66; of "8,100,END" 0x46 (checked with Python)
  EXPECT_EQ(line_of(7, 99, {0x0a, 0xff}), "$7,99,0aff*66\n");
  EXPECT_EQ(line_of(8, 100, {}), "$8,100,END*46\n");
}

TEST(SerialLine, RoundTripInAnyPieces) {
  itch::AddOrder a;
  a.order_ref = 42;
  a.stock = itch::alpha8::from("AAPL");
  std::vector<uint8_t> msg(36);
  a.encode(msg.data());
  std::string stream;
  for (uint64_t i = 1; i <= 50; ++i) stream += line_of(i, 1000 * i, msg);
  stream += line_of(51, 51000, {});
  for (size_t piece : {1, 3, 7, 64, 4096}) {
    LineReader r;
    const Collected c = feed(r, stream, piece);
    ASSERT_EQ(c.lines.size(), 50u) << piece;
    EXPECT_EQ(std::get<0>(c.lines[9]), 10u);
    EXPECT_EQ(std::get<1>(c.lines[9]), 10000u);
    EXPECT_EQ(std::get<2>(c.lines[9]), msg);
    EXPECT_EQ(c.ends, std::vector<uint64_t>{51});
    EXPECT_EQ(r.counters().rejected_lines(), 0u);
    EXPECT_EQ(r.counters().garbage_bytes, 0u);
  }
}

TEST(SerialLine, GarbageCorruptionAndOverlongLinesAreCountedAndSkipped) {
  const std::vector<uint8_t> msg = {'S', 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 'O'};
  std::string good = line_of(1, 5, msg);
  std::string bad_ck = line_of(2, 5, msg);
  bad_ck[bad_ck.size() - 2] ^= 1;                       // checksum digit
  std::string bad_hex = line_of(3, 5, msg);
  bad_hex[10] = 'z';                                    // not a hex digit
  std::string odd = "$4,5,abc*00\n";                    // odd number of hex digits
  std::string overlong = "$" + std::string(500, '1') + "\n";
  std::string no_star = "$5,5,0a\n";
  std::string noise = "\x01\x02garbage!!";
  const std::string stream = noise + good + bad_ck + bad_hex + odd + overlong + no_star + noise + line_of(6, 5, msg);
  LineReader r;
  const Collected c = feed(r, stream, 5);
  ASSERT_EQ(c.lines.size(), 2u);
  EXPECT_EQ(std::get<0>(c.lines[0]), 1u);
  EXPECT_EQ(std::get<0>(c.lines[1]), 6u);  // resynchronised after every bad line
  EXPECT_EQ(r.counters().bad_checksum, 1u);
  EXPECT_EQ(r.counters().malformed, 3u);
  EXPECT_EQ(r.counters().overlong, 1u);
  EXPECT_EQ(r.counters().garbage_bytes, 2 * noise.size());
}

TEST(SerialLine, NumbersThatOverflowAreMalformed) {
  LineReader r;
  feed(r, "$99999999999999999999999,1,0a*00\n");
  EXPECT_EQ(r.counters().malformed, 1u);
}

// The sequence after a line must exist: 2^64 - 1 would wrap the tracker.
TEST(SerialLine, SequenceTwoToTheSixtyFourMinusOneIsMalformed) {
  LineReader r;
  const Collected c = feed(r, line_of(UINT64_MAX, 5, {'S'}) + line_of(UINT64_MAX - 1, 5, {'S'}));
  ASSERT_EQ(c.lines.size(), 1u);
  EXPECT_EQ(std::get<0>(c.lines[0]), UINT64_MAX - 1);
  EXPECT_EQ(r.counters().malformed, 1u);
}

}  // namespace serial_line_test
