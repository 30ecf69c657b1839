// tools: the options of `swz cache <action>` (tools/cmd_cache.cpp), shared with `swz cache explain`
// (tools/cmd_cache_explain.cpp): every --name VALUE, the output format, and the per-action checks.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "cli.hpp"
#include "output.hpp"
#include "swzjit/cache.hpp"

namespace swz {
namespace cli {

/// What `swz cache` was given, read before the cache is opened.
struct CacheArgs {
  std::map<std::string, std::string> values;  ///< every --name VALUE given
  Format format = Format::Text;
  bool json = false;  ///< format == Format::Json
  bool read_only = false;
  bool force_target = false;
  std::optional<std::string> get(const std::string& name) const {
    auto it = values.find(name);
    return it == values.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
};

/// Throws UsageError for an option (other than --dir) not in `allowed`, or a --format other than text
/// where `formats_ok` is false.
void allow_only(const CacheArgs& o, const std::string& action, const std::set<std::string>& allowed, bool formats_ok);

/// `explain kernel|tuning|PROBLEM`: checks the options for that form (before the cache is opened) and
/// returns "kernel" or "tuning"; a bare problem string lands in `bare_problem`.
std::string explain_form(const CacheArgs& o, Args& args, std::optional<std::string>& bare_problem);
/// Prints why a kernel or tuning lookup misses (text, json or csv).
int run_explain(Cache& cache, const CacheArgs& o, const std::string& what, const std::optional<std::string>& bare_problem);

}  // namespace cli
}  // namespace swz
