#include "source/stop_flag.hpp"

#include <csignal>

namespace itchbench {

namespace {
extern "C" void on_stop_signal(int sig) {
  stop_signal().store(sig);
  stop_requested().store(true);
}
}  // namespace

void install_stop_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace itchbench
