// Which pipeline stages a run stamps. Each stamp is a TSC read (~10 ns on
// these VMs), so a run that needs fewer figures can pay for fewer: the
// latency record keeps a zero where a stage was not stamped, and reports
// leave out the stages that need it (gateway/log/FORMAT.md).
#pragma once
#include <cstdint>
#include <string>

namespace itchbench {

enum Stamp : uint8_t {
  kStampRead = 1,       // the source handed the message over (simulation; live sources always stamp it)
  kStampDecoded = 2,
  kStampBook = 4,
  kStampPublished = 8,  // BBO events only
};
constexpr uint8_t kAllStamps = kStampRead | kStampDecoded | kStampBook | kStampPublished;

// "all", or a comma-separated subset of read, decoded, book, published.
// Throws std::invalid_argument naming what is wrong.
uint8_t parse_stamps(const std::string& text);

}  // namespace itchbench
