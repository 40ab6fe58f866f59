// itch-faults: deterministic, seeded faults on a MoldUDP64 capture, with a
// sidecar (OUT.faults.json) that says exactly what was done.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

#include "replay/lib/fault_injector.hpp"
#include "replay/lib/line_faults.hpp"
#include "util/atomic_file.hpp"
#include "util/cli.hpp"

using namespace itchbench;
using namespace itchbench::replay;

namespace {
uint32_t ppm_of(cli::Args& args, const std::string& name) {
  const double p = args.get_double(name);
  if (!(p >= 0 && p <= 1)) args.fail("--" + name + " is a probability between 0 and 1");
  return uint32_t(std::lround(p * 1e6));
}

// One sequence number a line, ascending or not; anything else is refused with its line.
std::vector<uint64_t> sequences_of(cli::Args& args, const std::string& path) {
  std::ifstream in(path);
  if (!in) args.fail("--reject-seqs: cannot read " + path);
  std::vector<uint64_t> out;
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line.find_first_not_of("0123456789") != std::string::npos || line.size() > 19)
      args.fail("--reject-seqs: " + path + " line " + std::to_string(n) + " is not a sequence number: '" + line + "'");
    out.push_back(std::stoull(line));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}
}  // namespace

int main(int argc, char** argv) {
  cli::Args args("itch-faults", "itch-faults IN.pcap OUT.pcap --seed N [options]",
                 "Write OUT.pcap: IN.pcap with seeded faults on its MoldUDP64 packets, at most\n"
                 "one per packet, and OUT.pcap.faults.json with the counts per kind and the\n"
                 "sequence numbers affected. The same seed and input give the same bytes.\n"
                 "The first packet and end-of-session packets are never faulted. See\n"
                 "docs/faults.md for what each fault does and how runs reconcile with it.");
  args.positional("IN", "pcap/pcapng of MoldUDP64 over UDP");
  args.positional("OUT", "output pcap (written atomically)");
  args.option("seed", "N", "seed of the fault draw (required)");
  args.option("drop", "P", "probability a packet is dropped", "0");
  args.option("duplicate", "P", "probability a packet is sent twice", "0");
  args.option("reorder", "P", "probability a packet moves later", "0");
  args.option("reorder-window", "K", "a reordered packet moves later by 1..K packets (K <= 64)", "4");
  args.option("truncate", "P", "probability a packet's payload is cut short", "0");
  args.option("corrupt", "P", "probability one message of a packet is damaged", "0");
  args.option("burst-drop", "LEN@P", "drop LEN packets in a row, starting with probability P");
  args.option("reject-seqs", "FILE", "also damage these messages (one sequence number a line) so that they are "
              "rejected: their type byte a digit (a serial line's corrupted lines, as its sender logged them)");
  args.parse(argc, argv);
  if (!args.has("seed")) args.fail("--seed is required: faults are always seeded explicitly");

  FaultOptions o;
  o.seed = args.get_u64("seed");
  o.drop_ppm = ppm_of(args, "drop");
  o.duplicate_ppm = ppm_of(args, "duplicate");
  o.reorder_ppm = ppm_of(args, "reorder");
  o.truncate_ppm = ppm_of(args, "truncate");
  o.corrupt_ppm = ppm_of(args, "corrupt");
  o.reorder_window = uint32_t(args.get_u64("reorder-window"));
  if (o.reorder_window < 1 || o.reorder_window > 64) args.fail("--reorder-window must be 1..64");
  if (args.has("reject-seqs")) o.reject_sequences = sequences_of(args, args.get("reject-seqs"));
  if (args.has("burst-drop") && !replay::parse_burst(args.get("burst-drop"), o.burst_length, o.burst_ppm))
    args.fail("--burst-drop takes LEN@P, e.g. 5@0.001 (LEN >= 1, 0 <= P <= 1)");
  const std::string in = args.positionals()[0], out = args.positionals()[1];
  args.refuse_overwriting(in, out);
  args.refuse_overwriting(in, out + ".faults.json");
  try {
    const FaultReport r = inject_faults(in, out, o);
    write_file_atomically(out + ".faults.json", fault_report_json(r, o));
    std::fprintf(stderr,
                 "itch-faults: %s: %llu packets in, %llu out; dropped %llu, duplicated %llu, reordered %llu, "
                 "truncated %llu, corrupted %llu\n",
                 out.c_str(), (unsigned long long)r.packets_in, (unsigned long long)r.packets_out,
                 (unsigned long long)r.dropped_packets, (unsigned long long)r.duplicated_packets,
                 (unsigned long long)r.reordered_packets, (unsigned long long)r.truncated_packets,
                 (unsigned long long)r.corrupted_packets);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "itch-faults: %s\n", e.what());
    return 1;
  }
}
