// Minimal command-line parsing shared by every itchbench tool, so that all of
// them answer --help the same way and reject bad arguments with exit code 2.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace itchbench::cli {

class Args {
 public:
  // usage: first line of --help ("itch-synth [options] --out FILE").
  Args(std::string program, std::string usage, std::string description);

  // Declare options before parse(). Value options print as "--name VALUE".
  void option(const std::string& name, const std::string& value_name, const std::string& help,
              const std::string& default_value = "");
  void flag(const std::string& name, const std::string& help);
  void positional(const std::string& name, const std::string& help, bool required = true);

  // Exits 0 after printing help for --help; exits 2 with a message on error.
  void parse(int argc, char** argv);

  bool has(const std::string& name) const;  // given on the command line
  bool flag_set(const std::string& name) const;
  std::string get(const std::string& name) const;  // value or its default
  uint64_t get_u64(const std::string& name) const;
  int64_t get_i64(const std::string& name) const;
  double get_double(const std::string& name) const;
  const std::vector<std::string>& positionals() const { return positional_values_; }

  [[noreturn]] void fail(const std::string& message) const;  // exit 2
  std::string help() const;

 private:
  struct Spec {
    std::string value_name;  // empty: flag
    std::string help;
    std::string default_value;
  };
  struct Positional {
    std::string name, help;
    bool required;
  };
  std::string program_, usage_, description_;
  std::vector<std::string> order_;
  std::map<std::string, Spec> specs_;
  std::vector<Positional> positional_specs_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_values_;
};

}  // namespace itchbench::cli
