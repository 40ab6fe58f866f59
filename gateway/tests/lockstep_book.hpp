// The real book and the naive reference book driven in lockstep by decoded
// ITCH messages, comparing which stock each message changed, every BBO event and,
// on request, the whole state. Shared by the differential test and the
// decode+book fuzz target. Every method returns "" when the two agree, or
// what differs.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "book/order_book.hpp"
#include "protocol/itch.hpp"
#include "reference_book.hpp"

namespace itchbench::testing {

class LockstepBooks {
 public:
  explicit LockstepBooks(size_t expected_orders = 64) : book(expected_orders) {}

  std::string apply(const uint8_t* m, size_t n) {
    ++seq_;
    uint32_t real = OrderBook::kUnchanged;
    int naive = -1;
    itch::decode(m, n, [&](const auto& v) {
      using V = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<V, itch::AddOrderView> || std::is_same_v<V, itch::AddOrderMpidView>) {
        real = book.add(v.stock_locate(), v.order_ref(), char(v.side()), v.shares(), v.price());
        naive = ref.add(v.stock_locate(), v.order_ref(), char(v.side()), v.shares(), v.price());
        stocks_.insert(v.stock_locate());
      } else if constexpr (std::is_same_v<V, itch::OrderExecutedView> ||
                           std::is_same_v<V, itch::OrderExecutedWithPriceView>) {
        real = book.reduce(v.order_ref(), v.executed_shares());
        naive = ref.reduce(v.order_ref(), v.executed_shares());
      } else if constexpr (std::is_same_v<V, itch::OrderCancelView>) {
        real = book.reduce(v.order_ref(), v.cancelled_shares());
        naive = ref.reduce(v.order_ref(), v.cancelled_shares());
      } else if constexpr (std::is_same_v<V, itch::OrderDeleteView>) {
        real = book.remove(v.order_ref());
        naive = ref.remove(v.order_ref());
      } else if constexpr (std::is_same_v<V, itch::OrderReplaceView>) {
        real = book.replace(v.original_order_ref(), v.new_order_ref(), v.shares(), v.price());
        naive = ref.replace(v.original_order_ref(), v.new_order_ref(), v.shares(), v.price());
      }
    });
    // The real book names only a stock whose BBO may have changed, so it may stay silent where the naive book
    // names one; whether that silence was right, the BBO events below decide.
    if (real != OrderBook::kUnchanged && int(real) != naive)
      return "message " + std::to_string(seq_) + ": real book named stock " + std::to_string(int(real)) +
             ", naive book changed " + std::to_string(naive);
    Bbo b;
    if (real != OrderBook::kUnchanged && book.take_bbo_change(uint16_t(real), b))
      real_events.emplace_back(seq_, uint16_t(real), b);
    if (naive >= 0) {
      const Bbo now = ref.bbo(uint16_t(naive));
      if (now != ref_last_[uint16_t(naive)]) {
        ref_last_[uint16_t(naive)] = now;
        ref_events.emplace_back(seq_, uint16_t(naive), now);
      }
    }
    if (real_events.size() != ref_events.size() || (!real_events.empty() && real_events.back() != ref_events.back()))
      return "message " + std::to_string(seq_) + ": BBO events differ";
    return "";
  }

  std::string compare_state() const {
    if (book.live_orders() != ref.orders.size()) return "live order counts differ";
    for (uint16_t s : stocks_)
      for (char side : {'B', 'S'}) {
        const auto real = book.levels(s, side);
        const auto naive = ref.levels(s, side);
        if (real.size() != naive.size()) return "stock " + std::to_string(s) + " level counts differ";
        for (size_t i = 0; i < real.size(); ++i)
          if (real[i].price != std::get<0>(naive[i]) || real[i].orders != std::get<1>(naive[i]) ||
              real[i].shares != std::get<2>(naive[i]))
            return "stock " + std::to_string(s) + " level " + std::to_string(i) + " differs";
        // Depth's walk (top_levels): the naive book's best levels, then empty ones past the side's last.
        const uint32_t n = uint32_t(naive.size()) + 2;
        std::vector<BookLevel> top(n);
        book.top_levels(s, side == 'B', n, top.data());
        for (uint32_t i = 0; i < n; ++i) {
          const BookLevel want =
              i < naive.size() ? BookLevel{std::get<0>(naive[i]), std::get<2>(naive[i])} : BookLevel{};
          if (top[i] != want) return "stock " + std::to_string(s) + " top level " + std::to_string(i) + " differs";
        }
      }
    for (const auto& [r, o] : ref.orders) {
      OrderBook::OrderView v;
      if (!book.find_order(r, v)) return "order " + std::to_string(r) + " missing from the real book";
      if (v.shares != o.shares || v.price != o.price || v.side != o.side || v.locate != o.locate)
        return "order " + std::to_string(r) + " differs";
    }
    const BookCounters& c = book.counters();
    if (c.unknown_refs != ref.unknown || c.duplicate_refs != ref.duplicate || c.invalid_orders != ref.invalid)
      return "counters differ";
    return "";
  }

  OrderBook book;
  ReferenceBook ref;
  std::vector<std::tuple<uint64_t, uint16_t, Bbo>> real_events, ref_events;

 private:
  std::map<uint16_t, Bbo> ref_last_;
  std::set<uint16_t> stocks_;
  uint64_t seq_ = 0;
};

}  // namespace itchbench::testing
