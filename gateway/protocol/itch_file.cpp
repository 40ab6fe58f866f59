#include "protocol/itch_file.hpp"

#include <cstring>

namespace itchbench::itch {

std::string hex_byte(uint8_t b) {
  static const char* digits = "0123456789abcdef";
  return std::string{digits[b >> 4], digits[b & 15]};
}

bool framed_despite_content(const uint8_t* data, size_t size, size_t off, size_t len) {
  const size_t next = off + 2 + len;
  if (next == size) return true;
  if (size - next < 2) return false;
  const size_t next_len = load_be16(data + next);
  return size - next - 2 >= next_len && validate(data + next + 2, next_len) == DecodeStatus::kOk;
}

FileError describe_framing_error(const uint8_t* data, size_t size, size_t off, uint64_t position) {
  if (size - off < 2) return {off, position, "truncated length prefix at end of file"};
  const size_t len = load_be16(data + off);
  if (size - off - 2 < len)
    return {off, position, "message of length " + std::to_string(len) + " runs past the end of the file"};
  const uint8_t* msg = data + off + 2;
  const DecodeStatus st = validate(msg, len);
  std::string why = "framing lost: " + std::string(to_string(st));
  if (st == DecodeStatus::kUnknownType)
    why += " (byte 0x" + hex_byte(msg[0]) + ")";
  else if (st == DecodeStatus::kWrongLength)
    why += ": type '" + std::string(1, char(msg[0])) + "' is " + std::to_string(message_length(char(msg[0]))) +
           " bytes, prefix says " + std::to_string(len);
  return {off, position, why + ", and the length prefix after it frames no valid message"};
}

bool looks_like_itch_file(const uint8_t* data, size_t size) {
  size_t off = 0;
  int seen = 0;
  while (seen < 4 && off + 3 <= size) {
    const size_t len = load_be16(data + off);
    if (len == 0 || off + 2 + len > size) return false;
    if (message_length(char(data[off + 2])) != len) return false;
    off += 2 + len;
    ++seen;
  }
  return seen > 0 && (seen == 4 || off == size);
}

}  // namespace itchbench::itch
