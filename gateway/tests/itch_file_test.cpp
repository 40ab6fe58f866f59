#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "protocol/itch_file.hpp"
#include "test_files.hpp"
#include "util/mapped_file.hpp"

// Its names kept to itself: the test binary is compiled as unity sources (CMakeLists.txt).
namespace itch_file_test {

using namespace itchbench;
using namespace itchbench::itch;

namespace {
void append(std::vector<uint8_t>& out, const uint8_t* m, uint16_t len) {
  out.push_back(uint8_t(len >> 8));
  out.push_back(uint8_t(len));
  out.insert(out.end(), m, m + len);
}
std::vector<uint8_t> two_messages() {
  std::vector<uint8_t> f;
  uint8_t buf[kMaxMessageLength];
  SystemEvent s;
  s.event_code = 'O';
  s.encode(buf);
  append(f, buf, 12);
  OrderDelete d;
  d.order_ref = 7;
  d.encode(buf);
  append(f, buf, 19);
  return f;
}
}  // namespace

TEST(ItchFile, WalksMessagesWithPositions) {
  const auto f = two_messages();
  std::vector<std::pair<uint64_t, char>> seen;
  FileError err;
  EXPECT_TRUE(walk_length_prefixed(f.data(), f.size(), [&](uint64_t pos, const uint8_t* m, size_t) {
    seen.push_back({pos, char(m[0])});
  }, &err));
  EXPECT_EQ(seen, (std::vector<std::pair<uint64_t, char>>{{1, 'S'}, {2, 'D'}}));
  EXPECT_TRUE(looks_like_itch_file(f.data(), f.size()));
}

TEST(ItchFile, AMalformedMessageThatStillFramesTheFileIsHandedOn) {
  // The spec fixes each type's length; a prefix that frames bytes of the wrong length or an unknown type
  // still leads to the next prefix, so the walk goes on and the decoder counts the message as rejected.
  std::vector<std::pair<uint64_t, size_t>> seen;
  auto record = [&](uint64_t pos, const uint8_t*, size_t n) { seen.push_back({pos, n}); };
  FileError err;
  auto f = two_messages();
  f[14 + 1] = 20;  // the second prefix (offset 14) says 20 bytes; 'D' is 19
  f.push_back(0);  // and 20 bytes follow: it ends the file
  EXPECT_TRUE(walk_length_prefixed(f.data(), f.size(), record, &err)) << err.reason;
  EXPECT_EQ(seen, (std::vector<std::pair<uint64_t, size_t>>{{1, 12}, {2, 20}}));
  EXPECT_NE(validate(f.data() + 16, 20), DecodeStatus::kOk);

  seen.clear();
  f = two_messages();
  f[2] = 'z';  // the first message's type is unknown; the 'D' after it frames
  EXPECT_TRUE(walk_length_prefixed(f.data(), f.size(), record, &err)) << err.reason;
  EXPECT_EQ(seen, (std::vector<std::pair<uint64_t, size_t>>{{1, 12}, {2, 19}}));
}

TEST(ItchFile, FramingLostIsAnErrorWithOffset) {
  // A prefix whose message does not validate and is followed by one that frames nothing: from there on the
  // bytes cannot be trusted to be aligned.
  auto f = two_messages();
  f[0] = 0;
  f[1] = 13;  // the first prefix says 13: the 'S' message plus the first byte of the next prefix
  FileError err;
  int delivered = 0;
  EXPECT_FALSE(walk_length_prefixed(f.data(), f.size(), [&](uint64_t, const uint8_t*, size_t) { ++delivered; }, &err));
  EXPECT_EQ(delivered, 0);
  EXPECT_EQ(err.offset, 0u);
  EXPECT_EQ(err.message, 1u);
  EXPECT_NE(err.reason.find("framing lost: length does not match message type: type 'S' is 12 bytes, prefix says 13"),
            std::string::npos) << err.reason;
}

TEST(ItchFile, TruncationAndOverrun) {
  FileError err;
  auto noop = [](uint64_t, const uint8_t*, size_t) {};
  auto f = two_messages();
  f.push_back(0x00);  // half a length prefix
  EXPECT_FALSE(walk_length_prefixed(f.data(), f.size(), noop, &err));
  EXPECT_EQ(err.offset, f.size() - 1);
  EXPECT_NE(err.reason.find("truncated length prefix"), std::string::npos);

  f = two_messages();
  f.resize(f.size() - 5);  // last message cut short
  EXPECT_FALSE(walk_length_prefixed(f.data(), f.size(), noop, &err));
  EXPECT_NE(err.reason.find("runs past the end"), std::string::npos);
}

TEST(ItchFile, ContentSniffing) {
  const uint8_t text[] = "hello, this is not ITCH";
  EXPECT_FALSE(looks_like_itch_file(text, sizeof text));
  EXPECT_FALSE(looks_like_itch_file(text, 0));
}

TEST(ItchFile, AWalkThatReleasesItsMappingKeepsAWindowResidentNotTheFile) {
  // 256 MiB of system events, walked with advance_to as the gateway walks: resident memory must grow by
  // far less than the file (a walk that kept every page would grow by all of it).
  const std::string path = ::testing::TempDir() + "itchbench-release.itch";
  {
    std::vector<uint8_t> block;
    uint8_t buf[kMaxMessageLength];
    SystemEvent s;
    s.event_code = 'O';
    s.encode(buf);
    while (block.size() < (size_t(1) << 20)) append(block, buf, 12);
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    for (int i = 0; i < 256; ++i) ASSERT_EQ(std::fwrite(block.data(), 1, block.size(), f), block.size());
    std::fclose(f);
  }
  using itchbench::testing::resident_kib;
  const uint64_t before = resident_kib();
  uint64_t peak = 0, messages = 0;
  {
    MappedFile file(path);
    ASSERT_TRUE(walk_length_prefixed(file.data(), file.size(), [&](uint64_t, const uint8_t* m, size_t) {
      if (++messages % (1 << 20) == 0) peak = std::max(peak, resident_kib());
      file.advance_to(m);
    }, nullptr));
  }
  std::remove(path.c_str());
  EXPECT_GT(messages, 19000000u);
  EXPECT_LT(peak - before, uint64_t(40) << 10) << "resident grew by " << (peak - before) << " kB";  // two 8 MiB windows
}

namespace {
// Every way a walk can go on the two-message file: whole, and broken in each way the plain walk reports.
std::vector<std::vector<uint8_t>> walk_cases() {
  std::vector<std::vector<uint8_t>> cases{two_messages()};
  auto f = two_messages();
  f[14 + 1] = 20;  // wrong length
  f.push_back(0);
  cases.push_back(f);
  f = two_messages();
  f[2] = 'z';  // unknown type, first message
  cases.push_back(f);
  f = two_messages();
  f.push_back(0x00);  // half a prefix
  cases.push_back(f);
  f = two_messages();
  f.resize(f.size() - 5);  // cut short
  cases.push_back(f);
  f = two_messages();
  const uint8_t tail[3] = {0x00, 0x05, 'S'};  // says 5 bytes, holds 1
  f.insert(f.end(), tail, tail + 3);
  cases.push_back(f);
  return cases;
}
}  // namespace

TEST(ItchFile, TheLookAheadWalkHandsOnWhatThePlainWalkDoesAndFailsTheSame) {
  for (int distance : {0, 1, 3, 8}) {
    for (const auto& f : walk_cases()) {
      std::vector<std::pair<uint64_t, const uint8_t*>> plain, ahead_walk;
      std::vector<const uint8_t*> looked;  // in order
      FileError plain_err, ahead_err;
      const bool plain_ok = walk_length_prefixed(
          f.data(), f.size(), [&](uint64_t pos, const uint8_t* m, size_t) { plain.push_back({pos, m}); }, &plain_err);
      const bool ahead_ok = walk_length_prefixed(
          f.data(), f.size(),
          [&](uint64_t pos, const uint8_t* m, size_t) {
            ahead_walk.push_back({pos, m});
            // Seen by the look-ahead first, `distance` messages ahead where there are that many.
            EXPECT_GE(looked.size(), pos);
            if (looked.size() >= pos) {
              EXPECT_EQ(looked[pos - 1], m);
            }
          },
          &ahead_err, [&](const uint8_t* m, size_t) { looked.push_back(m); }, distance);
      EXPECT_EQ(ahead_ok, plain_ok);
      EXPECT_EQ(ahead_walk, plain);
      EXPECT_EQ(ahead_err.offset, plain_err.offset);
      EXPECT_EQ(ahead_err.message, plain_err.message);
      EXPECT_EQ(ahead_err.reason, plain_err.reason);
    }
  }
}

TEST(ItchFile, TheLookAheadRunsTheGivenDistanceAhead) {
  // Three system events: at distance 2, when message 1 is handed on the look-ahead has seen 3 (all there are).
  std::vector<uint8_t> f;
  uint8_t buf[kMaxMessageLength];
  SystemEvent s;
  s.event_code = 'O';
  s.encode(buf);
  for (int i = 0; i < 3; ++i) append(f, buf, 12);
  std::vector<size_t> looked_when_handed;
  size_t looked = 0;
  EXPECT_TRUE(walk_length_prefixed(
      f.data(), f.size(), [&](uint64_t, const uint8_t*, size_t) { looked_when_handed.push_back(looked); }, nullptr,
      [&](const uint8_t*, size_t) { ++looked; }, 2));
  EXPECT_EQ(looked_when_handed, (std::vector<size_t>{3, 3, 3}));
}

}  // namespace itch_file_test
