// A deliberately naive order book for differential tests: std::map of orders,
// the BBO recomputed by scanning every order of the stock. Written apart from
// the real book and from the spec text in docs/book-and-bbo.md, never from its code.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "book/bbo.hpp"

namespace itchbench::testing {

class ReferenceBook {
 public:
  struct Order {
    uint16_t locate;
    char side;
    uint32_t shares;
    uint32_t price;
  };
  uint64_t unknown = 0, duplicate = 0, invalid = 0;
  std::map<uint64_t, Order> orders;

  // Each returns the stock whose book changed, or -1.
  int add(uint16_t locate, uint64_t ref, char side, uint32_t shares, uint32_t price) {
    if ((side != 'B' && side != 'S') || shares == 0) return ++invalid, -1;
    if (orders.count(ref)) return ++duplicate, -1;
    orders[ref] = {locate, side, shares, price};
    return locate;
  }
  int reduce(uint64_t ref, uint32_t shares) {
    auto it = orders.find(ref);
    if (it == orders.end()) return ++unknown, -1;
    const int locate = it->second.locate;
    if (shares >= it->second.shares)
      orders.erase(it);
    else
      it->second.shares -= shares;
    return locate;
  }
  int remove(uint64_t ref) {
    auto it = orders.find(ref);
    if (it == orders.end()) return ++unknown, -1;
    const int locate = it->second.locate;
    orders.erase(it);
    return locate;
  }
  int replace(uint64_t orig, uint64_t fresh, uint32_t shares, uint32_t price) {
    auto it = orders.find(orig);
    if (it == orders.end()) return ++unknown, -1;
    if (fresh != orig && orders.count(fresh)) return ++duplicate, -1;
    const Order o = it->second;
    orders.erase(it);
    if (shares > 0) orders[fresh] = {o.locate, o.side, shares, price};
    return o.locate;
  }

  Bbo bbo(uint16_t locate) const {
    Bbo b;
    for (const auto& [ref, o] : orders) {
      if (o.locate != locate) continue;
      if (o.side == 'B') {
        if (o.price > b.bid_px) b.bid_px = o.price, b.bid_qty = 0;
        if (o.price == b.bid_px) b.bid_qty += o.shares;
      } else {
        if (b.ask_qty == 0 || o.price < b.ask_px) b.ask_px = o.price, b.ask_qty = 0;
        if (o.price == b.ask_px) b.ask_qty += o.shares;
      }
    }
    return b;
  }

  // price -> (orders, shares), best first
  std::vector<std::tuple<uint32_t, uint32_t, uint64_t>> levels(uint16_t locate, char side) const {
    std::map<uint32_t, std::pair<uint32_t, uint64_t>> agg;
    for (const auto& [ref, o] : orders)
      if (o.locate == locate && o.side == side) {
        ++agg[o.price].first;
        agg[o.price].second += o.shares;
      }
    std::vector<std::tuple<uint32_t, uint32_t, uint64_t>> out;
    for (const auto& [px, v] : agg) out.emplace_back(px, v.first, v.second);
    if (side == 'B') std::reverse(out.begin(), out.end());
    return out;
  }
};

}  // namespace itchbench::testing
