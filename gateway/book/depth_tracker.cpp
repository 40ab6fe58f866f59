#include "book/depth_tracker.hpp"

namespace itchbench {

namespace {

bool better(uint32_t price, uint32_t than, bool bid) { return bid ? price > than : price < than; }

// A price's shares in the top N as a step of a message found and left them (0: not in the top N).
struct TopChange {
  uint32_t px;
  uint64_t was, now;
};

// Steps' changes as one: a price's first shares before and last after, those that end as they began dropped, best
// first, into out as level changes; how many.
uint32_t net_changes(TopChange* steps, uint32_t n, bool bid, LevelChange* out) {
  uint32_t kept = 0;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t at = 0;
    while (at < kept && steps[at].px != steps[i].px) ++at;
    if (at == kept) steps[kept++] = steps[i];
    else steps[at].now = steps[i].now;
  }
  uint32_t k = 0;
  for (uint32_t i = 0; i < kept; ++i) {
    if (steps[i].was == steps[i].now) continue;
    uint32_t j = k++;  // insertion, best first: at most four
    for (; j > 0 && better(steps[i].px, out[j - 1].px, bid); --j) out[j] = out[j - 1];
    out[j] = {steps[i].px, steps[i].now};
  }
  return k;
}

}  // namespace

uint32_t DepthTracker::take_change_otherwise(const OrderBook& book, const BookTouch& touch) {
  if (touch.levels == 0) {  // no level changed (and maybe no stock held: no side to view)
    bid_changes_ = 0;
    return 0;
  }
  const OrderBook::SideView side = book.side_view(touch.locate, touch.bid);
  uint32_t n = 0;
  const LevelTouch& level = touch.level[0];
  if (touch.levels == 1) {
    if (level.before != level.after && side.better_than(level.price, levels_) < levels_) n = one_level(side, level);
  } else if (touch.levels == 2) {
    n = two_levels(side, level, touch.level[1], touch.bid);
  }
  bid_changes_ = n & (0u - touch.bid);  // a branch on the side was a coin toss
  return n;
}

uint32_t DepthTracker::two_levels(const OrderBook::SideView& side, const LevelTouch& left, const LevelTouch& taken,
                                  bool bid) {
  // The message in two steps: the order leaves its level (left), then is added at the other (taken). Between
  // them the side is the book now but for the taken level, which had its shares before. Each step is one level's,
  // as one_level judges it, read from the book now: the taken level's rank tells what lies between.
  const uint32_t n = levels_;
  const bool taken_made = taken.before == 0;
  const uint32_t taken_rank = side.better_than(taken.price, n + 1);  // exact below n + 1
  const uint32_t left_rank = side.better_than(left.price, n + 1) - (taken_made && better(taken.price, left.price, bid));
  const bool left_in = left_rank < n, taken_in = taken_rank < n;
  if (!left_in && !taken_in) return 0;  // both below the top N, before and after
  const uint32_t count = side.count();
  // Emptied in the first step: the level below the top N moves up into it. Made in the second: the Nth leaves.
  const bool moves_up = left_in && left.after == 0 && count - taken_made >= n;
  const bool pushes_out = taken_in && taken_made && count > n;
  if (!moves_up && !pushes_out) {  // the two levels' own changes, no other: best first
    uint32_t k = 0;
    const bool taken_first = taken_in && (!left_in || better(taken.price, left.price, bid));
    if (taken_first) changes_[k++] = {taken.price, taken.after};
    if (left_in) changes_[k++] = {left.price, left.after};
    if (taken_in && !taken_first) changes_[k++] = {taken.price, taken.after};
    return k;
  }
  TopChange steps[4];
  uint32_t m = 0;
  if (left_in) {
    steps[m++] = {left.price, left.before, left.after};
    if (moves_up) {
      // The (N-1)th best between the steps: the taken level not there when the message made it. (When it was
      // there, with other shares, and is the one that moves up, the second step's change of it is the last word.)
      const BookLevel up = side.nth(n - 1 + (taken_made && taken_rank <= n - 1), scratch_.data());
      steps[m++] = {up.px, 0, up.qty};
    }
  }
  if (taken_in) {
    steps[m++] = {taken.price, taken.before, taken.after};
    if (pushes_out) {
      const BookLevel out = side.nth(n, scratch_.data());
      steps[m++] = {out.px, out.qty, 0};
    }
  }
  return net_changes(steps, m, bid, changes_.data());
}

uint32_t DepthTracker::take_change(const OrderBook& book, uint16_t locate) {
  uint32_t n = 0;
  for (const bool bid : {true, false}) {
    book.top_levels(locate, bid, levels_, scratch_.data());
    // Nothing emitted before: every level is a change.
    for (uint32_t k = 0; k < levels_ && scratch_[k].qty != 0; ++k) changes_[n++] = scratch_[k];
    if (bid) bid_changes_ = n;
  }
  return n;
}

}  // namespace itchbench
