#include "log/mmap_log.hpp"

#include "util/realtime.hpp"
#include "util/thread_noise.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <stdexcept>

namespace itchbench {

namespace {
[[noreturn]] void fail(const std::string& path, const char* what) {
  throw std::runtime_error(path + ": " + what + ": " + std::strerror(errno));
}
// A new chunk's zeros. Not const, so it lands in .bss: never written, it reads from the shared zero page.
alignas(4096) uint8_t zero_source[256 << 10];

void copy_padded(char* dst, size_t n, const std::string& s) {
  std::memset(dst, 0, n);
  std::memcpy(dst, s.data(), std::min(n - 1, s.size()));
}
}  // namespace

MmapLog::MmapLog(const std::string& path, logfmt::Kind kind, size_t record_size, size_t marker_offset,
                 const LogIdentity& id, size_t reserve_bytes, size_t limit_bytes, bool provisioned)
    : path_(path), limit_(limit_bytes), record_size_(record_size), marker_offset_(marker_offset), stages_(id.stages) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(path, "open");
  constexpr size_t kPage = 4096;
  reserved_ = std::min((reserve_bytes + kPage - 1) / kPage * kPage, limit_bytes);
  // A log that can only be small grows (and populates) no more than it can hold: a 1,000-message run must not
  // fault in two 64 MiB chunks.
  chunk_bytes_ = std::min(kChunkBytes, reserved_);
  // Reserve address space for the whole log once; pages beyond the file's
  // end are never touched because the file is grown ahead of the cursor.
  void* m = ::mmap(nullptr, reserved_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd_, 0);
  if (m == MAP_FAILED) {
    const int e = errno;
    ::close(fd_);
    errno = e;
    fail(path, "mmap");
  }
  base_ = static_cast<uint8_t*>(m);
  mapped_end_ = released_end_ = base_;
  first_record_ = cursor_ = base_ + logfmt::header_size_of(kind);
  written_end_.store(cursor_);
  {
    std::lock_guard<std::mutex> lock(grow_mutex_);
    if (!grow_locked()) {
      errno = grow_error_;
      fail(path, "growing the file");
    }
    // The chunks the provisioner would keep ahead, grown before the next log is opened: left to this log's
    // provisioner, they raced the next log's first chunk, and on a nearly full disk a run failed at its start or
    // dropped records later by the threads' timing. A chunk that cannot be grown here is the writer's drop later.
    if (provisioned)
      while (size_t(mapped_end_ - cursor_) < provisioning_ahead(0, chunk_bytes_) && grow_locked()) {
      }
  }
  ready_end_cached_ = ready_end_.load();

  logfmt::Header h{};
  std::memcpy(h.magic, logfmt::kMagic, sizeof h.magic);
  h.version = id.version ? id.version : logfmt::version_of(kind);
  h.header_size = uint16_t(logfmt::header_size_of(kind));
  h.record_size = uint16_t(record_size);
  h.kind = uint16_t(kind);
  h.stage_clock = uint16_t(id.stage_clock);
  h.origin_clock = uint16_t(id.origin_clock);
  h.stages = id.stages;
  h.levels = id.levels;
  copy_padded(h.run_id, sizeof h.run_id, id.run_id);
  copy_padded(h.commit, sizeof h.commit, id.commit);
  std::memcpy(base_, &h, sizeof h);
  if (kind == logfmt::Kind::kLatency) std::memcpy(base_ + sizeof h, &id.clock_line, sizeof id.clock_line);
  if (provisioned) provisioner_ = std::thread([this] { provision(); });
}

bool MmapLog::grow_locked() {
  if (grow_error_) return false;
  const size_t used = size_t(mapped_end_ - base_);
  const size_t want = std::min(used + chunk_bytes_, reserved_);
  if (want <= used) return false;
  // The chunk is written with zeros rather than made a hole by ftruncate: the page cache then takes whole pages
  // from a write, where a hole's pages are each read as zeros, zero-filled and made writable in a fault of
  // their own (ext4, 58 MiB in 16 MiB chunks, one CPU: 20-24 ms against 43-56 ms).
  for (size_t at = used; at < want;) {
    const ssize_t n = ::pwrite(fd_, zero_source, std::min(sizeof zero_source, want - at), off_t(at));
    if (n <= 0) {
      // Not tried again: on a full disk every try is a failed write of a chunk (a 1 M-message run on a full
      // tmpfs took 50 s of system time, a try for each record), and every record after it is dropped anyway.
      grow_error_ = n < 0 ? errno : ENOSPC;
      return false;
    }
    at += size_t(n);
  }
  // Map the chunk's pages with one call. Best effort: older kernels lack it,
  // and then the writer takes the (cheaper, page-cache-hit) faults.
  ::madvise(base_ + used, want - used, MADV_POPULATE_WRITE);
  mapped_end_ = base_ + want;
  ready_end_.store(mapped_end_, std::memory_order_release);
  return true;
}

bool MmapLog::reserve_locked() {
  if (reserved_ >= limit_) {
    if (drop_reason_.empty()) drop_reason_ = "the log reached its limit of " + std::to_string(limit_) + " bytes";
    return false;
  }
  const size_t want = reserved_ > limit_ / 2 ? limit_ : 2 * reserved_;
  void* m = ::mremap(base_, reserved_, want, MREMAP_MAYMOVE);
  if (m == MAP_FAILED) {
    drop_reason_ = std::string("mremap to ") + std::to_string(want) + " bytes failed: " + std::strerror(errno);
    return false;
  }
  // Only the writer moves the mapping, under grow_mutex_, which the provisioner holds whenever it touches the
  // pointers: both see the move whole.
  uint8_t* base = static_cast<uint8_t*>(m);
  auto moved = [&](uint8_t* p) { return base + (p - base_); };
  first_record_ = moved(first_record_);
  cursor_ = moved(cursor_);
  mapped_end_ = moved(mapped_end_);
  released_end_ = moved(released_end_);
  ready_end_.store(moved(ready_end_.load(std::memory_order_relaxed)), std::memory_order_release);
  written_end_.store(cursor_, std::memory_order_relaxed);
  base_ = base;
  reserved_ = want;
  chunk_bytes_ = std::min(kChunkBytes, reserved_);
  ++remaps_;
  return true;
}

bool MmapLog::catch_up(size_t bytes) {
  ready_end_cached_ = ready_end_.load(std::memory_order_acquire);
  if (cursor_ + bytes <= ready_end_cached_) return true;
  std::lock_guard<std::mutex> lock(grow_mutex_);
  ++writer_grows_;
  while (mapped_end_ < cursor_ + bytes) {
    if (grow_locked()) continue;
    if (mapped_end_ < base_ + reserved_) {  // room reserved, but the file could not grow
      if (drop_reason_.empty()) drop_reason_ = std::string("growing the file failed: ") + std::strerror(grow_error_);
      return false;
    }
    if (!reserve_locked()) return false;
  }
  ready_end_cached_ = mapped_end_;
  return true;
}

std::chrono::nanoseconds MmapLog::provisioning_pause(size_t ready_bytes, double bytes_per_ns) {
  const std::chrono::nanoseconds quarter{
      bytes_per_ns > 0 ? int64_t(std::min(double(ready_bytes) / bytes_per_ns / 4, 1e9)) : kMaxPause.count()};
  return std::clamp<std::chrono::nanoseconds>(quarter, kMinPause, kMaxPause);
}

size_t MmapLog::provisioning_ahead(double bytes_per_ns, size_t chunk_bytes) {
  const double wanted = bytes_per_ns * double(kAheadTime.count());
  return std::clamp(size_t(wanted / double(chunk_bytes) + 1) * chunk_bytes, kMinChunksAhead * chunk_bytes,
                    kMaxChunksAhead * chunk_bytes);
}

void MmapLog::provision() {
  leave_hot_thread_alone();
  name_current_thread("log-provision");
  using Clock = std::chrono::steady_clock;
  size_t last_written = 0;  // offsets, not pointers: the writer may move the mapping between wake-ups
  {
    std::lock_guard<std::mutex> lock(grow_mutex_);
    last_written = size_t(written_end_.load(std::memory_order_relaxed) - base_);
  }
  Clock::time_point last = Clock::now();
  size_t ahead = provisioning_ahead(0, chunk_bytes_);
  std::unique_lock<std::mutex> stopping(stop_mutex_);
  while (!stop_) {
    stopping.unlock();
    size_t ready, written_offset;
    // One chunk a hold of the lock: a writer that reaches the end waits for one chunk at most, never for all.
    for (bool grown = true; grown;) {
      std::lock_guard<std::mutex> lock(grow_mutex_);
      grown = size_t(mapped_end_ - written_end_.load(std::memory_order_relaxed)) < ahead && grow_locked();
    }
    {
      std::lock_guard<std::mutex> lock(grow_mutex_);
      const uint8_t* written = written_end_.load(std::memory_order_relaxed);
      // Chunks the writer has left a chunk behind leave the process (their data stays in the page cache, dirty,
      // and goes to the file): a log of any length costs a few chunks of resident memory, not its size.
      while (size_t(written - released_end_) >= 2 * chunk_bytes_) {
        ::madvise(released_end_, chunk_bytes_, MADV_DONTNEED);
        released_end_ += chunk_bytes_;
      }
      ready = size_t(mapped_end_ - written);
      written_offset = size_t(written - base_);
    }
    const Clock::time_point now = Clock::now();
    const double ns = double(std::chrono::duration_cast<std::chrono::nanoseconds>(now - last).count());
    const double rate = ns > 0 ? double(written_offset - last_written) / ns : 0;
    last = now;
    last_written = written_offset;
    ahead = provisioning_ahead(rate, chunk_bytes_);
    stopping.lock();
    stop_cv_.wait_for(stopping, provisioning_pause(ready, rate), [this] { return stop_; });
    wakeups_.fetch_add(1, std::memory_order_relaxed);
  }
}

void MmapLog::close() {
  if (fd_ < 0) return;
  {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    stop_ = true;
  }
  stop_cv_.notify_one();
  if (provisioner_.joinable()) provisioner_.join();
  // A record claimed but never committed (the handling of its message threw) is not a record: the log ends
  // before it. Only the last can be: each is committed before the next is claimed.
  if (cursor_ > first_record_ && !((cursor_ - record_size_)[marker_offset_] & logfmt::kWritten)) cursor_ -= record_size_;
  auto* h = reinterpret_cast<logfmt::Header*>(base_);
  h->record_count = records();
  h->dropped = dropped_;
  h->flags |= logfmt::kFlagFinalized;
  const size_t final_size = size_t(cursor_ - base_);
  ::munmap(base_, reserved_);
  const bool ok = ::ftruncate(fd_, off_t(final_size)) == 0;
  ::close(fd_);
  fd_ = -1;
  base_ = nullptr;
  if (!ok) fail(path_, "ftruncate");
}

MmapLog::~MmapLog() {
  try {
    close();
  } catch (...) {
  }
}

}  // namespace itchbench
