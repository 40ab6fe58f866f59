// Reading a compact (version-5) latency log back: slots of differences and
// escapes decoded into the version-3 records of the log's stages, the stamps
// optionally mapped from raw TSC ticks to ns by the log's clock line. The
// harness's report reads a whole day's log through this (via log_reader_c.h),
// the sequential state machine the format is being a poor fit for numpy.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "log/log_format.hpp"

namespace itchbench {

// What a slot is read against: the previous message's values and the base (FORMAT.md).
struct CompactState {
  uint64_t next_seq = 1;
  uint64_t prev_origin = 0;
  uint64_t base = 0;
};

// An escape slot whose kind a log of these stages cannot hold.
struct BadEscape : std::runtime_error {
  BadEscape(size_t slot, uint8_t kind);
  size_t slot;
  uint8_t kind;
};

// A log's stamp in ns: 0 (not stamped) stays 0.
inline uint64_t ticks_to_ns(const logfmt::StageClockLine& line, uint64_t t) {
  return t ? logfmt::ns_on_line(line, t) : 0;
}

struct DecodedSlots {
  size_t records;   // written to out
  size_t consumed;  // slots read: up to the last message slot (escapes after it wait for the slots that follow)
};

// Decodes slots[0, n) into out, latency_record_size(stages) bytes a record (room for n records), moving state
// past them. line: map the stamps to ns (nullptr: keep them as stored). Arithmetic modulo 2^64, as the writer's.
// Throws BadEscape.
DecodedSlots decode_compact(const uint8_t* slots, size_t n, uint8_t stages, const logfmt::StageClockLine* line,
                            CompactState& state, uint8_t* out);

}  // namespace itchbench
