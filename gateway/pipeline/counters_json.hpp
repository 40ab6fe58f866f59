// Pipeline counters as JSON objects, one layout for every tool that reports
// them (itch-inspect, itch-gateway), so the harness reads one schema.
#pragma once
#include "pipeline/decode_counters.hpp"
#include "pipeline/mold_framer.hpp"
#include "source/capture_file.hpp"
#include "util/json_writer.hpp"

namespace itchbench {

void write_mold_json(JsonWriter& j, const FramerCounters& framer);           // "mold"
void write_sequence_json(JsonWriter& j, const SequenceCounters& sequence);  // "sequence"
void write_decode_json(JsonWriter& j, const DecodeCounters& decode);  // "decode"
void write_capture_json(JsonWriter& j, const CaptureStats& stats);    // "capture_stats"

}  // namespace itchbench
