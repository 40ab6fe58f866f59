#include "book/depth_tracker.hpp"

#include <algorithm>

namespace itchbench {

namespace {

// Each price whose shares differ between a side's levels as last emitted (was) and now, best first, into out: its
// shares now, or 0 for a price only in was. Both hold n levels best first, the empty ones (price 0, shares 0) last.
uint32_t diff_levels(const BookLevel* was, const BookLevel* now, uint32_t n, bool bid, LevelChange* out) {
  uint32_t i = 0, j = 0, k = 0;
  for (;;) {
    const bool in_was = i < n && was[i].qty != 0, in_now = j < n && now[j].qty != 0;
    if (!in_was && !in_now) return k;
    if (in_was && in_now && was[i].px == now[j].px) {
      if (was[i].qty != now[j].qty) out[k++] = {now[j].px, now[j].qty};
      ++i, ++j;
    } else if (in_was && (!in_now || (bid ? was[i].px > now[j].px : was[i].px < now[j].px))) {
      out[k++] = {was[i].px, 0};
      ++i;
    } else {
      out[k++] = {now[j].px, now[j].qty};
      ++j;
    }
  }
}

}  // namespace

BookLevel* DepthTracker::last_of(uint16_t locate) {
  const size_t width = 2 * size_t(levels_);
  const size_t at = size_t(locate) * width;
  if (last_.size() < at + width) last_.resize(at + width);  // a stock's first time: nothing emitted yet (all empty)
  return last_.data() + at;
}

inline DepthTracker::OneLevel DepthTracker::update_one_level(const OrderBook& book, const DepthTouch& touch,
                                                             BookLevel* side, uint32_t& changed) {
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
    changes_[0] = {px, shares};
    changed = 1;
    return OneLevel::kChanged;
  }
  if (was_there) return OneLevel::kWalk;  // emptied: the level that moves up into the last place is the book's
  if (shares == 0) return OneLevel::kUnchanged;  // no level there before the message, and none after
  // A level made within the top levels: those below move down one, the last leaving (a worse price: after it).
  const BookLevel pushed_out = side[levels_ - 1];
  std::copy_backward(side + at, side + levels_ - 1, side + levels_);
  side[at] = BookLevel{px, shares};
  changes_[0] = {px, shares};
  changed = 1;
  if (pushed_out.qty != 0) changes_[changed++] = {pushed_out.px, 0};
  return OneLevel::kChanged;
}

uint32_t DepthTracker::walk_side(const OrderBook& book, uint16_t locate, bool bid, BookLevel* side,
                                 LevelChange* out) {
  BookLevel* read = now_.data() + (bid ? 0 : levels_);
  book.top_levels(locate, bid, levels_, read);
  // A level without shares is no level: one a book kept after its last shares went (a book bug, planted in
  // test_compare's bisect) is left out, so that the changes stay a top N a reader can rebuild.
  uint32_t kept = 0;
  for (uint32_t k = 0; k < levels_; ++k)
    if (read[k].qty != 0) read[kept++] = read[k];
  for (; kept < levels_; ++kept) read[kept] = BookLevel{};
  const uint32_t n = diff_levels(side, read, levels_, bid, out);
  if (n) std::copy(read, read + levels_, side);
  return n;
}

uint32_t DepthTracker::take_change(const OrderBook& book, const DepthTouch& touch) {
  BookLevel* side = last_of(uint16_t(touch.locate)) + (touch.bid ? 0 : levels_);
  const BookLevel& nth = side[levels_ - 1];
  const auto worse = [&](uint32_t px) { return touch.bid ? px < nth.px : px > nth.px; };
  const bool below_the_top = nth.qty != 0 && worse(touch.price) && worse(touch.other_price);
  uint32_t n = 0;  // what update_one_level or the walk changed
  if (!below_the_top &&
      (touch.price != touch.other_price || update_one_level(book, touch, side, n) == OneLevel::kWalk))
    n = walk_side(book, uint16_t(touch.locate), touch.bid, side, changes_.data());
  bid_changes_ = touch.bid ? n : 0;
  return n;
}

uint32_t DepthTracker::take_change(const OrderBook& book, uint16_t locate) {
  BookLevel* last = last_of(locate);
  bid_changes_ = walk_side(book, locate, true, last, changes_.data());
  return bid_changes_ + walk_side(book, locate, false, last + levels_, changes_.data() + bid_changes_);
}

}  // namespace itchbench
