// Splits a fuzzer's input into pieces: [u16 big-endian length][bytes] ...,
// the last piece taking what is left when a length runs past the end. Lets
// one input stand for a stream of datagrams, messages or reads.
#pragma once
#include <cstddef>
#include <cstdint>

namespace itchbench::fuzz {

template <class F>
void for_each_piece(const uint8_t* data, size_t size, F&& f) {
  size_t off = 0;
  while (off + 2 <= size) {
    size_t len = (size_t(data[off]) << 8) | data[off + 1];
    off += 2;
    if (len > size - off) len = size - off;
    f(data + off, len);
    off += len;
  }
}

// A divergence the fuzzer must report: abort with the reason.
[[noreturn]] void fail(const char* what, const char* detail = "");

}  // namespace itchbench::fuzz
