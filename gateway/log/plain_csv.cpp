#include "log/plain_csv.hpp"

#include <climits>
#include <cstring>

namespace itchbench {

namespace {

// The digits at p, as a value, p moved past them; false when there are none or the value passes int64.
bool number(const char*& p, const char* end, int64_t& value) {
  const char* first = p;
  uint64_t v = 0;
  for (; p < end && unsigned(*p - '0') < 10; ++p) {
    const uint64_t digit = uint64_t(*p - '0');
    if (v > (uint64_t(INT64_MAX) - digit) / 10) return false;
    v = v * 10 + digit;
  }
  value = int64_t(v);
  return p != first;
}

bool symbol_byte(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || unsigned(c - '0') < 10 || c == ' ' || c == '.' ||
         c == '+' || c == '/' || c == '-';
}

// A symbol at p (a letter first), p moved to the comma or line end after it, copied without its trailing spaces to
// `to`; false when it holds a byte no symbol has or is longer than kPlainSymbolBytes.
bool symbol(const char*& p, const char* end, char* to) {
  const char* first = p;
  while (p < end && *p != ',' && *p != '\n') {
    if (!symbol_byte(*p)) return false;
    ++p;
  }
  const char* last = p;
  while (last[-1] == ' ') --last;  // the first byte is a letter
  const size_t n = size_t(last - first);
  if (n > kPlainSymbolBytes) return false;
  std::memcpy(to, first, n);
  std::memset(to + n, 0, kPlainSymbolBytes - n);
  return true;
}

bool letter(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

}  // namespace

int64_t parse_plain_csv(const char* data, size_t n, uint32_t fields, bool stamped, int64_t* out, char* symbols,
                        uint64_t capacity) {
  const char* p = data;
  const char* const end = data + n;
  uint64_t rows = 0;
  while (p < end) {
    if (*p == '\n') {  // a blank line
      ++p;
      continue;
    }
    if (rows == capacity) return -1;
    int64_t* row = out + rows * (uint64_t(fields) + 1);
    row[fields] = 0;
    if (stamped && (!number(p, end, row[fields]) || p == end || *p++ != ' ')) return -1;
    for (uint32_t f = 0; f < fields; ++f) {
      if (f && (p == end || *p++ != ',')) return -1;
      if (f == 1 && p < end && letter(*p)) {  // the stock, by its symbol
        if (!symbol(p, end, symbols + kPlainSymbolBytes * rows)) return -1;
        row[f] = -1;
      } else if (!number(p, end, row[f])) {
        return -1;
      }
    }
    if (p < end && *p++ != '\n') return -1;
    ++rows;
  }
  return int64_t(rows);
}

}  // namespace itchbench
