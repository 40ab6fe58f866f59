// A message of a given type and length whose other bytes follow a
// deterministic pattern, so that every field carries a distinct value.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace itchbench::testing {

inline std::vector<uint8_t> patterned(char type, size_t len, uint8_t salt) {
  std::vector<uint8_t> b(len);
  b[0] = uint8_t(type);
  for (size_t i = 1; i < len; ++i) b[i] = uint8_t(i * 37 + salt);
  return b;
}

}  // namespace itchbench::testing
