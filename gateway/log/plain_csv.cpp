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

// Past the spaces and tabs at p: the blanks the line-by-line reader strips around a field.
const char* skip_blanks(const char* p, const char* end) {
  while (p < end && (*p == ' ' || *p == '\t')) ++p;
  return p;
}

// Where the next line begins when p is at the end of one (\n, \r\n, or the end of the data, a last \r too);
// nullptr otherwise. A \r anywhere else would end a line for the line-by-line reader, so it is not plain.
const char* line_end(const char* p, const char* end) {
  if (p == end) return p;
  if (*p == '\n') return p + 1;
  if (*p == '\r' && (p + 1 == end || p[1] == '\n')) return p + 1 == end ? p + 1 : p + 2;
  return nullptr;
}

// One line from p (at its start) parsed into row (fields + 1 values), p moved to the next line's start; false when
// the line is not plain (p then anywhere in it).
bool plain_line(const char*& p, const char* end, uint32_t fields, bool stamped, bool sided, int64_t* row,
                char* symbol_to) {
  row[fields] = 0;
  if (stamped) {  // the stamp from the line's start to its first space, as the line-by-line reader splits it
    if (!number(p, end, row[fields]) || p == end || *p++ != ' ') return false;
  } else {
    p = skip_blanks(p, end);
  }
  for (uint32_t f = 0; f < fields; ++f) {
    if (f && (p == end || *p++ != ',')) return false;
    p = skip_blanks(p, end);
    if (f == 1 && p < end && letter(*p)) {  // the stock, by its symbol (its trailing blanks its own)
      if (!symbol(p, end, symbol_to)) return false;
      row[f] = -1;
    } else if (sided && f == kSideField) {  // a level change's side: its letter's byte
      if (p == end || (*p != 'B' && *p != 'S')) return false;
      row[f] = *p++;
    } else if (!number(p, end, row[f])) {
      return false;
    }
    p = skip_blanks(p, end);
  }
  p = line_end(p, end);
  return p != nullptr;
}

}  // namespace

int64_t parse_plain_csv(const char* data, size_t n, uint32_t fields, bool stamped, bool sided, int64_t* out,
                        char* symbols, uint64_t capacity, OtherLine* others, uint64_t others_capacity,
                        uint64_t* others_found) {
  const char* p = data;
  const char* const end = data + n;
  uint64_t rows = 0, set_aside = 0;
  while (p < end) {
    if (const char* next = line_end(skip_blanks(p, end), end)) {  // a blank line, or blanks alone: skipped
      p = next;
      continue;
    }
    if (rows == capacity) return -1;
    const char* const line = p;
    if (plain_line(p, end, fields, stamped, sided, out + rows * (uint64_t(fields) + 1),
                   symbols + kPlainSymbolBytes * rows)) {
      ++rows;
      continue;
    }
    if (set_aside == others_capacity) return -1;
    const void* const newline = std::memchr(line, '\n', size_t(end - line));
    p = newline ? static_cast<const char*>(newline) + 1 : end;
    others[set_aside++] = OtherLine{rows, uint64_t(line - data), uint64_t(p - data)};
  }
  if (others_found) *others_found = set_aside;
  return int64_t(rows);
}

}  // namespace itchbench
