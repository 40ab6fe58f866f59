// Shared-memory BBO ring: one producer (the gateway's hot path), up to
// kMaxConsumers consumer processes, in a POSIX shared-memory object.
// Disruptor-style: fixed-size entries, each a published sequence and one
// record — the 48-byte BBO record (gateway/log/FORMAT.md) in 64 bytes, or in
// a depth ring a depth log's 32-byte level change — and no pointers, a
// published sequence per entry,
// one read cursor per consumer; nothing is copied but the record itself and
// no syscall is made to publish. Layout (docs/shm-ring.md):
//
//   Header (its own cache lines: producer cursor, closed flag, consumers)
//   Entry[capacity]
//
// Policy for a consumer that falls a whole ring behind: kOverrun, the
// producer never waits — the consumer finds its next entry overwritten,
// counts the events it lost and goes on from the oldest still there; or
// kWait, the producer waits for the slowest live consumer (a consumer whose
// process is gone is let go and counted).
#pragma once
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>

#include "log/log_format.hpp"

namespace itchbench::shm {

constexpr uint64_t kMagic = 0x31474E4952424242ull;  // "BBBRING1"
constexpr uint32_t kVersion = 2;                     // 2: the record's and the entry's sizes in the header
constexpr uint32_t kMaxConsumers = 16;

enum class Policy : uint32_t { kOverrun = 0, kWait = 1 };

// One event: entry_bytes (a multiple of 64) of 8-byte words. Word 0, `published`, is 1 + the event's index
// once the record's words are whole; 0 while the producer writes it. The record (words 1 on) travels as
// relaxed atomic words: a consumer may read an entry the producer is rewriting, and finds that out from
// `published` (a seqlock), never from a torn record.
using Word = std::atomic<uint64_t>;
constexpr uint32_t entry_bytes_for(uint32_t record_bytes) { return (8 + record_bytes + 63) / 64 * 64; }

struct alignas(64) ConsumerSlot {
  std::atomic<uint64_t> pid;       // 0: free
  std::atomic<uint64_t> next;      // index of the next event it reads
  std::atomic<uint64_t> overruns;  // events it lost, lapped by the producer (kOverrun)
  std::atomic<uint64_t> read;      // events it read
};

struct Header {
  uint64_t magic;
  uint32_t version;
  uint32_t capacity;  // entries, a power of two
  uint32_t policy;    // Policy
  uint32_t max_consumers;
  uint32_t record_bytes;  // 48: BBO records; 32: the depth log's level change records
  uint32_t entry_bytes;   // entry_bytes_for(record_bytes)
  alignas(64) std::atomic<uint64_t> cursor;  // events published
  alignas(64) std::atomic<uint64_t> closed;  // 1: the producer is done; cursor is final
  alignas(64) ConsumerSlot consumers[kMaxConsumers];
};

size_t mapping_bytes(uint32_t capacity, uint32_t entry_bytes);
inline Word* entry(Header* h, uint64_t slot) {
  return reinterpret_cast<Word*>(reinterpret_cast<uint8_t*>(h + 1) + slot * h->entry_bytes);
}

struct ProducerCounters {
  uint64_t published = 0;
  uint64_t waits = 0;             // kWait: times the producer found the ring full
  uint64_t consumers_let_go = 0;  // kWait: consumers whose process was gone
};

// Creates the object (O_EXCL: a name in use is an error) and maps it; unlinks it when destroyed.
class ShmPublisher {
 public:
  // record_bytes: a multiple of 8; 48 for BBO records.
  ShmPublisher(const std::string& name, uint32_t capacity, Policy policy,
               uint32_t record_bytes = sizeof(logfmt::BboRecord));  // throws with the reason
  ~ShmPublisher();
  ShmPublisher(const ShmPublisher&) = delete;
  ShmPublisher& operator=(const ShmPublisher&) = delete;

  void publish(const logfmt::BboRecord& r) { publish_record(&r); }  // hot path, a BBO ring
  void publish_record(const void* record) {                         // hot path: record_bytes
    const uint64_t i = next_;
    if (policy_ == Policy::kWait && i - min_consumer_ >= capacity_) wait_for_room(i);
    Word* e = entry(header_, i & mask_);
    e[0].store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    const auto* bytes = static_cast<const uint8_t*>(record);
    for (size_t k = 0; k < record_words_; ++k) {
      uint64_t w;
      std::memcpy(&w, bytes + 8 * k, 8);
      e[1 + k].store(w, std::memory_order_relaxed);
    }
    e[0].store(i + 1, std::memory_order_release);
    next_ = i + 1;
    header_->cursor.store(next_, std::memory_order_release);
    ++counters_.published;
  }
  // Consumers attached now.
  uint32_t consumers() const;
  // Marks the stream ended: consumers read to the cursor and stop.
  void close();
  const std::string& name() const { return name_; }
  const ProducerCounters& counters() const { return counters_; }
  const Header& header() const { return *header_; }

 private:
  void wait_for_room(uint64_t i);
  std::string name_;
  Header* header_ = nullptr;
  size_t bytes_ = 0;
  uint64_t capacity_, mask_;
  Policy policy_;
  size_t record_words_;
  uint64_t next_ = 0;
  uint64_t min_consumer_ = 0;  // a lower bound of the slowest consumer's next (kWait)
  ProducerCounters counters_;
};

// A consumer: attaches to a free slot of an existing ring.
class ShmConsumer {
 public:
  explicit ShmConsumer(const std::string& name);  // throws with the reason
  ~ShmConsumer();                                 // frees its slot
  ShmConsumer(const ShmConsumer&) = delete;
  ShmConsumer& operator=(const ShmConsumer&) = delete;

  enum class Read { kEvent, kNone, kEnd };
  // The next event's record (record_bytes()) into out; kNone when there is none yet, kEnd once the producer
  // closed and all is read. Events lapped by the producer are skipped and counted (overruns()).
  Read next(void* out);
  uint32_t record_bytes() const { return header_->record_bytes; }
  uint32_t slot() const { return slot_; }
  uint64_t overruns() const { return mine().overruns.load(std::memory_order_relaxed); }
  uint64_t read() const { return mine().read.load(std::memory_order_relaxed); }

 private:
  ConsumerSlot& mine() const { return header_->consumers[slot_]; }
  Header* header_ = nullptr;
  size_t bytes_ = 0;
  uint32_t slot_ = 0;
  uint64_t next_ = 0, mask_ = 0, capacity_ = 0;
};

}  // namespace itchbench::shm
