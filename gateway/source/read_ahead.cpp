#include "source/read_ahead.hpp"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "util/realtime.hpp"
#include "util/thread_noise.hpp"

namespace itchbench {

namespace {

// Four blocks of 1 MiB: the thread stays up to 4 MiB ahead; the reader takes
// the mutex once a block, not once a read.
constexpr size_t kBlockBytes = size_t(1) << 20;
constexpr uint64_t kBlocks = 4;

class ReadAhead {
 public:
  explicit ReadAhead(FILE* slow) : slow_(slow) {
    for (auto& b : blocks_) b.bytes.reset(new uint8_t[kBlockBytes]);
    thread_ = std::thread([this] { fill(); });
  }
  ~ReadAhead() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    changed_.notify_all();
    thread_.join();
    std::fclose(slow_);
  }
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  ssize_t read(char* out, size_t size);

 private:
  struct Block {
    std::unique_ptr<uint8_t[]> bytes;
    size_t size = 0;
  };
  void fill();

  FILE* slow_;
  Block blocks_[kBlocks];
  std::mutex mu_;
  std::condition_variable changed_;
  // Guarded by mu_:
  uint64_t filled_ = 0;  // blocks the thread has filled
  uint64_t taken_ = 0;   // blocks the reader is done with
  bool ended_ = false;   // the thread met the end or an error: filled_ is final
  bool failed_ = false;  // an error
  bool stop_ = false;    // the reader is closing
  // The reader's own: the block it reads (blocks_[taken_ % kBlocks]) and where.
  bool holding_ = false;
  size_t at_ = 0;
  std::thread thread_;
};

void ReadAhead::fill() {
  leave_hot_thread_alone();  // never on the hot thread's CPU
  name_current_thread("read-ahead");
  for (uint64_t n = 0;; ++n) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [&] { return stop_ || n - taken_ < kBlocks; });
      if (stop_) return;
    }
    Block& b = blocks_[n % kBlocks];
    b.size = std::fread(b.bytes.get(), 1, kBlockBytes, slow_);
    const bool end = b.size < kBlockBytes;  // short only at the end or at an error
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (b.size > 0) filled_ = n + 1;
      ended_ = end;
      failed_ = end && std::ferror(slow_);
    }
    changed_.notify_all();
    if (end) return;
  }
}

ssize_t ReadAhead::read(char* out, size_t size) {
  if (!holding_) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return taken_ < filled_ || ended_; });
    if (taken_ == filled_) {  // ended, and every block read
      if (!failed_) return 0;
      errno = EIO;
      return -1;
    }
    holding_ = true;
  }
  const Block& b = blocks_[taken_ % kBlocks];  // taken_ changes only here, on this thread
  const size_t n = std::min(size, b.size - at_);
  std::memcpy(out, b.bytes.get() + at_, n);
  at_ += n;
  if (at_ == b.size) {
    at_ = 0;
    holding_ = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++taken_;
    }
    changed_.notify_all();
  }
  return ssize_t(n);
}

ssize_t read_cookie(void* cookie, char* buf, size_t size) { return static_cast<ReadAhead*>(cookie)->read(buf, size); }
int close_cookie(void* cookie) {
  delete static_cast<ReadAhead*>(cookie);
  return 0;
}

}  // namespace

FILE* read_ahead(FILE* slow) {
  std::unique_ptr<ReadAhead> r;
  try {
    r = std::make_unique<ReadAhead>(slow);
  } catch (const std::exception& e) {  // no thread or no memory
    std::fclose(slow);
    throw std::runtime_error(std::string("cannot start reading ahead: ") + e.what());
  }
  FILE* f = fopencookie(r.get(), "r", cookie_io_functions_t{read_cookie, nullptr, nullptr, close_cookie});
  if (!f) throw std::runtime_error("fopencookie failed");  // r closes slow
  r.release();
  return f;
}

}  // namespace itchbench
