#include "book/order_book.hpp"

#include <algorithm>

namespace itchbench {

OrderBook::OrderBook(size_t expected_orders) : orders_(expected_orders) {}

void OrderBook::grow_stocks(uint16_t locate) { stocks_.resize(size_t(locate) + 1); }

std::vector<OrderBook::Level>::iterator OrderBook::find_level(std::vector<Level>& levels, uint32_t key) {
  // Most activity is at or near the best level (the back): look there first.
  auto it = levels.end();
  for (int i = 0; i < 4 && it != levels.begin(); ++i) {
    --it;
    if (it->key <= key) return it->key == key ? it : it + 1;
  }
  return std::lower_bound(levels.begin(), it, key, [](const Level& l, uint32_t k) { return l.key < k; });
}

uint32_t OrderBook::insert_order(uint16_t locate, uint64_t ref, uint8_t side, uint32_t shares, uint32_t key) {
  if (__builtin_expect(locate >= stocks_.size(), 0)) grow_stocks(locate);
  orders_.insert(ref, {key, shares, locate, side});
  std::vector<Level>& levels = stocks_[locate].sides[side];
  auto it = find_level(levels, key);
  if (it != levels.end() && it->key == key) {
    it->shares += shares;
    ++it->orders;
  } else {
    levels.insert(it, Level{key, 1, shares});
  }
  return locate;
}

void OrderBook::leave_level(const Order& o) {
  std::vector<Level>& levels = stocks_[o.locate].sides[o.side];
  auto it = find_level(levels, o.key);
  it->shares -= o.shares;
  if (--it->orders == 0) levels.erase(it);
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
    leave_level(gone);
    return locate;
  }
  auto it = find_level(stocks_[locate].sides[o->side], o->key);
  it->shares -= shares;
  o->shares -= shares;
  return locate;
}

uint32_t OrderBook::remove(uint64_t ref) {
  Order gone;
  if (!orders_.erase(ref, &gone)) {
    ++counters_.unknown_refs;
    return kUnchanged;
  }
  leave_level(gone);
  return gone.locate;
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
  leave_level(o);
  // A replacement to zero shares leaves no order behind.
  if (shares != 0)
    insert_order(o.locate, new_ref, o.side, shares, key_of(price, o.side == 1));
  return o.locate;
}

Bbo OrderBook::bbo(uint16_t locate) const { return locate < stocks_.size() ? bbo_of(stocks_[locate]) : Bbo{}; }

std::vector<OrderBook::LevelView> OrderBook::levels(uint16_t locate, char side) const {
  const bool bid = side == 'B';
  std::vector<LevelView> out;
  if (locate >= stocks_.size()) return out;
  const std::vector<Level>& levels = stocks_[locate].sides[bid ? 1 : 0];
  for (auto it = levels.rbegin(); it != levels.rend(); ++it)
    out.push_back({price_of(it->key, bid), it->orders, it->shares});
  return out;
}

bool OrderBook::find_order(uint64_t ref, OrderView& out) const {
  const Order* o = orders_.find(ref);
  if (!o) return false;
  out = {o->locate, o->side ? 'B' : 'S', o->shares, price_of(o->key, o->side == 1)};
  return true;
}

size_t OrderBook::memory_bytes() const {
  size_t levels = 0;
  for (const Stock& s : stocks_) levels += (s.sides[0].capacity() + s.sides[1].capacity()) * sizeof(Level);
  return stocks_.capacity() * sizeof(Stock) + orders_.bytes() + levels;
}

}  // namespace itchbench
