/* itchbench white box: a gateway of any team writes per-message stage stamps in itchbench's latency-log
 * format (gateway/log/FORMAT.md, kind 1, version 3, stamps in CLOCK_MONOTONIC ns), so that itchbench's
 * report shows the gateway's own stages beside the wire-to-wire latency it measures from outside.
 *
 * One file, C99 or C++, no dependency. Copy it into your gateway, write "{out}/latency.lat" (the contract's
 * {out} placeholder, or $ITCHBENCH_OUT) and set white_box = true in your itchbench.toml
 * (docs/gateway-contract.md):
 *
 *   ib_latency_log log;
 *   ib_latency_open(&log, path, IB_STAGE_READ | IB_STAGE_DECODED | IB_STAGE_BOOK, "", "");
 *   uint64_t stamps[3] = {t_read, t_decoded, t_book};        // ib_now_ns(), in stage order
 *   ib_latency_record(&log, seq, msg[0], stock_locate, bbo_changed ? IB_BBO_EVENT : 0, stamps);
 *   ib_latency_close(&log);                                    // exact count, finalized
 *
 * Records go through stdio's buffer: a crash loses at most the buffer, and the log reads as not finalized.
 */
#ifndef ITCHBENCH_STAMPS_H
#define ITCHBENCH_STAMPS_H

/* clock_gettime under strict C99: effective when this header comes first (or build with -D_POSIX_C_SOURCE). */
#if !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE)
#define _POSIX_C_SOURCE 200112L
#endif

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

enum {
  IB_STAGE_KERNEL = 1, IB_STAGE_READ = 2, IB_STAGE_DECODED = 4, IB_STAGE_BOOK = 8, IB_STAGE_PUBLISHED = 16,
  IB_BBO_EVENT = 0x01, IB_UNKNOWN_REF = 0x02, IB_REJECTED = 0x04
};

typedef struct {
  FILE* file;
  uint8_t stages;
  uint64_t records;
  char run_id[32];
  char commit[48];
} ib_latency_log;

/* CLOCK_MONOTONIC in ns: the clock itchbench's senders and collectors stamp too. */
static inline uint64_t ib_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void ib_put_le(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = (uint8_t)(v >> (8 * i));
}

static inline int ib_stage_count(uint8_t stages) {
  int n = 0;
  for (int i = 0; i < 5; ++i) n += (stages >> i) & 1;
  return n;
}

/* The 128-byte header; count and finalized are filled in by ib_latency_close. */
static inline void ib_header(uint8_t* h, uint8_t stages, uint64_t count, int finalized, const char run_id[32],
                             const char commit[48]) {
  memset(h, 0, 128);
  memcpy(h, "ITCHBLOG", 8);
  ib_put_le(h + 8, 3, 2);                                     /* version 3 */
  ib_put_le(h + 10, 128, 2);                                  /* header size */
  ib_put_le(h + 12, 24 + 8 * (uint64_t)ib_stage_count(stages), 2);
  ib_put_le(h + 14, 1, 2);                                    /* kind: latency */
  ib_put_le(h + 16, 1, 2);                                    /* stage clock: CLOCK_MONOTONIC ns */
  ib_put_le(h + 18, 0, 2);                                    /* origin clock: none */
  ib_put_le(h + 20, finalized ? 1 : 0, 4);
  ib_put_le(h + 24, count, 8);
  memcpy(h + 40, run_id, 32);
  memcpy(h + 72, commit, 48);
  h[120] = stages;
}

/* 0 on success, -1 (errno set) when the file cannot be created. */
static inline int ib_latency_open(ib_latency_log* log, const char* path, uint8_t stages, const char* run_id,
                                  const char* commit) {
  uint8_t h[128];
  log->stages = (uint8_t)(stages & 31);
  log->records = 0;
  memset(log->run_id, 0, sizeof log->run_id);
  memset(log->commit, 0, sizeof log->commit);
  strncpy(log->run_id, run_id ? run_id : "", sizeof log->run_id - 1);
  strncpy(log->commit, commit ? commit : "", sizeof log->commit - 1);
  log->file = fopen(path, "wb");
  if (!log->file) return -1;
  ib_header(h, log->stages, 0, 0, log->run_id, log->commit);
  return fwrite(h, 1, sizeof h, log->file) == sizeof h ? 0 : -1;
}

/* One message: stamps holds one CLOCK_MONOTONIC ns value per stage in the log's stages, in stage order
 * (kernel, read, decoded, book, published); 0 where the stage did not happen. */
static inline int ib_latency_record(ib_latency_log* log, uint64_t seq, char msg_type, uint16_t stock_locate,
                                    uint8_t flags, const uint64_t* stamps) {
  uint8_t r[24 + 8 * 5];
  const int n = ib_stage_count(log->stages);
  memset(r, 0, sizeof r);
  ib_put_le(r, seq, 8);
  ib_put_le(r + 16, stock_locate, 2);
  r[18] = (uint8_t)msg_type;
  r[19] = (uint8_t)(flags | 0x80); /* written */
  for (int i = 0; i < n; ++i) ib_put_le(r + 24 + 8 * i, stamps[i], 8);
  if (fwrite(r, 1, (size_t)(24 + 8 * n), log->file) != (size_t)(24 + 8 * n)) return -1;
  ++log->records;
  return 0;
}

/* Writes the exact record count and the finalized flag, and closes. 0 on success. */
static inline int ib_latency_close(ib_latency_log* log) {
  uint8_t h[128];
  int ok;
  if (!log->file) return -1;
  ib_header(h, log->stages, log->records, 1, log->run_id, log->commit);
  ok = fflush(log->file) == 0 && fseek(log->file, 0, SEEK_SET) == 0 && fwrite(h, 1, sizeof h, log->file) == sizeof h;
  ok = (fclose(log->file) == 0) && ok;
  log->file = NULL;
  return ok ? 0 : -1;
}

#endif /* ITCHBENCH_STAMPS_H */
