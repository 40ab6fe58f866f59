// A replay tool's closing report: JSON on stdout, and to a file when asked.
#pragma once
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace itchbench::replay {

// Throws std::runtime_error naming the file when it cannot be written.
inline void emit_report(const std::string& json, const std::string& path) {
  std::fputs(json.c_str(), stdout);
  if (path.empty()) return;
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw std::runtime_error(path + ": " + std::strerror(errno));
  const bool ok = std::fputs(json.c_str(), f) >= 0;
  if (std::fclose(f) != 0 || !ok) throw std::runtime_error(path + ": write failed");
}

}  // namespace itchbench::replay
