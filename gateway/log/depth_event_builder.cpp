#include "log/depth_event_builder.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace itchbench {

DepthEventBuilder::Book& DepthEventBuilder::book_of(uint16_t locate) {
  if (book_at_.size() <= locate) book_at_.resize(size_t(locate) + 1, 0);
  if (book_at_[locate] == 0) {
    books_.push_back(Book{{0, 0}, uint32_t(levels_pool_.size())});
    levels_pool_.resize(levels_pool_.size() + 4 * size_t(levels_), Level{});
    book_at_[locate] = uint32_t(books_.size());
  }
  return books_[book_at_[locate] - 1];
}

void DepthEventBuilder::fail(uint64_t index, const std::string& what) const {
  throw std::runtime_error("depth record " + std::to_string(index) + " " + what);
}

void DepthEventBuilder::apply_one(const logfmt::LevelChangeRecord& r, uint64_t index) {
  if (r.side != 'B' && r.side != 'S') fail(index, "has side byte " + std::to_string(r.side) + ", not B or S");
  const bool bid = r.side == 'B';
  Book& book = book_of(r.stock_locate);
  uint32_t& count = book.count[bid ? 0 : 1];
  Level* side = &levels_pool_[book.first + (bid ? 0 : 2 * size_t(levels_))];
  uint32_t at = 0;
  while (at < count && (bid ? side[at].px > r.px : side[at].px < r.px)) ++at;
  const bool held = at < count && side[at].px == r.px;
  if (r.qty == 0) {
    if (!held) fail(index, "takes price " + std::to_string(r.px) + " out of the top levels, which do not hold it");
    std::copy(side + at + 1, side + count, side + at);
    --count;
  } else if (held) {
    if (side[at].qty == r.qty)
      fail(index, "changes nothing (price " + std::to_string(r.px) + " already has " + std::to_string(r.qty) +
                      " shares)");
    side[at].qty = r.qty;
  } else {
    if (count == 2 * levels_)
      fail(index, "leaves stock " + std::to_string(r.stock_locate) + " with more than " + std::to_string(levels_) +
                      " levels a side");
    std::copy_backward(side + at, side + count, side + count + 1);
    side[at] = Level{r.px, 0, r.qty};
    ++count;
  }
}

void DepthEventBuilder::write_event(const logfmt::LevelChangeRecord& head, uint8_t* out) const {
  logfmt::DepthRecord h{};
  h.seq = head.seq;
  h.timestamp = head.timestamp;
  h.stock_locate = head.stock_locate;
  h.flags = head.flags;
  std::memcpy(out, &h, sizeof h);
  out += sizeof h;
  const Book& book = books_[book_at_[head.stock_locate] - 1];
  for (const uint32_t side : {0u, 1u}) {
    const size_t held = book.count[side] * sizeof(Level);
    std::memcpy(out, &levels_pool_[book.first + side * 2 * size_t(levels_)], held);
    std::memset(out + held, 0, levels_ * sizeof(Level) - held);
    out += levels_ * sizeof(Level);
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
    const Book& book = books_[book_at_[head.stock_locate] - 1];
    if (book.count[0] > levels_ || book.count[1] > levels_)
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
