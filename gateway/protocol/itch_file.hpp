// NASDAQ's binary ITCH 5.0 file: each message behind a 2-byte big-endian
// length, walked in place (a MappedFile, or a buffer of a decompressed stream).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "protocol/itch.hpp"
#include "util/stream_prefetch.hpp"

namespace itchbench::itch {

struct FileError {
  uint64_t offset = 0;   // byte offset of the length prefix that failed
  uint64_t message = 0;  // 1-based position of the message that failed
  std::string reason;
};

std::string hex_byte(uint8_t b);

// What is wrong with the message framed at off (which does not frame: see frame_at).
FileError describe_framing_error(const uint8_t* data, size_t size, size_t off, uint64_t position);

// Whether a message that fits but does not validate (unknown type, a length
// its type does not have) still frames the file: it ends the data, or the
// prefix after it frames a valid message. Then it is handed on, for the
// decoder to count as rejected, as a malformed message inside a pcap is;
// otherwise the framing is lost there (cold).
bool framed_despite_content(const uint8_t* data, size_t size, size_t off, size_t len);

// Whether the bytes at off frame one message: a whole length prefix and a
// message that fits, of a type whose length the prefix matches — or one
// that does not validate but leaves the framing intact. On success sets len;
// else describes the error for the message at `position` (cold).
inline bool frame_at(const uint8_t* data, size_t size, size_t off, uint64_t position, size_t& len, FileError* error) {
  if (__builtin_expect(size - off >= 2, 1)) {
    len = load_be16(data + off);
    if (__builtin_expect(size - off - 2 >= len, 1) &&
        (__builtin_expect(validate(data + off + 2, len) == DecodeStatus::kOk, 1) ||
         framed_despite_content(data, size, off, len)))
      return true;
  }
  if (error) *error = describe_framing_error(data, size, off, position);
  return false;
}

// Walks length-prefixed messages in [data, data+size). Calls
// f(position (1-based), bytes, length) for each framed message, malformed
// ones included (the caller's decoder rejects and counts them). Stops where
// the framing is lost and describes it: past a prefix that frames nothing
// the rest cannot be trusted to be aligned.
// Returns true when the whole buffer was walked to its end.
template <class F>
bool walk_length_prefixed(const uint8_t* data, size_t size, F&& f, FileError* error) {
  size_t off = 0, len;
  for (uint64_t position = 1; off < size; ++position) {
    if (!frame_at(data, size, off, position, len, error)) return false;
    prefetch_stream(data + off, size - off);
    f(position, data + off + 2, len);
    off += 2 + len;
  }
  return true;
}

// The walk with a look-ahead: look_ahead(bytes, length) sees each message
// `distance` messages before f does (a hint). Framing is checked once, by
// the look-ahead's side, so the handing-on side only reads lengths already
// known sound; what f sees, and the error, are the plain walk's.
template <class F, class LookAhead>
bool walk_length_prefixed(const uint8_t* data, size_t size, F&& f, FileError* error, LookAhead&& look_ahead,
                          int distance) {
  size_t framed_end = 0;  // messages before this offset are framed and were looked ahead at
  uint64_t framed = 0;    // how many
  bool stopped = false;   // a framing error at message framed + 1 (described in *error)
  auto frame_next = [&] {
    size_t len = 0;  // frame_at sets it when it frames: GCC with profile feedback warned it might not
    if (framed_end >= size || stopped) return;
    if (!frame_at(data, size, framed_end, framed + 1, len, error)) {
      stopped = true;
      return;
    }
    prefetch_stream(data + framed_end, size - framed_end);
    look_ahead(data + framed_end + 2, len);
    framed_end += 2 + len;
    ++framed;
  };
  for (int i = 0; i < distance; ++i) frame_next();
  size_t off = 0;
  for (uint64_t position = 1;; ++position) {
    frame_next();  // keeps the look-ahead `distance` ahead (and at distance 0 frames this one)
    if (position > framed) break;
    const size_t len = load_be16(data + off);
    f(position, data + off + 2, len);
    off += 2 + len;
  }
  return !stopped;
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
