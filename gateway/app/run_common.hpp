// What every gateway run shares: the stage clock, the logs, the JSON header
// of gateway.json and its atomic write.
#pragma once
#include <memory>
#include <string>

#include "app/gateway_options.hpp"
#include "book/depth_tracker.hpp"
#include "book/level_changes.hpp"
#include "log/level_change_log.hpp"
#include "log/log_format.hpp"
#include "log/mmap_log.hpp"
#include "log/stage_histograms.hpp"
#include "util/json_writer.hpp"
#include "util/stage_clock.hpp"
#include "util/thread_noise.hpp"

namespace itchbench {

struct RunLogs {
  std::unique_ptr<LatencyLog> latency;  // null with --no-latency-log or --latency-histogram
  std::unique_ptr<StageHistograms> histograms;  // with --latency-histogram
  std::unique_ptr<BboLog> bbo;
  std::unique_ptr<LevelChangeLog> depth;  // with --levels: level change slots (gateway/log/FORMAT.md)
  void close();
};

// Depth events (--levels): the top N levels a side (DepthTracker), or every level's changes (level_changes),
// attached to a gateway with the run's depth log.
struct DepthEvents {
  static_assert(DepthTracker::kMaxLevels == logfmt::kMaxDepthLevels);
  explicit DepthEvents(uint32_t levels) : levels(levels), top(levels == logfmt::kAllLevels ? 0 : levels) {}
  template <class Gateway>
  void attach(Gateway& gw, LevelChangeLog* log) {
    if (levels == logfmt::kAllLevels)
      gw.set_every_level(log);
    else if (levels > 0)
      gw.set_depth(&top, log);
  }
  uint32_t levels;
  DepthTracker top;
};

// stages: what the latency log's records stamp (logfmt::Stage).
// expected_records: how many records the input is likely to produce (0: unknown, live);
// each log first reserves address space for that many, not for the default 64 GiB,
// and grows past it when the guess was short (MmapLog).
RunLogs open_run_logs(const GatewayOptions& o, const StageClock& clock, logfmt::OriginClock origin, uint8_t stages,
                      uint64_t expected_records = 0);

// Median cost of one stage stamp, measured in place: every latency figure
// of the run includes it.
double timer_overhead_ns(const StageClock& clock);

// The "clock" object. stage_reads: the stage-clock reads the run's hot path took, where the run counts
// them exactly (simulation); negative: not counted, left out.
void write_clock_json(JsonWriter& j, const StageClock& clock, double overhead_ns, int64_t stage_reads = -1);

// A real-time option asked for, and whether the system granted it.
struct Grant {
  bool requested = false;
  std::string error;  // empty: granted
};
void write_grant(JsonWriter& j, const char* name, const Grant& g, int value);
// "logs", and "latency_histogram" when the run counted its stage times in histograms (in ns, by clock).
void write_logs_json(JsonWriter& j, const RunLogs& logs, const StageClock& clock);
// "noise": each live thread's switches, faults, migrations, policy and affinity, and the process's totals.
void write_noise_json(JsonWriter& j, const NoiseSnapshot& noise);

}  // namespace itchbench
