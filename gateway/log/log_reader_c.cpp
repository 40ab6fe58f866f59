#include "log/log_reader_c.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <thread>
#include <type_traits>

#include "log/compact_reader.hpp"
#include "log/latency_scan.hpp"

using namespace itchbench;

static_assert(sizeof(itchlog_clock_line) == sizeof(logfmt::StageClockLine) &&
              std::is_standard_layout_v<logfmt::StageClockLine>);

namespace {

logfmt::StageClockLine line_of(const itchlog_clock_line& c) { return {c.tsc0, c.ns0, c.ns_per_tick_q32, c.reserved}; }

scan::Source source_of(const char* path, const itchlog_source& s) {
  return {path, s.data_offset, s.stored, s.stages, s.compact != 0, s.has_line != 0, line_of(s.line)};
}

std::vector<scan::StageSpec> stages_of(const itchlog_stage* stages, uint32_t n) {
  std::vector<scan::StageSpec> out;
  for (uint32_t i = 0; i < n; ++i) {
    if (stages[i].start >= scan::kStampCount || stages[i].end >= scan::kStampCount)
      throw std::invalid_argument("latency scan: a stage names an unknown stamp");
    out.push_back({scan::Stamp(stages[i].start), scan::Stamp(stages[i].end), stages[i].bbo_only != 0});
  }
  return out;
}

// A chain's or a start's stamps: stage stamps only (0 kernel .. 4 published).
std::vector<scan::Stamp> stamps_of(const uint8_t* stamps, uint32_t n) {
  std::vector<scan::Stamp> out;
  for (uint32_t i = 0; i < n; ++i) {
    if (stamps[i] > scan::kPublished) throw std::invalid_argument("latency scan: a chain names no stage stamp");
    out.push_back(scan::Stamp(stamps[i]));
  }
  return out;
}

void say(const std::exception& e, char* error, uint64_t error_size) {
  if (error && error_size) std::snprintf(error, error_size, "%s", e.what());
}

// A finished scan: its histograms as tables, each computed once.
struct Scan {
  std::map<uint32_t, std::vector<ExactHistogram::Entry>> tables;
  std::vector<uint64_t> throughput;
  std::vector<scan::Slowest> slowest;
};

Scan* finished(scan::Result r) {
  auto* s = new Scan;
  for (size_t i = 0; i < r.stage.size(); ++i) {
    s->tables[ITCHLOG_TABLE_STAGE + i] = r.stage[i].table();
    s->tables[ITCHLOG_TABLE_WARMUP + i] = r.warmup[i].table();
  }
  s->tables[ITCHLOG_TABLE_BY_TYPE] = r.by_type->table();
  s->tables[ITCHLOG_TABLE_BY_SYMBOL] = r.by_symbol->table();
  s->tables[ITCHLOG_TABLE_OVER_TIME] = r.over_time->table();
  for (size_t i = 0; i < r.hop.size(); ++i) {
    s->tables[ITCHLOG_TABLE_HOP + i] = r.hop[i].table();
    s->tables[ITCHLOG_TABLE_CUMULATIVE + i] = i ? r.cumulative[i].table() : s->tables[ITCHLOG_TABLE_HOP];
  }
  for (size_t i = 0; i < r.co.size(); ++i) s->tables[ITCHLOG_TABLE_CO + i] = r.co[i].table();
  s->throughput = std::move(r.throughput);
  s->slowest = std::move(r.slowest);
  return s;
}

}  // namespace

extern "C" int64_t itchlog_decode_compact(const void* slots, uint64_t n_slots, uint8_t stages,
                                          const itchlog_clock_line* line, itchlog_compact_state* state, void* out,
                                          uint64_t* consumed) {
  CompactState s{state->next_seq, state->prev_origin, state->base};
  const logfmt::StageClockLine clock = line ? line_of(*line) : logfmt::StageClockLine{};
  try {
    const DecodedSlots d = decode_compact(static_cast<const uint8_t*>(slots), n_slots, stages, line ? &clock : nullptr,
                                          s, static_cast<uint8_t*>(out));
    *state = {s.next_seq, s.prev_origin, s.base};
    *consumed = d.consumed;
    return int64_t(d.records);
  } catch (const BadEscape& e) {
    *consumed = e.slot;
    return -1;
  }
}

extern "C" void itchlog_ticks_to_ns(const itchlog_clock_line* line, void* first, uint64_t n, uint64_t stride) {
  const logfmt::StageClockLine clock = line_of(*line);
  auto* p = static_cast<uint8_t*>(first);
  for (uint64_t i = 0; i < n; ++i, p += stride) {
    uint64_t t;
    std::memcpy(&t, p, 8);
    t = ticks_to_ns(clock, t);
    std::memcpy(p, &t, 8);
  }
}

extern "C" void* itchlog_first_pass(const char* path, const itchlog_source* source, uint64_t warmup,
                                    const itchlog_stage* stages, uint32_t n_stages, itchlog_first_pass_result* out,
                                    char* error, uint64_t error_size) {
  try {
    auto f = std::make_unique<scan::FirstPass>(
        scan::first_pass(source_of(path, *source), warmup, stages_of(stages, n_stages)));
    *out = {f->messages, f->accepted, f->max_locate, f->t_lo, f->t_hi, f->any_after_warmup, f->set_stamps,
            f->found_stages, 0};
    return f.release();
  } catch (const std::exception& e) {
    say(e, error, error_size);
    return nullptr;
  }
}

extern "C" void itchlog_first_pass_free(void* first) { delete static_cast<scan::FirstPass*>(first); }

extern "C" void* itchlog_scan(const char* path, const itchlog_source* source, const itchlog_scan_params* params,
                              const void* first, char* error, uint64_t error_size) {
  try {
    const itchlog_scan_params& p = *params;
    if (p.n_stages > ITCHLOG_MAX_STAGES || p.chain_len > ITCHLOG_MAX_STAGES || p.n_co > ITCHLOG_MAX_STAGES)
      throw std::invalid_argument("latency scan: more than 8 stages, chain stamps or co starts");
    scan::Params q;
    q.warmup = p.warmup;
    q.stages = stages_of(p.stages, p.n_stages);
    q.headline = p.headline;
    q.breakdowns = p.breakdowns != 0;
    q.time_bins = p.time_bins;
    q.t_lo = p.t_lo;
    q.span_ns = p.span_ns;
    q.max_locate = p.max_locate;
    q.chain = stamps_of(p.chain, p.chain_len);
    q.co_starts = stamps_of(p.co_starts, p.n_co);
    q.kept = p.kept;
    q.monotonic = {p.monotonic != 0, p.anchor, p.at, p.offset};
    const unsigned threads = p.threads ? p.threads : std::min(4u, std::max(1u, std::thread::hardware_concurrency()));
    static const std::vector<scan::Checkpoint> none;
    const auto& checkpoints = first ? static_cast<const scan::FirstPass*>(first)->checkpoints : none;
    return finished(scan::second_pass(source_of(path, *source), q, checkpoints, threads));
  } catch (const std::exception& e) {
    say(e, error, error_size);
    return nullptr;
  }
}

extern "C" int64_t itchlog_scan_table(void* scan, uint32_t table, int64_t* keys, int64_t* values, int64_t* counts,
                                      uint64_t capacity) {
  const auto& tables = static_cast<Scan*>(scan)->tables;
  const auto it = tables.find(table);
  if (it == tables.end()) return -1;
  const auto& rows = it->second;
  for (size_t i = 0; i < rows.size() && i < capacity; ++i) keys[i] = rows[i].key, values[i] = rows[i].value,
                                                            counts[i] = rows[i].count;
  return int64_t(rows.size());
}

extern "C" int64_t itchlog_scan_throughput(void* scan, int64_t* counts, uint64_t capacity) {
  const auto& bins = static_cast<Scan*>(scan)->throughput;
  for (size_t i = 0; i < bins.size() && i < capacity; ++i) counts[i] = int64_t(bins[i]);
  return int64_t(bins.size());
}

extern "C" int64_t itchlog_scan_slowest(void* scan, int64_t* total, int64_t* start, int64_t* seq, uint8_t* type,
                                        int64_t* hops, uint64_t capacity) {
  const auto& kept = static_cast<Scan*>(scan)->slowest;
  for (size_t i = 0; i < kept.size() && i < capacity; ++i) {
    const scan::Slowest& s = kept[i];
    total[i] = s.total, start[i] = s.start, seq[i] = s.seq, type[i] = s.type;
    std::memcpy(hops + i * s.hops.size(), s.hops.data(), s.hops.size() * sizeof(int64_t));
  }
  return int64_t(kept.size());
}

extern "C" void itchlog_scan_free(void* scan) { delete static_cast<Scan*>(scan); }
