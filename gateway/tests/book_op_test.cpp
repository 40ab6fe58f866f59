// decode_book_op against the two other readings of the same bytes: the
// spec's byte layout written out by hand, and the per-type views.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/book_op.hpp"
#include "patterned_message.hpp"

// Its names kept to itself: the test binary is compiled as unity sources (CMakeLists.txt).
namespace book_op_test {

using namespace itchbench;
using namespace itchbench::itch;
using itchbench::testing::patterned;

namespace {


// What the book should see of a message, read through its view.
BookOp expected_from_view(const uint8_t* p, size_t len) {
  BookOp e;
  e.locate = load_be16(p + 1);
  EXPECT_EQ(decode(p, len, [&](const auto& v) {
              using V = std::decay_t<decltype(v)>;
              if constexpr (std::is_same_v<V, AddOrderView> || std::is_same_v<V, AddOrderMpidView>) {
                e = {v.order_ref(), 0, v.shares(), v.price(), v.stock_locate(), char(v.side()), BookOpKind::kAdd};
              } else if constexpr (std::is_same_v<V, OrderExecutedView> ||
                                   std::is_same_v<V, OrderExecutedWithPriceView>) {
                e = {v.order_ref(), 0, v.executed_shares(), 0, v.stock_locate(), 0, BookOpKind::kReduce};
              } else if constexpr (std::is_same_v<V, OrderCancelView>) {
                e = {v.order_ref(), 0, v.cancelled_shares(), 0, v.stock_locate(), 0, BookOpKind::kReduce};
              } else if constexpr (std::is_same_v<V, OrderDeleteView>) {
                e = {v.order_ref(), 0, 0, 0, v.stock_locate(), 0, BookOpKind::kDelete};
              } else if constexpr (std::is_same_v<V, OrderReplaceView>) {
                e = {v.original_order_ref(), v.new_order_ref(), v.shares(), v.price(), v.stock_locate(), 0,
                     BookOpKind::kReplace};
              } else if constexpr (std::is_same_v<V, StockDirectoryView>) {
                e.kind = BookOpKind::kDirectory;
              }
            }),
            DecodeStatus::kOk);
  return e;
}

void expect_same(const BookOp& a, const BookOp& b) {
  EXPECT_EQ(int(a.kind), int(b.kind));
  EXPECT_EQ(a.ref, b.ref);
  EXPECT_EQ(a.new_ref, b.new_ref);
  EXPECT_EQ(a.shares, b.shares);
  EXPECT_EQ(a.price, b.price);
  EXPECT_EQ(a.locate, b.locate);
  EXPECT_EQ(a.side, b.side);
}

}  // namespace

TEST(BookOp, AddOrderFromTheSpecsBytes) {
  const uint8_t wire[36] = {
      'A', 0x00, 0x0D, 0x00, 0x00, 0x1F, 0x1A, 0xCE, 0xD9, 0xF0, 0x00,  // locate 13, 09:30:00
      0, 0, 0, 0, 0, 0, 0x30, 0x39,                                      // order ref 12345
      'S',
      0x00, 0x00, 0x01, 0x2C,                                            // 300 shares
      'A', 'A', 'P', 'L', ' ', ' ', ' ', ' ',
      0x00, 0x16, 0xE3, 0x60,                                            // $150.0000
  };
  BookOp op;
  ASSERT_EQ(decode_book_op(wire, sizeof wire, op), DecodeStatus::kOk);
  expect_same(op, BookOp{12345, 0, 300, 1500000, 13, 'S', BookOpKind::kAdd});
}

TEST(BookOp, ReplaceFromTheSpecsBytes) {
  const uint8_t wire[35] = {
      'U', 0x00, 0x02, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x03, 0xE8,  // locate 2
      0, 0, 0, 0, 0, 0, 0, 0x01,                                      // original ref 1
      0, 0, 0, 0, 0, 0, 0, 0x02,                                      // new ref 2
      0x00, 0x00, 0x00, 0x64,                                         // 100 shares
      0x00, 0x01, 0x86, 0xA0,                                         // $10.0000
  };
  BookOp op;
  ASSERT_EQ(decode_book_op(wire, sizeof wire, op), DecodeStatus::kOk);
  expect_same(op, BookOp{1, 2, 100, 100000, 2, 0, BookOpKind::kReplace});
}

TEST(BookOp, EveryTypeReadsAsItsViewDoes) {
  for (const TypeInfo& t : kTypes) {
    for (uint8_t salt : {0, 1, 0x80, 0xFF}) {
      SCOPED_TRACE(std::string(1, t.type) + " salt " + std::to_string(salt));
      const std::vector<uint8_t> wire = patterned(t.type, t.length, salt);
      BookOp op;
      ASSERT_EQ(decode_book_op(wire.data(), wire.size(), op), DecodeStatus::kOk);
      expect_same(op, expected_from_view(wire.data(), wire.size()));
    }
  }
}

TEST(BookOp, RejectsWhatDecodeRejects) {
  const uint8_t unknown[12] = {'Z'};
  BookOp op;
  EXPECT_EQ(decode_book_op(unknown, 12, op), DecodeStatus::kUnknownType);
  EXPECT_EQ(decode_book_op(unknown, 0, op), DecodeStatus::kEmpty);
  for (const TypeInfo& t : kTypes) {
    const std::vector<uint8_t> b = patterned(t.type, 64, 3);
    EXPECT_EQ(decode_book_op(b.data(), t.length - 1, op), DecodeStatus::kWrongLength) << t.type;
    EXPECT_EQ(decode_book_op(b.data(), t.length + 1u, op), DecodeStatus::kWrongLength) << t.type;
  }
}

// The look-ahead reads the order reference where the spec puts it (offset 11
// in every order message), and nothing from types that carry none.
TEST(BookOp, PeeksTheOrderReferenceOfOrderMessagesOnly) {
  const uint8_t del[19] = {'D', 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
  uint64_t ref = 0;
  ASSERT_TRUE(peek_order_ref(del, sizeof del, ref));
  EXPECT_EQ(ref, 0x0102030405060708ull);
  EXPECT_FALSE(peek_order_ref(del, 18, ref)) << "too short to hold the reference";
  EXPECT_FALSE(peek_order_ref(del, 0, ref));

  const uint8_t replace[35] = {'U', 0, 2, 0, 7, 0, 0, 0, 0, 3, 0xE8, 0, 0, 0, 0, 0, 0, 0, 0x2A,  // original ref 42
                               0, 0, 0, 0, 0, 0, 0, 0x2B, 0, 0, 0, 0x64, 0, 1, 0x86, 0xA0};
  ASSERT_TRUE(peek_order_ref(replace, sizeof replace, ref));
  EXPECT_EQ(ref, 42u) << "a replace names its original order";

  for (const TypeInfo& t : kTypes) {
    const auto msg = patterned(t.type, t.length, 0x11);
    const bool names_an_order = std::string("AFECXDU").find(t.type) != std::string::npos;
    EXPECT_EQ(peek_order_ref(msg.data(), msg.size(), ref), names_an_order) << t.type;
    if (names_an_order) {
      EXPECT_EQ(ref, load_be64(msg.data() + 11)) << t.type;
    }
  }
}

}  // namespace book_op_test
