// What every subscriber of ours writes, whatever carried the stream (TCP,
// the shared-memory ring, MQTT): OUT, the frames received (48 bytes each,
// the BBO log's records; a depth subscriber's, the depth log's records), and
// beside it, OUT's suffix replaced, OUT.recv
// (subscriber log, gateway/log/FORMAT.md kind 4: seq and receive time per
// event, CLOCK_MONOTONIC) and OUT.json (its own account, written whole).
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "log/mmap_log.hpp"
#include "util/json_writer.hpp"
#include "util/stage_clock.hpp"  // monotonic_ns: the receive stamps' clock

namespace itchbench {

// path with its suffix (".bbo") replaced by suffix, as Python's Path.with_suffix.
std::string with_suffix(const std::string& path, const char* suffix);

class SubscriberOutput {
 public:
  // reserve_bytes: the receive log's first mapping (it grows past it). pooled: one of hundreds in a process, whose
  // receive logs have no provisioning thread each (MmapLog).
  // levels: nonzero, the frames are the depth log's level change records (FORMAT.md kind 6); 0: BBO records.
  explicit SubscriberOutput(const std::string& out, size_t reserve_bytes = size_t(1) << 30, bool pooled = false,
                            uint32_t levels = 0);  // throws naming the file
  ~SubscriberOutput();
  SubscriberOutput(const SubscriberOutput&) = delete;
  SubscriberOutput& operator=(const SubscriberOutput&) = delete;

  void on_event(const logfmt::BboRecord& r, uint64_t t_received) { on_frame(&r, t_received); }
  // One frame of frame_bytes(): its bytes to OUT, its seq and stock with the receive time to OUT.recv.
  void on_frame(const void* frame, uint64_t t_received);
  size_t frame_bytes() const { return frame_bytes_; }
  uint64_t events() const { return events_; }
  void close();
  // OUT.json: what fill adds to the object, written atomically.
  template <class Fill>
  void write_info(Fill fill) const {
    JsonWriter j;
    j.begin_object();
    fill(j);
    j.end_object();
    write_info_text(j.str());
  }

 private:
  void write_info_text(const std::string& text) const;
  std::string info_path_;
  size_t frame_bytes_, locate_at_;  // a frame's size, and its stock locate's offset (its seq is its first 8 bytes)
  FILE* frames_ = nullptr;
  SubscriberLog receipts_;
  uint64_t events_ = 0;
};

// What a collector of a gateway's own BBO output writes, as gateways/collector.py does for TCP and UDP:
// every line (csv, jsonl) or 48-byte record (itchbench, written as a csv line) as "<t_recv> <text>", t_recv
// CLOCK_MONOTONIC. A message ends its last line. Nothing is parsed or judged: the checks count garbage.
// OUT.json (OUT + ".json") says how it ended, with its reads and bytes.
class CollectorOutput {
 public:
  CollectorOutput(const std::string& out, bool records);  // throws naming the file
  ~CollectorOutput();
  CollectorOutput(const CollectorOutput&) = delete;
  CollectorOutput& operator=(const CollectorOutput&) = delete;

  void on_payload(const void* data, size_t n, uint64_t t_received);
  void close();
  // left_unread: what a broker still held for it when it ended (-1: not known, or nothing to know).
  void write_info(bool subscribed, const std::string& ended, int64_t left_unread = -1) const;

 private:
  std::string info_path_;
  FILE* out_ = nullptr;
  bool records_;
  uint64_t reads_ = 0, bytes_ = 0;
};

// A subscriber tool's files: its own (SubscriberOutput, of the depth log's records when levels is nonzero), or
// with --collect FORMAT (csv, jsonl, itchbench) a collector's. Throws naming the file; an unknown format is
// std::invalid_argument.
struct SubscriberFiles {
  std::unique_ptr<SubscriberOutput> own;
  std::unique_ptr<CollectorOutput> collected;
};
SubscriberFiles open_subscriber_files(const std::string& out, const std::string& collect_format,
                                     uint32_t levels = 0);

}  // namespace itchbench
