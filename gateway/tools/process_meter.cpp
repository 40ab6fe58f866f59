// process-meter: runs a command as its child and writes what the child used — wall time from
// fork to exit, user and system CPU time, peak RSS (wait4) — as JSON, then exits as the child did
// (its status, or the same signal), so whoever started the meter sees the command's own end.
//
// Why a separate process: a child forked from the harness (a large Python process) carries the
// harness's resident pages until it execs, and the kernel keeps that peak in ru_maxrss across
// exec. Forked from this small process instead, the command's peak RSS is its own (never below
// this meter's few MB, which the JSON records as rss_floor_kib).
//
// Signals sent to the meter (TERM, INT, HUP, QUIT, USR1, USR2) are passed on to the child; the
// child dies with the meter (PR_SET_PDEATHSIG), as the meter dies with whoever started it.
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

namespace {

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

// Written whole or not at all: a reader never sees half a file.
bool write_usage(const std::string& path, double wall_s, const rusage& ru, int status, long floor_kib) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return false;
  char end[64];
  if (WIFSIGNALED(status))
    std::snprintf(end, sizeof end, "\"signal\": %d", WTERMSIG(status));
  else
    std::snprintf(end, sizeof end, "\"exit_code\": %d", WEXITSTATUS(status));
  std::fprintf(f,
               "{\"wall_s\": %.9f, \"cpu_user_s\": %.6f, \"cpu_system_s\": %.6f, \"max_rss_kib\": %ld, "
               "\"rss_floor_kib\": %ld, %s}\n",
               wall_s, seconds(ru.ru_utime), seconds(ru.ru_stime), ru.ru_maxrss, floor_kib, end);
  const bool ok = std::fclose(f) == 0;
  return ok && std::rename(tmp.c_str(), path.c_str()) == 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: process-meter --out FILE -- COMMAND [ARG...]\n"
               "Run COMMAND, write its wall time, CPU time and peak RSS to FILE (JSON), exit as it did.\n");
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
  int status = 0;
  rusage ru{};
  while (wait4(pid, &status, 0, &ru) < 0) {
    if (errno != EINTR) {
      std::perror("process-meter: wait4");
      return 125;
    }
  }
  const double wall = now_s() - started;
  if (!write_usage(out, wall, ru, status, floor_kib))
    std::fprintf(stderr, "process-meter: cannot write %s: %s\n", out.c_str(), std::strerror(errno));
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
