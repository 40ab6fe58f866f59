// Decoder stage counters: messages per type and rejections by reason.
#pragma once
#include <cstdint>

#include "protocol/itch.hpp"

namespace itchbench {

struct DecodeCounters {
  uint64_t per_type[itch::kTypeCount] = {};
  uint64_t unknown_type = 0;
  uint64_t wrong_length = 0;
  uint64_t empty = 0;

  void count_rejection(itch::DecodeStatus st) {
    if (st == itch::DecodeStatus::kUnknownType) ++unknown_type;
    if (st == itch::DecodeStatus::kWrongLength) ++wrong_length;
    if (st == itch::DecodeStatus::kEmpty) ++empty;
  }
  uint64_t messages() const {
    uint64_t n = 0;
    for (uint64_t c : per_type) n += c;
    return n;
  }
  uint64_t rejected() const { return unknown_type + wrong_length + empty; }
};

}  // namespace itchbench
