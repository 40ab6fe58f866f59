// Single-producer single-consumer ring of frames: how the hot path hands what
// it publishes (a BBO record, 48 bytes, or a depth log's level change record,
// 32) to a publisher thread without a lock, a syscall or an
// allocation. The frame size is the ring's, chosen at construction; a full
// ring refuses the frame (the caller counts the drop).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

namespace itchbench {

class FrameRing {
 public:
  FrameRing(size_t frame_bytes, size_t capacity_pow2)
      : frame_bytes_(frame_bytes), mask_(capacity_pow2 - 1), bytes_(new uint8_t[frame_bytes * capacity_pow2]) {}

  // The frames a ring of frame_bytes frames holds within budget_bytes: a power of two, from 1,024 to 65,536.
  static size_t frames_within(size_t frame_bytes, size_t budget_bytes) {
    size_t frames = 1024;
    while (frames < 65536 && 2 * frames * frame_bytes <= budget_bytes) frames *= 2;
    return frames;
  }

  size_t frame_bytes() const { return frame_bytes_; }

  bool push(const void* frame) {
    const size_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_cache_ > mask_) {
      tail_cache_ = tail_.load(std::memory_order_acquire);
      if (head - tail_cache_ > mask_) return false;
    }
    std::memcpy(bytes_.get() + (head & mask_) * frame_bytes_, frame, frame_bytes_);
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

  // Consumer: whether nothing is waiting, read after a seq_cst store of its own (a doorbell's park).
  bool empty() const { return head_.load(std::memory_order_seq_cst) == tail_.load(std::memory_order_relaxed); }

  // Consumer: the oldest frame, or nullptr when none waits; it stays the producer's to overwrite only after pop().
  const uint8_t* front() {
    const size_t tail = tail_.load(std::memory_order_relaxed);
    if (tail == head_cache_) {
      head_cache_ = head_.load(std::memory_order_acquire);
      if (tail == head_cache_) return nullptr;
    }
    return bytes_.get() + (tail & mask_) * frame_bytes_;
  }
  void pop() { tail_.store(tail_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

 private:
  const size_t frame_bytes_;
  const size_t mask_;
  std::unique_ptr<uint8_t[]> bytes_;
  alignas(64) std::atomic<size_t> head_{0};
  size_t tail_cache_ = 0;  // producer's view
  alignas(64) std::atomic<size_t> tail_{0};
  size_t head_cache_ = 0;  // consumer's view
};

}  // namespace itchbench
