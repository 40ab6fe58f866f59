// The book's large tables sit on 2 MiB-aligned blocks advised for
// transparent huge pages; small ones come from the heap as before.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "util/huge_page_allocator.hpp"

using namespace itchbench;

namespace {
std::string thp_mode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(f, s);
  return s;
}

// The THPeligible line of the /proc/self/smaps mapping holding p (-1 if none).
int thp_eligible(const void* p) {
  std::ifstream f("/proc/self/smaps");
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(f, line)) {
    uintptr_t lo, hi;
    char dash;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = at >= lo && at < hi;
      continue;
    }
    if (inside && line.rfind("THPeligible:", 0) == 0) return std::stoi(line.substr(12));
  }
  return -1;
}
}  // namespace

TEST(HugePageAllocator, ALargeTableIsOnAHugePageBoundaryAndHoldsItsContents) {
  std::vector<uint64_t, HugePageAllocator<uint64_t>> v;
  const size_t n = (size_t(3) << 20) / sizeof(uint64_t);  // 3 MiB
  for (size_t i = 0; i < n; ++i) v.push_back(i * 7);       // grows through small blocks into large ones
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % kHugePageBytes, 0u);
  for (size_t i = 0; i < n; i += 4099) ASSERT_EQ(v[i], i * 7);
  EXPECT_EQ(v.back(), (n - 1) * 7);
}

TEST(HugePageAllocator, ALargeTableIsAdvisedForHugePages) {
  const std::string mode = thp_mode();
  if (mode.empty() || mode.find("[never]") != std::string::npos) GTEST_SKIP() << "transparent huge pages are off here";
  std::vector<uint64_t, HugePageAllocator<uint64_t>> v(kHugePageBytes / sizeof(uint64_t), 1);
  // "madvise" mode makes a range eligible only when advised; "always" makes every aligned range eligible.
  EXPECT_EQ(thp_eligible(v.data()), 1) << mode;
}

TEST(HugePageAllocator, ASmallTableIsAlignedForItsType) {
  struct alignas(16) Slot {
    uint64_t a, b;
  };
  std::vector<Slot, HugePageAllocator<Slot>> v(10, Slot{1, 2});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % alignof(Slot), 0u);
  EXPECT_EQ(v[9].b, 2u);
}
