// The plain csv reader (log/plain_csv.hpp): lines of numbers alone (the stock a locate or a symbol) parsed whole,
// anything else refused, on outputs written here by hand.
#include "log/plain_csv.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace itchbench;

namespace {

// The rows of text (fields + 1 values each), or -1 as the reader returns it.
std::vector<int64_t> parsed(const std::string& text, uint32_t fields, bool stamped, int64_t* rows,
                            uint64_t capacity = 8, std::string* symbols = nullptr, bool sided = false) {
  std::vector<int64_t> out(capacity * (fields + 1), -7);
  std::string named(capacity * kPlainSymbolBytes, '?');
  *rows = parse_plain_csv(text.data(), text.size(), fields, stamped, sided, out.data(), named.data(), capacity);
  if (symbols) *symbols = named;
  out.resize(*rows > 0 ? size_t(*rows) * (fields + 1) : 0);
  return out;
}

}  // namespace

TEST(PlainCsv, ReadsStampedLinesSkippingBlankOnesWithOrWithoutALastNewline) {
  int64_t rows = 0;
  EXPECT_EQ(parsed("1000 10,1,100\n\n1001 11,2,0\n", 3, true, &rows),
            (std::vector<int64_t>{10, 1, 100, 1000, 11, 2, 0, 1001}));
  EXPECT_EQ(rows, 2);
  EXPECT_EQ(parsed("10,1,100\n11,2,007", 3, false, &rows), (std::vector<int64_t>{10, 1, 100, 0, 11, 2, 7, 0}));
  EXPECT_EQ(rows, 2);
  EXPECT_EQ(parsed("9223372036854775807 1,2,3\n", 3, true, &rows), (std::vector<int64_t>{1, 2, 3, INT64_MAX}));
  // Blanks around fields, a line of blanks, \r\n endings and a last \r: what the line-by-line reader strips.
  EXPECT_EQ(parsed("1000  10 , 1,\t100 \r\n  \t\n1001 11,2,0\r", 3, true, &rows),
            (std::vector<int64_t>{10, 1, 100, 1000, 11, 2, 0, 1001}));
  EXPECT_EQ(rows, 2);
  EXPECT_EQ(parsed("  10,1,100\n", 3, false, &rows), (std::vector<int64_t>{10, 1, 100, 0}));
  parsed("", 3, false, &rows);
  EXPECT_EQ(rows, 0);
}

TEST(PlainCsv, TakesAStockNamedByItsSymbolItsTrailingSpacesDropped) {
  int64_t rows = 0;
  std::string symbols;
  EXPECT_EQ(parsed("1000 10,AAPL,100\n1001 11,2,5\n1002 12,BRK.A  ,7\n", 3, true, &rows, 8, &symbols),
            (std::vector<int64_t>{10, -1, 100, 1000, 11, 2, 5, 1001, 12, -1, 7, 1002}));
  EXPECT_EQ(symbols.substr(0, kPlainSymbolBytes), std::string("AAPL") + std::string(12, '\0'));
  EXPECT_EQ(symbols.substr(2 * kPlainSymbolBytes, kPlainSymbolBytes), std::string("BRK.A") + std::string(11, '\0'));
  for (const char* text : {"1000 10,AA_PL,100\n",           // a byte no symbol has
                           "1000 10,ABCDEFGHIJKLMNOPQ,100\n",  // longer than 16
                           "1000 10,AA\tPL,100\n",            // a tab inside it
                           "1000 10,1,AAPL\n",                // a symbol where a number is due
                           "1000 A,1,100\n"}) {
    parsed(text, 3, true, &rows);
    EXPECT_EQ(rows, -1) << text;
  }
}

TEST(PlainCsv, RefusesAnyLineThatIsNotNumbersAlone) {
  for (const char* text : {
           "1000 10,1,100\n1001 11,2,B\n",    // a letter where a number is due
           "1000 10,1 0,100\n",                // a space inside a number
           " 1000 10,1,100\n",                 // a space before the stamp
           "1000\t10,1,100\n",                 // a tab where the stamp's space is due
           "1000 10,1,100\rX\n",               // a \r that is no line's end
           "1000 10,,100\n",                   // an empty field
           "1000 10,1\n",                      // a field too few
           "1000 10,1,100,5\n",                // a field too many
           "1000 10,1,100,\n",                 // a comma at the end
           "10,1,100\n",                       // no stamp where one is due
           "1000 10,1,9223372036854775808\n",  // past int64
           "1000 10,1,-5\n",                   // a sign
       }) {
    int64_t rows = 0;
    parsed(text, 3, true, &rows);
    EXPECT_EQ(rows, -1) << text;
  }
  int64_t rows = 0;
  parsed("1000 10,1,100\n", 3, false, &rows);  // a stamp where none is due
  EXPECT_EQ(rows, -1);
  parsed("1,2,3\n4,5,6\n7,8,9\n", 3, false, &rows, 2);  // more rows than room
  EXPECT_EQ(rows, -1);
}

TEST(PlainCsv, SetsAsideEachOtherLineWithItsPlaceAndBytes) {
  const std::string text = "junk\n10,1,100\n1 0,1,2\r\n11,2,5\nlast";
  std::vector<int64_t> out(8 * 4, -7);
  std::string symbols(8 * kPlainSymbolBytes, '?');
  OtherLine others[4];
  uint64_t found = 99;
  EXPECT_EQ(parse_plain_csv(text.data(), text.size(), 3, false, false, out.data(), symbols.data(), 8, others, 4, &found), 2);
  out.resize(8);
  EXPECT_EQ(out, (std::vector<int64_t>{10, 1, 100, 0, 11, 2, 5, 0}));
  ASSERT_EQ(found, 3u);
  // "junk\n" before row 0 at bytes 0-5, "1 0,1,2\r\n" before row 1 at 14-23, "last" (no \n) before row 2 at 30-34.
  const uint64_t want[3][3] = {{0, 0, 5}, {1, 14, 23}, {2, 30, 34}};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(others[i].before_row, want[i][0]) << i;
    EXPECT_EQ(others[i].begin, want[i][1]) << i;
    EXPECT_EQ(others[i].end, want[i][2]) << i;
  }
  // More other lines than room: refused, as with none.
  EXPECT_EQ(parse_plain_csv(text.data(), text.size(), 3, false, false, out.data(), symbols.data(), 8, others, 2, &found), -1);
}

TEST(PlainCsv, ReadsALevelChangesSideLetterAsItsByte) {
  int64_t rows = 0;
  EXPECT_EQ(parsed("1000 10,1,B,100,5\n1001 11,AAPL, S ,200,0\n", 5, true, &rows, 8, nullptr, true),
            (std::vector<int64_t>{10, 1, 'B', 100, 5, 1000, 11, -1, 'S', 200, 0, 1001}));
  EXPECT_EQ(rows, 2);
  for (const char* text : {"1000 10,1,b,100,5\n",    // lower case: the line-by-line reader's pattern takes B or S
                           "1000 10,1,X,100,5\n",    // no side
                           "1000 10,1,BS,100,5\n",   // two letters
                           "1000 10,1,66,100,5\n"}) {  // its byte written as a number
    parsed(text, 5, true, &rows, 8, nullptr, true);
    EXPECT_EQ(rows, -1) << text;
  }
  parsed("1000 10,1,B,100,5\n", 5, true, &rows);  // a letter where a number is due, when not sided
  EXPECT_EQ(rows, -1);
}
