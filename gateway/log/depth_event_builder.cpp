#include "log/depth_event_builder.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace itchbench {

std::vector<DepthEventBuilder::Level>& DepthEventBuilder::side_of(uint16_t locate, bool bid) {
  const size_t at = 2 * size_t(locate) + (bid ? 0 : 1);
  if (sides_.size() <= at) sides_.resize(at + 1);
  return sides_[at];
}

void DepthEventBuilder::fail(uint64_t index, const std::string& what) const {
  throw std::runtime_error("depth record " + std::to_string(index) + " " + what);
}

void DepthEventBuilder::apply_one(const logfmt::LevelChangeRecord& r, uint64_t index) {
  if (r.side != 'B' && r.side != 'S') fail(index, "has side byte " + std::to_string(r.side) + ", not B or S");
  const bool bid = r.side == 'B';
  std::vector<Level>& side = side_of(r.stock_locate, bid);
  const auto better = [bid](uint32_t a, uint32_t b) { return bid ? a > b : a < b; };
  const auto at = std::find_if(side.begin(), side.end(), [&](const Level& l) { return !better(l.px, r.px); });
  const bool held = at != side.end() && at->px == r.px;
  const std::string price = "price " + std::to_string(r.px);
  if (r.qty == 0) {
    if (!held) fail(index, "takes " + price + " out of the top levels, which do not hold it");
    side.erase(at);
  } else if (held) {
    if (at->qty == r.qty)
      fail(index, "changes nothing (" + price + " already has " + std::to_string(r.qty) + " shares)");
    at->qty = r.qty;
  } else {
    side.insert(at, Level{r.px, r.qty});
  }
}

void DepthEventBuilder::write_event(const logfmt::LevelChangeRecord& head, uint8_t* out) const {
  logfmt::DepthRecord h{};
  h.seq = head.seq;
  h.timestamp = head.timestamp;
  h.stock_locate = head.stock_locate;
  h.flags = head.flags;
  std::memcpy(out, &h, sizeof h);
  auto* levels = reinterpret_cast<logfmt::DepthLevel*>(out + sizeof h);
  for (const bool bid : {true, false}) {
    const size_t at = 2 * size_t(head.stock_locate) + (bid ? 0 : 1);
    const std::vector<Level>* side = at < sides_.size() ? &sides_[at] : nullptr;
    for (uint32_t k = 0; k < levels_; ++k) {
      logfmt::DepthLevel l{};
      if (side && k < side->size()) l.px = (*side)[k].px, l.qty = (*side)[k].qty;
      std::memcpy(levels++, &l, sizeof l);
    }
  }
}

uint64_t DepthEventBuilder::apply(const logfmt::LevelChangeRecord* records, uint64_t n, uint8_t* out,
                                  uint64_t capacity) {
  const size_t event_bytes = logfmt::depth_event_size(levels_);
  uint64_t events = 0;
  for (uint64_t i = 0; i < n;) {
    const logfmt::LevelChangeRecord& head = records[i];
    uint64_t end = i;
    for (; end < n && records[end].seq == head.seq && records[end].stock_locate == head.stock_locate; ++end) {
      const uint64_t index = seen_ + end;
      if (records[end].flags != head.flags) fail(index, "has other flags than its event's first record");
      if (end > i) {  // after the one before it: bids before asks, each side best first
        const logfmt::LevelChangeRecord& before = records[end - 1];
        const bool same_side = before.side == records[end].side;
        const bool in_order = same_side ? (records[end].side == 'B' ? before.px > records[end].px
                                                                    : before.px < records[end].px)
                                        : before.side == 'B';
        if (!in_order) fail(index, "is out of its event's order (bids before asks, each side best first)");
      }
      apply_one(records[end], index);
    }
    for (const bool bid : {true, false})
      if (side_of(head.stock_locate, bid).size() > levels_)
        fail(seen_ + end - 1, "leaves stock " + std::to_string(head.stock_locate) + " with more than " +
                                  std::to_string(levels_) + " levels a side");
    if (events == capacity)
      fail(seen_ + i, "begins an event past the " + std::to_string(capacity) + " room was made for");
    write_event(head, out + events * event_bytes);
    ++events;
    i = end;
  }
  seen_ += n;
  return events;
}

}  // namespace itchbench
