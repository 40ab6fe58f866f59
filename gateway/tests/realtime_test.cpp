// Helper threads inherit the pin and SCHED_FIFO of the thread that starts
// them; leave_hot_thread_alone must undo both (the stall it prevents: a
// log's page population at real-time priority on the hot thread's CPU).
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <thread>

#include "util/realtime.hpp"

using namespace itchbench;

TEST(Realtime, AHelperLeavesTheHotThreadsCpuAndPriority) {
  cpu_set_t process;
  CPU_ZERO(&process);
  ASSERT_EQ(sched_getaffinity(0, sizeof process, &process), 0);
  int first = -1;
  for (int c = 0; c < CPU_SETSIZE && first < 0; ++c)
    if (CPU_ISSET(c, &process)) first = c;
  ASSERT_GE(first, 0);
  int policy_after = -1;
  bool fifo_granted = false;
  cpu_set_t helper;
  CPU_ZERO(&helper);
  std::thread hot([&] {
    ASSERT_EQ(pin_current_thread(first), "");
    fifo_granted = set_sched_fifo(10).empty();  // granted as root (CI); without it the pin is still undone
    std::thread child([&] {  // inherits the pin and, when granted, SCHED_FIFO
      leave_hot_thread_alone();
      sched_param p{};
      pthread_getschedparam(pthread_self(), &policy_after, &p);
      pthread_getaffinity_np(pthread_self(), sizeof helper, &helper);
    });
    child.join();
  });
  hot.join();
  EXPECT_EQ(policy_after, SCHED_OTHER) << (fifo_granted ? "was SCHED_FIFO" : "SCHED_FIFO not granted here");
  EXPECT_TRUE(CPU_EQUAL(&helper, &process)) << "the helper should run on every CPU the process started with";
}
