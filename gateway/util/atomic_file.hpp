// Outputs appear under their final name only when complete: written to
// PATH.tmp, then renamed. On failure the temporary file is removed.
#pragma once
#include <string>

namespace itchbench {

inline std::string temporary_path(const std::string& path) { return path + ".tmp"; }

// Throws std::runtime_error unless path is absent or a regular file (symlinks followed): a rename onto a device,
// a pipe or a folder would put a file in its place (`itch-faults IN /dev/null`, run as root, replaced /dev/null).
// Writers call it before any work; commit_temporary calls it again.
void require_regular_output(const std::string& path);

// Renames tmp onto path; throws std::runtime_error (and removes tmp) on
// failure. write_ok: whether writing tmp succeeded; false removes it and throws.
void commit_temporary(const std::string& tmp, const std::string& path, bool write_ok = true);

// Writes text to path through a temporary file.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace itchbench
