// Shared-memory BBO ring: one producer (the gateway's hot path), up to
// kMaxConsumers consumer processes, in a POSIX shared-memory object.
// Disruptor-style: fixed 64-byte entries holding the 48-byte BBO record
// (gateway/log/FORMAT.md) and no pointers, a published sequence per entry,
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
#include <string>

#include "log/log_format.hpp"

namespace itchbench::shm {

constexpr uint64_t kMagic = 0x31474E4952424242ull;  // "BBBRING1"
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxConsumers = 16;
constexpr size_t kRecordWords = sizeof(logfmt::BboRecord) / 8;

enum class Policy : uint32_t { kOverrun = 0, kWait = 1 };

// One event. `published` is 1 + the event's index once its words are whole; 0 while the producer writes
// it. The record travels as relaxed atomic words: a consumer may read an entry the producer is rewriting,
// and finds that out from `published` (a seqlock), never from a torn record.
struct alignas(64) Entry {
  std::atomic<uint64_t> published;
  std::atomic<uint64_t> words[kRecordWords];
};
static_assert(sizeof(Entry) == 64);

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
  alignas(64) std::atomic<uint64_t> cursor;  // events published
  alignas(64) std::atomic<uint64_t> closed;  // 1: the producer is done; cursor is final
  alignas(64) ConsumerSlot consumers[kMaxConsumers];
};

size_t mapping_bytes(uint32_t capacity);
inline Entry* entries(Header* h) { return reinterpret_cast<Entry*>(h + 1); }

struct ProducerCounters {
  uint64_t published = 0;
  uint64_t waits = 0;             // kWait: times the producer found the ring full
  uint64_t consumers_let_go = 0;  // kWait: consumers whose process was gone
};

// Creates the object (O_EXCL: a name in use is an error) and maps it; unlinks it when destroyed.
class ShmPublisher {
 public:
  ShmPublisher(const std::string& name, uint32_t capacity, Policy policy);  // throws with the reason
  ~ShmPublisher();
  ShmPublisher(const ShmPublisher&) = delete;
  ShmPublisher& operator=(const ShmPublisher&) = delete;

  void publish(const logfmt::BboRecord& r) {  // hot path
    const uint64_t i = next_;
    if (policy_ == Policy::kWait && i - min_consumer_ >= capacity_) wait_for_room(i);
    Entry& e = entries(header_)[i & mask_];
    e.published.store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    const uint64_t* w = reinterpret_cast<const uint64_t*>(&r);
    for (size_t k = 0; k < kRecordWords; ++k) e.words[k].store(w[k], std::memory_order_relaxed);
    e.published.store(i + 1, std::memory_order_release);
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
  // The next event into r; kNone when there is none yet, kEnd once the producer closed and all is read.
  // Events lapped by the producer are skipped and counted (overruns()).
  Read next(logfmt::BboRecord& r);
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
