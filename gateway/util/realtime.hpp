// Real-time options for gateway threads. Each returns an empty string when
// granted, else why not (for the manifest and a clear error).
#pragma once
#include <cstdint>
#include <string>

namespace itchbench {

std::string pin_current_thread(int cpu);
// Why the process may not run on cpu ("": it may): a thread's pin, checked before the thread is made.
std::string cpu_unavailable(int cpu);
std::string set_sched_fifo(int priority);  // current thread
std::string lock_all_memory();             // mlockall, locking pages as they are touched
// For helper threads (log provisioning, the publisher): a thread inherits
// its creator's CPU pin and SCHED_FIFO, and a helper that shares the hot
// thread's CPU at real-time priority stalls it (a 64 MiB page population
// takes ~20 ms). Back to SCHED_OTHER on every CPU the process started with.
void leave_hot_thread_alone();

// Whether the kernel throttles real-time threads (kernel.sched_rt_runtime_us below its period, not -1): a
// SCHED_FIFO/RR thread that never sleeps is then stopped for the rest of each period once its budget is used.
// Sets runtime_us and period_us (-1 when unreadable).
bool rt_throttling(int64_t& runtime_us, int64_t& period_us);

}  // namespace itchbench
