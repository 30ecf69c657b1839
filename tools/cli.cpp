// tools: argument parsing shared by every `swz` subcommand (see cli.hpp).
#include "cli.hpp"

#include <cstdio>
#include <cstdlib>

#include "swzjit/error.hpp"
#include "swzjit/types.hpp"

namespace swz {
namespace cli {

Args::Args(std::vector<std::string> argv) : argv_(std::move(argv)), used_(argv_.size(), false) {}

bool Args::flag(const std::string& name) {
  const std::string key = "--" + name;
  bool found = false;
  for (std::size_t i = 0; i < argv_.size(); ++i) {
    if (argv_[i] == key) {
      used_[i] = true;
      found = true;
    } else if (argv_[i].rfind(key + "=", 0) == 0) {
      throw UsageError("--" + name + " takes no value");
    }
  }
  return found;
}

std::optional<std::string> Args::value(const std::string& name) {
  const std::string key = "--" + name;
  std::optional<std::string> result;
  for (std::size_t i = 0; i < argv_.size(); ++i) {
    if (used_[i]) continue;
    if (argv_[i] == key) {
      if (i + 1 >= argv_.size()) throw UsageError(key + " needs a value");
      if (result) throw UsageError(key + " given twice");
      used_[i] = used_[i + 1] = true;
      result = argv_[i + 1];
      ++i;
    } else if (argv_[i].rfind(key + "=", 0) == 0) {
      if (result) throw UsageError(key + " given twice");
      used_[i] = true;
      result = argv_[i].substr(key.size() + 1);
    }
  }
  return result;
}

std::string Args::value_or(const std::string& name, const std::string& fallback) {
  auto v = value(name);
  return v ? *v : fallback;
}

std::vector<std::string> Args::values(const std::string& name) {
  const std::string key = "--" + name;
  std::vector<std::string> result;
  for (std::size_t i = 0; i < argv_.size(); ++i) {
    if (used_[i]) continue;
    if (argv_[i] == key) {
      if (i + 1 >= argv_.size()) throw UsageError(key + " needs a value");
      used_[i] = used_[i + 1] = true;
      result.push_back(argv_[i + 1]);
      ++i;
    } else if (argv_[i].rfind(key + "=", 0) == 0) {
      used_[i] = true;
      result.push_back(argv_[i].substr(key.size() + 1));
    }
  }
  return result;
}

std::optional<std::string> Args::next_positional() {
  for (std::size_t i = 0; i < argv_.size(); ++i) {
    if (used_[i]) continue;
    if (argv_[i].rfind("--", 0) == 0 && argv_[i].size() > 2) {
      // skip "--name value" pairs that someone may still ask for: positionals never start with "--"
      continue;
    }
    if (argv_[i] == "-h") continue;
    used_[i] = true;
    return argv_[i];
  }
  return std::nullopt;
}

std::optional<std::string> Args::peek_positional() const {
  for (std::size_t i = 0; i < argv_.size(); ++i) {
    if (used_[i] || (argv_[i].rfind("--", 0) == 0 && argv_[i].size() > 2) || argv_[i] == "-h") continue;
    return argv_[i];
  }
  return std::nullopt;
}

bool Args::given(const std::string& name) const {
  const std::string key = "--" + name;
  for (const auto& a : argv_)
    if (a == key || a.rfind(key + "=", 0) == 0) return true;
  return false;
}

bool Args::wants_help() const {
  for (const auto& a : argv_)
    if (a == "--help" || a == "-h") return true;
  return false;
}

std::vector<std::string> Args::rest() const {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < argv_.size(); ++i)
    if (!used_[i]) out.push_back(argv_[i]);
  return out;
}

void take_global_options(std::vector<std::string>& argv) {
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string url;
    std::size_t n = 0;
    if (argv[i] == "--remote") {
      if (i + 1 >= argv.size()) throw UsageError("--remote needs a value (redis://[user:password@]host:port[/db])");
      url = argv[i + 1];
      n = 2;
    } else if (argv[i].rfind("--remote=", 0) == 0) {
      url = argv[i].substr(9);
      n = 1;
    } else {
      continue;
    }
    if (url.rfind("redis://", 0) != 0)
      throw UsageError("--remote: expected redis://[user:password@]host:port[/db]");  // never echo a password
    ::setenv("SWZJIT_REMOTE_CACHE", url.c_str(), 1);
    argv.erase(argv.begin() + static_cast<std::ptrdiff_t>(i), argv.begin() + static_cast<std::ptrdiff_t>(i + n));
    --i;
  }
}

void Args::finish() const {
  for (std::size_t i = 0; i < argv_.size(); ++i)
    if (!used_[i]) throw UsageError("unexpected argument '" + argv_[i] + "' (see --help)");
}

long long parse_int(const std::string& arg, const std::string& text, long long lo, long long hi) {
  // NOTE: the library's parser, so options, lists and config fields read numbers alike (issue 10).
  try {
    return parse_integer(arg, text, lo, hi);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

double parse_real(const std::string& arg, const std::string& text, double lo, double hi) {
  char range[96];
  std::snprintf(range, sizeof range, " (allowed: a decimal number from %g to %g)", lo, hi);
  // The same strictness as parse_integer: digits, one optional '.', a '-' only where negatives mean something.
  const std::size_t first = !text.empty() && text[0] == '-' && lo < 0 ? 1 : 0;
  const std::size_t dot = text.find('.', first);
  const auto all_digits = [&](std::size_t from, std::size_t to) {
    if (from >= to) return false;
    for (std::size_t j = from; j < to; ++j)
      if (text[j] < '0' || text[j] > '9') return false;
    return true;
  };
  const bool ok = dot == std::string::npos ? all_digits(first, text.size())
                                           : all_digits(first, dot) && all_digits(dot + 1, text.size());
  if (!ok) throw UsageError(arg + ": '" + text + "' is not a decimal number" + range);
  const double v = std::strtod(text.c_str(), nullptr);
  if (!(v >= lo && v <= hi)) throw UsageError(arg + ": " + text + " is out of range" + range);
  return v;
}

std::vector<long long> parse_int_list(const std::string& arg, const std::string& text, long long lo,
                                      long long hi, std::size_t count) {
  std::vector<long long> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    out.push_back(parse_int(arg, item, lo, hi));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (count != 0 && out.size() != count)
    throw UsageError(arg + ": expected " + std::to_string(count) + " comma-separated integers, got " +
                     std::to_string(out.size()));
  return out;
}

std::string parse_choice(const std::string& arg, const std::string& text, const std::vector<std::string>& choices) {
  std::string allowed;
  for (const auto& c : choices) {
    if (c == text) return text;
    allowed += (allowed.empty() ? "" : "|") + c;
  }
  throw UsageError(arg + ": '" + text + "' is not allowed (allowed: " + allowed + ")");
}

}  // namespace cli
}  // namespace swz
