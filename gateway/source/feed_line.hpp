// The ways a MoldUDP64 packet reaches a live gateway: the session's A line, its B line (the same packets
// again, as exchanges send them), or an answer of the exchange's re-request server (docs/exchange.md).
#pragma once
#include <cstddef>
#include <cstdint>

namespace itchbench {

enum class Line : uint8_t { kA = 0, kB = 1, kAnswer = 2 };
constexpr size_t kLines = 3;
constexpr const char* kLineNames[kLines] = {"a", "b", "answers"};

}  // namespace itchbench
