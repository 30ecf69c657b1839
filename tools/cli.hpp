// tools: argument parsing shared by every `swz` subcommand. Written only against the public API.
// Exit codes: 0 success, 2 bad usage (UsageError or swz::Error of kind InvalidArgument), 1 otherwise.
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "swzjit/error.hpp"

namespace swz {
namespace cli {

/// Bad command-line usage; the message names the argument and what is allowed. Exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Runs `f`, turning an Error(InvalidArgument) of the library into a UsageError naming the flag: the
/// analysis API's messages start with the field's name ("op:", "rows", "pattern"), which is the flag's
/// name without "--".
template <typename F>
auto naming_flag(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::InvalidArgument) throw;
    throw UsageError(std::string("--") + e.what());
  }
}

/// The arguments after `swz <command>`: "--name value", "--name=value", "--flag", positionals.
class Args {
 public:
  explicit Args(std::vector<std::string> argv);

  /// True if --name was given (as a flag, without a value).
  bool flag(const std::string& name);
  /// The value of --name, if given. A missing value (end of argv) is a UsageError.
  std::optional<std::string> value(const std::string& name);
  std::string value_or(const std::string& name, const std::string& fallback);
  /// Every value of a repeatable --name, in order (empty if not given). A missing value is a UsageError.
  std::vector<std::string> values(const std::string& name);
  /// Positional arguments (not starting with "--"), in order; each call consumes the next one.
  std::optional<std::string> next_positional();
  /// The positional next_positional() would return, without consuming it (commands peek at the
  /// kernel family to dispatch).
  std::optional<std::string> peek_positional() const;
  /// True if --name appears at all (as a flag or with a value); consumes nothing.
  bool given(const std::string& name) const;
  /// True if --help or -h was given.
  bool wants_help() const;
  /// The arguments no one has asked for yet, in order (`--problems` passes them on to each problem).
  std::vector<std::string> rest() const;
  /// Throws UsageError naming the first argument no one asked for.
  void finish() const;

 private:
  std::vector<std::string> argv_;
  std::vector<bool> used_;
};

/// Removes the options every command takes from `argv`: `--remote URL` (the remote cache tier, as
/// SWZJIT_REMOTE_CACHE; set in the environment before any cache is opened). Throws UsageError.
void take_global_options(std::vector<std::string>& argv);

/// Parse a decimal integer in [lo, hi] with swz::parse_integer (digits, '-' only when lo < 0); a
/// UsageError names `arg` and the allowed range. Every numeric option and list goes through it.
long long parse_int(const std::string& arg, const std::string& text, long long lo, long long hi);
/// Parse a plain decimal number ("2", "0.5", "-1.25" when lo < 0; no spaces, '+', hex, exponent, inf
/// or nan) in [lo, hi]; a UsageError names `arg` and the allowed range.
double parse_real(const std::string& arg, const std::string& text, double lo, double hi);
/// Parse "a,b,c" into integers in [lo, hi]; `count` > 0 requires exactly that many.
std::vector<long long> parse_int_list(const std::string& arg, const std::string& text, long long lo,
                                      long long hi, std::size_t count = 0);
/// Require one of `choices`; otherwise a UsageError listing them.
std::string parse_choice(const std::string& arg, const std::string& text,
                         const std::vector<std::string>& choices);

/// One subcommand of `swz`.
struct Command {
  const char* name;
  const char* summary;  ///< one line for `swz --help`
  const char* help;     ///< full text for `swz <name> --help` (nullptr when make_help builds it)
  int (*run)(Args& args);
  /// Builds the --help text when it asks the library for defaults (only when --help is given: it costs
  /// static analyses every other invocation would pay for nothing).
  std::string (*make_help)() = nullptr;
};

}  // namespace cli
}  // namespace swz
