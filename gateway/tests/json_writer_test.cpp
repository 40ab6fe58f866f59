// JSON output must be valid (RFC 8259) whatever bytes a string holds: ITCH
// alpha fields come from the wire and may carry control or non-ASCII bytes.
#include "util/json_writer.hpp"

#include <gtest/gtest.h>

#include <string>

using itchbench::JsonWriter;

namespace {
std::string string_value(std::string_view bytes) {
  JsonWriter j;
  j.begin_array().value(bytes).end_array();
  return j.str();
}
}  // namespace

TEST(JsonWriter, EscapesQuotesBackslashAndControlBytes) {
  EXPECT_NE(string_value("a\"b\\c").find(R"("a\"b\\c")"), std::string::npos);
  EXPECT_NE(string_value(std::string("\x01\n\t\x1f", 4)).find(R"("\u0001\n\t\u001f")"), std::string::npos);
}

TEST(JsonWriter, NonAsciiBytesBecomeLatin1CodePoints) {
  // 0xC3 0x28 is not valid UTF-8; 0xFF never is; 0x7F is DEL.
  EXPECT_NE(string_value("\xC3\x28\xFF\x7F").find(R"("\u00c3(\u00ff\u007f")"), std::string::npos);
}

TEST(JsonWriter, OutputIsAsciiForEveryByte) {
  std::string all;
  for (int b = 0; b < 256; ++b) all += char(b);
  const std::string out = string_value(all);
  for (char c : out) ASSERT_TRUE((uint8_t(c) >= 0x20 && uint8_t(c) < 0x7F) || c == '\n') << int(uint8_t(c));
}
