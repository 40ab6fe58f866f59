// A version-2 depth log of the top N (FORMAT.md, "Level change record") read back as whole events: each stock's
// top N levels a side after each event (the version-1 depth record: head, N bids, N asks), from its level changes
// applied in order to empty books. For the harness (log_reader_c.h): the gateway's hot path logs the levels a
// message changed, 1.06 records of 32 bytes an event on nasdaq-day at 5 levels, where the whole event is 184.
//
// The records are checked as they are applied: an event's are of one seq and stock, bids before asks, each side's
// best first; a record that removes a price the top N does not hold, or changes nothing, and an event after which
// a side holds more than N levels, are malformed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "log/log_format.hpp"

namespace itchbench {

class DepthEventBuilder {
 public:
  explicit DepthEventBuilder(uint32_t levels) : levels_(levels) {}

  // The events of n records (whole events only: the consecutive records of one seq and stock), one
  // logfmt::depth_event_size(N) record each written at out, at most `capacity`. Returns how many; throws
  // std::runtime_error naming the record (counted from the first given to this builder) that is malformed, or
  // an event past capacity.
  uint64_t apply(const logfmt::LevelChangeRecord* records, uint64_t n, uint8_t* out, uint64_t capacity);

 private:
  // A level as an event holds it (logfmt::DepthLevel), so that a side is copied into an event whole.
  using Level = logfmt::DepthLevel;
  // A stock's two sides, each in a fixed run of 2N places, best first: within an event a side may hold up to N
  // levels more than its top N (those it takes before those it lets go, best first), never more in a log that
  // ends the event with N.
  struct Book {
    uint32_t count[2];  // [0] bids, [1] asks
    uint32_t first;     // its places in levels_: bids at first, asks at first + 2N
  };
  Book& book_of(uint16_t locate);
  void apply_one(const logfmt::LevelChangeRecord& r, uint64_t index);
  void write_event(const logfmt::LevelChangeRecord& head, uint8_t* out) const;
  [[noreturn]] void fail(uint64_t index, const std::string& what) const;

  uint32_t levels_;
  std::vector<uint32_t> book_at_;  // per locate: 1 + its place in books_, 0 for a stock not seen yet
  std::vector<Book> books_;
  std::vector<Level> levels_pool_;  // 4N a book
  uint64_t seen_ = 0;               // records applied before this call's
};

}  // namespace itchbench
