#include "replay/lib/itch_file_writer.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "protocol/endian.hpp"
#include "util/atomic_file.hpp"

namespace itchbench::replay {

ItchFileWriter::ItchFileWriter(const std::string& path) : path_(path), tmp_path_(temporary_path(path)) {
  require_regular_output(path);
  file_ = open_temporary(tmp_path_, path_);
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
}

ItchFileWriter::~ItchFileWriter() {
  if (!file_) return;
  std::fclose(file_);
  std::remove(tmp_path_.c_str());
}

void ItchFileWriter::write(const uint8_t* msg, uint16_t len) {
  uint8_t prefix[2];
  store_be16(prefix, len);
  std::fwrite(prefix, 1, 2, file_);
  std::fwrite(msg, 1, len, file_);
}

void ItchFileWriter::commit() {
  const bool ok = std::fflush(file_) == 0 && !std::ferror(file_);
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  commit_temporary(tmp_path_, path_, ok && closed);
}

uint64_t epoch_ns_of_date(const std::string& date) {
  int y = 0, m = 0, d = 0;
  char tail = 0;
  if (std::sscanf(date.c_str(), "%4d-%2d-%2d%c", &y, &m, &d, &tail) != 3 || y < 1970 || m < 1 ||
      m > 12 || d < 1 || d > 31)
    throw std::invalid_argument("bad date '" + date + "': expected YYYY-MM-DD");
  // Days from civil (proleptic Gregorian), integer only.
  y -= m <= 2;
  const int64_t era = y / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = era * 146097 + doe - 719468;
  return uint64_t(days) * 86400ull * 1000000000ull;
}

uint64_t ns_of_time_of_day(const std::string& hms) {
  unsigned h = 0, m = 0, s = 0;
  int used = 0;
  if (std::sscanf(hms.c_str(), "%2u:%2u:%2u%n", &h, &m, &s, &used) != 3 || h > 23 || m > 59 || s > 59)
    throw std::invalid_argument("bad time '" + hms + "': expected HH:MM:SS[.fraction]");
  uint64_t ns = ((h * 60ull + m) * 60ull + s) * 1000000000ull;
  const std::string frac = hms.substr(size_t(used));
  if (!frac.empty()) {
    if (frac[0] != '.' || frac.size() > 10 || frac.size() < 2 ||
        frac.find_first_not_of("0123456789", 1) != std::string::npos)
      throw std::invalid_argument("bad time '" + hms + "': expected HH:MM:SS[.fraction]");
    std::string digits = frac.substr(1);
    digits.resize(9, '0');
    ns += std::stoull(digits);
  }
  return ns;
}

}  // namespace itchbench::replay
