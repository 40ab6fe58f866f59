#include "protocol/itch.hpp"

namespace itchbench::itch {

const char* to_string(DecodeStatus s) {
  switch (s) {
    case DecodeStatus::kOk: return "ok";
    case DecodeStatus::kEmpty: return "empty message";
    case DecodeStatus::kUnknownType: return "unknown message type";
    case DecodeStatus::kWrongLength: return "length does not match message type";
  }
  return "?";
}

}  // namespace itchbench::itch
