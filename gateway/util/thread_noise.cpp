#include "util/thread_noise.hpp"

#include <dirent.h>
#include <pthread.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <sstream>

#include "util/proc_file.hpp"

namespace itchbench {

namespace {
// The value after "key:" in a /proc status-like text, or "".
std::string field_of(const std::string& text, const std::string& key) {
  const size_t at = text.find("\n" + key + ":");
  const size_t from = at == std::string::npos ? (text.rfind(key + ":", 0) == 0 ? 0 : std::string::npos) : at + 1;
  if (from == std::string::npos) return "";
  size_t v = text.find(':', from) + 1;
  while (v < text.size() && (text[v] == ' ' || text[v] == '\t')) ++v;
  return text.substr(v, text.find('\n', v) - v);
}

uint64_t number_of(const std::string& text, const std::string& key) {
  const std::string v = field_of(text, key);
  return v.empty() ? 0 : std::strtoull(v.c_str(), nullptr, 10);
}

const char* policy_name(int p) {
  switch (p) {
    case 0: return "SCHED_OTHER";
    case 1: return "SCHED_FIFO";
    case 2: return "SCHED_RR";
    case 3: return "SCHED_BATCH";
    case 5: return "SCHED_IDLE";
    case 6: return "SCHED_DEADLINE";
    default: return "unknown";
  }
}
}  // namespace

std::vector<ThreadNoise> read_thread_noise() {
  std::vector<ThreadNoise> out;
  DIR* dir = ::opendir("/proc/self/task");
  if (!dir) return out;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string base = std::string("/proc/self/task/") + e->d_name;
    ThreadNoise t;
    t.tid = std::atoi(e->d_name);
    const std::string status = read_proc_file(base + "/status");
    t.name = field_of(status, "Name");
    t.voluntary_switches = number_of(status, "voluntary_ctxt_switches");
    t.involuntary_switches = number_of(status, "nonvoluntary_ctxt_switches");
    t.affinity = field_of(status, "Cpus_allowed_list");
    // stat: "tid (comm) state ..." — fields counted after the comm's closing parenthesis, which may hold spaces.
    const std::string stat = read_proc_file(base + "/stat");
    const size_t close = stat.rfind(')');
    if (close != std::string::npos) {
      std::istringstream rest(stat.substr(close + 2));
      std::vector<std::string> f{std::istream_iterator<std::string>(rest), std::istream_iterator<std::string>()};
      // f[0] is field 3 (state): field N is f[N - 3].
      if (f.size() > 38) {
        t.minor_faults = std::strtoull(f[10 - 3].c_str(), nullptr, 10);
        t.major_faults = std::strtoull(f[12 - 3].c_str(), nullptr, 10);
        t.last_cpu = std::atoi(f[39 - 3].c_str());
        t.policy = policy_name(std::atoi(f[41 - 3].c_str()));
      }
    }
    std::istringstream schedstat(read_proc_file(base + "/schedstat"));
    int64_t on_cpu = 0, delay = 0;
    if (schedstat >> on_cpu >> delay) {
      t.on_cpu_ns = on_cpu;
      t.run_delay_ns = delay;
    }
    const std::string sched = read_proc_file(base + "/sched");
    const size_t m = sched.find("se.nr_migrations");
    if (m != std::string::npos) t.migrations = std::strtoll(sched.c_str() + sched.find(':', m) + 1, nullptr, 10);
    out.push_back(std::move(t));
  }
  ::closedir(dir);
  std::sort(out.begin(), out.end(), [](const ThreadNoise& a, const ThreadNoise& b) { return a.tid < b.tid; });
  return out;
}

ProcessNoise read_process_noise() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return {uint64_t(u.ru_nvcsw), uint64_t(u.ru_nivcsw), uint64_t(u.ru_minflt), uint64_t(u.ru_majflt)};
}

void name_current_thread(const char* name) {
  char buf[16] = {};
  std::snprintf(buf, sizeof buf, "%s", name);
  ::pthread_setname_np(::pthread_self(), buf);
}

}  // namespace itchbench
