#include "protocol/serial_line.hpp"

#include <cstring>

namespace itchbench::serial {

namespace {

const char kHex[] = "0123456789abcdef";

size_t put_decimal(uint8_t* out, uint64_t v) {
  char tmp[20];
  size_t n = 0;
  do {
    tmp[n++] = char('0' + v % 10);
    v /= 10;
  } while (v);
  for (size_t i = 0; i < n; ++i) out[i] = uint8_t(tmp[n - 1 - i]);
  return n;
}

int hex_value(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Parses a decimal field ending at `stop`; advances p past the stop byte.
bool get_decimal(const uint8_t*& p, const uint8_t* end, uint8_t stop, uint64_t& out) {
  uint64_t v = 0;
  size_t digits = 0;
  while (p < end && *p != stop) {
    if (*p < '0' || *p > '9' || digits == 20) return false;
    const uint64_t next = v * 10 + uint64_t(*p - '0');
    if (next / 10 != v) return false;  // overflow
    v = next;
    ++digits;
    ++p;
  }
  if (p == end || digits == 0) return false;
  ++p;
  out = v;
  return true;
}

}  // namespace

size_t encode_line(uint8_t* out, uint64_t seq, uint64_t t_send, const uint8_t* msg, size_t len) {
  size_t n = 0;
  out[n++] = '$';
  n += put_decimal(out + n, seq);
  out[n++] = ',';
  n += put_decimal(out + n, t_send);
  out[n++] = ',';
  if (msg == nullptr) {
    std::memcpy(out + n, "END", 3);
    n += 3;
  } else {
    for (size_t i = 0; i < len; ++i) {
      out[n++] = uint8_t(kHex[msg[i] >> 4]);
      out[n++] = uint8_t(kHex[msg[i] & 15]);
    }
  }
  uint8_t ck = 0;
  for (size_t i = 1; i < n; ++i) ck ^= out[i];
  out[n++] = '*';
  out[n++] = uint8_t(kHex[ck >> 4]);
  out[n++] = uint8_t(kHex[ck & 15]);
  out[n++] = '\n';
  return n;
}

LineReader::Parsed LineReader::parse(uint64_t& seq, uint64_t& t_send, size_t& len) {
  size_t n = used_;
  if (n > 0 && line_[n - 1] == '\r') --n;
  // checksum: "...*CK"
  if (n < 3 || line_[n - 3] != '*') return Parsed::kMalformed;
  const int hi = hex_value(line_[n - 2]), lo = hex_value(line_[n - 1]);
  if (hi < 0 || lo < 0) return Parsed::kMalformed;
  const size_t body = n - 3;
  uint8_t ck = 0;
  for (size_t i = 0; i < body; ++i) ck ^= line_[i];
  const uint8_t* p = line_;
  const uint8_t* end = line_ + body;
  if (!get_decimal(p, end, ',', seq) || !get_decimal(p, end, ',', t_send)) return Parsed::kMalformed;
  if (seq == UINT64_MAX) return Parsed::kMalformed;  // the next expected sequence must exist
  const size_t payload_chars = size_t(end - p);
  const bool is_end = payload_chars == 3 && std::memcmp(p, "END", 3) == 0;
  if (!is_end) {
    if (payload_chars == 0 || payload_chars % 2 || payload_chars / 2 > kMaxPayload) return Parsed::kMalformed;
    for (size_t i = 0; i < payload_chars / 2; ++i) {
      const int a = hex_value(p[2 * i]), b = hex_value(p[2 * i + 1]);
      if (a < 0 || b < 0) return Parsed::kMalformed;
      payload_[i] = uint8_t(a << 4 | b);
    }
    len = payload_chars / 2;
  }
  // Checked last: a syntactically broken line is reported as malformed.
  if (ck != uint8_t(hi << 4 | lo)) return Parsed::kBadChecksum;
  return is_end ? Parsed::kEnd : Parsed::kMessage;
}

}  // namespace itchbench::serial
