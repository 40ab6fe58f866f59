// The plain csv reader (log/plain_csv.hpp) on any bytes: the first byte chooses the fields (1 to 8), whether the
// lines are stamped and whether the third field is a side letter; the rest is a gateway's output. With room for
// every line, the reader must set aside only whole lines, in order, within the data; each set aside must be refused
// alone; and the output without them must parse, strictly, to the same rows.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.hpp"
#include "log/plain_csv.hpp"

using namespace itchbench;

namespace {

struct Parsed {
  int64_t rows;
  std::vector<int64_t> values;
  std::vector<OtherLine> others;
};

Parsed parse(const std::string& text, uint32_t fields, bool stamped, bool sided, bool set_aside) {
  const uint64_t room = text.size() + 1;  // more than there are lines
  Parsed p{0, std::vector<int64_t>(room * (fields + 1)), std::vector<OtherLine>(set_aside ? room : 0)};
  std::vector<char> symbols(room * kPlainSymbolBytes);
  uint64_t found = 0;
  p.rows = parse_plain_csv(text.data(), text.size(), fields, stamped, sided, p.values.data(), symbols.data(), room,
                           p.others.data(), p.others.size(), &found);
  p.others.resize(found);
  p.values.resize(p.rows > 0 ? size_t(p.rows) * (fields + 1) : 0);
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint32_t fields = 1 + (data[0] & 7);
  const bool stamped = data[0] & 8, sided = (data[0] & 16) && fields > kSideField;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  const Parsed lenient = parse(text, fields, stamped, sided, true);
  if (lenient.rows < 0) fuzz::fail("refused with room for every line");
  std::string kept;
  uint64_t at = 0, before = 0;
  for (const OtherLine& o : lenient.others) {
    if (o.begin < at || o.end <= o.begin || o.end > text.size()) fuzz::fail("a line set aside out of order or bounds");
    if (o.before_row < before || o.before_row > uint64_t(lenient.rows)) fuzz::fail("a line set aside in no place");
    if (o.begin > 0 && text[o.begin - 1] != '\n') fuzz::fail("a line set aside begins inside a line");
    if (o.end < text.size() && text[o.end - 1] != '\n') fuzz::fail("a line set aside ends inside a line");
    const std::string alone = text.substr(o.begin, o.end - o.begin);
    if (parse(alone, fields, stamped, sided, false).rows != -1) fuzz::fail("a line set aside is plain alone");
    kept += text.substr(at, o.begin - at);
    at = o.end;
    before = o.before_row;
  }
  kept += text.substr(at);
  const Parsed strict = parse(kept, fields, stamped, sided, false);
  if (strict.rows != lenient.rows || strict.values != lenient.values)
    fuzz::fail("the output without its lines set aside parses otherwise");
  if (lenient.others.empty() && parse(text, fields, stamped, sided, false).rows != lenient.rows)
    fuzz::fail("no line set aside, yet the strict reader refuses");
  return 0;
}
