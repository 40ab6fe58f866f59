// process-meter: runs a command as its child and writes what the child used — wall time from
// fork to exit, user and system CPU time, peak RSS (wait4) — as JSON, then exits as the child did
// (its status, or the same signal), so whoever started the meter sees the command's own end.
//
// Why a separate process: a child forked from the harness (a large Python process) carries the
// harness's resident pages until it execs, and the kernel keeps that peak in ru_maxrss across
// exec. Forked from this small process instead, the command's peak RSS is its own (never below
// this meter's few MB, which the JSON records as rss_floor_kib).
//
// Everything the command starts is its own: the meter is their subreaper (PR_SET_CHILD_SUBREAPER),
// so a process the command leaves behind — a worker it never stopped, a daemon it forked — comes
// to the meter instead of init. Each is reaped here and its CPU time counted with the command's.
// One still running when the command has ended (and LEFT_GRACE_S after) is killed (SIGKILL) and
// named in `left_running`: a gateway that leaves a process behind has not stopped, and that
// process would go on using CPU and ports under the runs after it.
//
// Signals sent to the meter (TERM, INT, HUP, QUIT, USR1, USR2) are passed on to the child; the
// child dies with the meter (PR_SET_PDEATHSIG), as the meter dies with whoever started it.
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <ctime>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "util/atomic_file.hpp"
#include "util/proc_file.hpp"

namespace {

using itchbench::read_proc_file;

constexpr double kLeftGraceS = 1.0;   // for what the command started to end after it (a worker told to stop)
constexpr double kClearingMostS = 10.0;  // killing what is left, round after round (it may fork as it goes)

volatile pid_t child = 0;

void forward(int sig) {
  if (child > 0) kill(child, sig);
}

double seconds(const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; }

double now_s() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) + double(t.tv_nsec) / 1e9;
}

// VmHWM, not getrusage: the kernel carries ru_maxrss across exec, so the meter's own would be the
// harness's again; VmHWM belongs to this image alone.
long own_max_rss_kib() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof line, f) != nullptr)
    if (std::sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
  std::fclose(f);
  return kib;
}

struct Cpu {
  double user_s = 0, system_s = 0;
  void add(const rusage& ru) {
    user_s += seconds(ru.ru_utime);
    system_s += seconds(ru.ru_stime);
  }
};

struct Left {
  pid_t pid;
  std::string command;
};

// The meter's children now (processes whose parent it is: the command's orphans once they are reparented), from
// /proc: a zombie is not running and is left to the reaping.
std::vector<pid_t> running_children() {
  std::vector<pid_t> out;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return out;
  const pid_t self = getpid();
  while (const dirent* e = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    const std::string text = read_proc_file("/proc/" + std::string(e->d_name) + "/stat");
    const size_t paren = text.rfind(')');  // the name before it may hold anything, ')' and spaces too
    char state = 0;
    long ppid = 0;
    if (paren == std::string::npos || std::sscanf(text.c_str() + paren + 1, " %c %ld", &state, &ppid) != 2) continue;
    if (ppid == self && state != 'Z') out.push_back(pid_t(pid));
  }
  closedir(proc);
  return out;
}

// Its command line, NULs as spaces (its name in brackets when it has none), at most 200 bytes.
std::string command_of(pid_t pid) {
  std::string text = read_proc_file("/proc/" + std::to_string(pid) + "/cmdline");
  while (!text.empty() && text.back() == '\0') text.pop_back();
  std::replace(text.begin(), text.end(), '\0', ' ');
  if (text.empty()) {
    text = read_proc_file("/proc/" + std::to_string(pid) + "/comm");
    text = "[" + text.substr(0, text.find('\n')) + "]";
  }
  return text.size() > 200 ? text.substr(0, 197) + "..." : text;
}

// Reaps every child that has ended, its CPU counted; false once the meter has no child at all.
bool reap_ended(Cpu& cpu) {
  for (;;) {
    int status = 0;
    rusage ru{};
    const pid_t p = wait4(-1, &status, WNOHANG, &ru);
    if (p > 0) {
      cpu.add(ru);
      continue;
    }
    if (p < 0 && errno == EINTR) continue;
    return !(p < 0 && errno == ECHILD);
  }
}

// After the command's end: what it started gets LEFT_GRACE_S to end; then whatever still runs is named and killed,
// round after round (a process killed hands its own children to the meter), until the meter has no child.
std::vector<Left> clear_left_behind(Cpu& cpu) {
  std::vector<Left> left;
  const double grace_end = now_s() + kLeftGraceS;
  while (reap_ended(cpu) && now_s() < grace_end) {
    if (running_children().empty()) {
      usleep(1000);  // the last ones are exiting: their zombies come next
      continue;
    }
    usleep(10000);
  }
  const double give_up = now_s() + kClearingMostS;
  while (reap_ended(cpu) && now_s() < give_up) {
    for (const pid_t pid : running_children()) {
      if (std::none_of(left.begin(), left.end(), [&](const Left& l) { return l.pid == pid; }))
        left.push_back({pid, command_of(pid)});
      kill(pid, SIGKILL);
    }
    usleep(1000);
  }
  return left;
}

// Written whole or not at all (through PATH.PID.tmp, removed on failure): a reader never sees half a file. Throws
// std::runtime_error saying why it could not be written.
void write_usage(const std::string& path, double wall_s, const Cpu& cpu, long max_rss_kib, int status,
                 long floor_kib, const std::vector<Left>& left) {
  nlohmann::ordered_json j;
  j["wall_s"] = wall_s;
  j["cpu_user_s"] = cpu.user_s;
  j["cpu_system_s"] = cpu.system_s;
  j["max_rss_kib"] = max_rss_kib;
  j["rss_floor_kib"] = floor_kib;
  if (WIFSIGNALED(status))
    j["signal"] = WTERMSIG(status);
  else
    j["exit_code"] = WEXITSTATUS(status);
  j["left_running"] = nlohmann::ordered_json::array();
  for (const Left& l : left) j["left_running"].push_back({{"pid", l.pid}, {"command", l.command}});
  itchbench::write_file_atomically(path, j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
}

int usage() {
  std::fprintf(stderr,
               "usage: process-meter --out FILE -- COMMAND [ARG...]\n"
               "Run COMMAND, write its wall time, CPU time and peak RSS to FILE (JSON), exit as it did.\n"
               "What it leaves running after its exit (1 s on) is killed and named in the JSON (left_running).\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5 || std::strcmp(argv[1], "--out") != 0 || std::strcmp(argv[3], "--") != 0) return usage();
  const std::string out = argv[2];
  char** command = argv + 4;

  struct sigaction sa {};
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) sigaction(sig, &sa, nullptr);
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    std::perror("process-meter: PR_SET_CHILD_SUBREAPER");
    return 125;
  }

  const long floor_kib = own_max_rss_kib();
  const pid_t parent = getpid();
  const double started = now_s();
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("process-meter: fork");
    return 125;
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(125);  // the meter died before the line above
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) signal(sig, SIG_DFL);
    execvp(command[0], command);
    std::fprintf(stderr, "process-meter: cannot run %s: %s\n", command[0], std::strerror(errno));
    _exit(127);
  }
  child = pid;
  // Every child reaped as it ends (orphans of the command's too), until the command itself.
  int status = 0;
  Cpu cpu;
  long max_rss_kib = 0;
  for (;;) {
    int st = 0;
    rusage ru{};
    const pid_t p = wait4(-1, &st, 0, &ru);
    if (p < 0) {
      if (errno == EINTR) continue;
      std::perror("process-meter: wait4");
      return 125;
    }
    cpu.add(ru);
    if (p == pid) {
      child = 0;  // reaped: its pid may be another process's from here on
      status = st;
      max_rss_kib = ru.ru_maxrss;
      break;
    }
  }
  const double wall = now_s() - started;
  const std::vector<Left> left = clear_left_behind(cpu);
  try {
    write_usage(out, wall, cpu, max_rss_kib, status, floor_kib, left);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "process-meter: %s\n", e.what());
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  // The same end as the child: its signal, without a core file of the meter's own.
  const int sig = WTERMSIG(status);
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  signal(sig, SIG_DFL);
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_UNBLOCK, &all, nullptr);
  raise(sig);
  return 128 + sig;
}
