// Small streaming JSON writer for tool output (counters, summaries). Keys
// come out in the order written, so output is stable byte for byte. The
// output is pure ASCII whatever bytes a string holds (see write_string).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace itchbench {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);
  JsonWriter& value(uint64_t v);
  JsonWriter& value(int64_t v);
  JsonWriter& value(int v) { return value(int64_t(v)); }
  JsonWriter& value(double v);
  JsonWriter& value(bool v);
  JsonWriter& value(std::string_view v);
  JsonWriter& value(const char* v) { return value(std::string_view(v)); }
  template <class T>
  JsonWriter& field(std::string_view k, T v) {
    key(k);
    return value(v);
  }
  const std::string& str() const { return out_; }

 private:
  void separate();
  void write_string(std::string_view v);
  void indent();
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

}  // namespace itchbench
