/* The C face of the log reader, for the harness (ctypes, analysis/native.py):
 * libitchlog.so. Every call is reentrant; no call allocates or keeps a
 * pointer. */
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

#ifdef __cplusplus
}
#endif
#endif
