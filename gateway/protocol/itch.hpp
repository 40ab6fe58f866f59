// NASDAQ TotalView-ITCH 5.0 codec.
//
// For each message type in itch_messages.def this header generates:
//  - a value struct (e.g. itch::AddOrder) with encode() and decode(), for
//    writers and tests;
//  - a zero-copy view (e.g. itch::AddOrderView) whose accessors read the
//    big-endian fields straight from the wire bytes, for the hot path.
// Untrusted bytes enter through itch::decode(), which checks the type and its
// fixed length before any view is made, or through decode_book_op()
// (book_op.hpp), which makes the same checks before reading any field.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/endian.hpp"

namespace itchbench::itch {

// Space-padded ASCII field (stock symbols, MPIDs, reason codes).
template <size_t N>
struct Alpha {
  std::array<char, N> chars{};

  static Alpha from(std::string_view s) {
    Alpha a;
    for (size_t i = 0; i < N; ++i) a.chars[i] = i < s.size() ? s[i] : ' ';
    return a;
  }
  // The text with trailing spaces removed.
  std::string_view trimmed() const {
    size_t n = N;
    while (n > 0 && chars[n - 1] == ' ') --n;
    return std::string_view(chars.data(), n);
  }
  // trimmed(), each byte that is not printable ASCII, or a backslash, written \xNN: the spec's fields are
  // printable, and a damaged capture's symbol so shown stays one line of text wherever it goes (gateway.json, a
  // dump's CSV, a report's table), where a carriage return, a newline or a NUL had broken the CSV's rows.
  std::string printable() const {
    std::string out;
    for (const char c : trimmed()) {
      const auto byte = static_cast<unsigned char>(c);
      if (byte >= 0x20 && byte < 0x7F && c != '\\') {
        out += c;
      } else {
        static constexpr char kHex[] = "0123456789ABCDEF";
        out += {'\\', 'x', kHex[byte >> 4], kHex[byte & 15]};
      }
    }
    return out;
  }
  bool operator==(const Alpha& o) const { return chars == o.chars; }
  bool operator!=(const Alpha& o) const { return !(*this == o); }
};

// Field kinds used by itch_messages.def.
using u8 = uint8_t;
using u16 = uint16_t;
using u32 = uint32_t;
using u64 = uint64_t;
using alpha2 = Alpha<2>;
using alpha4 = Alpha<4>;
using alpha8 = Alpha<8>;

template <class T> struct FieldCodec;
template <> struct FieldCodec<u8> {
  static constexpr size_t size = 1;
  static u8 load(const uint8_t* p) { return *p; }
  static void store(uint8_t* p, u8 v) { *p = v; }
};
template <> struct FieldCodec<u16> {
  static constexpr size_t size = 2;
  static u16 load(const uint8_t* p) { return load_be16(p); }
  static void store(uint8_t* p, u16 v) { store_be16(p, v); }
};
template <> struct FieldCodec<u32> {
  static constexpr size_t size = 4;
  static u32 load(const uint8_t* p) { return load_be32(p); }
  static void store(uint8_t* p, u32 v) { store_be32(p, v); }
};
template <> struct FieldCodec<u64> {
  static constexpr size_t size = 8;
  static u64 load(const uint8_t* p) { return load_be64(p); }
  static void store(uint8_t* p, u64 v) { store_be64(p, v); }
};
template <size_t N> struct FieldCodec<Alpha<N>> {
  static constexpr size_t size = N;
  static Alpha<N> load(const uint8_t* p) {
    Alpha<N> a;
    for (size_t i = 0; i < N; ++i) a.chars[i] = char(p[i]);
    return a;
  }
  static void store(uint8_t* p, const Alpha<N>& v) {
    for (size_t i = 0; i < N; ++i) p[i] = uint8_t(v.chars[i]);
  }
};

// Common header every message starts with.
constexpr size_t kHeaderLength = 11;
constexpr size_t kMaxMessageLength = 50;  // 'I', the longest type
constexpr size_t kTypeCount = 23;

// A message's timestamp (bytes 5 to 10, ns since midnight) from a header of kHeaderLength bytes: bytes 3 to 10 read
// as one big-endian word, the tracking number above it masked off: one load, not a 2-byte and a 4-byte one.
inline uint64_t header_timestamp(const uint8_t* msg) { return load_be64(msg + 3) & ((uint64_t(1) << 48) - 1); }
// header_timestamp of a message of len bytes, or `otherwise` when it is too short to have one: a capture's walk hands
// on a message that keeps the framing though its content does not (the file's last, or one a valid message follows).
inline uint64_t header_timestamp_or(const uint8_t* msg, size_t len, uint64_t otherwise) {
  return len >= kHeaderLength ? header_timestamp(msg) : otherwise;
}

struct FieldSpec {
  size_t offset;
  size_t size;
  const char* name;
};

namespace detail {
// True when fields follow the header and each other with no gap or overlap
// and end exactly at the message length.
template <size_t N>
constexpr bool contiguous(const FieldSpec (&fields)[N], size_t length) {
  size_t at = kHeaderLength;
  for (size_t i = 0; i < N; ++i) {
    if (fields[i].offset != at) return false;
    at += fields[i].size;
  }
  return at == length;
}
}  // namespace detail

// The table is expanded once per purpose; each pass defines F and
// ITCH_MESSAGE, includes the table and undefines them again.

// Pass 1: value structs.
#define ITCH_MESSAGE(Name, type_char, length, FIELDS)              \
  struct Name {                                                    \
    static constexpr char kType = type_char;                       \
    static constexpr size_t kLength = length;                      \
    uint16_t stock_locate{};                                       \
    uint16_t tracking_number{};                                    \
    uint64_t timestamp{};                                          \
    FIELDS                                                         \
    void encode(uint8_t* out) const; /* writes kLength bytes */    \
    static Name decode(const uint8_t* p); /* p holds kLength */    \
    bool operator==(const Name& o) const;                          \
    bool operator!=(const Name& o) const { return !(*this == o); } \
  };
#define F(kind, name, off) kind name{};
#include "protocol/itch_messages.def"
#undef F
#undef ITCH_MESSAGE

// Pass 2: encoders.
#define ITCH_MESSAGE(Name, type_char, length, FIELDS) \
  inline void Name::encode(uint8_t* out) const {      \
    out[0] = uint8_t(kType);                          \
    store_be16(out + 1, stock_locate);                \
    store_be16(out + 3, tracking_number);             \
    store_be48(out + 5, timestamp);                   \
    FIELDS                                            \
  }
#define F(kind, name, off) FieldCodec<kind>::store(out + (off), name);
#include "protocol/itch_messages.def"
#undef F
#undef ITCH_MESSAGE

// Pass 3: decoders into value structs.
#define ITCH_MESSAGE(Name, type_char, length, FIELDS) \
  inline Name Name::decode(const uint8_t* p) {        \
    Name m;                                           \
    m.stock_locate = load_be16(p + 1);                \
    m.tracking_number = load_be16(p + 3);             \
    m.timestamp = header_timestamp(p);                \
    FIELDS                                            \
    return m;                                         \
  }
#define F(kind, name, off) m.name = FieldCodec<kind>::load(p + (off));
#include "protocol/itch_messages.def"
#undef F
#undef ITCH_MESSAGE

// Pass 4: equality.
#define ITCH_MESSAGE(Name, type_char, length, FIELDS)          \
  inline bool Name::operator==(const Name& o) const {          \
    return stock_locate == o.stock_locate &&                   \
           tracking_number == o.tracking_number &&             \
           timestamp == o.timestamp FIELDS;                    \
  }
#define F(kind, name, off) &&name == o.name
#include "protocol/itch_messages.def"
#undef F
#undef ITCH_MESSAGE

// Pass 5: zero-copy views. A view is only made by decode() (or by code that
// has already checked the length), so accessors do no bounds checks.
#define ITCH_MESSAGE(Name, type_char, length, FIELDS)                        \
  class Name##View {                                                         \
   public:                                                                   \
    using Value = Name;                                                      \
    static constexpr char kType = type_char;                                 \
    static constexpr size_t kLength = length;                                \
    explicit Name##View(const uint8_t* p) : p_(p) {}                         \
    const uint8_t* data() const { return p_; }                               \
    uint16_t stock_locate() const { return load_be16(p_ + 1); }              \
    uint16_t tracking_number() const { return load_be16(p_ + 3); }           \
    uint64_t timestamp() const { return header_timestamp(p_); }              \
    FIELDS                                                                   \
    Name value() const { return Name::decode(p_); }                          \
                                                                             \
   private:                                                                  \
    const uint8_t* p_;                                                       \
  };
#define F(kind, name, off) \
  kind name() const { return FieldCodec<kind>::load(p_ + (off)); }
#include "protocol/itch_messages.def"
#undef F
#undef ITCH_MESSAGE

// Pass 6: field tables, checked at compile time against the lengths.
namespace layout {
#define ITCH_MESSAGE(Name, type_char, length, FIELDS)          \
  constexpr FieldSpec Name[] = {FIELDS};                       \
  static_assert(detail::contiguous(Name, length),              \
                #Name ": fields do not tile the message length");
#define F(kind, name, off) FieldSpec{(off), FieldCodec<kind>::size, #name},
#include "protocol/itch_messages.def"
#undef F
#undef ITCH_MESSAGE
}  // namespace layout

// Per-type facts, indexed by the type byte.
struct TypeInfo {
  char type;
  uint8_t length;
  const char* name;
};
constexpr TypeInfo kTypes[kTypeCount] = {
#define ITCH_MESSAGE(Name, type_char, length, FIELDS) {type_char, length, #Name},
#include "protocol/itch_messages.def"
#undef ITCH_MESSAGE
};

namespace detail {
struct TypeTable {
  uint8_t length[256]{};  // 0: not an ITCH 5.0 type
  uint8_t index[256]{};   // dense 0..22 position in kTypes
  constexpr TypeTable() {
    for (size_t i = 0; i < kTypeCount; ++i) {
      length[uint8_t(kTypes[i].type)] = kTypes[i].length;
      index[uint8_t(kTypes[i].type)] = uint8_t(i);
    }
  }
};
inline constexpr TypeTable kTypeTable{};
}  // namespace detail

// Fixed length of a type, 0 for a byte that is not an ITCH 5.0 type.
constexpr size_t message_length(char type) { return detail::kTypeTable.length[uint8_t(type)]; }
constexpr bool is_known_type(char type) { return message_length(type) != 0; }
// Dense index 0..kTypeCount-1 for per-type counters; only for known types.
constexpr size_t type_index(char type) { return detail::kTypeTable.index[uint8_t(type)]; }

enum class DecodeStatus : uint8_t {
  kOk,
  kEmpty,        // zero bytes: no type byte to read
  kUnknownType,  // the first byte is not one of the 23 types
  kWrongLength,  // the byte count does not match the type's fixed length
};
const char* to_string(DecodeStatus s);

// The one entry point for untrusted message bytes: checks type and length,
// then calls visitor(XxxView) for the message. Nothing is read past len.
template <class Visitor>
inline DecodeStatus decode(const uint8_t* p, size_t len, Visitor&& visitor) {
  if (len == 0) return DecodeStatus::kEmpty;
  const size_t expected = message_length(char(p[0]));
  if (expected == 0) return DecodeStatus::kUnknownType;
  if (expected != len) return DecodeStatus::kWrongLength;
  switch (char(p[0])) {
#define ITCH_MESSAGE(Name, type_char, length, FIELDS) \
  case type_char:                                     \
    visitor(Name##View(p));                           \
    break;
#include "protocol/itch_messages.def"
#undef ITCH_MESSAGE
  }
  return DecodeStatus::kOk;
}

// Validation alone, for framers and file readers that only need the verdict.
inline DecodeStatus validate(const uint8_t* p, size_t len) {
  if (len == 0) return DecodeStatus::kEmpty;
  const size_t expected = message_length(char(p[0]));
  if (expected == 0) return DecodeStatus::kUnknownType;
  return expected == len ? DecodeStatus::kOk : DecodeStatus::kWrongLength;
}

}  // namespace itchbench::itch
