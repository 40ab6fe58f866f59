// itch-gateway: the system under test. Reads ITCH 5.0 from a source, keeps
// the order book, emits BBO events, and records per-message latency and the
// BBO stream to binary logs in the output directory (see --help).
#include <cstdio>
#include <exception>

#include "app/gateway_options.hpp"
#include "app/runs.hpp"

int main(int argc, char** argv) {
  const itchbench::GatewayOptions options = itchbench::parse_gateway_options(argc, argv);
  try {
    return options.source == "sim" ? itchbench::run_sim(options) : itchbench::run_live(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "itch-gateway: %s\n", e.what());
    return 2;
  }
}
