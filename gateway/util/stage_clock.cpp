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
  if (!tsc_is_invariant()) return StageClock{};
  return calibrate_with([] { return uint64_t(__rdtsc()); }, monotonic_ns, calibration_ms);
}

uint64_t StageClock::earlier(uint64_t stamp, uint64_t ns) const {
  const uint64_t origin = tsc_ ? line_.tsc0 : 0;
  const uint64_t ticks = tsc_ ? uint64_t(((unsigned __int128)ns << 32) / line_.ns_per_tick_q32) : ns;
  return stamp > origin && stamp - origin > ticks ? stamp - ticks : origin;
}

}  // namespace itchbench
