#include "replay/lib/line_faults.hpp"

#include <cmath>
#include <stdexcept>

namespace itchbench::replay {

bool parse_burst(const std::string& text, uint32_t& length, uint32_t& ppm) {
  const size_t at = text.find('@');
  if (at == std::string::npos) return false;
  try {
    size_t used = 0;
    const long len = std::stol(text.substr(0, at), &used);
    if (used != at) return false;
    const double p = std::stod(text.substr(at + 1), &used);
    if (used != text.size() - at - 1 || len < 1 || len > 1000000 || !(p >= 0 && p <= 1)) return false;
    length = uint32_t(len);
    ppm = uint32_t(std::lround(p * 1e6));
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

bool parse_window(const std::string& text, uint64_t& from_ns, uint64_t& to_ns) {
  const size_t at = text.find(':');
  if (at == std::string::npos) return false;
  try {
    size_t used = 0;
    const double from = std::stod(text.substr(0, at), &used);
    if (used != at) return false;
    const double to = std::stod(text.substr(at + 1), &used);
    if (used != text.size() - at - 1 || !(from >= 0) || !(to > from) || to > 1e6) return false;
    from_ns = uint64_t(from * 1e9);
    to_ns = uint64_t(to * 1e9);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace itchbench::replay
