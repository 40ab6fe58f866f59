// Big-endian field access for wire formats (ITCH, MoldUDP64, IP/UDP).
// memcpy + bswap compiles to a single load and bswap; it is also safe on
// unaligned pointers, which every wire field is.
#pragma once
#include <cstdint>
#include <cstring>

namespace itchbench {

inline uint16_t load_be16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return __builtin_bswap16(v);
}
inline uint32_t load_be32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return __builtin_bswap32(v);
}
inline uint64_t load_be64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}

inline void store_be16(uint8_t* p, uint16_t v) {
  v = __builtin_bswap16(v);
  std::memcpy(p, &v, 2);
}
inline void store_be32(uint8_t* p, uint32_t v) {
  v = __builtin_bswap32(v);
  std::memcpy(p, &v, 4);
}
inline void store_be64(uint8_t* p, uint64_t v) {
  v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
}
inline void store_be48(uint8_t* p, uint64_t v) {
  store_be16(p, uint16_t(v >> 32));
  store_be32(p + 2, uint32_t(v));
}

}  // namespace itchbench
