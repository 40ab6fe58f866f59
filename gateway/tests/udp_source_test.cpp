// The UDP source's busy poll under RT throttling (rt_yield): it gives the CPU back for a moment every slice of
// spinning, and still receives every datagram. Real sockets on loopback.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "source/udp_source.hpp"

using namespace itchbench;

namespace {
void send_datagrams(uint16_t port, int count, std::chrono::milliseconds every) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const char payload[] = "datagram";
  for (int i = 0; i < count; ++i) {
    ::sendto(fd, payload, sizeof payload, 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
    std::this_thread::sleep_for(every);
  }
  ::close(fd);
}

UdpSourceStats receive(bool rt_yield, int count) {
  UdpSourceOptions o;
  o.busy_poll = true;
  o.rt_yield = rt_yield;
  UdpSource source(o);
  const StageClock clock = StageClock::calibrate(2);
  // 30 datagrams 5 ms apart: 150 ms of mostly idle spinning, fifteen 10 ms slices.
  std::thread sender(send_datagrams, source.port(), count, std::chrono::milliseconds(5));
  int seen = 0;
  source.run(clock, [&](const uint8_t* p, size_t n, Line, const logfmt::Arrival&) {
    EXPECT_EQ(std::memcmp(p, "datagram", n), 0);
    return ++seen < count;
  });
  sender.join();
  return source.stats();
}
}  // namespace

TEST(UdpSource, BusyPollUnderRtThrottlingYieldsAndLosesNothing) {
  const UdpSourceStats yielding = receive(true, 30);
  EXPECT_EQ(yielding.datagrams, 30u);
  EXPECT_GE(yielding.rt_yields, 5u);  // one a 10 ms slice: about 15 in 150 ms; fewer only if the loop stalled
  const UdpSourceStats spinning = receive(false, 30);
  EXPECT_EQ(spinning.datagrams, 30u);
  EXPECT_EQ(spinning.rt_yields, 0u);
}
