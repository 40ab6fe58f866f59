#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <gtest/gtest.h>
#include <thread>
#include <vector>

#include "log/log_format.hpp"
#include "pipeline/frame_ring.hpp"
#include "publish/tcp_publisher.hpp"
#include "loopback_client.hpp"

using namespace itchbench;

namespace {

// Frame k of `bytes` bytes: its index, then bytes that depend on it and on their place.
std::vector<uint8_t> frame(uint64_t k, size_t bytes) {
  std::vector<uint8_t> f(bytes);
  std::memcpy(f.data(), &k, sizeof k);
  for (size_t i = sizeof k; i < bytes; ++i) f[i] = uint8_t(k * 31 + i * 7);
  return f;
}

}  // namespace

TEST(FrameRing, RefusesWhenFullAndKeepsOrderAndBytes) {
  constexpr size_t kBytes = 184;  // a whole depth event of 5 levels a side
  FrameRing ring(kBytes, 4);
  for (uint64_t k = 0; k < 4; ++k) EXPECT_TRUE(ring.push(frame(k, kBytes).data()));
  EXPECT_FALSE(ring.push(frame(99, kBytes).data()));
  for (uint64_t k = 0; k < 4; ++k) {
    const uint8_t* got = ring.front();
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(std::vector<uint8_t>(got, got + kBytes), frame(k, kBytes));
    ring.pop();
  }
  EXPECT_EQ(ring.front(), nullptr);
  EXPECT_TRUE(ring.empty());
}

TEST(FrameRing, TwoThreadsLoseNothing) {
  constexpr size_t kBytes = 24 + 32 * 3;
  constexpr uint64_t kN = 200000;
  FrameRing ring(kBytes, 64);
  std::thread producer([&] {
    for (uint64_t k = 0; k < kN; ++k) {
      const std::vector<uint8_t> f = frame(k, kBytes);
      while (!ring.push(f.data())) std::this_thread::yield();
    }
  });
  for (uint64_t k = 0; k < kN;) {
    const uint8_t* got = ring.front();
    if (!got) continue;
    ASSERT_EQ(std::vector<uint8_t>(got, got + kBytes), frame(k, kBytes)) << "frame " << k;
    ring.pop();
    ++k;
  }
  producer.join();
}

TEST(FrameRing, HoldsWhatABudgetAllowsAsAPowerOfTwo) {
  EXPECT_EQ(FrameRing::frames_within(48, size_t(16) << 20), 65536u);  // BBO frames: 3 MiB
  EXPECT_EQ(FrameRing::frames_within(184, size_t(16) << 20), 65536u);  // 5 levels: 11.5 MiB
  EXPECT_EQ(FrameRing::frames_within(664, size_t(16) << 20), 16384u);  // 20 levels: 32,768 would be 20.75 MiB
  EXPECT_EQ(FrameRing::frames_within(2072, size_t(16) << 20), 4096u);  // 64 levels: 8.1 MiB
  EXPECT_EQ(FrameRing::frames_within(2072, 1), 1024u);                  // never fewer than 1,024
}

// Frames of another size than the BBO's (a whole 5-level depth event's) reach a TCP subscriber whole, in order,
// byte for byte.
TEST(TcpPublisher, CarriesFramesOfTheSizeItWasGiven) {
  PublisherOptions options;
  options.frame_bytes = logfmt::depth_event_size(5);
  TcpPublisher publisher(options);
  publisher.start();
  const int client = test_support::connect_loopback(publisher.port());
  ASSERT_GE(client, 0);
  ASSERT_TRUE(publisher.wait_for_subscribers(1, 10000));
  // More than the subscriber's 256 KiB send buffer holds, fewer than its queue (8,192 frames): none dropped.
  constexpr uint64_t kFrames = 3000;
  for (uint64_t k = 0; k < kFrames; ++k) {
    publisher.publish_frame(frame(k, options.frame_bytes).data());
    publisher.after_input();
  }
  std::vector<uint8_t> got;
  std::vector<uint8_t> buf(1 << 16);
  timeval guard{10, 0};
  ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof guard);
  while (got.size() < kFrames * options.frame_bytes) {
    const ssize_t n = ::recv(client, buf.data(), buf.size(), 0);
    ASSERT_GT(n, 0) << got.size() / options.frame_bytes << " frames came";
    got.insert(got.end(), buf.begin(), buf.begin() + n);
  }
  publisher.stop(1000);
  ::close(client);
  for (uint64_t k = 0; k < kFrames; ++k)
    ASSERT_EQ(std::vector<uint8_t>(got.begin() + k * options.frame_bytes, got.begin() + (k + 1) * options.frame_bytes),
              frame(k, options.frame_bytes)) << "frame " << k;
  EXPECT_EQ(publisher.counters().frames_dropped.load(), 0u);
  EXPECT_EQ(publisher.counters().frames_sent.load(), kFrames);
}
