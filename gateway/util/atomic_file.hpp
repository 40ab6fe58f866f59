// Outputs appear under their final name only when complete: written to
// PATH.PID.tmp, then renamed. On failure the temporary file is removed.
#pragma once
#include <cstdio>
#include <string>

#include <unistd.h>

namespace itchbench {

// This process's own: two writers of one path at once (`itchbench faults` twice to one file) had shared PATH.tmp,
// the second truncating the file the first then renamed into place unfinished.
inline std::string temporary_path(const std::string& path) { return path + "." + std::to_string(::getpid()) + ".tmp"; }

// tmp (a temporary_path of path) opened to write; throws std::runtime_error naming path, the output asked for.
std::FILE* open_temporary(const std::string& tmp, const std::string& path);

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
