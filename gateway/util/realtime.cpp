#include "util/realtime.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

namespace itchbench {

std::string pin_current_thread(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return "cpu " + std::to_string(cpu) + " out of range";
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
