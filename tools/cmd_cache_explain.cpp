// tools: `swz cache explain kernel|tuning|PROBLEM` -- why a cache lookup misses: stored entries close to
// the key and the fields that differ (include/swzjit/cache.hpp, Cache::explain).
#include <cstdio>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cache_args.hpp"
#include "swzjit/error.hpp"

namespace swz {
namespace cli {

namespace {

const std::set<std::string> kAllKernelFields = {"format_version", "name_expression", "templates_hash",
                                                  "nvrtc_version", "options", "arch"};
const std::set<std::string> kAllProblemFields = {"operation", "problem",       "device_name",   "arch",
                                                 "sm_count",  "nvrtc_version", "templates_hash"};

/// Prints an explanation, ignoring differences in fields the user did not give (they match any).
int print_explanation(Explanation e, const std::set<std::string>& given, Format format) {
  const bool json = format == Format::Json;
  std::vector<NearMiss> kept;
  for (auto& m : e.near_misses) {
    std::vector<FieldDifference> d;
    for (auto& f : m.differences)
      if (given.count(f.field)) d.push_back(f);
    m.differences = d;
    kept.push_back(m);
  }
  e.near_misses = kept;
  std::size_t matching = 0;
  for (const auto& m : e.near_misses) matching += m.differences.empty() ? 1 : 0;
  if (!e.found && matching > 0)
    e.summary += "\n" + std::to_string(matching) + " stored entries match every field given (the others are unset)";
  if (format == Format::Csv) {
    // One row per differing field of each near miss (a near miss matching every given field: one row
    // with an empty field).
    CsvTable t({"found", "key", "near_miss", "field", "wanted", "stored"});
    for (const auto& m : e.near_misses) {
      if (m.differences.empty()) t.add({boolean(e.found), e.key, m.key, "", "", ""});
      for (const auto& d : m.differences) t.add({boolean(e.found), e.key, m.key, d.field, d.wanted, d.stored});
    }
    if (e.near_misses.empty()) t.add({boolean(e.found), e.key, "", "", "", ""});
    t.print();
  } else if (json) {
    std::string out = "{" + json_version_member() + "\"found\": " + std::string(e.found ? "true" : "false") +
                      ", \"key\": " + json_string(e.key) +
                      ", \"summary\": " + json_string(e.summary) + ", \"near_misses\": [";
    for (std::size_t i = 0; i < e.near_misses.size(); ++i) {
      out += std::string(i ? ", " : "") + "{\"key\": " + json_string(e.near_misses[i].key) + ", \"differences\": [";
      const auto& d = e.near_misses[i].differences;
      for (std::size_t j = 0; j < d.size(); ++j)
        out += std::string(j ? ", " : "") + "{\"field\": " + json_string(d[j].field) +
               ", \"wanted\": " + json_string(d[j].wanted) + ", \"stored\": " + json_string(d[j].stored) + "}";
      out += "]}";
    }
    std::printf("%s]}\n", out.c_str());
  } else {
    std::printf("%s", e.text().c_str());
  }
  return 0;
}

/// The key of the one stored entry that differs only in fields the user left unset, if exactly one does.
std::optional<std::string> sole_match(const Explanation& e, const std::set<std::string>& given) {
  std::optional<std::string> match;
  int count = 0;
  for (const auto& m : e.near_misses) {
    bool differs = false;
    for (const auto& d : m.differences) differs = differs || given.count(d.field) > 0;
    if (!differs) {
      match = m.key;
      ++count;
    }
  }
  return count == 1 ? match : std::nullopt;
}

}  // namespace

std::string explain_form(const CacheArgs& o, Args& args, std::optional<std::string>& bare_problem) {
  std::string what = args.next_positional().value_or("");
  if (what != "kernel" && what != "tuning") {
    if (what.empty()) throw UsageError("`swz cache explain` needs `kernel`, `tuning` or a problem string");
    bare_problem = what;
    what = "tuning";
  }
  if (what == "kernel") {
    allow_only(o, "explain kernel", {"name", "arch", "nvrtc", "templates-hash", "options", "format-version"}, true);
    if (!o.get("name")) throw UsageError("`swz cache explain kernel` needs --name EXPR (the name expression)");
    if (auto fv = o.get("format-version")) parse_int("--format-version", *fv, 0, 1000000);
  } else {
    allow_only(o, "explain tuning",
               {"problem", "operation", "device", "arch", "sm-count", "nvrtc", "templates-hash", "space-hash"}, true);
    if (bare_problem && o.get("problem")) throw UsageError("give the problem once (positionally or with --problem)");
    if (!bare_problem && o.get("problem").value_or("").empty())
      throw UsageError("`swz cache explain tuning` needs --problem P");
    if (auto sm = o.get("sm-count")) parse_int("--sm-count", *sm, 0, 100000);
  }
  return what;
}

int run_explain(Cache& cache, const CacheArgs& o, const std::string& what,
                const std::optional<std::string>& bare_problem) {
  std::set<std::string> given;
  auto field = [&](const char* opt, const char* name) -> std::string {
    auto v = o.get(opt);
    if (v) given.insert(name);
    return v.value_or("");
  };
  if (what == "kernel") {
    KernelKey key;
    key.name_expression = field("name", "name_expression");
    key.arch = field("arch", "arch");
    key.nvrtc_version = field("nvrtc", "nvrtc_version");
    key.templates_hash = field("templates-hash", "templates_hash");
    if (auto opts = o.get("options")) {
      given.insert("options");
      std::istringstream is(*opts);
      for (std::string w; is >> w;) key.options.push_back(w);
    }
    if (auto fv = o.get("format-version")) {
      given.insert("format_version");
      key.format_version = static_cast<int>(parse_int("--format-version", *fv, 0, 1000000));
    }
    Explanation e = cache.explain(key);
    // One stored entry matches every field given: explain against its full key instead.
    if (const auto full = e.found ? std::nullopt : sole_match(e, given))
      for (const auto& l : cache.list_kernels())
        if (l.key == *full) return print_explanation(cache.explain(l.fields), kAllKernelFields, o.format);
    return print_explanation(e, given, o.format);
  }
  TuningProblemKey key;
  key.problem = bare_problem ? *bare_problem : field("problem", "problem");
  given.insert("problem");
  key.operation = field("operation", "operation");
  if (key.operation.empty()) {
    // Infer the operation from stored problems with this problem string (there is usually one).
    std::set<std::string> ops;
    for (const auto& t : cache.list_tuning())
      if (t.problem.problem == key.problem) ops.insert(t.problem.operation);
    if (ops.size() > 1) throw UsageError("several operations store problem '" + key.problem + "'; give --operation");
    if (ops.empty()) {
      const std::string summary =
          "miss: no stored tuning result has the problem '" + key.problem + "' (see `swz cache ls`)";
      if (o.format == Format::Csv)
        CsvTable({"found", "key", "near_miss", "field", "wanted", "stored"}).print();
      else if (o.json)
        std::printf("{%s\"found\": false, \"key\": \"\", \"summary\": %s, \"near_misses\": []}\n",
                    json_version_member().c_str(), json_string(summary).c_str());
      else
        std::printf("%s\n", summary.c_str());
      return 0;
    }
    key.operation = *ops.begin();
  }
  given.insert("operation");
  key.device_name = field("device", "device_name");
  key.arch = field("arch", "arch");
  key.nvrtc_version = field("nvrtc", "nvrtc_version");
  key.templates_hash = field("templates-hash", "templates_hash");
  if (auto sm = o.get("sm-count")) {
    given.insert("sm_count");
    key.sm_count = static_cast<int>(parse_int("--sm-count", *sm, 0, 100000));
  }
  const std::string space = o.get("space-hash").value_or("");
  Explanation e = cache.explain(key, space);
  if (const auto full = e.found ? std::nullopt : sole_match(e, given))
    for (const auto& t : cache.list_tuning())
      if (t.key == *full) return print_explanation(cache.explain(t.problem, space), kAllProblemFields, o.format);
  return print_explanation(e, given, o.format);
}

}  // namespace cli
}  // namespace swz
