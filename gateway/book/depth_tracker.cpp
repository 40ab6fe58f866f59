#include "book/depth_tracker.hpp"

#include <algorithm>

namespace itchbench {

BookLevel* DepthTracker::last_of(uint16_t locate) {
  const size_t width = 2 * size_t(levels_);
  const size_t at = size_t(locate) * width;
  if (last_.size() < at + width) last_.resize(at + width);  // a stock's first time: nothing emitted yet (all empty)
  return last_.data() + at;
}

inline DepthTracker::OneLevel DepthTracker::update_one_level(const OrderBook& book, const DepthTouch& touch,
                                                             BookLevel* side) {
  const uint32_t px = touch.price;
  const auto better = [&](uint32_t than) { return touch.bid ? px > than : px < than; };
  uint32_t at = 0;  // where px is in the side's top levels, or would go
  while (at < levels_ && side[at].qty != 0 && side[at].px != px && !better(side[at].px)) ++at;
  if (at == levels_) return OneLevel::kWalk;  // not reached: a price worse than a full side's last was let go
  const uint64_t shares = book.shares_at(uint16_t(touch.locate), touch.bid, px);
  const bool was_there = side[at].qty != 0 && side[at].px == px;
  if (was_there && shares != 0) {  // the level's shares changed, or nothing did
    if (side[at].qty == shares) return OneLevel::kUnchanged;
    side[at].qty = shares;
    return OneLevel::kChanged;
  }
  if (was_there) return OneLevel::kWalk;  // emptied: the level that moves up into the last place is the book's
  if (shares == 0) return OneLevel::kUnchanged;  // no level there before the message, and none after
  // A level made within the top levels: those below move down one, the last leaving.
  std::copy_backward(side + at, side + levels_ - 1, side + levels_);
  side[at] = BookLevel{px, shares};
  return OneLevel::kChanged;
}

bool DepthTracker::take_change(const OrderBook& book, const DepthTouch& touch) {
  BookLevel* last = last_of(uint16_t(touch.locate));
  BookLevel* side = last + (touch.bid ? 0 : levels_);
  const BookLevel& nth = side[levels_ - 1];
  const auto worse = [&](uint32_t px) { return touch.bid ? px < nth.px : px > nth.px; };
  if (nth.qty != 0 && worse(touch.price) && worse(touch.other_price)) return false;
  if (touch.price == touch.other_price) {
    const OneLevel one = update_one_level(book, touch, side);
    if (one != OneLevel::kWalk) {
      if (one == OneLevel::kChanged) taken_ = last;
      return one == OneLevel::kChanged;
    }
  }
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
