#include "util/cli.hpp"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include <sys/stat.h>

namespace itchbench::cli {

Args::Args(std::string program, std::string usage, std::string description)
    : program_(std::move(program)), app_(std::make_unique<CLI::App>(usage + "\n\n" + description, program_)) {
  app_->set_config("--config", "", "read options from FILE: one `name = value` a line (TOML)")->type_name("FILE");
  app_->get_formatter()->column_width(34);
}

Args::~Args() = default;

void Args::option(const std::string& name, const std::string& value_name, const std::string& help,
                  const std::string& default_value) {
  defaults_[name] = default_value;
  CLI::Option* o = app_->add_option("--" + name, values_[name], help)->type_name(value_name);
  if (!default_value.empty()) o->default_str(default_value);
  options_[name] = o;
}

void Args::flag(const std::string& name, const std::string& help) {
  options_[name] = app_->add_flag("--" + name, help);
}

void Args::positional(const std::string& name, const std::string& help, bool required) {
  positional_storage_.emplace_back();
  positional_options_.push_back(app_->add_option(name, positional_storage_.back(), help)->required(required));
}

std::string Args::help() const { return app_->help(); }

void Args::fail(const std::string& message) const {
  std::fprintf(stderr, "%s: %s\n(see %s --help)\n", program_.c_str(), message.c_str(), program_.c_str());
  std::exit(2);
}

void Args::refuse_overwriting(const std::string& input, const std::string& output) const {
  struct stat in {}, out {};
  if (::stat(input.c_str(), &in) == 0 && ::stat(output.c_str(), &out) == 0 && in.st_dev == out.st_dev &&
      in.st_ino == out.st_ino)
    fail(output + " is the input " + input + ": it would be replaced by what is made from it; write elsewhere");
}

void Args::parse(int argc, char** argv) {
  try {
    app_->parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(help().c_str(), stdout);
    std::exit(0);
  } catch (const CLI::ParseError& e) {
    fail(e.what());
  }
  for (size_t i = 0; i < positional_options_.size(); ++i)
    if (positional_options_[i]->count()) positional_values_.push_back(positional_storage_[i]);
}

const CLI::Option& Args::declared(const std::string& name) const {
  const auto it = options_.find(name);
  if (it == options_.end()) fail("internal: option --" + name + " was never declared");
  return *it->second;
}

bool Args::has(const std::string& name) const { return declared(name).count() != 0; }
bool Args::flag_set(const std::string& name) const { return declared(name).count() != 0; }

std::string Args::get(const std::string& name) const {
  return has(name) ? values_.at(name) : defaults_.at(name);
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
