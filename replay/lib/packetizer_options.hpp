// Command-line options for how messages become MoldUDP64 packets in a pcap,
// shared by every tool that writes captures.
#pragma once
#include <string>

#include "replay/lib/mold_packetizer.hpp"
#include "util/cli.hpp"

namespace itchbench::replay {

struct PacketizerDefaults {
  uint32_t per_packet;
  uint64_t batch_window_ns;
  // Shown instead of the defaults when they depend on something else.
  std::string per_packet_note;
  std::string batch_window_note;
};

// Declares --per-packet, --batch-window-ns, --heartbeat-ms, --end-of-session,
// --date, --session, --port, --first-sequence.
void add_packetizer_options(cli::Args& args, const PacketizerDefaults& defaults);

// Reads them back (exits 2 through args.fail() on a bad value).
PacketizerConfig packetizer_config(const cli::Args& args, const PacketizerDefaults& defaults);
bool end_of_session(const cli::Args& args);

}  // namespace itchbench::replay
