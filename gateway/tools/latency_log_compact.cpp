// latency-log-compact: rewrites a latency log of fixed records (format
// version 3 or 4: a head and one u64 a recorded stage) as compact records
// (version 5), with the encoder the gateway writes through. For logs kept
// from older runs, and the tests' proof that the compact form holds every
// stamp of every message: the old log is the expected value.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "log/latency_log.hpp"
#include "log/log_format.hpp"
#include "util/cli.hpp"

using namespace itchbench;

namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::string padded(const char* text, size_t n) { return std::string(text, strnlen(text, n)); }

}  // namespace

int main(int argc, char** argv) {
  cli::Args args("latency-log-compact", "latency-log-compact [options] IN OUT",
                 "Rewrite a latency log of version 3 or 4 (fixed records: 24 bytes and 8 a stage) as a\n"
                 "compact log (version 5, ~20 bytes a message), every value kept exactly (gateway/log/FORMAT.md).\n"
                 "IN must be finalized and whole. Exit status: 0 written, 2 usage or unreadable input.");
  args.positional("IN", "a latency log of version 3 or 4");
  args.positional("OUT", "where the compact log goes (replaced)");
  args.parse(argc, argv);
  const std::string in_path = args.positionals()[0], out_path = args.positionals()[1];
  args.refuse_overwriting(in_path, out_path);
  try {
    const std::vector<uint8_t> bytes = read_file(in_path);
    logfmt::Header h{};
    if (bytes.size() < sizeof h) throw std::runtime_error(in_path + ": shorter than a log header");
    std::memcpy(&h, bytes.data(), sizeof h);
    if (std::memcmp(h.magic, logfmt::kMagic, sizeof h.magic) != 0 || h.kind != uint16_t(logfmt::Kind::kLatency))
      throw std::runtime_error(in_path + ": not an itchbench latency log");
    if (h.version != 3 && h.version != 4)
      throw std::runtime_error(in_path + ": latency log version " + std::to_string(h.version) +
                               "; this tool rewrites versions 3 and 4");
    if (!(h.flags & logfmt::kFlagFinalized))
      throw std::runtime_error(in_path + ": the log was never finalized (its writer did not close it)");
    const size_t record_size = logfmt::latency_record_size(h.stages);
    if (h.record_size != record_size || h.header_size > bytes.size() ||
        bytes.size() != h.header_size + h.record_count * record_size)
      throw std::runtime_error(in_path + ": its size does not match its header's record size and count");

    LogIdentity id;
    id.stage_clock = logfmt::StageClock(h.stage_clock);
    id.origin_clock = logfmt::OriginClock(h.origin_clock);
    id.run_id = padded(h.run_id, sizeof h.run_id);
    id.commit = padded(h.commit, sizeof h.commit);
    id.stages = h.stages;
    if (h.version == 4) std::memcpy(&id.clock_line, bytes.data() + sizeof h, sizeof id.clock_line);
    LatencyLog out(out_path, LatencyFormat::kCompact, id, h.record_count);
    uint8_t order[logfmt::kStageCount];
    const unsigned count = logfmt::stage_order(h.stages, order);
    for (uint64_t k = 0; k < h.record_count; ++k) {
      const uint8_t* p = bytes.data() + h.header_size + k * record_size;
      logfmt::LatencyRecord r;
      std::memcpy(&r, p, sizeof r);
      MessageLatency m;
      m.seq = r.seq;
      m.t_origin = r.t_origin;
      m.stock_locate = r.stock_locate;
      m.msg_type = r.msg_type;
      m.flags = uint8_t(r.flags & ~logfmt::kWritten);
      for (unsigned j = 0; j < count; ++j) std::memcpy(&m.stamp[order[j]], p + sizeof r + 8 * j, 8);
      out.append(m);
    }
    out.close();
    if (out.dropped()) throw std::runtime_error(out_path + ": " + out.drop_reason());
    std::printf("%s: %llu messages in %llu slots (%llu escapes), %llu -> %llu bytes\n", out_path.c_str(),
                (unsigned long long)out.records(), (unsigned long long)out.slots(),
                (unsigned long long)out.escapes(), (unsigned long long)bytes.size(),
                (unsigned long long)(logfmt::kLatencyHeaderSize + out.slots() * sizeof(logfmt::CompactLatencyRecord)));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "latency-log-compact: %s\n", e.what());
    return 2;
  }
}
