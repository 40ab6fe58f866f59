// A std allocator for the book's large, randomly accessed tables (the order
// index, the level pool): a block of 2 MiB or more is 2 MiB-aligned and
// advised for transparent huge pages, so a lookup that misses the cache does
// not miss the TLB too (a 4 KiB page walk under a hypervisor is two-level).
// Smaller blocks come from the usual heap. Only advice: where THP is off the
// block is an ordinary aligned one.
#pragma once
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace itchbench {

inline constexpr size_t kHugePageBytes = size_t(2) << 20;

template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}

  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePageBytes) {
      void* p = ::operator new(bytes, std::align_val_t(alignof(T)));
      return static_cast<T*>(p);
    }
    const size_t rounded = (bytes + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
    void* p = std::aligned_alloc(kHugePageBytes, rounded);
    if (!p) throw std::bad_alloc();
    ::madvise(p, rounded, MADV_HUGEPAGE);
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    if (n * sizeof(T) < kHugePageBytes)
      ::operator delete(p, std::align_val_t(alignof(T)));
    else
      std::free(p);
  }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const HugePageAllocator<U>&) const { return false; }
};

}  // namespace itchbench
