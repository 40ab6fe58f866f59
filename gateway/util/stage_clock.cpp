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
  c.tsc_ = true;
  c.mult_ = uint64_t(((unsigned __int128)(ns_b - ns_a) << 32) / (tsc_b - tsc_a));
  c.tsc0_ = tsc_b;
  c.ns0_ = ns_b;
  return c;
}

}  // namespace itchbench
