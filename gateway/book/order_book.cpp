#include "book/order_book.hpp"

#include <algorithm>

namespace itchbench {

OrderBook::OrderBook(size_t expected_orders) : orders_(expected_orders) {}

void OrderBook::grow_stocks(uint16_t locate) { stocks_.resize(size_t(locate) + 1); }

std::vector<OrderBook::Entry>::iterator OrderBook::find_entry(std::vector<Entry>& side, uint32_t key) {
  // Most activity is at or near the best level (the back): look there first.
  auto it = side.end();
  for (int i = 0; i < 4 && it != side.begin(); ++i) {
    --it;
    if (it->key <= key) return it->key == key ? it : it + 1;
  }
  return std::lower_bound(side.begin(), it, key, [](const Entry& e, uint32_t k) { return e.key < k; });
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

uint32_t OrderBook::insert_order(uint16_t locate, uint64_t ref, uint8_t side, uint32_t shares, uint32_t key) {
  if (__builtin_expect(locate >= stocks_.size(), 0)) grow_stocks(locate);
  std::vector<Entry>& entries = stocks_[locate].sides[side];
  auto it = find_entry(entries, key);
  uint32_t level;
  bool best;
  if (it != entries.end() && it->key == key) {
    level = it->level;
    best = it + 1 == entries.end();
    levels_[level].shares += shares;
    ++levels_[level].orders;
  } else {
    best = it == entries.end();
    level = new_level(key, shares);
    entries.insert(it, Entry{key, level});
  }
  orders_.insert(ref, {shares, level, locate, side});
  return best ? locate : kUnchanged;
}

bool OrderBook::leave_level(const Order& o) {
  Level& l = levels_[o.level];
  l.shares -= o.shares;
  if (--l.orders != 0) return at_best(o);
  std::vector<Entry>& entries = stocks_[o.locate].sides[o.side];
  auto it = find_entry(entries, l.key);
  const bool best = it + 1 == entries.end();
  entries.erase(it);
  free_levels_.push_back(o.level);
  return best;
}

uint32_t OrderBook::add(uint16_t locate, uint64_t ref, char side, uint32_t shares, uint32_t price) {
  if ((side != 'B' && side != 'S') || shares == 0) {
    ++counters_.invalid_orders;
    return kUnchanged;
  }
  if (orders_.find(ref)) {
    ++counters_.duplicate_refs;
    return kUnchanged;
  }
  const bool bid = side == 'B';
  return insert_order(locate, ref, uint8_t(bid), shares, key_of(price, bid));
}

uint32_t OrderBook::reduce(uint64_t ref, uint32_t shares) {
  Order* o = orders_.find(ref);
  if (!o) {
    ++counters_.unknown_refs;
    return kUnchanged;
  }
  const uint16_t locate = o->locate;
  if (shares >= o->shares) {  // to zero: the order goes
    Order gone;
    orders_.erase(ref, &gone);
    return leave_level(gone) ? locate : kUnchanged;
  }
  levels_[o->level].shares -= shares;
  o->shares -= shares;
  return at_best(*o) ? locate : kUnchanged;
}

uint32_t OrderBook::remove(uint64_t ref) {
  Order gone;
  if (!orders_.erase(ref, &gone)) {
    ++counters_.unknown_refs;
    return kUnchanged;
  }
  return leave_level(gone) ? gone.locate : kUnchanged;
}

uint32_t OrderBook::replace(uint64_t original_ref, uint64_t new_ref, uint32_t shares, uint32_t price) {
  if (!orders_.find(original_ref)) {
    ++counters_.unknown_refs;
    return kUnchanged;
  }
  if (new_ref != original_ref && orders_.find(new_ref)) {
    ++counters_.duplicate_refs;
    return kUnchanged;
  }
  Order o;
  orders_.erase(original_ref, &o);
  const bool best = leave_level(o);
  // A replacement to zero shares leaves no order behind.
  const bool new_best =
      shares != 0 && insert_order(o.locate, new_ref, o.side, shares, key_of(price, o.side == 1)) != kUnchanged;
  return best || new_best ? o.locate : kUnchanged;
}

Bbo OrderBook::bbo(uint16_t locate) const { return locate < stocks_.size() ? bbo_of(stocks_[locate]) : Bbo{}; }

std::vector<OrderBook::LevelView> OrderBook::levels(uint16_t locate, char side) const {
  const bool bid = side == 'B';
  std::vector<LevelView> out;
  if (locate >= stocks_.size()) return out;
  const std::vector<Entry>& entries = stocks_[locate].sides[bid ? 1 : 0];
  for (auto it = entries.rbegin(); it != entries.rend(); ++it)
    out.push_back({price_of(it->key, bid), levels_[it->level].orders, levels_[it->level].shares});
  return out;
}

bool OrderBook::find_order(uint64_t ref, OrderView& out) const {
  const Order* o = orders_.find(ref);
  if (!o) return false;
  out = {o->locate, o->side ? 'B' : 'S', o->shares, price_of(levels_[o->level].key, o->side == 1)};
  return true;
}

size_t OrderBook::memory_bytes() const {
  size_t entries = 0;
  for (const Stock& s : stocks_) entries += (s.sides[0].capacity() + s.sides[1].capacity()) * sizeof(Entry);
  return stocks_.capacity() * sizeof(Stock) + orders_.bytes() + entries + levels_.capacity() * sizeof(Level) +
         free_levels_.capacity() * sizeof(uint32_t);
}

}  // namespace itchbench
