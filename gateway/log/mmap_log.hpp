// Append-only binary log written through a shared memory mapping: a record
// is a few stores into mapped memory, never a syscall and never a page
// fault. A provisioning thread keeps the file grown and its pages populated
// (zeros written + MADV_POPULATE_WRITE) ahead of the writer — two chunks, or
// about 20 ms of its writing when that is more (provisioning_ahead) — because
// first-touch faults on fresh pages cost ~20 ns per record amortized and
// arrive as spikes; if the writer ever catches up it grows the file itself.
// It grows one chunk a hold of the lock, so such a writer waits for one chunk.
// It wakes as seldom as keeps it ahead (provisioning_pause): where it shares
// the hot thread's CPU, every wake-up preempts the writer.
// Behind the writer it releases written chunks (MADV_DONTNEED), so resident
// memory stays a few chunks whatever the log's length.
// The address space reserved up front is a first guess (small for a small
// input, so a short run stays small and valgrind can map it); a writer that
// reaches its end moves the mapping to one twice as large (mremap), so no
// record is ever dropped for a guess. Only the limit, a failed grow (disk
// full) or a failed remap drops records, and those are counted.
// close() writes the exact count, sets the finalized flag and trims the file
// to its last record.
//
// After a crash the file holds the header (not finalized) and every record
// whose write completed, followed by zeros up to the chunk end: readers take
// the leading records whose `written` byte is set.
#pragma once
#include <cstddef>
#include <cstdint>
#include <atomic>
#include <climits>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "log/log_format.hpp"
#include "util/stream_prefetch.hpp"

namespace itchbench {

struct LogIdentity {
  logfmt::StageClock stage_clock = logfmt::StageClock::kNone;
  logfmt::OriginClock origin_clock = logfmt::OriginClock::kNone;
  std::string run_id;
  std::string commit;
  uint8_t stages = 0;  // latency: the stages its records stamp (logfmt::Stage)
  uint8_t levels = 0;  // depth: logfmt::Header::levels
  uint16_t version = 0;  // the record layout's version; 0: the kind's current one (logfmt::version_of)
  logfmt::StageClockLine clock_line{};  // latency: how its stamps map to ns (written after the header)
};

class MmapLog {
 public:
  // At least two chunks are kept provisioned ahead of the writer, and what lies ahead when the run ends is work
  // thrown away: in 16 MiB chunks a 5 M-message nasdaq-day simulation wrote 96 MiB of zeros for a 56 MiB BBO log.
  // In 4 MiB chunks it ran 1.037x as fast (9 rounds interleaved, 1.008-1.063, whole process on one CPU), the
  // writer never outran the provisioning, and the flooded recorder kept its rate (book_bench).
  static constexpr size_t kChunkBytes = size_t(4) << 20;
  static constexpr size_t kDefaultReserveBytes = size_t(64) << 30;  // address space reserved when nothing is known
  static constexpr size_t kNoLimit = SIZE_MAX;

  // Throws std::runtime_error naming the path on failure.
  // marker_offset: where in a record its written marker (flags byte) is.
  // reserve_bytes: the address space mapped at first (a guess: the log grows past it);
  // limit_bytes: the file never grows past this (records beyond are dropped and counted).
  // provisioned: run the provisioning thread; without it the writer grows the file itself and takes the first-touch
  // faults (a slow writer's choice: hundreds of logs in one process must not be hundreds of waking threads).
  MmapLog(const std::string& path, logfmt::Kind kind, size_t record_size, size_t marker_offset, const LogIdentity& id,
          size_t reserve_bytes = kDefaultReserveBytes, size_t limit_bytes = kNoLimit, bool provisioned = true);
  ~MmapLog();  // closes (finalizes) if close() was not called
  MmapLog(const MmapLog&) = delete;
  MmapLog& operator=(const MmapLog&) = delete;

  // Space for the next `slots` records, or nullptr (counted as one dropped) when full. A writer that
  // stores one entry over several slots (the compact latency log's escapes) claims them at once.
  uint8_t* next(size_t slots = 1) {
    const size_t bytes = record_size_ * slots;
    if (cursor_ + bytes > ready_end_cached_ && !catch_up(bytes)) {
      ++dropped_;
      return nullptr;
    }
    uint8_t* p = cursor_;
    cursor_ += bytes;
    prefetch_stream<true>(cursor_, size_t(ready_end_cached_ - cursor_));  // within the provisioned pages
    written_end_.store(cursor_, std::memory_order_relaxed);  // progress, for the provisioner
    return p;
  }

  // The next `slots` records' space without taking it, or nullptr when only next() can give it (the slow path): a
  // writer that fills it whether or not it keeps it (no branch on which), then takes some or none.
  uint8_t* peek(size_t slots = 1) const {
    return cursor_ + record_size_ * slots <= ready_end_cached_ ? cursor_ : nullptr;
  }
  void take(size_t records) {
    cursor_ += record_size_ * records;
    prefetch_stream<true>(cursor_, size_t(ready_end_cached_ - cursor_));
    written_end_.store(cursor_, std::memory_order_relaxed);
  }

  uint64_t records() const { return uint64_t(cursor_ - first_record_) / record_size_; }
  uint64_t dropped() const { return dropped_; }
  uint8_t stages() const { return stages_; }
  uint64_t writer_grows() const { return writer_grows_; }  // times the writer outran provisioning
  uint64_t remaps() const { return remaps_; }               // times the reservation was outgrown and moved
  const std::string& drop_reason() const { return drop_reason_; }  // why the first record was dropped
  uint64_t provisioner_wakeups() const { return wakeups_.load(std::memory_order_relaxed); }
  void close();

  // How long the provisioner sleeps with `ready_bytes` provisioned ahead of a
  // writer going at `bytes_per_ns`: a quarter of the time the writer needs to
  // reach their end, within [kMinPause, kMaxPause] (kMaxPause when idle). Two
  // 4 MiB chunks last a writer of 3 GB/s (the flood benchmark's rate) about
  // 2.8 ms: the pause shrinks to kMinPause for it.
  static constexpr std::chrono::nanoseconds kMinPause = std::chrono::milliseconds(1);
  static constexpr std::chrono::nanoseconds kMaxPause = std::chrono::milliseconds(10);
  static std::chrono::nanoseconds provisioning_pause(size_t ready_bytes, double bytes_per_ns);
  // How far ahead of a writer going at `bytes_per_ns` the provisioner keeps the file grown and mapped: kAheadTime
  // of its writing, in whole chunks within [kMinChunksAhead, kMaxChunksAhead]. A depth log of 10 levels is written
  // at about 1 GB/s, faster than two chunks (8 ms of it) could be provisioned again between wake-ups.
  static constexpr std::chrono::nanoseconds kAheadTime = std::chrono::milliseconds(20);
  static constexpr size_t kMinChunksAhead = 2, kMaxChunksAhead = 16;
  static size_t provisioning_ahead(double bytes_per_ns, size_t chunk_bytes);

 private:
  bool grow_locked();     // one more chunk within the reservation; caller holds grow_mutex_
  bool reserve_locked();  // the writer's: a reservation twice as large; caller holds grow_mutex_
  bool catch_up(size_t bytes);  // writer's slow path: room for `bytes` more
  void provision();    // thread body

  std::string path_;
  int fd_ = -1;
  uint8_t* base_ = nullptr;
  size_t reserved_ = 0;  // guarded by grow_mutex_ (changed only by the writer)
  size_t limit_;
  size_t chunk_bytes_ = kChunkBytes;  // what one grow adds: kChunkBytes, or less for a log that is small
  size_t record_size_;
  size_t marker_offset_;  // of each record's written marker
  uint8_t stages_;
  uint8_t* first_record_ = nullptr;
  uint8_t* cursor_ = nullptr;
  uint8_t* ready_end_cached_ = nullptr;  // writer's copy of ready_end_
  uint64_t dropped_ = 0;
  uint64_t writer_grows_ = 0;
  uint64_t remaps_ = 0;
  std::string drop_reason_;

  std::mutex grow_mutex_;
  // base_ and the pointers below move together, under grow_mutex_, when the writer remaps.
  uint8_t* mapped_end_ = nullptr;  // end of the file (guarded by grow_mutex_)
  int grow_error_ = 0;  // errno of the write that could not grow the file; then none is tried (grow_mutex_)
  uint8_t* released_end_ = nullptr;  // pages before this were handed back to the kernel (provisioner's)
  std::atomic<uint8_t*> ready_end_{nullptr};  // pages before this are populated
  std::atomic<uint8_t*> written_end_{nullptr};
  std::atomic<uint64_t> wakeups_{0};
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;  // close() wakes the provisioner at once
  bool stop_ = false;                // guarded by stop_mutex_
  std::thread provisioner_;
};

// Typed front end: fill a record and commit it with its written marker last.
// A record is a Record, or a Record head followed by up to kTailWords u64
// (record_size: the latency log's stamps, as many as its stages).
template <class Record>
class RecordLog {
 public:
  static constexpr size_t kTailWords = 5;
  RecordLog(const std::string& path, logfmt::Kind kind, const LogIdentity& id,
            size_t reserve_bytes = MmapLog::kDefaultReserveBytes, size_t record_size = sizeof(Record),
            size_t limit_bytes = MmapLog::kNoLimit, bool provisioned = true)
      : log_(path, kind, checked(record_size), offsetof(Record, flags), id, reserve_bytes, limit_bytes, provisioned) {}

  // The next record's place, to fill field by field and then commit(). Its
  // bytes are zero (the log hands out only fresh file space, written with
  // zeros), so fields left unset read as zero. When the log is full (counted
  // as dropped), a scratch record that nobody reads. Filling in place keeps a
  // record out of stack memory: one built there with narrow stores and copied
  // out with wide loads stalls on store-to-load forwarding.
  Record& claim() {
    uint8_t* p = log_.next();
    return p ? *reinterpret_cast<Record*>(p) : scratch_.head;
  }
  // Stores the flags byte, which carries kWritten, after every other field,
  // so a crash mid-record never leaves a record that looks whole.
  static void commit(Record& r, uint8_t flags) {
    // Compiler barrier: the marker is stored after the fields. (A process
    // crash keeps every store made to a shared mapping.)
    __atomic_signal_fence(__ATOMIC_RELEASE);
    r.flags = uint8_t(flags | logfmt::kWritten);
  }
  // A whole record at once (for writers that have it ready; records without a tail).
  void append(const Record& r) {
    Record& d = claim();
    constexpr size_t kFlags = offsetof(Record, flags);
    std::memcpy(&d, &r, kFlags);
    std::memcpy(reinterpret_cast<uint8_t*>(&d) + kFlags + 1, reinterpret_cast<const uint8_t*>(&r) + kFlags + 1,
                sizeof(Record) - kFlags - 1);
    commit(d, r.flags);
  }
  uint64_t records() const { return log_.records(); }
  uint64_t dropped() const { return log_.dropped(); }
  uint64_t writer_grows() const { return log_.writer_grows(); }
  uint64_t remaps() const { return log_.remaps(); }
  const std::string& drop_reason() const { return log_.drop_reason(); }
  uint64_t provisioner_wakeups() const { return log_.provisioner_wakeups(); }
  uint8_t stages() const { return log_.stages(); }
  void close() { log_.close(); }

 private:
  static size_t checked(size_t record_size) {
    if (record_size < sizeof(Record) || record_size > sizeof(Scratch) || record_size % alignof(Record))
      throw std::invalid_argument("log record size " + std::to_string(record_size) + " does not fit its record type");
    return record_size;
  }
  struct Scratch {
    Record head;
    uint64_t tail[kTailWords];  // right after head: Record's size is a multiple of 8 where a tail is used
  };
  MmapLog log_;
  Scratch scratch_{};
};

using BboLog = RecordLog<logfmt::BboRecord>;
using SendLog = RecordLog<logfmt::SendRecord>;
using SubscriberLog = RecordLog<logfmt::SubscriberRecord>;

}  // namespace itchbench
