#include "log/log_reader_c.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <new>
#include <type_traits>

#include "log/compact_reader.hpp"
#include "log/depth_event_builder.hpp"
#include "log/level_change_slots.hpp"
#include "log/latency_scan.hpp"
#include "log/plain_csv.hpp"

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

// A chain's or a start's stamps: stage stamps, the sender's, or a subscriber's of the n_subscribers.
std::vector<scan::ChainStamp> stamps_of(const uint16_t* stamps, uint32_t n, uint32_t n_subscribers, bool send) {
  std::vector<scan::ChainStamp> out;
  for (uint32_t i = 0; i < n; ++i) {
    const uint16_t c = stamps[i];
    if (!(c <= scan::kPublished || ((c == scan::kIntended || c == scan::kSent) && send) ||
          (c >= scan::kSubscriber && uint32_t(c - scan::kSubscriber) < n_subscribers)))
      throw std::invalid_argument("latency scan: a chain names a stamp the run does not have: " + std::to_string(c));
    out.push_back(c);
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
  scan::TrendSums trend, served_trend;
  bool served_any;
  int64_t served_first, served_last;
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
  for (size_t c = 0; c < r.hop.size(); ++c)
    for (size_t i = 0; i < r.hop[c].size(); ++i) {
      const uint32_t at = uint32_t(16 * c + i);
      s->tables[ITCHLOG_TABLE_HOP + at] = r.hop[c][i].table();
      s->tables[ITCHLOG_TABLE_CUMULATIVE + at] = i ? r.cumulative[c][i].table() : s->tables[ITCHLOG_TABLE_HOP + at];
    }
  for (size_t i = 0; i < r.co.size(); ++i) s->tables[ITCHLOG_TABLE_CO + i] = r.co[i].table();
  s->throughput = std::move(r.throughput);
  s->slowest = std::move(r.slowest);
  s->trend = r.trend;
  s->served_trend = r.served_trend;
  s->served_any = r.served_any;
  s->served_first = r.served_first;
  s->served_last = r.served_last;
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
                                    const itchlog_stage* stages, uint32_t n_stages, const void* blocks,
                                    uint64_t n_blocks, itchlog_first_pass_result* out, char* error,
                                    uint64_t error_size) {
  try {
    auto f = std::make_unique<scan::FirstPass>(
        scan::first_pass(source_of(path, *source), warmup, stages_of(stages, n_stages),
                         static_cast<const logfmt::LatencyBlockRecord*>(blocks), size_t(n_blocks)));
    *out = {f->messages, f->accepted, f->max_locate, f->t_first, f->t_hi, f->any_after_warmup, f->set_stamps,
            f->found_stages, 0};
    return f.release();
  } catch (const std::exception& e) {
    say(e, error, error_size);
    return nullptr;
  }
}

extern "C" void itchlog_first_pass_free(void* first) { delete static_cast<scan::FirstPass*>(first); }

namespace {

scan::Params params_of(const itchlog_scan_params& p) {
  if (p.n_stages > ITCHLOG_MAX_STAGES || p.n_co > ITCHLOG_MAX_STAGES)
    throw std::invalid_argument("latency scan: more than 8 stages or co starts");
  scan::Params q;
  q.warmup = p.warmup;
  q.stages = stages_of(p.stages, p.n_stages);
  q.headline = p.headline;
  q.breakdowns = p.breakdowns != 0;
  q.time_origin = p.time_origin;
  q.time_shift = p.time_shift;
  q.max_locate = p.max_locate;
  const bool send = p.send_n > 0;
  q.send = {p.send_seq, p.send_intended, p.send_sent, size_t(p.send_n)};
  for (uint32_t k = 0; k < p.n_subscribers; ++k)
    q.subscribers.push_back({p.subscriber_seq[k], p.subscriber_received[k], nullptr, size_t(p.subscriber_n[k]),
                             p.subscriber_depth[k] == 0});
  for (uint32_t c = 0, at = 0; c < p.n_chains; at += p.chain_lengths[c++]) {
    if (p.chain_lengths[c] < 2 || p.chain_lengths[c] > scan::kMaxChain)
      throw std::invalid_argument("latency scan: a chain of fewer than 2 stamps or more than 16");
    q.chains.push_back({stamps_of(p.chain_stamps + at, p.chain_lengths[c], p.n_subscribers, send),
                        p.chain_bbo_only[c] != 0});
  }
  q.co_starts = stamps_of(p.co_starts, p.n_co, p.n_subscribers, send);
  q.kept = p.kept;
  q.monotonic = {p.monotonic != 0, p.anchor, p.at, p.offset};
  return q;
}

}  // namespace

extern "C" void* itchlog_scan(const char* path, const itchlog_source* source, const itchlog_scan_params* params,
                              const void* first, char* error, uint64_t error_size) {
  try {
    const itchlog_scan_params& p = *params;
    const unsigned threads = p.threads ? p.threads : scan::default_threads();
    static const std::vector<scan::Checkpoint> none;
    const auto& checkpoints = first ? static_cast<const scan::FirstPass*>(first)->checkpoints : none;
    return finished(scan::second_pass(source_of(path, *source), params_of(p), checkpoints, threads));
  } catch (const std::exception& e) {
    say(e, error, error_size);
    return nullptr;
  }
}

extern "C" void* itchlog_follow(const char* path, const itchlog_source* source, const itchlog_scan_params* params,
                                const char* index_path, const uint32_t* state, uint64_t* followed,
                                itchlog_followed* out, char* error, uint64_t error_size) {
  try {
    const unsigned threads = params->threads ? params->threads : scan::default_threads();
    scan::Followed f = scan::follow(source_of(path, *source), params_of(*params), index_path, state, followed, threads);
    *out = {f.blocks, f.slots, f.messages, f.accepted, f.max_locate, f.counts.time_origin, f.counts.time_shift,
            f.abandoned};
    return finished(std::move(f.counts));
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

namespace {
itchlog_trend trend_of(const scan::TrendSums& t) {
  return {t.origin, t.n, t.sx, t.sy, t.sxx, t.sxy, t.lo, t.hi, t.any, 0};
}
}  // namespace

extern "C" void itchlog_scan_trends(void* scan, itchlog_trend* trend, itchlog_trend* served_trend,
                                    int64_t* served_first, int64_t* served_last, uint32_t* served_any) {
  const Scan& s = *static_cast<Scan*>(scan);
  *trend = trend_of(s.trend);
  *served_trend = trend_of(s.served_trend);
  *served_first = s.served_first;
  *served_last = s.served_last;
  *served_any = s.served_any;
}

extern "C" void itchlog_scan_free(void* scan) { delete static_cast<Scan*>(scan); }

extern "C" void* itchlog_depth_events_new(uint32_t levels) {
  if (levels < 1 || levels > logfmt::kMaxDepthLevels) return nullptr;
  return new (std::nothrow) DepthEventBuilder(levels);
}

extern "C" int64_t itchlog_depth_events_apply(void* builder, const void* records, uint64_t n, void* out,
                                              uint64_t capacity, char* error, uint64_t error_size) {
  try {
    return int64_t(static_cast<DepthEventBuilder*>(builder)->apply(
        static_cast<const logfmt::LevelChangeRecord*>(records), n, static_cast<uint8_t*>(out), capacity));
  } catch (const std::exception& e) {
    say(e, error, error_size);
    return -1;
  }
}

extern "C" void itchlog_depth_events_free(void* builder) { delete static_cast<DepthEventBuilder*>(builder); }

extern "C" int64_t itchlog_read_level_change_slots(const void* slots, uint64_t n, itchlog_slot_anchor* anchor,
                                                   void* out, uint64_t* consumed, uint32_t* fault) {
  SlotAnchor a{anchor->seq, anchor->timestamp, anchor->held != 0};
  const SlotsRead r = read_level_change_slots(static_cast<const uint8_t*>(slots), n, a,
                                              static_cast<logfmt::LevelChangeRecord*>(out));
  *anchor = itchlog_slot_anchor{a.seq, a.timestamp, a.held ? 1u : 0u, 0};
  *consumed = r.consumed;
  *fault = uint32_t(r.fault);
  return r.fault == SlotFault::kNone ? int64_t(r.records) : -1;
}

extern "C" int64_t itchlog_parse_plain_csv(const char* data, uint64_t n, uint32_t fields, uint32_t stamped,
                                           uint32_t sided,
                                           int64_t* out, char* symbols, uint64_t capacity, void* others,
                                           uint64_t others_capacity, uint64_t* others_found) {
  static_assert(sizeof(OtherLine) == 3 * sizeof(uint64_t), "three values a line set aside");
  return parse_plain_csv(data, n, fields, stamped != 0, sided != 0, out, symbols, capacity,
                         static_cast<OtherLine*>(others), others_capacity, others_found);
}

extern "C" uint32_t itchlog_struct_sizes(uint64_t* sizes, uint32_t capacity) {
  const uint64_t all[] = {sizeof(itchlog_source), sizeof(itchlog_stage), sizeof(itchlog_first_pass_result),
                          sizeof(itchlog_scan_params), sizeof(itchlog_trend), sizeof(logfmt::LatencyBlockRecord),
                          sizeof(itchlog_followed)};
  const uint32_t n = sizeof all / sizeof all[0];
  for (uint32_t i = 0; i < n && i < capacity; ++i) sizes[i] = all[i];
  return n;
}
