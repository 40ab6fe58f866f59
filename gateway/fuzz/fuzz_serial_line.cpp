// The serial line codec: any bytes, in any pieces. Every good line must
// re-encode to a line that reads back to the same sequence, stamp and
// payload; the byte counter must equal what was fed.
#include <cstdint>
#include <cstring>

#include "fuzz/fuzz_input.hpp"
#include "protocol/serial_line.hpp"

using namespace itchbench;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  serial::LineReader reader;
  uint64_t fed = 0;
  auto none = [](uint64_t) {};
  fuzz::for_each_piece(data, size, [&](const uint8_t* p, size_t n) {
    fed += n;
    reader.feed(p, n, [&](uint64_t seq, uint64_t t_send, const uint8_t* msg, size_t len) {
      if (len > serial::kMaxPayload) fuzz::fail("payload longer than a line can hold");
      uint8_t line[serial::kMaxLine];
      const size_t l = serial::encode_line(line, seq, t_send, msg, len);
      serial::LineReader again;
      bool same = false;
      again.feed(line, l, [&](uint64_t s2, uint64_t t2, const uint8_t* m2, size_t n2) {
        same = s2 == seq && t2 == t_send && n2 == len && (len == 0 || std::memcmp(m2, msg, len) == 0);
      }, none);
      if (!same) fuzz::fail("a good line does not survive re-encoding");
    }, none);
  });
  if (reader.counters().bytes != fed) fuzz::fail("byte counter differs from bytes fed");
  return 0;
}
