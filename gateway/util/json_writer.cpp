#include "util/json_writer.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace itchbench {

void JsonWriter::indent() {
  out_ += '\n';
  out_.append(first_.size() * 2, ' ');
}

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (first_.empty()) return;
  if (!first_.back()) out_ += ',';
  first_.back() = false;
  indent();
}

JsonWriter& JsonWriter::begin_object() {
  separate();
  out_ += '{';
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_object() {
  const bool empty = first_.back();
  first_.pop_back();
  if (!empty) indent();
  out_ += '}';
  if (first_.empty()) out_ += '\n';
  return *this;
}
JsonWriter& JsonWriter::begin_array() {
  separate();
  out_ += '[';
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_array() {
  const bool empty = first_.back();
  first_.pop_back();
  if (!empty) indent();
  out_ += ']';
  return *this;
}
JsonWriter& JsonWriter::key(std::string_view k) {
  separate();
  write_string(k);
  out_ += ": ";
  after_key_ = true;
  return *this;
}
JsonWriter& JsonWriter::value(uint64_t v) {
  separate();
  out_ += std::to_string(v);
  return *this;
}
JsonWriter& JsonWriter::value(int64_t v) {
  separate();
  out_ += std::to_string(v);
  return *this;
}
JsonWriter& JsonWriter::value(double v) {
  separate();
  if (!std::isfinite(v)) {
    out_ += "null";
    return *this;
  }
  char buf[32];
  // Shortest text that reads back as the same double: stable and readable.
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, res.ptr);
  return *this;
}
JsonWriter& JsonWriter::value(bool v) {
  separate();
  out_ += v ? "true" : "false";
  return *this;
}
JsonWriter& JsonWriter::value(std::string_view v) {
  separate();
  write_string(v);
  return *this;
}

void JsonWriter::write_string(std::string_view v) {
  out_ += '"';
  for (char c : v) {
    switch (c) {
      case '"': out_ += "\\\""; break;
      case '\\': out_ += "\\\\"; break;
      case '\n': out_ += "\\n"; break;
      case '\t': out_ += "\\t"; break;
      default:
        // Strings are bytes (ITCH alpha fields may hold anything): a control
        // byte or one outside ASCII becomes \u00XX, the code point of that
        // byte's value, so the output is always ASCII, hence valid UTF-8,
        // and a reader gets the exact bytes back by encoding as Latin-1.
        if (uint8_t(c) < 0x20 || uint8_t(c) >= 0x7F) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(uint8_t(c)));
          out_ += buf;
        } else {
          out_ += c;
        }
    }
  }
  out_ += '"';
}

}  // namespace itchbench
