#include "util/realtime.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace itchbench {

namespace {
// The CPUs the process may use, read when it starts: threads created after
// another was pinned inherit the pinned mask, which is not the limit.
cpu_set_t initial_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  return set;
}
const cpu_set_t kProcessCpus = initial_affinity();
}  // namespace

bool rt_throttling(int64_t& runtime_us, int64_t& period_us) {
  auto read = [](const char* path) -> int64_t {
    std::FILE* f = std::fopen(path, "r");
    if (!f) return -1;
    long long v = -1;
    if (std::fscanf(f, "%lld", &v) != 1) v = -1;
    std::fclose(f);
    return v;
  };
  runtime_us = read("/proc/sys/kernel/sched_rt_runtime_us");
  period_us = read("/proc/sys/kernel/sched_rt_period_us");
  return runtime_us >= 0 && period_us > 0 && runtime_us < period_us;
}

std::string cpu_unavailable(int cpu) {
  const cpu_set_t& allowed = kProcessCpus;
  if (cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &allowed)) return "";
  std::string list;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) list += (list.empty() ? "" : ",") + std::to_string(c);
  return "cpu " + std::to_string(cpu) + " is not available to this process (allowed: " + list + ")";
}

std::string pin_current_thread(int cpu) {
  if (std::string unavailable = cpu_unavailable(cpu); !unavailable.empty()) return unavailable;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  const int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  return rc == 0 ? "" : "pinning to cpu " + std::to_string(cpu) + ": " + std::strerror(rc);
}

std::string set_sched_fifo(int priority) {
  sched_param p{};
  p.sched_priority = priority;
  const int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);
  if (rc == 0) return "";
  std::string why = "SCHED_FIFO priority " + std::to_string(priority) + " not granted: " + std::strerror(rc);
  if (rc == EPERM) why += " (needs root or CAP_SYS_NICE, and an RLIMIT_RTPRIO that allows it)";
  return why;
}

void leave_hot_thread_alone() {
  sched_param p{};
  pthread_setschedparam(pthread_self(), SCHED_OTHER, &p);
  pthread_setaffinity_np(pthread_self(), sizeof kProcessCpus, &kProcessCpus);
}

std::string lock_all_memory() {
  // MCL_ONFAULT: lock pages as they are touched. Without it the logs' large
  // address-space reservations would be populated (and fail) at once.
  if (mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) == 0) return "";
  const int e = errno;
  std::string why = std::string("mlockall not granted: ") + std::strerror(e);
  if (e == ENOMEM || e == EPERM) why += " (raise RLIMIT_MEMLOCK or run as root)";
  return why;
}

}  // namespace itchbench
