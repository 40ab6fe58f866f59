#include "app/run_common.hpp"

#include <algorithm>
#include <cstddef>
#include <vector>

namespace itchbench {

void RunLogs::close() {
  if (latency) latency->close();
  if (bbo) bbo->close();
  if (depth) depth->close();
}

namespace {
size_t reservation_for(uint64_t expected_records, size_t record_size) {
  if (expected_records == 0) return MmapLog::kDefaultReserveBytes;
  const size_t bytes = logfmt::kLatencyHeaderSize + size_t(expected_records) * record_size;  // the longer header
  return std::min(MmapLog::kDefaultReserveBytes, bytes);
}
}  // namespace

RunLogs open_run_logs(const GatewayOptions& o, const StageClock& clock, logfmt::OriginClock origin, uint8_t stages,
                      uint64_t expected_records) {
  RunLogs logs;
  if (o.latency_log) {
    LogIdentity id{clock.source(), origin, o.run_id, o.commit, stages};
    id.clock_line = clock.line();
    logs.latency = std::make_unique<LatencyLog>(o.out + "/latency.lat", o.latency_format, id, expected_records,
                                                MmapLog::kNoLimit, o.out + "/latency.idx");
  }
  if (o.latency_histogram) logs.histograms = std::make_unique<StageHistograms>(stages);
  logs.bbo = std::make_unique<BboLog>(o.out + "/bbo.bbo", logfmt::Kind::kBbo,
                                      LogIdentity{logfmt::StageClock::kNone, logfmt::OriginClock::kNone, o.run_id, o.commit},
                                      reservation_for(expected_records, sizeof(logfmt::BboRecord)));
  if (o.levels > 0) {
    LogIdentity id{logfmt::StageClock::kNone, logfmt::OriginClock::kNone, o.run_id, o.commit};
    id.levels = logfmt::depth_header_levels(o.levels);
    logs.depth = std::make_unique<LevelChangeLog>(o.out + "/depth.dep", id,
                                                  reservation_for(expected_records, sizeof(logfmt::LevelChangeSlot)));
  }
  return logs;
}

double timer_overhead_ns(const StageClock& clock) {
  std::vector<uint64_t> d(2001);
  for (auto& x : d) {
    const uint64_t a = clock.now();
    const uint64_t b = clock.now();
    x = b - a;  // two stamps bracket one stamp's cost
  }
  std::nth_element(d.begin(), d.begin() + d.size() / 2, d.end());
  // In ticks, not whole ns: recording_cost.py multiplies it by the reads a message, ~3.
  const double ticks_per_ns = clock.ticks_per_ns();
  return ticks_per_ns > 0 ? double(d[d.size() / 2]) / ticks_per_ns : double(d[d.size() / 2]);
}

// How far the stage clock is from CLOCK_MONOTONIC now (median of bracketed
// samples): the error of every difference between a gateway stamp and a
// sender's or a subscriber's (they stamp CLOCK_MONOTONIC).
static int64_t offset_from_monotonic_ns(const StageClock& clock) {
  std::vector<int64_t> d(101);
  for (auto& x : d) {
    const uint64_t before = monotonic_ns();
    const uint64_t stage = clock.to_ns(clock.now());
    const uint64_t after = monotonic_ns();
    x = int64_t(stage) - int64_t(before + (after - before) / 2);
  }
  std::nth_element(d.begin(), d.begin() + d.size() / 2, d.end());
  return d[d.size() / 2];
}
// The TSC rate fitted over a few ms drifts from CLOCK_MONOTONIC by some ppm:
// the harness moves every stamp back linearly between the anchor (offset 0)
// and this measurement before comparing it with another process's stamps.

void write_grant(JsonWriter& j, const char* name, const Grant& g, int value) {
  j.key(name).begin_object();
  j.field("requested", g.requested);
  if (g.requested) j.field("value", value).field("granted", g.error.empty()).field("error", g.error);
  j.end_object();
}

void write_clock_json(JsonWriter& j, const StageClock& clock, double overhead_ns, int64_t stage_reads) {
  const char* name = clock.source() == logfmt::StageClock::kTscTicks ? "tsc" : "monotonic";
  j.key("clock").begin_object();
  j.field("stage", name).field("ticks_per_ns", clock.ticks_per_ns()).field("timer_overhead_ns", overhead_ns);
  if (stage_reads >= 0) j.field("stage_reads", uint64_t(stage_reads));
  const uint64_t measured_at = clock.to_ns(clock.now());
  j.field("offset_from_monotonic_ns_at_end", offset_from_monotonic_ns(clock));
  j.field("offset_measured_at_ns", measured_at).field("anchor_ns", clock.anchor_ns());
  j.end_object();
}

void write_logs_json(JsonWriter& j, const RunLogs& logs, const StageClock& clock) {
  j.key("logs").begin_object();
  j.field("latency_records", logs.latency ? logs.latency->records() : 0);
  j.field("latency_dropped", logs.latency ? logs.latency->dropped() : 0);
  // Compact records (version 5): the slots that carry values too large for a record's differences.
  j.field("latency_format", !logs.latency ? "" : logs.latency->format() == LatencyFormat::kCompact ? "compact" : "wide");
  j.field("latency_escapes", logs.latency ? logs.latency->escapes() : 0);
  j.field("bbo_records", logs.bbo->records()).field("bbo_dropped", logs.bbo->dropped());
  // Times the hot path found no page ready and grew the file itself: provisioning lagged the writer.
  j.field("latency_writer_grows", logs.latency ? logs.latency->writer_grows() : 0);
  j.field("bbo_writer_grows", logs.bbo->writer_grows());
  // Times a log outgrew the address space first reserved for it and was moved (a guess, never a limit).
  j.field("latency_remaps", logs.latency ? logs.latency->remaps() : 0).field("bbo_remaps", logs.bbo->remaps());
  j.field("latency_drop_reason", logs.latency ? logs.latency->drop_reason() : "");
  j.field("bbo_drop_reason", logs.bbo->drop_reason());
  if (logs.depth) {
    // Level changes (a reader's records), and the anchor slots written before some (FORMAT.md, version 3).
    j.field("depth_records", logs.depth->records()).field("depth_dropped", logs.depth->dropped());
    j.field("depth_anchors", logs.depth->anchors());
    j.field("depth_writer_grows", logs.depth->writer_grows()).field("depth_remaps", logs.depth->remaps());
    j.field("depth_drop_reason", logs.depth->drop_reason());
  }
  j.end_object();
  if (logs.histograms) {
    j.key("latency_histogram");
    logs.histograms->write_json(j, clock.ticks_per_ns());
  }
}

void write_noise_json(JsonWriter& j, const NoiseSnapshot& noise) {
  j.key("noise").begin_object();
  j.key("threads").begin_array();
  for (const ThreadNoise& t : noise.threads) {
    j.begin_object();
    j.field("tid", int64_t(t.tid)).field("name", t.name).field("voluntary_switches", t.voluntary_switches);
    j.field("involuntary_switches", t.involuntary_switches).field("minor_faults", t.minor_faults);
    j.field("major_faults", t.major_faults).field("migrations", t.migrations).field("last_cpu", t.last_cpu);
    j.field("on_cpu_ns", t.on_cpu_ns).field("run_delay_ns", t.run_delay_ns);
    j.field("policy", t.policy).field("affinity", t.affinity);
    j.end_object();
  }
  j.end_array();
  j.key("process").begin_object();
  j.field("voluntary_switches", noise.process.voluntary_switches);
  j.field("involuntary_switches", noise.process.involuntary_switches);
  j.field("minor_faults", noise.process.minor_faults).field("major_faults", noise.process.major_faults);
  j.end_object();
  j.end_object();
}

}  // namespace itchbench
