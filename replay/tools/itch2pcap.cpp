// itch2pcap: a NASDAQ binary ITCH 5.0 file -> MoldUDP64 pcap, timed by the
// messages' own ITCH timestamps.
#include <cstdio>

#include "protocol/itch.hpp"
#include "source/capture_file.hpp"
#include "replay/lib/itch_file_writer.hpp"
#include "replay/lib/mold_packetizer.hpp"
#include "replay/lib/packetizer_options.hpp"
#include "util/cli.hpp"

using namespace itchbench;
using namespace itchbench::replay;

int main(int argc, char** argv) {
  cli::Args args("itch2pcap", "itch2pcap [options] ITCH_FILE --out PCAP",
                 "Convert a NASDAQ binary ITCH 5.0 file (2-byte length + message) into a pcap of\n"
                 "MoldUDP64 over UDP to 127.0.0.1. Packet times come from the ITCH timestamps.\n"
                 "A malformed input stops the conversion with its offset and reason, and no\n"
                 "output file is left behind.");
  args.positional("ITCH_FILE", "binary ITCH 5.0 file");
  args.option("out", "PCAP", "output pcap (written as PCAP.PID.tmp, renamed when complete)");
  const PacketizerDefaults defaults{16, 50000, "", ""};
  add_packetizer_options(args, defaults);
  args.parse(argc, argv);
  if (!args.has("out")) args.fail("--out is required");
  args.refuse_overwriting(args.positionals()[0], args.get("out"));
  const PacketizerConfig pc = packetizer_config(args, defaults);
  const bool eos = end_of_session(args);

  try {
    // Plain or compressed (gzip, zstd: NASDAQ ships its days as .gz), told by content, read as a stream.
    CaptureReader in(args.positionals()[0], std::nullopt, /*itch_expected=*/true);
    if (in.kind() != CaptureKind::kItchFile)
      throw std::runtime_error(args.positionals()[0] + ": a pcap already, not a binary ITCH file");
    net::PcapWriter writer(args.get("out"), net::kLinkEthernet);
    MoldPacketizer packetizer(writer, pc);
    uint64_t last_ts = 0, backwards = 0;
    const bool ok = in.run(
        [](uint64_t, const uint8_t*, size_t) {},
        [&](uint64_t, const uint8_t* msg, size_t len) {
          // Capture time must not run backwards; hold a late stamp at the last, and give a message too short to have
          // one the last.
          uint64_t ts = itch::header_timestamp_or(msg, len, last_ts);
          if (ts < last_ts) {
            ++backwards;
            ts = last_ts;
          }
          last_ts = ts;
          packetizer.add(msg, uint16_t(len), ts);
        });
    if (!ok) {
      std::fprintf(stderr, "itch2pcap: %s; no output written\n", in.error().c_str());
      return 1;
    }
    packetizer.finish(eos);
    writer.commit();
    const PacketizerStats& ps = packetizer.stats();
    std::fprintf(stderr, "itch2pcap: wrote %s: %llu messages in %llu packets (%llu heartbeats)%s\n",
                 args.get("out").c_str(), (unsigned long long)ps.messages,
                 (unsigned long long)ps.packets, (unsigned long long)ps.heartbeats,
                 backwards ? (", " + std::to_string(backwards) +
                              " timestamps earlier than their predecessor held back").c_str()
                           : "");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "itch2pcap: %s\n", e.what());
    return 1;
  }
}
