// JSON for tool output (counters, summaries, gateway.json), written through
// nlohmann/json with keys in the order written, so output is stable byte for
// byte. This streaming front end keeps the many writers of nested reports
// short; strings are bytes (ITCH alpha fields may hold anything), so each
// byte is taken as its Latin-1 code point and the output is pure ASCII.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace itchbench {

class JsonWriter {
 public:
  JsonWriter();
  ~JsonWriter();
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);
  JsonWriter& value(uint64_t v);
  JsonWriter& value(int64_t v);
  JsonWriter& value(int v) { return value(int64_t(v)); }
  JsonWriter& value(double v);  // NaN and infinities: null
  JsonWriter& value(bool v);
  JsonWriter& value(std::string_view v);
  JsonWriter& value(const char* v) { return value(std::string_view(v)); }
  template <class T>
  JsonWriter& field(std::string_view k, T v) {
    key(k);
    return value(v);
  }
  // The document so far, indented by two, a newline after a closed top-level value.
  const std::string& str() const;

 private:
  struct Tree;
  std::unique_ptr<Tree> tree_;
};

}  // namespace itchbench
