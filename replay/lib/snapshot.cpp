#include "replay/lib/snapshot.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "book/order_book.hpp"
#include "protocol/book_op.hpp"
#include "protocol/endian.hpp"
#include "protocol/glimpse.hpp"
#include "protocol/itch.hpp"

namespace itchbench::replay {

namespace {
struct LiveOrder {
  uint16_t locate;
  uint64_t ref;
  char side;
  uint32_t shares, price;
};

std::vector<uint8_t> add_order(const LiveOrder& o, uint64_t timestamp, const uint8_t* stock) {
  std::vector<uint8_t> m(36, 0);
  m[0] = 'A';
  store_be16(m.data() + 1, o.locate);
  store_be16(m.data() + 3, 0);  // tracking number
  store_be48(m.data() + 5, timestamp);
  store_be64(m.data() + 11, o.ref);
  m[19] = uint8_t(o.side);
  store_be32(m.data() + 20, o.shares);
  std::copy(stock, stock + 8, m.begin() + 24);
  store_be32(m.data() + 32, o.price);
  return m;
}
}  // namespace

uint64_t last_before(const MessageStore& session, uint64_t time_ns) {
  uint64_t last = session.first() - 1;
  for (uint64_t seq = session.first(); seq <= session.last(); ++seq) {
    uint16_t len = 0;
    const uint8_t* msg = session.message(seq, len);
    if (len >= itch::kHeaderLength && itch::header_timestamp(msg) >= time_ns) break;
    last = seq;
  }
  return last;
}

Snapshot make_snapshot(const MessageStore& session, uint64_t through) {
  if (through + 1 < session.first() || through > session.last())
    throw std::invalid_argument("a snapshot after message " + std::to_string(through) + ": the session holds " +
                                std::to_string(session.first()) + " to " + std::to_string(session.last()));
  OrderBook book(1 << 16);
  std::vector<uint8_t> system_event;
  std::map<uint16_t, std::vector<uint8_t>> directory;  // the last R of each stock
  uint64_t timestamp = 0;                               // the snapshot's moment: the last message's
  for (uint64_t seq = session.first(); seq <= through; ++seq) {
    uint16_t len = 0;
    const uint8_t* msg = session.message(seq, len);
    timestamp = itch::header_timestamp_or(msg, len, timestamp);
    itch::BookOp op;
    if (itch::decode_book_op(msg, len, op) != itch::DecodeStatus::kOk) continue;  // counted by the gateway, not here
    switch (op.kind) {
      case itch::BookOpKind::kAdd: book.add(op.locate, op.ref, op.side, op.shares, op.price); break;
      case itch::BookOpKind::kReduce: book.reduce(op.ref, op.shares); break;
      case itch::BookOpKind::kDelete: book.remove(op.ref); break;
      case itch::BookOpKind::kReplace: book.replace(op.ref, op.new_ref, op.shares, op.price); break;
      case itch::BookOpKind::kDirectory: directory[op.locate].assign(msg, msg + len); break;
      case itch::BookOpKind::kNone:
        if (msg[0] == 'S') system_event.assign(msg, msg + len);
        break;
    }
  }
  Snapshot s;
  s.through = through;
  s.next_sequence = through + 1;
  if (!system_event.empty()) {
    s.messages.push_back(system_event);
    s.system_events = 1;
  }
  for (auto& [locate, r] : directory) s.messages.push_back(r);
  s.directory = directory.size();
  // Live orders by stock, then reference (NASDAQ assigns references in time order, so within a price level
  // this is close to time priority; the book of aggregated levels does not depend on it).
  std::vector<LiveOrder> orders;
  orders.reserve(book.live_orders());
  book.for_each_order([&](uint64_t ref, uint16_t locate, char side, uint32_t shares, uint32_t price) {
    orders.push_back({locate, ref, side, shares, price});
  });
  std::sort(orders.begin(), orders.end(),
            [](const LiveOrder& a, const LiveOrder& b) { return std::tie(a.locate, a.ref) < std::tie(b.locate, b.ref); });
  static const uint8_t kNoSymbol[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
  for (const LiveOrder& o : orders) {
    auto r = directory.find(o.locate);
    s.messages.push_back(add_order(o, timestamp, r != directory.end() ? r->second.data() + 11 : kNoSymbol));
  }
  s.orders = orders.size();
  const std::string end = glimpse::end_of_snapshot(s.next_sequence);
  s.messages.emplace_back(end.begin(), end.end());
  for (const auto& m : s.messages) s.bytes += m.size();
  return s;
}

}  // namespace itchbench::replay
