// The read-ahead stream must read exactly what the stream under it reads:
// the same bytes, the same end, and an error where that stream's error is.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "source/read_ahead.hpp"

using namespace itchbench;

namespace {

// A stream over `bytes` that hands out at most `chunk` bytes a read and fails
// (EIO) once `fail_at` bytes are out; records that it was closed.
struct Source {
  std::vector<uint8_t> bytes;
  size_t chunk = 4096;
  size_t fail_at = SIZE_MAX;
  size_t at = 0;
  bool* closed = nullptr;
};

ssize_t source_read(void* cookie, char* buf, size_t size) {
  auto* s = static_cast<Source*>(cookie);
  if (s->at >= s->fail_at) {
    errno = EIO;
    return -1;
  }
  const size_t n = std::min({size, s->chunk, s->bytes.size() - s->at, s->fail_at - s->at});
  if (n > 0) std::memcpy(buf, s->bytes.data() + s->at, n);
  s->at += n;
  return ssize_t(n);
}

int source_close(void* cookie) {
  auto* s = static_cast<Source*>(cookie);
  if (s->closed) *s->closed = true;
  delete s;
  return 0;
}

FILE* open_source(Source* s) {
  return fopencookie(s, "r", cookie_io_functions_t{source_read, nullptr, nullptr, source_close});
}

std::vector<uint8_t> random_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(rng());
  return v;
}

// Reads f to its end in reads of varying sizes; sets failed when it ended in an error.
std::vector<uint8_t> read_all(FILE* f, bool& failed) {
  std::vector<uint8_t> out;
  std::vector<uint8_t> buf(300000);
  for (size_t i = 0;; ++i) {
    const size_t want = 1 + (i * 7919) % buf.size();
    const size_t got = std::fread(buf.data(), 1, want, f);
    out.insert(out.end(), buf.data(), buf.data() + got);
    if (got < want) break;
  }
  failed = std::ferror(f) != 0;
  return out;
}

}  // namespace

TEST(ReadAhead, ReadsTheSameBytesAndEndAsTheStreamUnderIt) {
  // More than the thread's four 1 MiB blocks, and not a whole number of them, so the blocks are reused.
  for (const size_t size : {size_t(0), size_t(1), size_t(1) << 20, (size_t(11) << 20) / 2 + 17}) {
    SCOPED_TRACE(size);
    auto* s = new Source;
    s->bytes = random_bytes(size, unsigned(size));
    const std::vector<uint8_t> expected = s->bytes;
    FILE* f = read_ahead(open_source(s));
    bool failed = true;
    EXPECT_EQ(read_all(f, failed), expected);
    EXPECT_FALSE(failed);
    EXPECT_TRUE(std::feof(f));
    std::fclose(f);
  }
}

TEST(ReadAhead, AnErrorComesAfterTheBytesBeforeIt) {
  for (const size_t fail_at : {size_t(0), size_t(5000), (size_t(3) << 20) + 123}) {
    SCOPED_TRACE(fail_at);
    auto* s = new Source;
    s->bytes = random_bytes(size_t(6) << 20, 7);
    s->fail_at = fail_at;
    const std::vector<uint8_t> before(s->bytes.begin(), s->bytes.begin() + ptrdiff_t(fail_at));
    FILE* f = read_ahead(open_source(s));
    bool failed = false;
    EXPECT_EQ(read_all(f, failed), before);
    EXPECT_TRUE(failed) << "the stream's error must not read as an end";
    std::fclose(f);
  }
}

TEST(ReadAhead, ClosingEarlyStopsTheThreadAndClosesTheStreamUnderIt) {
  bool closed = false;
  auto* s = new Source;
  s->bytes = random_bytes(size_t(64) << 20, 3);  // far more than the thread reads ahead
  s->closed = &closed;
  FILE* f = read_ahead(open_source(s));
  uint8_t head[16];
  ASSERT_EQ(std::fread(head, 1, sizeof head, f), sizeof head);
  std::fclose(f);  // must return: the thread waits for room it will never get
  EXPECT_TRUE(closed);
}
