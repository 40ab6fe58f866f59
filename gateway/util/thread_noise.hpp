// What the kernel says each thread of this process went through: context
// switches (an involuntary one is a preemption: another thread, RT
// throttling, a stolen vCPU), page faults, migrations between CPUs, and the
// policy and affinity it ran with. Read from /proc/self/task at the end of a
// run, off the hot path, so a report can tell a slow run from a noisy one.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace itchbench {

struct ThreadNoise {
  int tid = 0;
  std::string name;  // comm, as set by name_current_thread
  uint64_t voluntary_switches = 0;
  uint64_t involuntary_switches = 0;
  uint64_t minor_faults = 0;
  uint64_t major_faults = 0;
  int64_t migrations = -1;  // -1: the kernel does not say (no /proc/.../sched)
  // From schedstat (-1 where the kernel lacks it): time run, and time runnable but waiting for a CPU, the
  // share of the run a preemption, a competitor or a stolen vCPU cost this thread.
  int64_t on_cpu_ns = -1;
  int64_t run_delay_ns = -1;
  int last_cpu = -1;
  std::string policy;    // SCHED_OTHER, SCHED_FIFO, ...
  std::string affinity;  // Cpus_allowed_list, e.g. "0-1"
};

// Every thread of this process still alive, by thread id.
std::vector<ThreadNoise> read_thread_noise();

// The process's totals, finished threads included (getrusage).
struct ProcessNoise {
  uint64_t voluntary_switches = 0;
  uint64_t involuntary_switches = 0;
  uint64_t minor_faults = 0;
  uint64_t major_faults = 0;
};
ProcessNoise read_process_noise();

struct NoiseSnapshot {
  std::vector<ThreadNoise> threads;
  ProcessNoise process;
};
inline NoiseSnapshot take_noise_snapshot() { return {read_thread_noise(), read_process_noise()}; }

// Names the calling thread (at most 15 characters kept), so its noise can be told from the others'.
void name_current_thread(const char* name);

}  // namespace itchbench
