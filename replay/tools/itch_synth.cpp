// itch-synth: writes a deterministic ITCH 5.0 session as a MoldUDP64 pcap (or
// a NASDAQ binary ITCH file). Same arguments, same bytes.
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>

#include "replay/lib/itch_file_writer.hpp"
#include "replay/lib/mold_packetizer.hpp"
#include "replay/lib/packetizer_options.hpp"
#include "replay/lib/session_generator.hpp"
#include "util/cli.hpp"

using namespace itchbench;
using namespace itchbench::replay;

namespace {
std::vector<std::string> split_symbols(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  std::string s;
  while (std::getline(ss, s, ',')) {
    if (s.empty() || s.size() > 8) throw std::invalid_argument("bad symbol '" + s + "': 1 to 8 characters");
    out.push_back(s);
  }
  return out;
}
}  // namespace

int main(int argc, char** argv) {
  cli::Args args(
      "itch-synth", "itch-synth [options] --out FILE",
      "Generate a deterministic NASDAQ TotalView-ITCH 5.0 session and write it as a pcap of\n"
      "MoldUDP64 over UDP (to 127.0.0.1) or as a binary ITCH file. The same arguments give\n"
      "the same bytes on every machine. Profiles:\n"
      "  seed-workload  8 symbols, ~415 msg/s, adds ~98.7% and price-changing replaces ~1.3%,\n"
      "                 7,000 messages, one message per packet\n"
      "  nasdaq-day     every message type in a real day's proportions (A~44% D~43% U~7% E~2%\n"
      "                 X~1% I~1%, rest rare), 500 Zipf-weighted symbols, bursty timing,\n"
      "                 up to 16 messages per packet within 50 us bursts\n"
      "  deep-book      40 symbols, adds outnumbering removals, prices anywhere in 400 ticks of\n"
      "                 the mid: hundreds of levels a side, 3,000,000 messages\n"
      "  wide-fields    each field across the spec's range: order references from 2^63, locates\n"
      "                 spread over 1..65,535, prices $0.10 to $199,000 ($0.0001 ticks below $1),\n"
      "                 blocks of up to 50 M shares, levels of more than 2^32 shares, symbols of\n"
      "                 5 to 8 characters; 20,000 messages, 200 symbols, every message type");
  args.option("out", "FILE", "output file (written as FILE.PID.tmp, renamed when complete)");
  args.option("profile", "NAME", "seed-workload, nasdaq-day, deep-book or wide-fields", "seed-workload");
  args.option("seed", "N", "random seed", "1");
  args.option("messages", "N", "total messages, preamble included (default: the profile's)");
  args.option("symbols", "LIST", "comma-separated symbols (default: the profile's)");
  args.option("symbol-count", "N", "use N generated symbols (first 8: AAPL GOOGL MSFT NVDA QQQ SPY TSLA AMZN)");
  args.option("mix", "SPEC", "message mix as TYPE=WEIGHT,... e.g. A=44,D=43,U=7 (default: the profile's)");
  args.option("rate", "MSG_PER_S", "mean message rate outside bursts (default: the profile's)");
  args.option("unknown-ref-ppm", "N", "per million order messages naming orders that never existed", "0");
  args.option("start", "HH:MM:SS", "time of the first message", "09:30:00");
  args.option("format", "pcap|itch", "output format", "pcap");
  add_packetizer_options(args, {1, 0, "(default: 1, nasdaq-day 16)", "(default: 0, nasdaq-day 50000)"});
  args.parse(argc, argv);
  if (!args.has("out")) args.fail("--out is required");

  try {
    GeneratorConfig cfg = profile_by_name(args.get("profile"));
    const bool nasdaq = cfg.profile != "seed-workload";  // packetized like a real feed
    cfg.seed = args.get_u64("seed");
    if (args.has("messages")) cfg.messages = args.get_u64("messages");
    if (args.has("symbols") && args.has("symbol-count")) args.fail("give --symbols or --symbol-count, not both");
    if (args.has("symbols")) cfg.symbols = split_symbols(args.get("symbols"));
    if (args.has("symbol-count")) cfg.symbols = synthetic_symbols(args.get_u64("symbol-count"));
    if (args.has("mix")) cfg.mix = parse_mix(args.get("mix"));
    if (args.has("rate")) {
      const double rate = args.get_double("rate");
      if (!(rate > 0)) args.fail("--rate must be positive");
      cfg.timing.quiet_mean_gap_ns = uint64_t(1e9 / rate);
    }
    cfg.unknown_ref_ppm = uint32_t(args.get_u64("unknown-ref-ppm"));
    cfg.start_ns = ns_of_time_of_day(args.get("start"));
    const std::string format = args.get("format");
    if (format != "pcap" && format != "itch") args.fail("--format takes pcap or itch");
    const PacketizerConfig pc = packetizer_config(args, nasdaq ? PacketizerDefaults{16, 50000, "", ""} : PacketizerDefaults{1, 0, "", ""});
    const bool eos = end_of_session(args);

    const auto t0 = std::chrono::steady_clock::now();
    const std::string out = args.get("out");
    const uint64_t progress_every = 5000000;
    auto progress = [&](uint64_t n) {
      if (n % progress_every == 0)
        std::fprintf(stderr, "itch-synth: %llu / %llu messages\n", (unsigned long long)n,
                     (unsigned long long)cfg.messages);
    };
    GeneratorStats gs;
    PacketizerStats ps;
    if (format == "pcap") {
      net::PcapWriter writer(out, net::kLinkEthernet);
      auto packetizer = std::make_unique<MoldPacketizer>(writer, pc);
      uint64_t n = 0;
      gs = generate_session(cfg, [&](const uint8_t* m, uint16_t len, uint64_t ts) {
        packetizer->add(m, len, ts);
        progress(++n);
      });
      packetizer->finish(eos);
      ps = packetizer->stats();
      writer.commit();
    } else {
      ItchFileWriter writer(out);
      uint64_t n = 0;
      gs = generate_session(cfg, [&](const uint8_t* m, uint16_t len, uint64_t) {
        writer.write(m, len);
        progress(++n);
      });
      writer.commit();
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr,
                 "itch-synth: wrote %s: %llu messages, %llu packets (%llu heartbeats, %llu "
                 "end-of-session), %zu symbols, seed %llu, in %.2f s (%.1f M msg/s)\n",
                 out.c_str(), (unsigned long long)gs.messages, (unsigned long long)ps.packets,
                 (unsigned long long)ps.heartbeats, (unsigned long long)ps.end_of_session,
                 cfg.symbols.size(), (unsigned long long)cfg.seed, secs, gs.messages / secs / 1e6);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "itch-synth: %s\n", e.what());
    return 1;
  }
}
