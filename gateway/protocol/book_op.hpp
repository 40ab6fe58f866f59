// The order book's view of an ITCH 5.0 message: what it does to the book
// (add, reduce, delete, replace, name a stock, nothing) and the fields that
// takes, read from per-type offsets in a table rather than through a switch
// over the 23 types. The type dispatch is the one branch of decoding a feed
// cannot predict (the order messages arrive in no pattern); here decoding has
// no branch on the type at all, and the book's switch has five cases.
//
// Offsets come from the layout tables of itch_messages.def (written once);
// a field the message does not carry reads as zero.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocol/itch.hpp"

namespace itchbench::itch {

enum class BookOpKind : uint8_t {
  kNone,       // no effect on the book (trades, crosses, system and admin messages)
  kAdd,        // A, F: ref, side, shares, price
  kReduce,     // E, C: executed shares; X: cancelled shares
  kDelete,     // D: ref
  kReplace,    // U: ref (the original), new_ref, shares, price
  kDirectory,  // R: the stock's symbol is StockDirectoryView(bytes).stock()
};

struct BookOp {
  uint64_t ref = 0;
  uint64_t new_ref = 0;
  uint32_t shares = 0;
  uint32_t price = 0;
  uint16_t locate = 0;
  char side = 0;
  BookOpKind kind = BookOpKind::kNone;
};

namespace detail {

template <size_t N>
constexpr const FieldSpec* find_field(const FieldSpec (&fields)[N], std::string_view name) {
  for (size_t i = 0; i < N; ++i)
    if (std::string_view(fields[i].name) == name) return &fields[i];
  return nullptr;
}

// Where each field sits in one type, and which the type carries. A missing
// field is read from offset 0 (inside every message) and masked to zero.
struct OpLayout {
  uint64_t ref_mask = 0, new_ref_mask = 0;
  uint32_t shares_mask = 0, price_mask = 0;
  uint8_t ref_at = 0, new_ref_at = 0, shares_at = 0, price_at = 0, side_at = 0, side_mask = 0;
  BookOpKind kind = BookOpKind::kNone;
};

template <size_t N>
constexpr OpLayout op_layout(BookOpKind kind, const FieldSpec (&fields)[N], const char* ref, const char* new_ref,
                             const char* shares, const char* price, const char* side) {
  OpLayout l;
  l.kind = kind;
  if (const FieldSpec* f = ref ? find_field(fields, ref) : nullptr) l.ref_at = uint8_t(f->offset), l.ref_mask = ~0ull;
  if (const FieldSpec* f = new_ref ? find_field(fields, new_ref) : nullptr)
    l.new_ref_at = uint8_t(f->offset), l.new_ref_mask = ~0ull;
  if (const FieldSpec* f = shares ? find_field(fields, shares) : nullptr)
    l.shares_at = uint8_t(f->offset), l.shares_mask = ~0u;
  if (const FieldSpec* f = price ? find_field(fields, price) : nullptr)
    l.price_at = uint8_t(f->offset), l.price_mask = ~0u;
  if (const FieldSpec* f = side ? find_field(fields, side) : nullptr) l.side_at = uint8_t(f->offset), l.side_mask = 0xff;
  return l;
}

struct OpTable {
  OpLayout by_type[256]{};
  constexpr OpTable() {
    using K = BookOpKind;
    by_type[uint8_t('A')] = op_layout(K::kAdd, layout::AddOrder, "order_ref", nullptr, "shares", "price", "side");
    by_type[uint8_t('F')] = op_layout(K::kAdd, layout::AddOrderMpid, "order_ref", nullptr, "shares", "price", "side");
    by_type[uint8_t('E')] =
        op_layout(K::kReduce, layout::OrderExecuted, "order_ref", nullptr, "executed_shares", nullptr, nullptr);
    by_type[uint8_t('C')] =
        op_layout(K::kReduce, layout::OrderExecutedWithPrice, "order_ref", nullptr, "executed_shares", nullptr, nullptr);
    by_type[uint8_t('X')] =
        op_layout(K::kReduce, layout::OrderCancel, "order_ref", nullptr, "cancelled_shares", nullptr, nullptr);
    by_type[uint8_t('D')] = op_layout(K::kDelete, layout::OrderDelete, "order_ref", nullptr, nullptr, nullptr, nullptr);
    by_type[uint8_t('U')] = op_layout(K::kReplace, layout::OrderReplace, "original_order_ref", "new_order_ref", "shares",
                                      "price", nullptr);
    by_type[uint8_t('R')].kind = K::kDirectory;
  }
};
inline constexpr OpTable kOpTable{};

// Every field named above exists and fits its message (a typo would read offset 0, masked to zero).
constexpr bool op_table_complete() {
  for (const TypeInfo& t : kTypes) {
    const OpLayout& l = kOpTable.by_type[uint8_t(t.type)];
    const bool add = l.kind == BookOpKind::kAdd, reduce = l.kind == BookOpKind::kReduce;
    const bool replace = l.kind == BookOpKind::kReplace, del = l.kind == BookOpKind::kDelete;
    if ((add || reduce || replace || del) && (l.ref_mask == 0 || l.ref_at + 8u > t.length)) return false;
    if ((add || reduce || replace) && (l.shares_mask == 0 || l.shares_at + 4u > t.length)) return false;
    if ((add || replace) && (l.price_mask == 0 || l.price_at + 4u > t.length)) return false;
    if (add && (l.side_mask == 0 || l.side_at >= t.length)) return false;
    if (replace && (l.new_ref_mask == 0 || l.new_ref_at + 8u > t.length)) return false;
  }
  return true;
}
static_assert(op_table_complete(), "a book field named in OpTable is missing from its message layout");
constexpr bool every_type_holds(size_t bytes) {
  for (const TypeInfo& t : kTypes)
    if (t.length < bytes) return false;
  return true;
}
static_assert(every_type_holds(8), "a missing field is read as 8 bytes at offset 0");

}  // namespace detail

// The order reference a message names (an add's new order, a replace's
// original), read without validating the message: for looking ahead at
// messages not yet decoded. False when the type carries none or the message
// is too short to hold it.
inline bool peek_order_ref(const uint8_t* p, size_t len, uint64_t& ref) {
  if (len == 0) return false;
  const detail::OpLayout& l = detail::kOpTable.by_type[p[0]];
  if (l.ref_mask == 0 || len < l.ref_at + 8u) return false;
  ref = load_be64(p + l.ref_at);
  return true;
}

// Checks type and length exactly as decode() does; on kOk fills op.
inline DecodeStatus decode_book_op(const uint8_t* p, size_t len, BookOp& op) {
  const DecodeStatus st = validate(p, len);
  if (__builtin_expect(st != DecodeStatus::kOk, 0)) return st;
  const detail::OpLayout& l = detail::kOpTable.by_type[p[0]];
  op.ref = load_be64(p + l.ref_at) & l.ref_mask;
  op.new_ref = load_be64(p + l.new_ref_at) & l.new_ref_mask;
  op.shares = load_be32(p + l.shares_at) & l.shares_mask;
  op.price = load_be32(p + l.price_at) & l.price_mask;
  op.side = char(p[l.side_at] & l.side_mask);
  op.locate = load_be16(p + 1);
  op.kind = l.kind;
  return DecodeStatus::kOk;
}

}  // namespace itchbench::itch
