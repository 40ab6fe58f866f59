// Outputs renamed into place never replace what is not a file of their own kind.
#include "util/atomic_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <stdexcept>

#include "net/pcap_io.hpp"
#include "test_files.hpp"

namespace itchbench {
namespace {

bool is_fifo(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

TEST(AtomicFile, WritesAFileAndReplacesAFile) {
  testing::ScratchDir dir;
  const std::string path = dir.file("out.json");
  write_file_atomically(path, "first");
  write_file_atomically(path, "second");
  const auto bytes = testing::read_bytes(path);
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), "second");
  EXPECT_FALSE(std::filesystem::exists(temporary_path(path)));
}

// `itch-faults IN /dev/null` as root put a pcap file in place of /dev/null: a rename replaces whatever is there.
TEST(AtomicFile, RefusesAPipeAFolderAndALinkToThem) {
  testing::ScratchDir dir;
  const std::string fifo = dir.file("fifo"), folder = dir.file("folder"), link = dir.file("link");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_directory(folder);
  std::filesystem::create_symlink(fifo, link);
  for (const std::string& path : {fifo, folder, link}) {
    EXPECT_THROW(write_file_atomically(path, "text"), std::runtime_error) << path;
    EXPECT_FALSE(std::filesystem::exists(temporary_path(path))) << path;
  }
  EXPECT_TRUE(is_fifo(fifo) && std::filesystem::is_directory(folder) && std::filesystem::is_symlink(link));
  // A writer refuses before any work.
  EXPECT_THROW(net::PcapWriter(fifo, 1, 65535), std::runtime_error);
  EXPECT_FALSE(std::filesystem::exists(temporary_path(fifo)));
  EXPECT_TRUE(is_fifo(fifo));
}

}  // namespace
}  // namespace itchbench
