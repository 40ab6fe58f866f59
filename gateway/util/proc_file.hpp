// Reading a /proc file whose process may end while it is read.
#pragma once
#include <string>

namespace itchbench {

// The file's whole text, or as much as could be read: "" when it cannot be opened. A process that ends between
// opening and reading leaves its /proc files failing with ESRCH, which std::ifstream's read reports by throwing
// (libstdc++'s basic_filebuf::underflow) whatever its exception mask: a process meter scanning /proc was killed
// by it once a child exited mid-scan.
std::string read_proc_file(const std::string& path);

}  // namespace itchbench
