#include "util/cli.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace itchbench::cli {

Args::Args(std::string program, std::string usage, std::string description)
    : program_(std::move(program)), usage_(std::move(usage)), description_(std::move(description)) {
  flag("help", "show this help and exit");
}

void Args::option(const std::string& name, const std::string& value_name, const std::string& help,
                  const std::string& default_value) {
  order_.push_back(name);
  specs_[name] = {value_name, help, default_value};
}

void Args::flag(const std::string& name, const std::string& help) {
  order_.push_back(name);
  specs_[name] = {"", help, ""};
}

void Args::positional(const std::string& name, const std::string& help, bool required) {
  positional_specs_.push_back({name, help, required});
}

std::string Args::help() const {
  std::ostringstream o;
  o << "usage: " << usage_ << "\n\n" << description_ << "\n";
  if (!positional_specs_.empty()) {
    o << "\narguments:\n";
    for (const auto& p : positional_specs_) o << "  " << p.name << "\n      " << p.help << "\n";
  }
  o << "\noptions:\n";
  for (const auto& name : order_) {
    const Spec& s = specs_.at(name);
    o << "  --" << name;
    if (!s.value_name.empty()) o << " " << s.value_name;
    o << "\n      " << s.help;
    if (!s.default_value.empty()) o << " (default: " << s.default_value << ")";
    o << "\n";
  }
  return o.str();
}

void Args::fail(const std::string& message) const {
  std::fprintf(stderr, "%s: %s\n(see %s --help)\n", program_.c_str(), message.c_str(),
               program_.c_str());
  std::exit(2);
}

void Args::parse(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0 || a == "--") {
      positional_values_.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    const bool inline_value = name.find('=') != std::string::npos;
    if (inline_value) {
      value = name.substr(name.find('=') + 1);
      name = name.substr(0, name.find('='));
    }
    auto it = specs_.find(name);
    if (it == specs_.end()) fail("unknown option --" + name);
    if (it->second.value_name.empty()) {
      if (inline_value) fail("--" + name + " takes no value");
      values_[name] = "1";
    } else {
      if (!inline_value) {
        if (i + 1 >= argc) fail("--" + name + " needs a value (" + it->second.value_name + ")");
        value = argv[++i];
      }
      values_[name] = value;
    }
  }
  if (flag_set("help")) {
    std::fputs(help().c_str(), stdout);
    std::exit(0);
  }
  size_t required = 0;
  for (const auto& p : positional_specs_) required += p.required ? 1 : 0;
  if (positional_values_.size() < required)
    fail("missing argument " + positional_specs_[positional_values_.size()].name);
  if (positional_values_.size() > positional_specs_.size())
    fail("unexpected argument '" + positional_values_[positional_specs_.size()] + "'");
}

bool Args::has(const std::string& name) const { return values_.count(name) != 0; }
bool Args::flag_set(const std::string& name) const { return values_.count(name) != 0; }

std::string Args::get(const std::string& name) const {
  auto v = values_.find(name);
  if (v != values_.end()) return v->second;
  return specs_.at(name).default_value;
}

uint64_t Args::get_u64(const std::string& name) const {
  const std::string s = get(name);
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
  if (s.empty() || *end != '\0' || errno != 0 || s[0] == '-')
    fail("--" + name + ": '" + s + "' is not a non-negative integer");
  return v;
}

int64_t Args::get_i64(const std::string& name) const {
  const std::string s = get(name);
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 0);
  if (s.empty() || *end != '\0' || errno != 0) fail("--" + name + ": '" + s + "' is not an integer");
  return v;
}

double Args::get_double(const std::string& name) const {
  const std::string s = get(name);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0') fail("--" + name + ": '" + s + "' is not a number");
  return v;
}

}  // namespace itchbench::cli
