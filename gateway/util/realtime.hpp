// Real-time options for gateway threads. Each returns an empty string when
// granted, else why not (for the manifest and a clear error).
#pragma once
#include <string>

namespace itchbench {

std::string pin_current_thread(int cpu);
std::string set_sched_fifo(int priority);  // current thread
std::string lock_all_memory();             // mlockall, locking pages as they are touched

}  // namespace itchbench
