// The shared-memory BBO ring: every event read in order, overruns counted
// exactly (a hand count of what a lapped consumer must have lost), a waiting
// producer losing nothing to a consumer on another thread, and the object
// removed when the producer goes.
#include "publish/shm_ring.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

namespace itchbench::shm {
namespace {

std::string unique_name(const char* what) { return "/itchbench-test-" + std::string(what) + "-" + std::to_string(::getpid()); }

logfmt::BboRecord record(uint64_t i) {
  logfmt::BboRecord r{};
  r.seq = i + 1;
  r.timestamp = 1000 * i;
  r.bid_qty = i;
  r.ask_qty = 2 * i;
  r.bid_px = uint32_t(100 + i);
  r.ask_px = uint32_t(200 + i);
  r.stock_locate = uint16_t(i % 7);
  r.flags = logfmt::kWritten;
  return r;
}

std::vector<uint64_t> drain(ShmConsumer& c) {
  std::vector<uint64_t> seqs;
  logfmt::BboRecord r;
  for (;;) {
    const ShmConsumer::Read got = c.next(&r);
    if (got == ShmConsumer::Read::kEnd) return seqs;
    if (got == ShmConsumer::Read::kEvent) {
      EXPECT_EQ(r.bid_px, 100 + (r.seq - 1));  // the record arrived whole, not torn
      seqs.push_back(r.seq);
    }
  }
}

TEST(ShmRing, AConsumerReadsEveryEventInOrder) {
  ShmPublisher p(unique_name("order"), 8, Policy::kOverrun);
  ShmConsumer c(p.name());
  EXPECT_EQ(p.consumers(), 1u);
  for (uint64_t i = 0; i < 5; ++i) p.publish(record(i));
  p.close();
  EXPECT_EQ(drain(c), (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(c.read(), 5u);
  EXPECT_EQ(c.overruns(), 0u);
}

TEST(ShmRing, ALappedConsumerCountsExactlyWhatItLost) {
  ShmPublisher p(unique_name("lap"), 8, Policy::kOverrun);
  ShmConsumer c(p.name());
  for (uint64_t i = 0; i < 20; ++i) p.publish(record(i));  // never waits: the ring holds the last 8 (13..20)
  p.close();
  const std::vector<uint64_t> got = drain(c);
  EXPECT_EQ(got, (std::vector<uint64_t>{13, 14, 15, 16, 17, 18, 19, 20}));
  EXPECT_EQ(c.overruns(), 12u);
  EXPECT_EQ(c.read() + c.overruns(), 20u);
}

// A ring of records of another size (a whole 5-level depth event: 184 bytes, in 192-byte entries), each read back
// whole, byte for byte, and a lapped consumer's loss counted as in a BBO ring.
TEST(ShmRing, ADepthRingCarriesRecordsOfItsSizeWhole) {
  const uint32_t bytes = uint32_t(logfmt::depth_event_size(5));
  ShmPublisher p(unique_name("depth"), 8, Policy::kOverrun, bytes);
  EXPECT_EQ(p.header().entry_bytes, 192u);
  ShmConsumer c(p.name());
  ASSERT_EQ(c.record_bytes(), bytes);
  auto depth = [&](uint64_t i) {
    std::vector<uint8_t> r(bytes);
    for (size_t k = 0; k < bytes; ++k) r[k] = uint8_t(i * 13 + k);
    return r;
  };
  for (uint64_t i = 0; i < 11; ++i) p.publish_record(depth(i).data());  // the ring holds the last 8 (3..10)
  p.close();
  std::vector<uint8_t> got(bytes);
  for (uint64_t i = 3; i < 11; ++i) {
    ASSERT_EQ(c.next(got.data()), ShmConsumer::Read::kEvent);
    EXPECT_EQ(got, depth(i)) << "record " << i;
  }
  EXPECT_EQ(c.next(got.data()), ShmConsumer::Read::kEnd);
  EXPECT_EQ(c.overruns(), 3u);
  EXPECT_THROW(ShmPublisher(unique_name("odd"), 8, Policy::kOverrun, 44), std::invalid_argument);
}

TEST(ShmRing, AWaitingProducerLosesNothingToAConsumerOnAnotherThread) {
  ShmPublisher p(unique_name("wait"), 4, Policy::kWait);
  ShmConsumer c(p.name());
  std::vector<uint64_t> got;
  std::thread consumer([&] { got = drain(c); });
  constexpr uint64_t kEvents = 20000;
  for (uint64_t i = 0; i < kEvents; ++i) p.publish(record(i));
  p.close();
  consumer.join();
  ASSERT_EQ(got.size(), kEvents);
  for (uint64_t i = 0; i < kEvents; ++i) ASSERT_EQ(got[i], i + 1);
  EXPECT_EQ(c.overruns(), 0u);
  EXPECT_GT(p.counters().waits, 0u);  // a ring of 4 cannot hold 20,000 without waiting
}

TEST(ShmRing, TheObjectIsRemovedWithTheProducerAndANameInUseIsRefused) {
  const std::string name = unique_name("gone");
  {
    ShmPublisher p(name, 8, Policy::kOverrun);
    EXPECT_EQ(::access(("/dev/shm" + name).c_str(), F_OK), 0);
    EXPECT_THROW(ShmPublisher(name, 8, Policy::kOverrun), std::runtime_error);
  }
  EXPECT_NE(::access(("/dev/shm" + name).c_str(), F_OK), 0);
  EXPECT_THROW(ShmConsumer{name}, std::runtime_error);
}

}  // namespace
}  // namespace itchbench::shm
