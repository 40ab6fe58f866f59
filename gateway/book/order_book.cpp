#include "book/order_book.hpp"

#include <algorithm>

namespace itchbench {

OrderBook::OrderBook(size_t expected_orders) : stocks_(kStocks), index_(expected_orders) {
  pool_.reserve(expected_orders);
  free_slots_.reserve(expected_orders);
}

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
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
    pool_[slot] = {ref, key, shares, locate, side};
  } else {
    slot = uint32_t(pool_.size());
    pool_.push_back({ref, key, shares, locate, side});
  }
  index_.insert(ref, slot);
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

void OrderBook::erase_order(uint32_t slot) {
  const Order& o = pool_[slot];
  std::vector<Level>& levels = stocks_[o.locate].sides[o.side];
  auto it = find_level(levels, o.key);
  it->shares -= o.shares;
  if (--it->orders == 0) levels.erase(it);
  free_slots_.push_back(slot);
}

uint32_t OrderBook::add(uint16_t locate, uint64_t ref, char side, uint32_t shares, uint32_t price) {
  if ((side != 'B' && side != 'S') || shares == 0 || ref == OrderIndex::kEmpty) {
    ++counters_.invalid_orders;
    return kUnchanged;
  }
  if (index_.find(ref) != OrderIndex::kNotFound) {
    ++counters_.duplicate_refs;
    return kUnchanged;
  }
  const bool bid = side == 'B';
  return insert_order(locate, ref, uint8_t(bid), shares, key_of(price, bid));
}

uint32_t OrderBook::reduce(uint64_t ref, uint32_t shares) {
  const uint32_t slot = index_.find(ref);
  if (slot == OrderIndex::kNotFound) {
    ++counters_.unknown_refs;
    return kUnchanged;
  }
  Order& o = pool_[slot];
  const uint16_t locate = o.locate;
  if (shares >= o.shares) {  // to zero: the order goes
    index_.erase(ref);
    erase_order(slot);
    return locate;
  }
  auto it = find_level(stocks_[locate].sides[o.side], o.key);
  it->shares -= shares;
  o.shares -= shares;
  return locate;
}

uint32_t OrderBook::remove(uint64_t ref) {
  const uint32_t slot = index_.erase(ref);
  if (slot == OrderIndex::kNotFound) {
    ++counters_.unknown_refs;
    return kUnchanged;
  }
  const uint16_t locate = pool_[slot].locate;
  erase_order(slot);
  return locate;
}

uint32_t OrderBook::replace(uint64_t original_ref, uint64_t new_ref, uint32_t shares, uint32_t price) {
  const uint32_t slot = index_.find(original_ref);
  if (slot == OrderIndex::kNotFound) {
    ++counters_.unknown_refs;
    return kUnchanged;
  }
  if (new_ref != original_ref && index_.find(new_ref) != OrderIndex::kNotFound) {
    ++counters_.duplicate_refs;
    return kUnchanged;
  }
  const Order o = pool_[slot];
  index_.erase(original_ref);
  erase_order(slot);
  // A replacement to zero shares leaves no order behind.
  if (shares != 0 && new_ref != OrderIndex::kEmpty)
    insert_order(o.locate, new_ref, o.side, shares, key_of(price, o.side == 1));
  return o.locate;
}

Bbo OrderBook::bbo(uint16_t locate) const { return bbo_of(stocks_[locate]); }

std::vector<OrderBook::LevelView> OrderBook::levels(uint16_t locate, char side) const {
  const bool bid = side == 'B';
  const std::vector<Level>& levels = stocks_[locate].sides[bid ? 1 : 0];
  std::vector<LevelView> out;
  for (auto it = levels.rbegin(); it != levels.rend(); ++it)
    out.push_back({price_of(it->key, bid), it->orders, it->shares});
  return out;
}

bool OrderBook::find_order(uint64_t ref, OrderView& out) const {
  const uint32_t slot = index_.find(ref);
  if (slot == OrderIndex::kNotFound) return false;
  const Order& o = pool_[slot];
  out = {o.locate, o.side ? 'B' : 'S', o.shares, price_of(o.key, o.side == 1)};
  return true;
}

size_t OrderBook::memory_bytes() const {
  size_t levels = 0;
  for (const Stock& s : stocks_) levels += (s.sides[0].capacity() + s.sides[1].capacity()) * sizeof(Level);
  return stocks_.capacity() * sizeof(Stock) + pool_.capacity() * sizeof(Order) +
         free_slots_.capacity() * sizeof(uint32_t) + index_.bytes() + levels;
}

}  // namespace itchbench
