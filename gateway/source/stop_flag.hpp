// Process-wide stop request, set from SIGINT/SIGTERM: live sources poll it
// so that a stopped gateway still finalizes its logs and counters.
#pragma once
#include <atomic>

namespace itchbench {

inline std::atomic<bool>& stop_requested() {
  static std::atomic<bool> flag{false};
  return flag;
}
// The signal that asked (0: none): a tool that ends early for it exits 128 + it, as the shell reports a kill.
inline std::atomic<int>& stop_signal() {
  static std::atomic<int> sig{0};
  return sig;
}
void install_stop_signal_handlers();

}  // namespace itchbench
