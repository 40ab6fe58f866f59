// Single-producer single-consumer ring of fixed-size items: how the hot path
// hands BBO events to the publisher thread without a lock, a syscall or an
// allocation. A full ring refuses the item (the caller counts the drop).
#pragma once
#include <atomic>
#include <cstddef>
#include <memory>

namespace itchbench {

template <class T>
class SpscRing {
 public:
  explicit SpscRing(size_t capacity_pow2) : mask_(capacity_pow2 - 1), items_(new T[capacity_pow2]) {}

  bool push(const T& item) {
    const size_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_cache_ > mask_) {
      tail_cache_ = tail_.load(std::memory_order_acquire);
      if (head - tail_cache_ > mask_) return false;
    }
    items_[head & mask_] = item;
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

  // Consumer: whether nothing is waiting, read after a seq_cst store of its own (a doorbell's park).
  bool empty() const { return head_.load(std::memory_order_seq_cst) == tail_.load(std::memory_order_relaxed); }

  bool pop(T& out) {
    const size_t tail = tail_.load(std::memory_order_relaxed);
    if (tail == head_cache_) {
      head_cache_ = head_.load(std::memory_order_acquire);
      if (tail == head_cache_) return false;
    }
    out = items_[tail & mask_];
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }

 private:
  const size_t mask_;
  std::unique_ptr<T[]> items_;
  alignas(64) std::atomic<size_t> head_{0};
  size_t tail_cache_ = 0;  // producer's view
  alignas(64) std::atomic<size_t> tail_{0};
  size_t head_cache_ = 0;  // consumer's view
};

}  // namespace itchbench
