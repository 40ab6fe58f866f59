// Compressed captures read as a stream: the same records as the plain file,
// across the reader's buffer boundaries, and an error (never a shorter
// capture) where a compressed stream is cut.
#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <vector>

#include "net/pcap_io.hpp"
#include "net/udp_frame.hpp"
#include "protocol/endian.hpp"
#include "source/capture_file.hpp"
#include "test_files.hpp"

using namespace itchbench;
using itchbench::testing::read_bytes;
using itchbench::testing::ScratchDir;
using itchbench::testing::write_bytes;

namespace {

void gzip_file(const std::string& src, const std::string& dst) {
  const auto bytes = read_bytes(src);
  gzFile gz = gzopen(dst.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
  ASSERT_EQ(gzclose(gz), Z_OK);
}

void zstd_file(const std::string& src, const std::string& dst) {
  const auto bytes = read_bytes(src);
  std::vector<uint8_t> out(ZSTD_compressBound(bytes.size()));
  const size_t n = ZSTD_compress(out.data(), out.size(), bytes.data(), bytes.size(), 3);
  ASSERT_FALSE(ZSTD_isError(n));
  out.resize(n);
  write_bytes(dst, out);
}

// An ITCH file of n system-event messages (type 'S', 12 bytes), event code by position.
std::vector<uint8_t> itch_file(size_t n) {
  std::vector<uint8_t> f;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t msg[14] = {0, 12, 'S', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, uint8_t('A' + i % 26)};
    f.insert(f.end(), msg, msg + 14);
  }
  return f;
}

std::vector<uint64_t> positions(const std::string& path, bool* ok, std::string* error) {
  CaptureReader r(path);
  std::vector<uint64_t> out;
  *ok = r.run([](uint64_t, const uint8_t*, size_t) {},
              [&](uint64_t position, const uint8_t* m, size_t) {
                EXPECT_EQ(m[11], uint8_t('A' + (position - 1) % 26));
                out.push_back(position);
              });
  *error = r.error();
  return out;
}

}  // namespace

TEST(CompressedCapture, ItchFileAcrossBufferBoundariesInGzipAndZstd) {
  ScratchDir dir;
  const size_t n = 200000;  // 2.8 MB: several of the stream walker's 1 MiB reads, a message cut at each edge
  write_bytes(dir.file("day.itch"), itch_file(n));
  gzip_file(dir.file("day.itch"), dir.file("day.gz"));
  zstd_file(dir.file("day.itch"), dir.file("day.zst"));
  for (const char* name : {"day.gz", "day.zst"}) {
    EXPECT_EQ(detect_capture(dir.file(name)).kind, CaptureKind::kItchFile);
    bool ok = false;
    std::string error;
    const auto pos = positions(dir.file(name), &ok, &error);
    ASSERT_TRUE(ok) << name << ": " << error;
    ASSERT_EQ(pos.size(), n) << name;
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(pos[i], i + 1) << name;
  }
  EXPECT_EQ(detect_capture(dir.file("day.gz")).compression, Compression::kGzip);
  EXPECT_EQ(detect_capture(dir.file("day.zst")).compression, Compression::kZstd);
}

TEST(CompressedCapture, PcapInGzipGivesTheSameDatagrams) {
  ScratchDir dir;
  {
    net::PcapWriter w(dir.file("c.pcap"), 1);
    for (uint8_t i = 0; i < 100; ++i) {
      const std::vector<uint8_t> payload(20 + i, i);
      std::vector<uint8_t> frame(2048);
      frame.resize(net::build_udp_frame(frame.data(), frame.size(), net::Endpoints{}, i, payload.data(), payload.size()));
      w.write(1000u + i, frame.data(), frame.size());
    }
    w.commit();
  }
  gzip_file(dir.file("c.pcap"), dir.file("c.pcap.gz"));
  std::vector<std::vector<uint8_t>> plain, packed;
  for (auto* out : {&plain, &packed}) {
    CaptureReader r(dir.file(out == &plain ? "c.pcap" : "c.pcap.gz"));
    ASSERT_TRUE(r.run([&](uint64_t, const uint8_t* p, size_t len) { out->emplace_back(p, p + len); },
                      [](uint64_t, const uint8_t*, size_t) {}))
        << r.error();
  }
  ASSERT_EQ(plain.size(), 100u);
  EXPECT_EQ(plain, packed);
}

TEST(CompressedCapture, ACutStreamIsAnErrorNotAShorterCapture) {
  ScratchDir dir;
  write_bytes(dir.file("day.itch"), itch_file(200000));
  gzip_file(dir.file("day.itch"), dir.file("day.gz"));
  zstd_file(dir.file("day.itch"), dir.file("day.zst"));
  for (const char* name : {"day.gz", "day.zst"}) {
    auto bytes = read_bytes(dir.file(name));
    bytes.resize(bytes.size() / 2);
    write_bytes(dir.file(std::string("cut-") + name), bytes);
    bool ok = true;
    std::string error;
    const auto pos = positions(dir.file(std::string("cut-") + name), &ok, &error);
    EXPECT_FALSE(ok) << name;
    EXPECT_LT(pos.size(), 200000u) << name;
    EXPECT_FALSE(error.empty()) << name;
  }
}

// gzip allows a file of several members (what `cat a.gz b.gz` makes): read as their bytes one after the other.
// A member whose CRC-32 does not match its bytes, or bytes after the last member that are none, are errors.
TEST(CompressedCapture, GzipMembersAreReadInTurnAndWhatFollowsThemIsChecked) {
  ScratchDir dir;
  const auto day = itch_file(100000);
  const size_t half = 14 * 40000;  // a whole message's end
  write_bytes(dir.file("a.itch"), {day.begin(), day.begin() + long(half)});
  write_bytes(dir.file("b.itch"), {day.begin() + long(half), day.end()});
  gzip_file(dir.file("a.itch"), dir.file("a.gz"));
  gzip_file(dir.file("b.itch"), dir.file("b.gz"));
  auto both = read_bytes(dir.file("a.gz"));
  const auto b = read_bytes(dir.file("b.gz"));
  both.insert(both.end(), b.begin(), b.end());
  write_bytes(dir.file("both.gz"), both);
  bool ok = false;
  std::string error;
  const auto pos = positions(dir.file("both.gz"), &ok, &error);
  EXPECT_TRUE(ok) << error;
  ASSERT_EQ(pos.size(), 100000u);
  EXPECT_EQ(pos.back(), 100000u);

  auto garbage = both;  // bytes after the last member that are not a gzip member
  for (uint8_t c : {'n', 'o', 't', ' ', 'g', 'z', 'i', 'p'}) garbage.push_back(c);
  write_bytes(dir.file("garbage.gz"), garbage);
  positions(dir.file("garbage.gz"), &ok, &error);
  EXPECT_FALSE(ok);
  EXPECT_FALSE(error.empty());

  auto crc = both;  // the first member's CRC-32 (its trailer's first 4 bytes) changed
  const size_t a_size = read_bytes(dir.file("a.gz")).size();
  crc[a_size - 8] ^= 0x01;
  write_bytes(dir.file("crc.gz"), crc);
  const auto before_bad = positions(dir.file("crc.gz"), &ok, &error);
  EXPECT_FALSE(ok);
  EXPECT_LE(before_bad.size(), 40000u);  // nothing of the second member is handed on
}

// A compressed ITCH file is read ahead too, megabyte by megabyte: the look-ahead
// sees every message once, in order, each kLookAheadMessages before it is
// handed over except the last few of each of the walker's buffers.
TEST(CompressedCapture, AnItchFileIsReadAheadAcrossTheWalkersBuffers) {
  ScratchDir dir;
  const size_t n = 200000;  // 2.8 MB: three of the stream walker's 1 MiB buffers
  write_bytes(dir.file("day.itch"), itch_file(n));
  gzip_file(dir.file("day.itch"), dir.file("day.gz"));
  CaptureReader r(dir.file("day.gz"));
  size_t ahead = 0, handed = 0, unseen = 0, short_lead = 0;
  ASSERT_TRUE(r.run([](uint64_t, const uint8_t*, size_t) {},
                    [&](uint64_t position, const uint8_t*, size_t) {
                      ++handed;
                      if (ahead < position) ++unseen;
                      if (ahead < position + CaptureReader::kLookAheadMessages) ++short_lead;
                    },
                    [&](const uint8_t* m, size_t) {
                      EXPECT_EQ(m[11], uint8_t('A' + ahead % 26)) << "look-ahead message " << ahead;
                      ++ahead;
                    }))
      << r.error();
  EXPECT_EQ(handed, n);
  EXPECT_EQ(ahead, n);
  EXPECT_EQ(unseen, 0u) << "messages handed over before the look-ahead saw them";
  EXPECT_LE(short_lead, 3u * CaptureReader::kLookAheadMessages);
}
