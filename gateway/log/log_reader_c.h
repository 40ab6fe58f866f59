/* The C face of the log reader, for the harness (ctypes, analysis/native.py):
 * libitchlog.so. Every call is reentrant; only a scan allocates, and keeps
 * its result until itchlog_scan_free. */
#ifndef ITCHBENCH_LOG_READER_C_H
#define ITCHBENCH_LOG_READER_C_H
#include <stdint.h>

#define ITCHLOG_API __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

/* A log's clock line (FORMAT.md): the layout of its 32 bytes after the common header. */
typedef struct {
  uint64_t tsc0, ns0, ns_per_tick_q32, reserved;
} itchlog_clock_line;

typedef struct {
  uint64_t next_seq, prev_origin, base;
} itchlog_compact_state;

/* Decodes n_slots compact slots into version-3 records of `stages` (room for n_slots records at out), moving
 * *state past them; line (may be NULL) maps the stamps to ns. Returns the records written and sets *consumed;
 * on an escape kind the stages cannot hold returns -1 and sets *consumed to that slot's index. */
ITCHLOG_API int64_t itchlog_decode_compact(const void* slots, uint64_t n_slots, uint8_t stages,
                                           const itchlog_clock_line* line, itchlog_compact_state* state, void* out,
                                           uint64_t* consumed);

/* Maps n stamps, stride bytes apart from first, from raw TSC ticks to ns in place (0 stays 0). */
ITCHLOG_API void itchlog_ticks_to_ns(const itchlog_clock_line* line, void* first, uint64_t n, uint64_t stride);

/* A latency log's report in one compiled pass (log/latency_scan.hpp): what the harness read from the header,
 * what it asks for, and the exact histograms it gets back as (key, value, count) tables. */
typedef struct {
  uint64_t data_offset, stored; /* the first record's byte; slots (version 5) or records (3, 4) to read */
  uint8_t stages, compact, has_line, reserved[5];
  itchlog_clock_line line;
} itchlog_source;

typedef struct {
  uint8_t start, end, bbo_only, reserved[5]; /* stamps: 0 kernel .. 4 published, 5 receive, 6 origin */
} itchlog_stage;

typedef struct {
  uint64_t messages, accepted, max_locate;
  int64_t t_first, t_hi; /* after the warm-up: the first message's receive stamp, the largest */
  uint32_t any_after_warmup, set_stamps, found_stages, reserved;
} itchlog_first_pass_result;

#define ITCHLOG_MAX_STAGES 8
/* A hop chain's stamps: 0 kernel .. 4 published (moved onto CLOCK_MONOTONIC), 16 the sender's intended time,
 * 17 its actual send, 32 + k subscriber k's receive. */
typedef struct {
  uint64_t warmup, max_locate;
  int64_t time_origin; /* the time bins: 2^time_shift ns each from time_origin */
  int64_t anchor, at, offset; /* CLOCK_MONOTONIC move of the stage stamps, when monotonic */
  uint32_t n_stages;
  int32_t headline;
  uint32_t breakdowns, time_shift, n_co, kept, monotonic;
  uint32_t threads; /* 0: one for each CPU the calling thread may run on, at most 4 */
  itchlog_stage stages[ITCHLOG_MAX_STAGES];
  uint16_t co_starts[ITCHLOG_MAX_STAGES];
  /* The chains, laid end to end: chain i has chain_lengths[i] stamps, BBO events only when chain_bbo_only[i]. The
   * first is to the book (the slowest messages kept along it). */
  uint32_t n_chains;
  const uint16_t* chain_stamps;
  const uint32_t* chain_lengths;
  const uint8_t* chain_bbo_only;
  /* Joined by seq (sorted, distinct): the send log's intended and actual send times, each subscriber's receive
   * times. Borrowed for the call. */
  uint64_t send_n;
  const int64_t *send_seq, *send_intended, *send_sent;
  uint32_t n_subscribers;
  const uint64_t* subscriber_n;
  const int64_t* const* subscriber_seq;
  const int64_t* const* subscriber_received;
  const uint8_t* subscriber_depth; /* 1: a subscriber of the depth stream, whose events any message may have */
} itchlog_scan_params;

typedef struct {
  int64_t origin;
  uint64_t n;
  double sx, sy, sxx, sxy, lo, hi;
  uint32_t any, reserved;
} itchlog_trend;

/* Tables of a scan: the stage (and warm-up) histograms by the stage's index, then the breakdowns, the chain's
 * hops and cumulative latencies by hop, and the latency to the book from each co start. */
#define ITCHLOG_TABLE_STAGE 0
#define ITCHLOG_TABLE_WARMUP 16
#define ITCHLOG_TABLE_BY_TYPE 32
#define ITCHLOG_TABLE_BY_SYMBOL 33
#define ITCHLOG_TABLE_OVER_TIME 34
#define ITCHLOG_TABLE_CO 80
#define ITCHLOG_TABLE_HOP 0x10000        /* + 16 * chain + hop */
#define ITCHLOG_TABLE_CUMULATIVE 0x20000 /* + 16 * chain + hop */

/* The first pass (what it found in *out, and where a second pass may start: for itchlog_scan), or NULL with the
 * reason in error (error_size bytes, NUL-terminated). blocks, n_blocks: the log's index (the records of its
 * latency.idx, FORMAT.md), whose counts the pass takes instead of reading the whole log; NULL, 0: none. */
ITCHLOG_API void* itchlog_first_pass(const char* path, const itchlog_source* source, uint64_t warmup,
                                     const itchlog_stage* stages, uint32_t n_stages, const void* blocks,
                                     uint64_t n_blocks, itchlog_first_pass_result* out, char* error,
                                     uint64_t error_size);
ITCHLOG_API void itchlog_first_pass_free(void* first);
/* The scan's result, or NULL with the reason in error; first: the same log's first pass. */
ITCHLOG_API void* itchlog_scan(const char* path, const itchlog_source* source, const itchlog_scan_params* params,
                               const void* first, char* error, uint64_t error_size);
/* The scan counted while the gateway writes the log (log/latency_scan.hpp follow): its index at index_path read as
 * it grows, until *state (the caller's) is 1 (the writer has ended: every block then written is counted, those left
 * on params->threads threads) or 2 (abandoned). *followed: messages counted so far, for progress. The result as
 * itchlog_scan's (NULL with the reason in error), what it covered in *out. */
typedef struct {
  uint64_t blocks, slots, messages, accepted, max_locate;
  int64_t time_origin;
  uint32_t time_shift, abandoned;
} itchlog_followed;
ITCHLOG_API void* itchlog_follow(const char* path, const itchlog_source* source, const itchlog_scan_params* params,
                                 const char* index_path, const uint32_t* state, uint64_t* followed,
                                 itchlog_followed* out, char* error, uint64_t error_size);
/* A table's rows (-1: no such table), the first `capacity` of them copied out, sorted by key then value. */
ITCHLOG_API int64_t itchlog_scan_table(void* scan, uint32_t table, int64_t* keys, int64_t* values, int64_t* counts,
                                       uint64_t capacity);
/* Messages per time bin after the warm-up: the bins (128 of them, the unused empty), the first `capacity` copied. */
ITCHLOG_API int64_t itchlog_scan_throughput(void* scan, int64_t* counts, uint64_t capacity);
/* The slowest messages kept: how many, the first `capacity` copied (hops: chain_len - 1 values each). */
ITCHLOG_API int64_t itchlog_scan_slowest(void* scan, int64_t* total, int64_t* start, int64_t* seq, uint8_t* type,
                                         int64_t* hops, uint64_t capacity);
/* The trends (from the intended time; from the actual send) and the span served: the first intended time and the
 * last book stamp (served_any 0: none). */
ITCHLOG_API void itchlog_scan_trends(void* scan, itchlog_trend* trend, itchlog_trend* served_trend,
                                     int64_t* served_first, int64_t* served_last, uint32_t* served_any);
ITCHLOG_API void itchlog_scan_free(void* scan);

/* A version-2 depth log of the top N read back as whole events (log/depth_event_builder.hpp): a builder keeps each
 * stock's top N levels from call to call. */
ITCHLOG_API void* itchlog_depth_events_new(uint32_t levels);
/* n level change records (32 bytes each; whole events only) applied: one event of 24 + 32 N bytes (head, N bids, N
 * asks) written at out for each, at most capacity. Returns how many, or -1 with what is malformed in error. */
ITCHLOG_API int64_t itchlog_depth_events_apply(void* builder, const void* records, uint64_t n, void* out,
                                               uint64_t capacity, char* error, uint64_t error_size);
ITCHLOG_API void itchlog_depth_events_free(void* builder);

/* The last anchor of a version-3 depth log's slots (log/level_change_slots.hpp): what the next part is read from. */
typedef struct {
  uint64_t seq, timestamp;
  uint32_t held, reserved; /* held 0: no anchor read yet */
} itchlog_slot_anchor;

/* n slots of a version-3 depth log (16 bytes each) read back into version-2 level change records (32 bytes each,
 * room for n at out), from *anchor, which is moved past them. Returns the records written and sets *consumed (n,
 * or n - 1 when a high-shares slot ends them: its change is not among them); on a slot refused returns -1, *consumed
 * that slot's index and *fault why (1: a flag no kind has, 2: a level change with no anchor before it, 3: a
 * high-shares slot followed by no level change). */
ITCHLOG_API int64_t itchlog_read_level_change_slots(const void* slots, uint64_t n, itchlog_slot_anchor* anchor,
                                                    void* out, uint64_t* consumed, uint32_t* fault);

/* A contract gateway's csv output, its lines of numbers alone, the stock a locate or a symbol (log/plain_csv.hpp):
 * rows of fields + 1 int64 values at out (the fields, then t_recv: 0 when not stamped), a stock named by its symbol
 * -1 and the symbol in 16 bytes a row at symbols, a side letter (sided: the third field) its byte; room for
 * capacity rows. Each other line is set aside at others, three uint64 a line (the rows before it, its first byte, the byte after its \n), room for others_capacity, how
 * many at *others_found. Returns the rows, or -1 when there is no room (others_capacity 0: at the first other line;
 * the harness reads the whole output line by line then). */
ITCHLOG_API int64_t itchlog_parse_plain_csv(const char* data, uint64_t n, uint32_t fields, uint32_t stamped,
                                            uint32_t sided,
                                            int64_t* out, char* symbols, uint64_t capacity, void* others,
                                            uint64_t others_capacity, uint64_t* others_found);

/* The sizes of this header's structures, in declaration order (source, stage, first pass result, scan params,
 * trend): the harness checks its own layouts against them before any call. Returns how many it wrote. */
ITCHLOG_API uint32_t itchlog_struct_sizes(uint64_t* sizes, uint32_t capacity);

#ifdef __cplusplus
}
#endif
#endif
