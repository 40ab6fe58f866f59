// The snapshot against a deliberately naive book (gateway/tests/reference_book.hpp, written apart from the real
// one): a book built from the snapshot's Add Orders must hold exactly the live orders of a book fed the session
// up to the snapshot's point, and stay equal to it as the rest of the session is applied to both. The session is
// itch-synth's deep-book profile (a large book), seeded here.
#include <gtest/gtest.h>

#include <tuple>

#include "protocol/book_op.hpp"
#include "protocol/endian.hpp"
#include "protocol/glimpse.hpp"
#include "protocol/itch.hpp"
#include "reference_book.hpp"
#include "replay/lib/session_generator.hpp"
#include "replay/lib/snapshot.hpp"

using namespace itchbench;
using namespace itchbench::replay;

namespace {

MessageStore synthetic_session(uint64_t messages) {
  GeneratorConfig c = deep_book_profile();
  c.seed = 11;
  c.messages = messages;
  c.unknown_ref_ppm = 2000;  // some messages name orders that never were: they must change nothing in either book
  MessageStore store(mold::make_session("SNAPTEST00"), 1);
  generate_session(c, [&](const uint8_t* m, uint16_t n, uint64_t) { store.add(m, n); });
  return store;
}

void apply(itchbench::testing::ReferenceBook& book, const uint8_t* m, size_t n) {
  itch::BookOp op;
  if (itch::decode_book_op(m, n, op) != itch::DecodeStatus::kOk) return;
  switch (op.kind) {
    case itch::BookOpKind::kAdd: book.add(op.locate, op.ref, op.side, op.shares, op.price); break;
    case itch::BookOpKind::kReduce: book.reduce(op.ref, op.shares); break;
    case itch::BookOpKind::kDelete: book.remove(op.ref); break;
    case itch::BookOpKind::kReplace: book.replace(op.ref, op.new_ref, op.shares, op.price); break;
    default: break;
  }
}

using Orders = std::map<uint64_t, std::tuple<uint16_t, char, uint32_t, uint32_t>>;
Orders orders_of(const itchbench::testing::ReferenceBook& b) {
  Orders out;
  for (const auto& [ref, o] : b.orders) out[ref] = {o.locate, o.side, o.shares, o.price};
  return out;
}

}  // namespace

TEST(Snapshot, ItsOrdersAreTheBooksAndTheRestOfTheSessionKeepsThemEqual) {
  const MessageStore session = synthetic_session(20000);
  for (uint64_t through : {uint64_t(0), uint64_t(2000), uint64_t(10000), uint64_t(18000), session.last()}) {
    SCOPED_TRACE(through);
    const Snapshot snap = make_snapshot(session, through);
    itchbench::testing::ReferenceBook whole, joined;
    for (uint64_t s = session.first(); s <= through; ++s) {
      uint16_t n;
      const uint8_t* m = session.message(s, n);
      apply(whole, m, n);
    }
    // The snapshot's shape: S first (when the session had one), R by locate, A by (locate, ref), G last.
    ASSERT_FALSE(snap.messages.empty());
    uint64_t next = 0;
    ASSERT_TRUE(glimpse::parse_end_of_snapshot(snap.messages.back().data(), snap.messages.back().size(), next));
    EXPECT_EQ(next, through + 1);
    std::tuple<uint16_t, uint64_t> last_add{0, 0};
    size_t adds = 0;
    for (size_t i = 0; i + 1 < snap.messages.size(); ++i) {
      const std::vector<uint8_t>& m = snap.messages[i];
      if (m[0] == 'A') {
        ASSERT_EQ(m.size(), 36u);
        const std::tuple<uint16_t, uint64_t> key{load_be16(m.data() + 1), load_be64(m.data() + 11)};
        if (adds++) {
          EXPECT_LT(last_add, key);
        }
        last_add = key;
      } else {
        EXPECT_EQ(adds, 0u) << "every S and R comes before the orders";
        EXPECT_TRUE(m[0] == 'S' || m[0] == 'R');
      }
      apply(joined, m.data(), m.size());
    }
    EXPECT_EQ(adds, snap.orders);
    EXPECT_EQ(orders_of(joined), orders_of(whole));
    if (through == 2000) {
      EXPECT_GT(snap.orders, 100u);  // the point of the test: a book worth carrying
    }
    for (uint64_t s = through + 1; s <= session.last(); ++s) {
      uint16_t n;
      const uint8_t* m = session.message(s, n);
      apply(whole, m, n);
      apply(joined, m, n);
      if (n >= 3 && s % 97 == 0) {
        ASSERT_EQ(whole.bbo(load_be16(m + 1)), joined.bbo(load_be16(m + 1))) << s;
      }
    }
    EXPECT_EQ(orders_of(joined), orders_of(whole));
  }
}

TEST(Snapshot, EachAddCarriesItsStocksSymbolFromTheDirectory) {
  const MessageStore session = synthetic_session(5000);
  const Snapshot snap = make_snapshot(session, 4000);
  std::map<uint16_t, std::string> symbol;
  for (const auto& m : snap.messages)
    if (m[0] == 'R') symbol[load_be16(m.data() + 1)] = std::string(m.begin() + 11, m.begin() + 19);
  ASSERT_FALSE(symbol.empty());
  for (const auto& m : snap.messages)
    if (m[0] == 'A') {
      EXPECT_EQ(std::string(m.begin() + 24, m.begin() + 32), symbol.at(load_be16(m.data() + 1)));
    }
}

TEST(Snapshot, APointOutsideTheSessionIsRefused) {
  const MessageStore session = synthetic_session(100);
  EXPECT_THROW(make_snapshot(session, session.last() + 1), std::invalid_argument);
  EXPECT_NO_THROW(make_snapshot(session, 0));  // before the first message: an empty book
}

TEST(Snapshot, ATimeOfDayIsTheLastMessageStampedBeforeIt) {
  MessageStore session(mold::make_session("SNAPTEST00"), 1);
  for (uint64_t t : {100, 200, 200, 300}) {  // ns since midnight, in the System Event's timestamp field
    uint8_t m[12] = {'S'};
    store_be48(m + 5, t);
    session.add(m, sizeof m);
  }
  EXPECT_EQ(last_before(session, 200), 1u);  // the first stamped 200 is not before 200
  EXPECT_EQ(last_before(session, 201), 3u);
  EXPECT_EQ(last_before(session, 50), 0u);   // none: an empty book
  EXPECT_EQ(last_before(session, 1000), 4u);
}
