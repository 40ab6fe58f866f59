#include "book/order_book.hpp"

#include <algorithm>

namespace itchbench {

OrderBook::OrderBook(size_t expected_orders) : levels_{Level{~0u, 0, 0}, Level{0, 0, 0}}, orders_(expected_orders) {}

void OrderBook::grow_stocks(uint16_t locate) {
  stocks_.resize(size_t(locate) + 1);
  others_.resize(2 * stocks_.size());
  off_ticks_.resize(2 * stocks_.size());
  last_emitted_.resize(stocks_.size());
  stock_count_ = uint32_t(stocks_.size());
}

uint64_t OrderBook::shares_off_ladder(const Side& s, uint32_t key) const {
  const std::vector<Entry>& others = others_of(s);
  const auto it = find_entry(others, key);
  return it != others.end() && it->key == key ? levels_[it->level].shares : 0;
}

uint32_t OrderBook::new_level(uint32_t key, uint32_t shares) {
  if (!free_levels_.empty()) {
    const uint32_t at = free_levels_.back();
    free_levels_.pop_back();
    levels_[at] = Level{key, 1, shares};
    return at;
  }
  levels_.push_back(Level{key, 1, shares});
  return uint32_t(levels_.size() - 1);
}

inline uint32_t OrderBook::level_elsewhere(Side& side, uint32_t price, uint32_t key, uint32_t shares, bool& made) {
  PriceLadder& ladder = side.ladder;
  const uint32_t tick = PriceLadder::tick_of(price);
  const bool on_tick = PriceLadder::on_tick(price);
  std::unique_ptr<OffLadderTicks>& known = off_ticks_[side_index(side)];
  const uint32_t slot = tick % OffLadderTicks::kSlots;
  // A whole-tick price may have a level off the ladder, made before the ladder reached it. Its residue says when
  // none can be, and where one likely is: on a long day the levels near the touch are often off the ladder (made
  // while older levels held the ladder elsewhere) and take most of the side's adds, each a search of its array.
  bool none_off_ladder = on_tick && (!known || known->count[slot] == 0);
  if (on_tick && !none_off_ladder) {
    const uint32_t at = known->place[slot];
    if (at != 0) {
      if (levels_[at].key == key) return add_to(at, shares, made);
      none_off_ladder = known->count[slot] == 1;  // the residue's only one is at another tick
    }
  }
  std::vector<Entry>& others = others_of(side);
  auto it = none_off_ladder ? others.end() : find_entry(others, key);
  if (it != others.end() && it->key == key) {
    if (on_tick) known->place[slot] = it->level;  // the one asked for last is likely asked for again
    return add_to(it->level, shares, made);
  }
  if (on_tick) {
    if (!ladder.has_block()) {
      // The side's first whole-tick price: its ladder's block of the pool.
      ladder.set_block(uint32_t(levels_.size()));
      levels_.resize(levels_.size() + PriceLadder::kTicks, Level{0, 0, 0});
    }
    if (ladder.fits(tick)) return ladder_level(ladder, tick, key, shares, made);
    if (none_off_ladder) it = find_entry(others, key);  // where the new level goes
  }
  made = true;
  ++levels_off_ladder_;
  const uint32_t place = new_level(key, shares);
  others.insert(it, Entry{key, place});
  ++side.off_ladder;
  if (on_tick) {
    if (!known) known = std::make_unique<OffLadderTicks>();
    known->count[slot] += known->count[slot] != OffLadderTicks::kMany;
    known->place[slot] = place;
  }
  return place;
}

uint32_t OrderBook::add_to(uint32_t place, uint32_t shares, bool& made) {
  made = false;
  levels_[place].shares += shares;
  ++levels_[place].orders;
  return place;
}

void OrderBook::forget_off_ladder(const Side& s, uint32_t price, uint32_t place) {
  if (!PriceLadder::on_tick(price)) return;
  OffLadderTicks& known = *off_ticks_[side_index(s)];
  const uint32_t slot = PriceLadder::tick_of(price) % OffLadderTicks::kSlots;
  known.count[slot] -= known.count[slot] != OffLadderTicks::kMany;
  if (known.place[slot] == place) known.place[slot] = 0;
}

uint32_t OrderBook::insert_order_general(uint16_t locate, uint64_t ref, uint8_t side, uint32_t shares,
                                         uint32_t price, uint32_t& place) {
  if (locate >= stock_count_) grow_stocks(locate);
  Side& s = stocks_[locate].sides[side];
  const uint32_t key = key_of(price, side == 1);
  const uint32_t tick = PriceLadder::tick_of(price);
  bool made;
  place = s.off_ladder == 0 && PriceLadder::on_tick(price) && s.ladder.fits(tick)
              ? ladder_level(s.ladder, tick, key, shares, made)
              : level_elsewhere(s, price, key, shares, made);
  orders_.insert(ref, {shares, place, locate, side});
  return settle_best(s, place, key, made) ? locate : kUnchanged;
}

uint32_t OrderBook::side_best(const Side& side, bool bid) const {
  const PriceLadder& ladder = side.ladder;
  const uint32_t on = ladder.empty() ? uint32_t(bid) : ladder.place_of(bid ? ladder.highest() : ladder.lowest());
  if (side.off_ladder == 0) return on;
  const uint32_t off = others_of(side).back().level;
  return ladder.empty() || levels_[off].key > levels_[on].key ? off : on;
}


Bbo OrderBook::bbo(uint16_t locate) const { return locate < stocks_.size() ? bbo_of(stocks_[locate]) : Bbo{}; }

std::vector<OrderBook::LevelView> OrderBook::levels(uint16_t locate, char side) const {
  const bool bid = side == 'B';
  std::vector<LevelView> out;
  if (locate >= stocks_.size()) return out;
  const Side& s = stocks_[locate].sides[bid ? 1 : 0];
  std::vector<Entry> all(others_of(s));
  const PriceLadder& ladder = s.ladder;
  if (!ladder.empty())
    for (uint32_t t = ladder.lowest(); t <= ladder.highest(); ++t)
      if (ladder.present(t)) all.push_back({levels_[ladder.place_of(t)].key, ladder.place_of(t)});
  std::sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) { return a.key > b.key; });
  for (const Entry& e : all) out.push_back({price_of(e.key, bid), levels_[e.level].orders, levels_[e.level].shares});
  return out;
}

void OrderBook::top_levels(uint16_t locate, bool bid, uint32_t n, BookLevel* out) const {
  uint32_t filled = 0;
  if (locate < stock_count_) {
    const Side& s = stocks_[locate].sides[bid ? 1 : 0];
    const PriceLadder& ladder = s.ladder;
    // The ladder's ticks from the best (bids: the highest) and the off-ladder levels from the back (the best):
    // at each step the greater key of the two is the next level.
    bool on = !ladder.empty();
    uint32_t tick = on ? (bid ? ladder.highest() : ladder.lowest()) : 0;
    const std::vector<Entry>& others = others_of(s);
    size_t off = others.size();
    while (filled < n && (on || off > 0)) {
      const uint32_t on_place = on ? ladder.place_of(tick) : 0;
      const bool take_on = on && (off == 0 || levels_[on_place].key > others[off - 1].key);
      const uint32_t place = take_on ? on_place : others[--off].level;
      out[filled++] = BookLevel{price_of(levels_[place].key, bid), levels_[place].shares};
      if (!take_on) continue;
      // The next present tick away from the best, or none.
      if (tick == (bid ? ladder.lowest() : ladder.highest()))
        on = false;
      else
        tick = bid ? ladder.next_below(tick) : ladder.next_above(tick);
    }
  }
  for (; filled < n; ++filled) out[filled] = BookLevel{};
}

bool OrderBook::find_order(uint64_t ref, OrderView& out) const {
  const Order* o = orders_.find(ref);
  if (!o) return false;
  out = {o->locate, o->side ? 'B' : 'S', o->shares, price_of(levels_[o->level].key, o->side == 1)};
  return true;
}

size_t OrderBook::memory_bytes() const {
  size_t entries = others_.capacity() * sizeof(std::vector<Entry>) +
                   off_ticks_.capacity() * sizeof(std::unique_ptr<OffLadderTicks>);
  for (const std::vector<Entry>& side : others_) entries += side.capacity() * sizeof(Entry);
  for (const auto& known : off_ticks_) entries += known ? sizeof(OffLadderTicks) : 0;
  return stocks_.capacity() * sizeof(Stock) + last_emitted_.capacity() * sizeof(Bbo) + orders_.bytes() + entries +
         levels_.capacity() * sizeof(Level) + free_levels_.capacity() * sizeof(uint32_t);
}

}  // namespace itchbench
