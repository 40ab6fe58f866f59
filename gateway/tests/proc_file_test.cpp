#include "util/proc_file.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

namespace itchbench {
namespace {

TEST(ProcFile, ReadsAProcFileWhole) {
  const std::string stat = read_proc_file("/proc/self/stat");
  EXPECT_EQ(stat.rfind(std::to_string(getpid()) + " (", 0), 0u) << stat;  // proc(5): pid (comm) state ...
  EXPECT_EQ(stat.back(), '\n');
}

TEST(ProcFile, AFileThatCannotBeOpenedIsEmpty) { EXPECT_EQ(read_proc_file("/proc/0/stat"), ""); }

// A read that fails after the open (a directory: EISDIR; a /proc file of a process that has just ended: ESRCH)
// is what std::ifstream turns into an exception; the helper returns what it read, nothing here.
TEST(ProcFile, AReadThatFailsAfterTheOpenIsNotAnException) {
  std::ifstream dir("/proc/self");
  ASSERT_TRUE(dir.is_open());
  EXPECT_ANY_THROW((std::string{std::istreambuf_iterator<char>(dir), std::istreambuf_iterator<char>()}));
  EXPECT_EQ(read_proc_file("/proc/self"), "");
}

}  // namespace
}  // namespace itchbench
