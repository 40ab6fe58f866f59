// Compressed captures read as a stream: gzip (.gz, any number of members)
// and zstd (.zst), told apart by their magic bytes, never by the name. The
// decompressed bytes come through a stdio FILE* (fopencookie), so libpcap
// and the ITCH reader take them without a decompressed copy on disk, and the
// decompression runs on a thread of its own (source/read_ahead.hpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace itchbench {

enum class Compression { kNone, kGzip, kZstd };
const char* to_string(Compression c);

// From a file's first bytes.
Compression detect_compression(const uint8_t* head, size_t n);

// A read-only stream of the decompressed bytes; the caller fcloses it.
// Throws std::runtime_error naming the path. A corrupt stream reads as an
// error (ferror) where it breaks, never as silently shorter data.
FILE* open_decompressed(const std::string& path, Compression c);

}  // namespace itchbench
