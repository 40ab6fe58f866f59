// Every itchbench tool's command line, parsed by CLI11: help (-h, --help),
// errors, `--name=value`, and options read from a file (`--config FILE`,
// CLI11's TOML form: one `name = value` a line). This is only the thin
// declaration layer the tools share, so that every one of them exits 0 after
// --help and 2 on a bad argument with "PROGRAM: message (see PROGRAM --help)",
// and reads its values the same way (strings, checked numbers).
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace itchbench::cli {

class Args {
 public:
  // usage: the tool's synopsis ("itch-synth [options] --out FILE"), shown above the description.
  Args(std::string program, std::string usage, std::string description);
  ~Args();
  Args(const Args&) = delete;
  Args& operator=(const Args&) = delete;

  // Declare options before parse(). Value options print as "--name VALUE".
  void option(const std::string& name, const std::string& value_name, const std::string& help,
              const std::string& default_value = "");
  void flag(const std::string& name, const std::string& help);
  void positional(const std::string& name, const std::string& help, bool required = true);

  // Exits 0 after printing help for --help; exits 2 with a message on error.
  void parse(int argc, char** argv);

  bool has(const std::string& name) const;  // given on the command line (or in --config)
  bool flag_set(const std::string& name) const;
  std::string get(const std::string& name) const;  // value or its default
  uint64_t get_u64(const std::string& name) const;
  int64_t get_i64(const std::string& name) const;
  double get_double(const std::string& name) const;
  const std::vector<std::string>& positionals() const { return positional_values_; }

  [[noreturn]] void fail(const std::string& message) const;  // exit 2
  // Fails (exit 2) when output names the file input is: written through output.PID.tmp and renamed, it would
  // replace the input it is made from (a hard link or another spelling of the path included).
  void refuse_overwriting(const std::string& input, const std::string& output) const;
  std::string help() const;

 private:
  const CLI::Option& declared(const std::string& name) const;

  std::string program_;
  std::unique_ptr<CLI::App> app_;
  std::map<std::string, std::string> values_;    // bound to the options (map nodes do not move)
  std::map<std::string, std::string> defaults_;
  std::map<std::string, CLI::Option*> options_;
  std::deque<std::string> positional_storage_;    // bound to the positionals, in order
  std::vector<CLI::Option*> positional_options_;
  std::vector<std::string> positional_values_;    // those given, in order
};

}  // namespace itchbench::cli
