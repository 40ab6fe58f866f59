#include "util/json_writer.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

namespace itchbench {

using Json = nlohmann::ordered_json;

struct JsonWriter::Tree {
  Json root;
  bool started = false;
  std::vector<Json*> open;  // containers begun and not yet ended, innermost last
  std::string pending_key;
  bool has_key = false;
  std::string text;

  // Where the next value goes: the root, an array's end, or an object's pending key.
  Json& slot() {
    if (open.empty()) {
      if (started) throw std::logic_error("JsonWriter: a second top-level value");
      started = true;
      return root;
    }
    Json& parent = *open.back();
    if (parent.is_array()) return parent.emplace_back();
    if (!has_key) throw std::logic_error("JsonWriter: a value in an object needs a key first");
    has_key = false;
    return parent[pending_key];
  }
  void put(Json v) { slot() = std::move(v); }
  void begin(Json empty) {
    Json& at = slot();
    at = std::move(empty);
    open.push_back(&at);
  }
  void end() {
    if (open.empty()) throw std::logic_error("JsonWriter: end without begin");
    open.pop_back();
  }
};

namespace {
// Bytes to UTF-8, each byte its Latin-1 code point: any bytes make valid JSON, and a reader gets them back exactly
// by encoding the string as Latin-1 (dump's ensure_ascii then writes every byte >= 0x7F as \u00XX).
std::string latin1_to_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (const char c : bytes) {
    const auto b = uint8_t(c);
    if (b < 0x80) {
      out += c;
    } else {
      out += char(0xC0 | (b >> 6));
      out += char(0x80 | (b & 0x3F));
    }
  }
  return out;
}
}  // namespace

JsonWriter::JsonWriter() : tree_(std::make_unique<Tree>()) {}
JsonWriter::~JsonWriter() = default;

JsonWriter& JsonWriter::begin_object() {
  tree_->begin(Json::object());
  return *this;
}
JsonWriter& JsonWriter::end_object() {
  tree_->end();
  return *this;
}
JsonWriter& JsonWriter::begin_array() {
  tree_->begin(Json::array());
  return *this;
}
JsonWriter& JsonWriter::end_array() {
  tree_->end();
  return *this;
}
JsonWriter& JsonWriter::key(std::string_view k) {
  tree_->pending_key = latin1_to_utf8(k);
  tree_->has_key = true;
  return *this;
}
JsonWriter& JsonWriter::value(uint64_t v) {
  tree_->put(v);
  return *this;
}
JsonWriter& JsonWriter::value(int64_t v) {
  tree_->put(v);
  return *this;
}
JsonWriter& JsonWriter::value(double v) {
  tree_->put(std::isfinite(v) ? Json(v) : Json(nullptr));
  return *this;
}
JsonWriter& JsonWriter::value(bool v) {
  tree_->put(v);
  return *this;
}
JsonWriter& JsonWriter::value(std::string_view v) {
  tree_->put(latin1_to_utf8(v));
  return *this;
}

const std::string& JsonWriter::str() const {
  tree_->text = tree_->started ? tree_->root.dump(2, ' ', true) : std::string();
  if (tree_->started && tree_->open.empty()) tree_->text += '\n';
  return tree_->text;
}

}  // namespace itchbench
