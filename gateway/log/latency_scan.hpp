// A run's latency report read from its latency log in one compiled pass
// (and a light first one, or instead of it the gateway's index of the log),
// so the report of a day costs a fraction of the replay instead of several
// times it. It computes what the harness's numpy
// reader (harness analysis/latency_pass.py, which stays the reference)
// computes: every stage's exact histogram after and during the warm-up, the
// headline stage by type, by symbol and over time, messages per time bin,
// the hop-by-hop chains to the book and to each subscriber on
// CLOCK_MONOTONIC (the send log's and the subscribers' stamps joined by
// seq), the latency to the book from each start, its trend, and the slowest
// messages. What to compute (which stages, chains, bins) is the harness's
// choice, passed in; the arithmetic is the same integer arithmetic, so the
// figures are equal, not close (the trend's floating sums excepted: within
// rounding).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "log/compact_reader.hpp"
#include "log/exact_histogram.hpp"
#include "log/log_format.hpp"

namespace itchbench::scan {

// A message's stamps, as the harness names them: the five stages, the receive stamp (the kernel's where there is
// one, else the read's) and the origin.
enum Stamp : uint8_t { kKernel, kRead, kDecoded, kBook, kPublished, kReceive, kOrigin, kStampCount };

// Where a latency log's records are (the harness read the header: it knows the version, a crashed writer's
// last whole record and the clock line).
struct Source {
  std::string path;
  uint64_t data_offset = 0;  // the first record's byte
  uint64_t stored = 0;       // slots (compact, version 5) or records (version 3 or 4) to read
  uint8_t stages = 0;        // header.stages
  bool compact = false;
  bool has_line = false;  // stamps are raw ticks, mapped by line (version 4)
  logfmt::StageClockLine line{};
};

struct StageSpec {
  Stamp start, end;
  bool bbo_only;
};

// Where a second pass may start reading the log: a slot (a record, in a wide log), the decoder's state there, and
// the messages accepted before it (the warm-up counts them).
struct Checkpoint {
  uint64_t slot = 0;
  CompactState state;
  uint64_t accepted_before = 0;
};

struct FirstPass {
  uint64_t messages = 0;  // records in the log
  uint64_t accepted = 0;  // not rejected
  uint64_t max_locate = 0;
  bool any_after_warmup = false;
  // After the warm-up: the first accepted message's receive stamp and the largest (0 where a message has none).
  int64_t t_first = 0, t_hi = 0;
  uint32_t set_stamps = 0;     // bit per Stamp (kKernel..kPublished, kOrigin) nonzero in some accepted message
  uint32_t found_stages = 0;   // bit per stage with a value in some accepted message
  std::vector<Checkpoint> checkpoints;  // one per read, the first at slot 0
};

// A stamp of a hop chain: a stage's (kKernel..kPublished, moved onto CLOCK_MONOTONIC), the sender's, or a
// subscriber's receive (kSubscriber + the subscriber's index).
using ChainStamp = uint16_t;
constexpr ChainStamp kIntended = 16, kSent = 17, kSubscriber = 32;

// Stamps from another log joined to the log's messages by seq: seq sorted and distinct, each with one or two
// stamps (CLOCK_MONOTONIC ns). Borrowed: the caller keeps them alive through the pass.
struct JoinedStamps {
  const int64_t* seq = nullptr;
  const int64_t* first = nullptr;   // the send log's intended time; a subscriber's receive time
  const int64_t* second = nullptr;  // the send log's actual send time
  size_t n = 0;
  bool bbo_events_only = true;      // a subscriber: of the BBO stream (else of depth: any message may have an event)
};

constexpr size_t kMaxChain = 16;  // stamps a chain has at most

struct Chain {
  std::vector<ChainStamp> stamps;  // in path order, 2 to kMaxChain
  bool bbo_only = false;           // a subscriber's: BBO events only
};

// The sums of a least-squares line of latency (us) on due time (s since the first due time), as the harness's
// Trend keeps them (analysis/trend.py).
struct TrendSums {
  bool any = false;
  int64_t origin = 0;
  uint64_t n = 0;
  double sx = 0, sy = 0, sxx = 0, sxy = 0, lo = 0, hi = 0;
  void add(int64_t due_ns, int64_t latency_ns);
  void merge(const TrendSums& later);  // a later part's, its own origin moved onto this one's
};

// The drift of the stage clock from CLOCK_MONOTONIC, taken as linear (harness analysis/hops.py to_monotonic).
struct MonotonicMove {
  bool on = false;
  int64_t anchor = 0, at = 0, offset = 0;
};

// Time bins over the run: 2^shift ns each from the first receive stamp after the warm-up (an earlier stamp in the
// first bin), the narrowest of which at most kMaxTimeBins hold the last stamp.
constexpr uint32_t kMaxTimeBins = 128;
inline uint32_t time_shift_for(int64_t t_first, int64_t t_hi) {
  const uint64_t span = t_hi > t_first ? uint64_t(t_hi) - uint64_t(t_first) : 0;
  uint32_t shift = 0;
  while ((span >> shift) >= kMaxTimeBins) ++shift;
  return shift;
}

struct Params {
  uint64_t warmup = 0;
  std::vector<StageSpec> stages;
  int headline = -1;  // index into stages: by type, by symbol and over time; -1 none
  bool breakdowns = true;
  int64_t time_origin = 0;  // FirstPass::t_first
  uint32_t time_shift = 0;  // time_shift_for the first pass's stamps
  uint64_t max_locate = 0;
  std::vector<Chain> chains;            // the first to the book (the slowest kept along it), then to subscribers
  std::vector<ChainStamp> co_starts;    // latency to the book from each of these stamps
  JoinedStamps send;                    // the send log's (intended, sent), when there is one
  std::vector<JoinedStamps> subscribers;
  uint32_t kept = 5000;                 // slowest messages along the first chain kept
  MonotonicMove monotonic;
};

struct Slowest {
  int64_t total, start, seq;
  uint8_t type;
  std::vector<int64_t> hops;
};

struct Result {
  std::vector<ExactHistogram> stage, warmup;
  std::unique_ptr<ExactHistogram> by_type, by_symbol, over_time;  // over_time keyed by time bin
  std::vector<uint64_t> throughput;           // messages per time bin after the warm-up (kMaxTimeBins)
  int64_t time_origin = 0;                    // the bins' (a pass that follows the log finds them)
  uint32_t time_shift = 0;
  // Per chain, per hop: its latency, and the latency from the chain's start (cumulative[c][0] is hop[c][0]'s).
  std::vector<std::vector<ExactHistogram>> hop, cumulative;
  std::vector<ExactHistogram> co;             // per co_starts
  TrendSums trend, served_trend;              // from the intended time; from the actual send, on the intended time
  bool served_any = false;
  int64_t served_first = 0, served_last = 0;  // the first intended time and the last book stamp of those served
  std::vector<Slowest> slowest;               // at most kept, by total latency then earlier seq; any order
};

// Both throw std::runtime_error naming the path and what is wrong.
// With the gateway's index of the log (blocks, n_blocks: its records, in order), the first pass takes each
// block's counts and reads from the log only the block in which the warm-up ends; the figures are the same.
FirstPass first_pass(const Source& source, uint64_t warmup, const std::vector<StageSpec>& stages,
                     const logfmt::LatencyBlockRecord* blocks = nullptr, size_t n_blocks = 0);
// threads > 1: the log cut at the first pass's checkpoints into that many parts, each counted on its own thread
// and the counts added (histograms are sums; the slowest kept are chosen again from the parts' own).
Result second_pass(const Source& source, const Params& params, const std::vector<Checkpoint>& checkpoints = {},
                   unsigned threads = 1);

// The second pass while the gateway writes the log, on a CPU of its own: each block counted as soon as the log's
// index holds it (the gateway writes a block's record after the block's slots). params as for second_pass, but
// the time bins start at the first message after the warm-up, 1 ns wide, and widen as stamps come (to the bins
// second_pass would choose), and max_locate only sizes the dense by-symbol counts. source.stored is not read.
// *state: 0 while the writer runs; set to 1 once it has ended, the pass counts every block the index then holds,
// those left split over up to `threads` threads (the counts added as second_pass adds its parts'), and returns;
// 2 abandons it (the result is then not the log's). *followed: the messages counted so far.
struct Followed {
  Result counts;
  uint64_t blocks = 0;      // index records counted, in order, each following the one before
  uint64_t slots = 0;       // the log's slots they cover
  uint64_t messages = 0;    // and its messages
  uint64_t accepted = 0;
  uint64_t max_locate = 0;  // the largest locate of an accepted message
  bool abandoned = false;
  std::vector<uint64_t> parts_began;  // the blocks at which the later parts of the rest began, each on its thread
};
Followed follow(const Source& source, const Params& params, const std::string& index_path, const uint32_t* state,
                uint64_t* followed, unsigned threads = 1);

// Threads for a pass that is not told how many: one for each CPU this thread may run on, at most 4.
unsigned default_threads();

}  // namespace itchbench::scan
