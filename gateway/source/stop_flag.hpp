// Process-wide stop request, set from SIGINT/SIGTERM: live sources poll it
// so that a stopped gateway still finalizes its logs and counters.
#pragma once
#include <atomic>

namespace itchbench {

inline std::atomic<bool>& stop_requested() {
  static std::atomic<bool> flag{false};
  return flag;
}
void install_stop_signal_handlers();

}  // namespace itchbench
