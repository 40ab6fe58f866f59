#include "publish/shm_ring.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>

namespace itchbench::shm {

size_t mapping_bytes(uint32_t capacity, uint32_t entry_bytes) { return sizeof(Header) + size_t(capacity) * entry_bytes; }

namespace {
std::string fail(const std::string& what, const std::string& name) {
  return "shared-memory ring " + name + ": " + what + ": " + std::strerror(errno);
}
bool alive(uint64_t pid) { return pid && (::kill(pid_t(pid), 0) == 0 || errno == EPERM); }
}  // namespace

ShmPublisher::ShmPublisher(const std::string& name, uint32_t capacity, Policy policy, uint32_t record_bytes)
    : name_(name), capacity_(capacity), mask_(capacity - 1), policy_(policy), record_words_(record_bytes / 8) {
  if (record_bytes == 0 || record_bytes % 8)
    throw std::invalid_argument("shared-memory ring records must be a whole number of 8-byte words");
  if (name.size() < 2 || name[0] != '/' || name.find('/', 1) != std::string::npos)
    throw std::invalid_argument("shared-memory ring name must be /NAME (one slash, first): " + name);
  if (capacity < 2 || (capacity & (capacity - 1)))
    throw std::invalid_argument("shared-memory ring capacity must be a power of two >= 2");
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) throw std::runtime_error(fail("shm_open", name));
  bytes_ = mapping_bytes(capacity, entry_bytes_for(record_bytes));
  void* p = MAP_FAILED;
  if (::ftruncate(fd, off_t(bytes_)) == 0)
    p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  const int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    ::shm_unlink(name.c_str());
    errno = err;
    throw std::runtime_error(fail("ftruncate/mmap", name));
  }
  // Fresh object: all zero. The header's plain fields are set before any consumer can see the magic.
  header_ = new (p) Header{};
  header_->version = kVersion;
  header_->capacity = capacity;
  header_->policy = uint32_t(policy);
  header_->max_consumers = kMaxConsumers;
  header_->record_bytes = record_bytes;
  header_->entry_bytes = entry_bytes_for(record_bytes);
  std::atomic_thread_fence(std::memory_order_release);
  __atomic_store_n(&header_->magic, kMagic, __ATOMIC_RELEASE);
}

ShmPublisher::~ShmPublisher() {
  close();
  ::munmap(header_, bytes_);
  ::shm_unlink(name_.c_str());
}

uint32_t ShmPublisher::consumers() const {
  uint32_t n = 0;
  for (const ConsumerSlot& c : header_->consumers) n += c.pid.load(std::memory_order_acquire) != 0;
  return n;
}

void ShmPublisher::close() { header_->closed.store(1, std::memory_order_release); }

void ShmPublisher::wait_for_room(uint64_t i) {
  ++counters_.waits;
  for (;;) {
    uint64_t slowest = i;
    for (ConsumerSlot& c : header_->consumers) {
      const uint64_t pid = c.pid.load(std::memory_order_acquire);
      if (!pid) continue;
      const uint64_t next = c.next.load(std::memory_order_acquire);
      if (i - next >= capacity_ && !alive(pid)) {  // gone without detaching: it holds nobody up
        uint64_t expected = pid;
        if (c.pid.compare_exchange_strong(expected, 0)) ++counters_.consumers_let_go;
        continue;
      }
      if (next < slowest) slowest = next;
    }
    min_consumer_ = slowest;
    if (i - min_consumer_ < capacity_) return;
    __builtin_ia32_pause();
  }
}

ShmConsumer::ShmConsumer(const std::string& name) {
  const int fd = ::shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) throw std::runtime_error(fail("shm_open", name));
  Header probe;
  if (::pread(fd, &probe, offsetof(Header, cursor), 0) != ssize_t(offsetof(Header, cursor)) ||
      __atomic_load_n(&probe.magic, __ATOMIC_ACQUIRE) != kMagic || probe.version != kVersion) {
    ::close(fd);
    throw std::runtime_error("shared-memory ring " + name + ": not an itchbench BBO ring (version " +
                             std::to_string(kVersion) + ")");
  }
  bytes_ = mapping_bytes(probe.capacity, probe.entry_bytes);
  void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) throw std::runtime_error(fail("mmap", name));
  header_ = static_cast<Header*>(p);
  capacity_ = probe.capacity;
  mask_ = capacity_ - 1;
  for (slot_ = 0; slot_ < kMaxConsumers; ++slot_) {
    uint64_t free = 0;
    ConsumerSlot& c = header_->consumers[slot_];
    if (c.pid.compare_exchange_strong(free, uint64_t(::getpid()))) {
      c.next.store(0, std::memory_order_relaxed);
      c.overruns.store(0, std::memory_order_relaxed);
      c.read.store(0, std::memory_order_release);
      return;
    }
  }
  ::munmap(header_, bytes_);
  throw std::runtime_error("shared-memory ring " + name + ": all " + std::to_string(kMaxConsumers) +
                           " consumer slots are taken");
}

ShmConsumer::~ShmConsumer() {
  mine().pid.store(0, std::memory_order_release);
  ::munmap(header_, bytes_);
}

ShmConsumer::Read ShmConsumer::next(void* out) {
  const size_t words = header_->record_bytes / 8;
  for (;;) {
    Word* e = entry(header_, next_ & mask_);
    const uint64_t s1 = e[0].load(std::memory_order_acquire);
    if (s1 < next_ + 1) {  // not published yet (or being rewritten for a later lap: 0)
      const bool closed = header_->closed.load(std::memory_order_acquire);
      const uint64_t cursor = header_->cursor.load(std::memory_order_acquire);
      if (cursor > next_ + capacity_) {  // lapped while its entry was being rewritten
        mine().overruns.fetch_add(cursor - capacity_ - next_, std::memory_order_relaxed);
        next_ = cursor - capacity_;
        continue;
      }
      if (closed && cursor <= next_) return Read::kEnd;
      return Read::kNone;
    }
    if (s1 > next_ + 1) {  // lapped: the events from next_ to the oldest still in the ring are lost
      const uint64_t cursor = header_->cursor.load(std::memory_order_acquire);
      const uint64_t oldest = cursor > capacity_ ? cursor - capacity_ : 0;
      const uint64_t resume = oldest > next_ ? oldest : s1 - 1;
      mine().overruns.fetch_add(resume - next_, std::memory_order_relaxed);
      next_ = resume;
      mine().next.store(next_, std::memory_order_release);
      continue;
    }
    auto* bytes = static_cast<uint8_t*>(out);
    for (size_t k = 0; k < words; ++k) {
      const uint64_t w = e[1 + k].load(std::memory_order_relaxed);
      std::memcpy(bytes + 8 * k, &w, 8);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (e[0].load(std::memory_order_relaxed) != s1) continue;  // rewritten while read: look again
    ++next_;
    mine().next.store(next_, std::memory_order_release);
    mine().read.fetch_add(1, std::memory_order_relaxed);
    return Read::kEvent;
  }
}

}  // namespace itchbench::shm
