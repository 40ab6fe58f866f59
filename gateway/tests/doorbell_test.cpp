#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <gtest/gtest.h>
#include <thread>

#include "publish/doorbell.hpp"
#include "publish/tcp_publisher.hpp"
#include "loopback_client.hpp"

using namespace itchbench;

namespace {

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

}  // namespace

TEST(Doorbell, RingsOnlyAParkedConsumerOnceForWhatWasPushed) {
  Doorbell bell;
  bell.mark();
  bell.ring();  // awake: nothing written
  EXPECT_FALSE(readable(bell.fd()));
  EXPECT_EQ(bell.rings(), 0u);
  bell.park();
  bell.ring();  // nothing pushed since the last ring: nothing to wake it for
  EXPECT_FALSE(readable(bell.fd()));
  bell.mark();
  bell.mark();
  bell.ring();
  bell.mark();
  bell.ring();  // the first ring unparked it: one write for all
  EXPECT_TRUE(readable(bell.fd()));
  EXPECT_EQ(bell.rings(), 1u);
  bell.clear();
  EXPECT_FALSE(readable(bell.fd()));
  bell.park();
  bell.unpark();
  bell.mark();
  bell.ring();
  EXPECT_FALSE(readable(bell.fd()));
}

// A publisher asleep on its doorbell still delivers every frame, in order, and stops while asleep.
TEST(TcpPublisher, DeliversWhatComesWhileItSleepsAndStopsAsleep) {
  TcpPublisher publisher(PublisherOptions{});
  publisher.start();
  const int client = test_support::connect_loopback(publisher.port());
  ASSERT_GE(client, 0);
  ASSERT_TRUE(publisher.wait_for_subscribers(1, 10000));
  constexpr uint64_t kBursts = 3, kFrames = 50;
  for (uint64_t b = 0; b < kBursts; ++b) {
    const uint64_t parked = publisher.counters().parks.load();
    // Idle until it has gone to sleep once more (a condition, not a duration; the bound only ends a hang).
    for (int i = 0; i < 10000 && publisher.counters().parks.load() == parked; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_GT(publisher.counters().parks.load(), parked);
    for (uint64_t i = 0; i < kFrames; ++i) {
      logfmt::BboRecord r{};
      r.seq = b * kFrames + i + 1;
      publisher.publish(r);
    }
    publisher.after_input();  // as the receive loop does once its datagram is done
  }
  uint64_t expected = 1;
  logfmt::BboRecord got{};
  timeval guard{10, 0};
  ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof guard);
  size_t have = 0;
  auto* bytes = reinterpret_cast<char*>(&got);
  while (expected <= kBursts * kFrames) {
    const ssize_t n = ::recv(client, bytes + have, sizeof got - have, 0);
    ASSERT_GT(n, 0) << "frame " << expected << " never came";
    have += size_t(n);
    if (have < sizeof got) continue;
    EXPECT_EQ(got.seq, expected);
    ++expected;
    have = 0;
  }
  // Asleep again: stop() must wake it to flush and end.
  const uint64_t parked = publisher.counters().parks.load();
  for (int i = 0; i < 10000 && publisher.counters().parks.load() == parked; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  publisher.stop(1000);
  ::close(client);
  EXPECT_EQ(publisher.counters().published, kBursts * kFrames);
  EXPECT_EQ(publisher.counters().frames_sent.load(), kBursts * kFrames);
  // At most one write a burst (one input unit), whatever the timing of its wake-ups.
  EXPECT_LE(publisher.doorbell_rings(), kBursts);
}
