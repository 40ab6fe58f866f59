// The --feed ADDR:PORT option, read the same way by every tool that takes it.
#pragma once
#include <optional>
#include <stdexcept>
#include <string>

#include "source/feed.hpp"
#include "util/cli.hpp"

namespace itchbench {

inline constexpr const char* kFeedOptionHelp =
    "the capture's feed flow (default: the one with the most MoldUDP64 messages)";

inline std::optional<Feed> feed_option(cli::Args& args) {
  if (!args.has("feed")) return std::nullopt;
  try {
    return parse_feed(args.get("feed"));
  } catch (const std::invalid_argument& e) {
    args.fail(std::string("--") + e.what());
  }
}

}  // namespace itchbench
