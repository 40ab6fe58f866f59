// Pipeline counters as JSON objects, one layout for every tool that reports
// them (itch-inspect, itch-gateway), so the harness reads one schema.
#pragma once
#include "pipeline/decode_counters.hpp"
#include "pipeline/gap_recovery.hpp"
#include "pipeline/mold_framer.hpp"
#include "source/capture_file.hpp"
#include "util/json_writer.hpp"

namespace itchbench {

void write_mold_json(JsonWriter& j, const FramerCounters& framer);           // "mold"
void write_sequence_json(JsonWriter& j, const SequenceCounters& sequence);  // "sequence"
void write_recovery_json(JsonWriter& j, const GapRecovery& recovery);      // "recovery"
void write_decode_json(JsonWriter& j, const DecodeCounters& decode);  // "decode"
// "capture_stats", with "feed" (ADDR:PORT, "" when none: a binary ITCH file or a capture without UDP)
void write_capture_json(JsonWriter& j, const CaptureStats& stats, const std::optional<Feed>& feed);
void write_flows_json(JsonWriter& j, const std::vector<FlowCount>& flows);  // "flows", as choose_feed orders them

}  // namespace itchbench
