// Writes a NASDAQ binary ITCH file (2-byte big-endian length + message) to
// PATH.PID.tmp, renamed to PATH on commit(): never a partial file under the name.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

namespace itchbench::replay {

class ItchFileWriter {
 public:
  explicit ItchFileWriter(const std::string& path);
  ~ItchFileWriter();
  ItchFileWriter(const ItchFileWriter&) = delete;
  ItchFileWriter& operator=(const ItchFileWriter&) = delete;

  void write(const uint8_t* msg, uint16_t len);
  void commit();

 private:
  std::string path_, tmp_path_;
  std::FILE* file_ = nullptr;
};

// "2024-01-02" -> ns since the Unix epoch at that date's midnight (UTC);
// throws std::invalid_argument on a malformed date.
uint64_t epoch_ns_of_date(const std::string& date);
// "09:30:00" or "09:30:00.000000123" -> ns since midnight.
uint64_t ns_of_time_of_day(const std::string& hms);

}  // namespace itchbench::replay
