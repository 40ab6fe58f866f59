// NASDAQ's binary ITCH 5.0 file: each message behind a 2-byte big-endian
// length. The file is memory-mapped and walked without copying.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "protocol/itch.hpp"

namespace itchbench::itch {

struct FileError {
  uint64_t offset = 0;   // byte offset of the length prefix that failed
  uint64_t message = 0;  // 1-based position of the message that failed
  std::string reason;
};

// Memory-mapped read-only view of a binary ITCH file.
class ItchFile {
 public:
  // Throws std::runtime_error (with the path and errno text) if it cannot open.
  explicit ItchFile(const std::string& path);
  ~ItchFile();
  ItchFile(const ItchFile&) = delete;
  ItchFile& operator=(const ItchFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

  // A walk that has passed p hands the pages wholly behind it back to the
  // kernel (they stay in the page cache), every kReleaseBytes: reading a
  // file of any size keeps a window of it resident, not the file.
  void release_before(const uint8_t* p) {
    if (__builtin_expect(p - released_ >= kReleaseBytes, 0)) release(p);
  }

 private:
  static constexpr ptrdiff_t kReleaseBytes = ptrdiff_t(64) << 20;
  void release(const uint8_t* p);

  const uint8_t* data_ = nullptr;
  const uint8_t* released_ = nullptr;  // pages before this were released
  size_t size_ = 0;
};

std::string hex_byte(uint8_t b);

// Walks length-prefixed messages in [data, data+size). Calls
// f(position (1-based), bytes, length) for each message whose prefix matches
// its type. Stops at the first framing error and describes it: after a bad
// prefix the rest of the stream cannot be trusted to be aligned.
// Returns true when the whole buffer was consumed cleanly.
template <class F>
bool walk_length_prefixed(const uint8_t* data, size_t size, F&& f, FileError* error) {
  size_t off = 0;
  uint64_t position = 0;
  while (off < size) {
    ++position;
    if (size - off < 2) {
      if (error) *error = {off, position, "truncated length prefix at end of file"};
      return false;
    }
    const size_t len = load_be16(data + off);
    if (size - off - 2 < len) {
      if (error)
        *error = {off, position,
                  "message of length " + std::to_string(len) + " runs past the end of the file"};
      return false;
    }
    const uint8_t* msg = data + off + 2;
    const DecodeStatus st = validate(msg, len);
    if (st != DecodeStatus::kOk) {
      std::string why = to_string(st);
      if (st == DecodeStatus::kUnknownType)
        why += " (byte 0x" + hex_byte(msg[0]) + ")";
      else if (st == DecodeStatus::kWrongLength)
        why += ": type '" + std::string(1, char(msg[0])) + "' is " +
               std::to_string(message_length(char(msg[0]))) + " bytes, prefix says " +
               std::to_string(len);
      if (error) *error = {off, position, why};
      return false;
    }
    f(position, msg, len);
    off += 2 + len;
  }
  return true;
}

// A second cursor over the same buffer as a walk, kept some messages ahead of
// it: step() hands the next message on to a look-ahead hint. No validation
// (the walk does that); it stops where a length runs past the end.
class LookAheadCursor {
 public:
  LookAheadCursor(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  template <class F>
  void step(F&& f) {
    if (end_ - p_ < 2) return;
    const size_t len = load_be16(p_);
    if (size_t(end_ - p_ - 2) < len) {
      p_ = end_;
      return;
    }
    f(p_ + 2, len);
    p_ += 2 + len;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

// The walk with a look-ahead: look_ahead(bytes, length) sees each message
// `distance` messages before f does (a hint, not validated).
template <class F, class LookAhead>
bool walk_length_prefixed(const uint8_t* data, size_t size, F&& f, FileError* error, LookAhead&& look_ahead,
                          int distance) {
  LookAheadCursor ahead(data, size);
  for (int i = 0; i < distance; ++i) ahead.step(look_ahead);
  return walk_length_prefixed(
      data, size,
      [&](uint64_t position, const uint8_t* msg, size_t len) {
        ahead.step(look_ahead);
        f(position, msg, len);
      },
      error);
}

// Heuristic used to tell a binary ITCH file from a pcap by content: the first
// few messages are length-prefixed ITCH messages of matching lengths.
bool looks_like_itch_file(const uint8_t* data, size_t size);

// The same walk over a stream (a decompressing FILE*), a megabyte at a time:
// positions and offsets count from the start of the stream, as in a file.
// The look-ahead runs `distance` messages ahead within each megabyte.
template <class F, class LookAhead>
bool walk_length_prefixed_stream(std::FILE* in, F&& f, FileError* error, LookAhead&& look_ahead, int distance) {
  std::vector<uint8_t> buf(size_t(1) << 20);  // more than the longest message (2 + 65535 bytes)
  size_t have = 0;
  uint64_t base_offset = 0, base_position = 0;
  for (;;) {
    const size_t got = std::fread(buf.data() + have, 1, buf.size() - have, in);
    if (got == 0 && std::ferror(in)) {
      if (error) *error = {base_offset + have, base_position + 1, "read error (a damaged compressed stream?)"};
      return false;
    }
    have += got;
    const bool end = got == 0;
    size_t complete = 0;  // whole messages; at the end, everything (the walk names a cut-off tail)
    while (have - complete >= 2 && have - complete - 2 >= load_be16(buf.data() + complete))
      complete += 2 + load_be16(buf.data() + complete);
    if (end) complete = have;
    uint64_t walked = 0;
    FileError e;
    const bool ok = walk_length_prefixed(
        buf.data(), complete,
        [&](uint64_t position, const uint8_t* msg, size_t len) {
          ++walked;
          f(base_position + position, msg, len);
        },
        &e, look_ahead, distance);
    if (!ok) {
      if (error) *error = {base_offset + e.offset, base_position + e.message, e.reason};
      return false;
    }
    if (end) return true;
    base_position += walked;
    base_offset += complete;
    std::memmove(buf.data(), buf.data() + complete, have - complete);
    have -= complete;
  }
}

}  // namespace itchbench::itch
