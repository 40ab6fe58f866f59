// The sender's end of a serial line takes what the far end writes back (LineReturn): on a pty pair made here, every
// byte written at the far end is counted, a stop while nothing comes ends it, and a file is not read at all.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <pty.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "replay/lib/line_return.hpp"
#include "test_files.hpp"

using namespace itchbench;

namespace {

// Waits (10 s at most) for the count to reach want: a pty hands bytes across on the kernel's own time.
uint64_t counted(const replay::LineReturn& back, uint64_t want) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (back.bytes() < want && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return back.bytes();
}

}  // namespace

TEST(LineReturn, CountsEveryByteTheFarEndWritesBack) {
  int far = -1, line = -1;
  termios raw {};
  cfmakeraw(&raw);
  ASSERT_EQ(::openpty(&far, &line, nullptr, &raw, nullptr), 0);
  replay::LineReturn back(line);
  const std::vector<char> chunk(1000, 'x');
  for (int i = 0; i < 50; ++i) ASSERT_EQ(::write(far, chunk.data(), chunk.size()), ssize_t(chunk.size()));
  EXPECT_EQ(counted(back, 50000), 50000u);  // 50 writes of 1,000: far more than a pty holds unread (4 KiB)
  back.stop();
  EXPECT_EQ(back.bytes(), 50000u);
  ::close(line);
  ::close(far);
}

TEST(LineReturn, StopsWhenNothingComesBack) {
  int far = -1, line = -1;
  ASSERT_EQ(::openpty(&far, &line, nullptr, nullptr, nullptr), 0);
  replay::LineReturn back(line);
  back.stop();  // returns: the thread is woken, not left waiting on a quiet line
  EXPECT_EQ(back.bytes(), 0u);
  ::close(line);
  ::close(far);
}

TEST(LineReturn, AFileIsNotReadFrom) {
  // A file's offset is the writer's too: read from another thread, the writes would land past what was read.
  ScratchDir dir;
  const std::string path = dir.file("line");
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "abc", 3), 3);
  ASSERT_EQ(::lseek(fd, 0, SEEK_SET), 0);
  {
    replay::LineReturn back(fd);
    back.stop();
    EXPECT_EQ(back.bytes(), 0u);
  }
  EXPECT_EQ(::lseek(fd, 0, SEEK_CUR), 0);  // nothing read
  ::close(fd);
}
