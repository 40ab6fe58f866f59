// Which pages of a MappedFile are mapped, as the kernel tells it
// (/proc/self/pagemap): the window a walk is in and the next one, nothing
// long behind it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "test_files.hpp"
#include "util/mapped_file.hpp"

using namespace itchbench;
using itchbench::testing::ScratchDir;

namespace {

constexpr size_t kMiB = size_t(1) << 20;

// Whether the page holding p is mapped in this process (pagemap bit 63).
bool mapped(const uint8_t* p) {
  std::FILE* f = std::fopen("/proc/self/pagemap", "rb");
  EXPECT_NE(f, nullptr);
  const long page = ::sysconf(_SC_PAGESIZE);
  uint64_t entry = 0;
  EXPECT_EQ(std::fseek(f, long(uintptr_t(p) / uintptr_t(page) * 8), SEEK_SET), 0);
  EXPECT_EQ(std::fread(&entry, 8, 1, f), 1u);
  std::fclose(f);
  return (entry >> 63) & 1;
}

// Whether every page of [from, to) MiB of the file is mapped (every), or none is (!every).
bool pages(const MappedFile& m, size_t from_mib, size_t to_mib, bool every) {
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  for (size_t at = from_mib * kMiB; at < to_mib * kMiB; at += page)
    if (mapped(m.data() + at) != every) return false;
  return true;
}

}  // namespace

TEST(MappedFile, TheWindowAWalkIsInAndTheNextAreMappedBeforeItGetsThere) {
  ScratchDir dir;
  const std::string path = dir.file("f");
  itchbench::testing::write_bytes(path, std::vector<uint8_t>(40 * kMiB, 0x5a));
  MappedFile m(path);
  ASSERT_EQ(m.size(), 40 * kMiB);
  // Nothing read yet: the first two 8 MiB windows are mapped, the rest is not.
  EXPECT_TRUE(pages(m, 0, 16, true));
  EXPECT_TRUE(pages(m, 16, 40, false));
  // The walk enters the second window: the third is mapped in, the first handed back.
  m.advance_to(m.data() + 8 * kMiB + 100);
  EXPECT_TRUE(pages(m, 0, 8, false));
  EXPECT_TRUE(pages(m, 8, 24, true));
  EXPECT_TRUE(pages(m, 24, 40, false));
  // Moving within a window changes nothing.
  m.advance_to(m.data() + 15 * kMiB);
  EXPECT_TRUE(pages(m, 8, 24, true));
  EXPECT_TRUE(pages(m, 24, 40, false));
  // The last window: mapped up to the end of the file, not past it.
  m.advance_to(m.data() + 33 * kMiB);
  EXPECT_TRUE(pages(m, 0, 32, false));
  EXPECT_TRUE(pages(m, 32, 40, true));
}
