// The two kinds of gateway run; each writes DIR/gateway.json and returns the
// process exit status.
#pragma once
#include "app/gateway_options.hpp"

namespace itchbench {

int run_sim(const GatewayOptions& o);
int run_live(const GatewayOptions& o);  // udp or serial

}  // namespace itchbench
