// Best bid and offer of one stock: price (4 implied decimals) and aggregate
// shares at that price, per side. An empty side is price 0, shares 0.
#pragma once
#include <cstdint>

namespace itchbench {

struct Bbo {
  uint32_t bid_px = 0;
  uint32_t ask_px = 0;
  uint64_t bid_qty = 0;
  uint64_t ask_qty = 0;
  bool operator==(const Bbo& o) const {
    return bid_px == o.bid_px && ask_px == o.ask_px && bid_qty == o.bid_qty && ask_qty == o.ask_qty;
  }
  bool operator!=(const Bbo& o) const { return !(*this == o); }
};

// One price level of a side, as depth reports it: its price and the aggregate shares there; no level is 0, 0.
struct BookLevel {
  uint32_t px = 0;
  uint64_t qty = 0;
  constexpr BookLevel() = default;
  constexpr BookLevel(uint32_t price, uint64_t shares) : px(price), qty(shares) {}
  bool operator==(const BookLevel& o) const { return px == o.px && qty == o.qty; }
  bool operator!=(const BookLevel& o) const { return !(*this == o); }
};

// One BBO event: emitted after a book message changed the stock's BBO.
struct BboEvent {
  uint64_t seq;        // sequence number of the message that changed it
  uint64_t timestamp;  // that message's ITCH timestamp, ns since midnight
  uint16_t stock_locate;
  Bbo bbo;
  uint8_t flags = 0;  // logfmt::BboFlags
};

}  // namespace itchbench
