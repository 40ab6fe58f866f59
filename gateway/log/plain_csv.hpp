// A contract gateway's csv output (docs/gateway-contract.md): its lines of numbers alone — `<t_recv> ` first where
// the collector stamped it, then the event's fields between commas, spaces or tabs around them, the stock as its
// locate or its symbol, a level change's side as its letter; lines ended by \n or \r\n —, parsed for the harness
// in one pass (log_reader_c.h).
// Any other line (a side letter, a sign, an empty field, a field too many or too few, a number past int64, a space
// before the stamp or inside a number) is set aside: the harness reads it line by line, which tells such lines apart
// and counts them (gateways/blackbox.py).
#pragma once
#include <cstddef>
#include <cstdint>

namespace itchbench {

// The longest symbol a plain line names its stock by (ITCH's are 8 bytes).
constexpr size_t kPlainSymbolBytes = 16;

// A line that is not plain, set aside: the rows parsed before it, and its bytes [begin, end) in the data (to the
// \n that ends it, included).
struct OtherLine {
  uint64_t before_row;
  uint64_t begin;
  uint64_t end;
};

// The field of a level change's side (levels = all: seq, stock, side, price, shares), B or S.
constexpr uint32_t kSideField = 2;

// Rows of fields + 1 values at out, room for `capacity` rows: a line's fields, then its t_recv (0 when not
// stamped). sided: field kSideField is a side letter, B or S, given as its byte. Blank lines, and lines of blanks
// alone, are skipped. A stock named by its symbol (a letter, then letters,
// digits, spaces and . + / -, its trailing spaces dropped) is -1 in its row, the symbol at
// symbols + kPlainSymbolBytes * row, padded with zeros. A line that is not plain is set aside in others, room for
// others_capacity (how many in *others_found): the harness reads those few line by line, in their places. Returns
// the rows, or -1 when there are more rows than room, or more other lines (with no room for any: at the first).
int64_t parse_plain_csv(const char* data, size_t n, uint32_t fields, bool stamped, bool sided, int64_t* out,
                        char* symbols, uint64_t capacity, OtherLine* others = nullptr, uint64_t others_capacity = 0,
                        uint64_t* others_found = nullptr);

}  // namespace itchbench
