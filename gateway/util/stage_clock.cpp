#include "util/stage_clock.hpp"

#include <fstream>
#include <string>

namespace itchbench {

namespace {
bool tsc_is_invariant() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("flags", 0) == 0)
      return line.find(" constant_tsc") != std::string::npos && line.find(" nonstop_tsc") != std::string::npos;
  return false;
}
}  // namespace

StageClock StageClock::monotonic() { return StageClock{}; }

StageClock StageClock::calibrate(unsigned calibration_ms) {
  StageClock c;
  if (!tsc_is_invariant()) return c;
  const uint64_t ns_a = monotonic_ns();
  const uint64_t tsc_a = __rdtsc();
  uint64_t ns_b, tsc_b;
  do {  // busy-wait: sleeping would add scheduler noise to the fit
    ns_b = monotonic_ns();
    tsc_b = __rdtsc();
  } while (ns_b - ns_a < uint64_t(calibration_ms) * 1000000ull);
  if (tsc_b <= tsc_a) return c;
  const uint64_t q32 = uint64_t(((unsigned __int128)(ns_b - ns_a) << 32) / (tsc_b - tsc_a));
  // Readers convert with 64-bit halves (FORMAT.md), exact only for a rate below 2^32 (a TSC of 1 GHz or more).
  if (q32 == 0 || q32 >= (uint64_t(1) << 32)) return c;
  c.tsc_ = true;
  c.line_.tsc0 = tsc_b;
  c.line_.ns0 = ns_b;
  c.line_.ns_per_tick_q32 = q32;
  return c;
}

uint64_t StageClock::earlier(uint64_t stamp, uint64_t ns) const {
  const uint64_t origin = tsc_ ? line_.tsc0 : 0;
  const uint64_t ticks = tsc_ ? uint64_t(((unsigned __int128)ns << 32) / line_.ns_per_tick_q32) : ns;
  return stamp > origin && stamp - origin > ticks ? stamp - ticks : origin;
}

}  // namespace itchbench
