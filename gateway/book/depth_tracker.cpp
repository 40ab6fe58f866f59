#include "book/depth_tracker.hpp"

#include <algorithm>

namespace itchbench {

BookLevel* DepthTracker::last_of(uint16_t locate) {
  const size_t width = 2 * size_t(levels_);
  const size_t at = size_t(locate) * width;
  if (last_.size() < at + width) last_.resize(at + width);  // a stock's first time: nothing emitted yet (all empty)
  return last_.data() + at;
}

bool DepthTracker::take_change(const OrderBook& book, const DepthTouch& touch) {
  BookLevel* last = last_of(uint16_t(touch.locate));
  BookLevel* side = last + (touch.bid ? 0 : levels_);
  const BookLevel& nth = side[levels_ - 1];
  const auto worse = [&](uint32_t px) { return touch.bid ? px < nth.px : px > nth.px; };
  if (nth.qty != 0 && worse(touch.price) && worse(touch.other_price)) return false;
  BookLevel* read = now_.data() + (touch.bid ? 0 : levels_);
  book.top_levels(uint16_t(touch.locate), touch.bid, levels_, read);
  if (std::equal(read, read + levels_, side)) return false;
  std::copy(read, read + levels_, side);
  taken_ = last;  // the stock's levels as just emitted: both sides, without copying the side not touched
  return true;
}

bool DepthTracker::take_change(const OrderBook& book, uint16_t locate) {
  BookLevel* last = last_of(locate);
  book.top_levels(locate, true, levels_, now_.data());
  book.top_levels(locate, false, levels_, now_.data() + levels_);
  if (std::equal(now_.begin(), now_.end(), last)) return false;
  std::copy(now_.begin(), now_.end(), last);
  taken_ = last;
  return true;
}

}  // namespace itchbench
