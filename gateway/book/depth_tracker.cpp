#include "book/depth_tracker.hpp"

#include <algorithm>

namespace itchbench {

bool DepthTracker::take_change(const OrderBook& book, uint16_t locate) {
  const size_t width = 2 * size_t(levels_);
  const size_t at = size_t(locate) * width;
  if (last_.size() < at + width) last_.resize(at + width);  // a stock's first time: nothing emitted yet (all empty)
  book.top_levels(locate, true, levels_, now_.data());
  book.top_levels(locate, false, levels_, now_.data() + levels_);
  BookLevel* last = last_.data() + at;
  if (std::equal(now_.begin(), now_.end(), last)) return false;
  std::copy(now_.begin(), now_.end(), last);
  return true;
}

}  // namespace itchbench
