// What every subscriber of ours writes, whatever carried the stream (TCP,
// the shared-memory ring, MQTT): OUT, the frames received (48 bytes each,
// the BBO log's records), and beside it, OUT's suffix replaced, OUT.recv
// (subscriber log, gateway/log/FORMAT.md kind 4: seq and receive time per
// event, CLOCK_MONOTONIC) and OUT.json (its own account, written whole).
#pragma once
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "log/mmap_log.hpp"
#include "util/json_writer.hpp"

namespace itchbench {

inline uint64_t monotonic_now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// path with its suffix (".bbo") replaced by suffix, as Python's Path.with_suffix.
std::string with_suffix(const std::string& path, const char* suffix);

class SubscriberOutput {
 public:
  explicit SubscriberOutput(const std::string& out);  // throws naming the file
  ~SubscriberOutput();
  SubscriberOutput(const SubscriberOutput&) = delete;
  SubscriberOutput& operator=(const SubscriberOutput&) = delete;

  void on_event(const logfmt::BboRecord& r, uint64_t t_received);
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
  FILE* frames_ = nullptr;
  SubscriberLog receipts_;
  uint64_t events_ = 0;
};

}  // namespace itchbench
