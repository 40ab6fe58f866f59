// Which pipeline stages a run stamps. Each stamp is a TSC read (8-10 ns back
// to back on these VMs, more amid cache misses: util/stage_clock.hpp) and a
// field of every latency record (8 bytes of a wide one), so a run that needs
// fewer figures can pay for fewer: the log holds only the stamped stages, and
// reports leave out the stages that need one it lacks (gateway/log/FORMAT.md).
#pragma once
#include <cstdint>
#include <string>

#include "log/log_format.hpp"

namespace itchbench {

// The latency log's stage bits (the kernel's stamp is the transport's, not an option).
enum Stamp : uint8_t {
  kStampRead = logfmt::kStageRead,  // the source handed the message over (simulation; live sources always stamp it)
  kStampDecoded = logfmt::kStageDecoded,
  kStampBook = logfmt::kStageBook,
  kStampPublished = logfmt::kStagePublished,  // BBO events only
};
constexpr uint8_t kAllStamps = kStampRead | kStampDecoded | kStampBook | kStampPublished;

// "all", or a comma-separated subset of read, decoded, book, published.
// Throws std::invalid_argument naming what is wrong.
uint8_t parse_stamps(const std::string& text);

}  // namespace itchbench
