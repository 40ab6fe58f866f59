// Absolute deadlines on CLOCK_MONOTONIC for the paced senders: no drift
// accumulates, however long a send took.
#pragma once
#include <sys/prctl.h>
#include <time.h>

#include <cerrno>
#include <cstdint>

#include "source/stop_flag.hpp"
#include "util/stage_clock.hpp"

namespace itchbench::replay {

// Call once at start: by default the kernel may end a sleep up to 50 µs late
// (timer slack), as long as the spin before each deadline; 1 ns asks for
// wake-ups as precise as the hardware gives.
inline void tighten_timer_slack() { ::prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); }

// Sleeps until the deadline: the kernel for most of the wait, a spin for the
// last stretch, where sleeping overshoots. A stop request (SIGINT, SIGTERM)
// ends the wait at once: the caller then stops sending.
inline void wait_until(uint64_t deadline_ns) {
  constexpr uint64_t kSpinNs = 50000;
  const uint64_t now = monotonic_ns();
  if (deadline_ns > now + kSpinNs) {
    const uint64_t wake = deadline_ns - kSpinNs;
    timespec ts{time_t(wake / 1000000000ull), long(wake % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
      if (stop_requested().load()) return;
    }
  }
  while (monotonic_ns() < deadline_ns) {
  }
}

}  // namespace itchbench::replay
