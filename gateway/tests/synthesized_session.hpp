// Sessions for tests and benchmarks, made by the itch-synth tool the replay
// side builds (its path compiled in as ITCHBENCH_SYNTH): the gateway's tree
// links nothing of replay/, it reads what the tool writes, as any capture.
#pragma once
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <stdexcept>
#include <string>
#include <vector>

#ifndef ITCHBENCH_SYNTH
#error "ITCHBENCH_SYNTH must name the itch-synth binary (gateway/tests/CMakeLists.txt)"
#endif

extern char** environ;

namespace itchbench::testing {

// Runs `itch-synth ARGS... --out OUT` and returns OUT; throws with the command when it fails.
inline std::string synthesize(std::vector<std::string> args, const std::string& out) {
  args.insert(args.begin(), ITCHBENCH_SYNTH);
  args.push_back("--out");
  args.push_back(out);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);  // its one-line summary
  pid_t pid = 0;
  int status = 0;
  const int err = posix_spawn(&pid, argv[0], &quiet, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&quiet);
  if (err != 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string cmd;
    for (const auto& a : args) cmd += a + " ";
    throw std::runtime_error("failed: " + cmd);
  }
  return out;
}

}  // namespace itchbench::testing
