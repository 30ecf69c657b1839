// tools: `swz cache` -- inspect and maintain the on-disk cache of compiled kernels and tuning
// results (include/swzjit/cache.hpp): ls, stats, verify, gc, clear, export, import, explain.
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "cache_args.hpp"
#include "problem_list.hpp"
#include "swzjit/cache.hpp"
#include "swzjit/error.hpp"

namespace swz {
namespace cli {

namespace {

const char kHelp[] =
    "usage: swz cache <action> [options]\n"
    "\n"
    "Inspect and maintain the cache of compiled kernels (cubins) and tuning results: one SQLite\n"
    "database in $SWZJIT_CACHE_DIR, else $XDG_CACHE_HOME/swzjit, else ~/.cache/swzjit.\n"
    "\n"
    "actions:\n"
    "  ls                     kernel entries (most recently used first) and tuned problems\n"
    "  stats                  location, mode, entry counts and bytes\n"
    "  verify (or check)      check every row's checksum and key; delete bad rows\n"
    "                         (exit 1 if any row was bad or the database was damaged)\n"
    "  gc --max-size SIZE     evict least-recently-used kernels until at most SIZE bytes remain\n"
    "  clear                  delete every kernel and tuning result\n"
    "  export FILE [--sign KEYFILE] [--force-target]\n"
    "                         write every entry into one standalone file (to ship or copy): a new\n"
    "                         file renamed over FILE; a symbolic link, FIFO or device at FILE is\n"
    "                         refused unless --force-target; --sign adds an HMAC-SHA-256 signature\n"
    "  import FILE [--key KEYFILE]\n"
    "                         merge a file written by export; rows failing their checksum are skipped.\n"
    "                         With --key, an unsigned or tampered file is refused; without it the\n"
    "                         import trusts the file's author (a cubin is code that will run)\n"
    "  explain kernel --name EXPR [--arch A] [--nvrtc V] [--templates-hash H] [--options 'O1 O2']\n"
    "                         [--format-version N]\n"
    "                         why a kernel lookup misses: stored entries with the same name\n"
    "                         expression and the key fields that differ (fields not given match any)\n"
    "  explain tuning --problem P [--operation OP] [--device NAME] [--arch A] [--sm-count N]\n"
    "                 [--nvrtc V] [--templates-hash H] [--space-hash S]\n"
    "  explain P              short for `explain tuning --problem P`\n"
    "                         why a tuning lookup misses: stored problems that are close and the\n"
    "                         fields that differ; with --space-hash, whether that search space has a winner\n"
    "\n"
    "  warm --problems FILE [--shard i/n] [--arch A] [--list] [--quiet]\n"
    "                         fetch (local cache, then the remote tier) or compile the kernel each problem\n"
    "                         of FILE needs, before the first request. FILE: one problem per line in the\n"
    "                         command line's syntax (`gemm --m 4096 --n 4096 --k 4096 --dtype f16`,\n"
    "                         `transpose --rows 8192 --cols 8192`), # comments; a bad line is named.\n"
    "                         --arch: compile the default config for that target (no GPU needed);\n"
    "                         without it, the config a call on GPU 0 would use (the tuned winner).\n"
    "                         --shard i/n: only problems k with k %% n == i (0 <= i < n), so n machines\n"
    "                         with the same FILE share the work exactly; --list prints them and stops.\n"
    "                         Each remote call may take up to 1 s here (SWZJIT_REMOTE_CACHE_TIMEOUT_MS\n"
    "                         overrides it). exit 1 if any problem failed\n"
    "\n"
    "options:\n"
    "  --dir DIR              use the cache in DIR instead of the default location (--cache-dir DIR,\n"
    "                         as swz run and swz autotune spell it, is the same)\n"
    "  --remote URL           use a remote cache tier (as SWZJIT_REMOTE_CACHE; every command takes it)\n"
    "  --format F             text (default), json (one object with swzjit_version; --json is the same)\n"
    "                         or csv (a header row, one row per result: ls one per kernel and per tuned\n"
    "                         winner, explain one per differing field, the others one row) for ls, stats,\n"
    "                         verify, gc, import, explain and warm; clear and export print text only\n"
    "  --read-only            never write the cache (as SWZJIT_CACHE_READ_ONLY=1): stored entries are\n"
    "                         read, nothing is stored, deleted or repaired\n"
    "  --help                 this text\n"
    "\n"
    "SIZE is a byte count, optionally with K, M, G or T (powers of 1024): 0, 500000, 10M, 1G.\n"
    "remote tier: SWZJIT_REMOTE_CACHE=redis://[user:password@]host:port[/db]; SWZJIT_REMOTE_CACHE_KEY (or\n"
    "_KEY_FILE) signs and authenticates entries (without it: read-only); SWZJIT_REMOTE_CACHE_TIMEOUT_MS\n"
    "(default 50) bounds each call, SWZJIT_REMOTE_CACHE_BACKOFF_MS (default 1000) the pause after a failure.\n"
    "environment: SWZJIT_CACHE_DIR, XDG_CACHE_HOME, HOME; SWZJIT_CACHE_MAX_BYTES (default 1G) is the\n"
    "limit applied automatically when a kernel is stored; SWZJIT_CACHE_READ_ONLY=1 as --read-only.\n"
    "A cache directory or database this process may not write is used read-only (one warning).\n"
    "KEYFILE: 32 to 4096 bytes that only its owner may read (head -c 32 /dev/urandom > k; chmod 600 k).\n"
    "A directory or database that is group/world-writable or owned by someone else is refused (a\n"
    "cached cubin is code that will run): the library then runs uncached and says so once.\n"
    "exit codes: 0 success, 1 error (or verify found damage), 2 bad usage\n"
    "\n"
    "examples:\n"
    "  swz cache stats\n"
    "  swz cache warm --problems model.txt --arch sm_90 --shard 0/8\n"
    "  swz cache ls --json\n"
    "  swz cache gc --max-size 512M\n"
    "  swz cache verify\n"
    "  swz cache export tuned.swzdb && swz cache --dir /opt/app/cache import tuned.swzdb\n"
    "  swz cache export --sign app.key tuned.swzdb && swz cache import --key app.key tuned.swzdb\n"
    "  swz cache export --sign key tuned.swzdb && swz cache import --key key tuned.swzdb\n"
    "  swz cache explain kernel --name 'swz::transpose_kernel<float, 32, 8, 4>' --arch sm_90\n"
    "  swz cache explain tuning --operation family:hgemm --problem 'in=f16,out=f16,a_mn=0,b_mn=0,m=4096,n=4096,k=4096,lda=4096,ldb=4096,ldc=4096,batch=1,stride_a=0,stride_b=0,stride_c=0,align_a=16,align_b=16'\n";

// ---- output helpers (json_string: tools/output.hpp) ---------------------------------------------

std::string json_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + json_string(items[i]);
  return out + "]";
}

std::string json_num(double v) {
  if (!(v == v) || v > 1e308 || v < -1e308) return "null";  // JSON has no NaN or infinity
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

std::string human_bytes(std::uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

std::string local_time(std::int64_t us) {
  const std::time_t t = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

// ---- the options each action accepts (tools/cache_args.hpp) -----------------------------------

const char* const kValueOptions[] = {"dir",        "max-size",       "name",    "arch",      "nvrtc",  "templates-hash",
                                     "options",    "format-version", "problem", "operation", "device", "sm-count",
                                     "space-hash", "sign",           "key"};

std::string need_file(Args& args, const std::string& action) {
  auto file = args.next_positional();
  if (!file || file->empty()) throw UsageError("`swz cache " + action + "` needs a FILE argument (a non-empty path)");
  return *file;
}

// ---- actions ----------------------------------------------------------------------------------

std::string counters_json(const CacheCounters& c) {
  return "{\"hits\": " + std::to_string(c.hits) + ", \"misses\": " + std::to_string(c.misses) +
         ", \"builds\": " + std::to_string(c.builds) + ", \"joined\": " + std::to_string(c.joined) +
         ", \"corrupt\": " + std::to_string(c.corrupt) + ", \"store_failures\": " + std::to_string(c.store_failures) +
         ", \"evictions\": " + std::to_string(c.evictions) + ", \"tuning_hits\": " + std::to_string(c.tuning_hits) +
         ", \"tuning_misses\": " + std::to_string(c.tuning_misses) +
         ", \"wait_timeouts\": " + std::to_string(c.wait_timeouts) +
         ", \"remote_hits\": " + std::to_string(c.remote_hits) + ", \"remote_misses\": " + std::to_string(c.remote_misses) +
         ", \"remote_errors\": " + std::to_string(c.remote_errors) +
         ", \"remote_rejected\": " + std::to_string(c.remote_rejected) +
         ", \"remote_stores\": " + std::to_string(c.remote_stores) +
         ", \"remote_skipped\": " + std::to_string(c.remote_skipped) + ", \"remote_calls\": " + std::to_string(c.remote_calls) +
         ", \"remote_latency_us_total\": " + std::to_string(c.remote_latency_us_total) +
         ", \"remote_latency_us_max\": " + std::to_string(c.remote_latency_us_max) + "}";
}

int run_stats(Cache& cache, const CacheArgs& o) {
  const CacheStats s = cache.stats();
  if (o.format == Format::Csv) {
    CsvTable t({"directory", "database", "mode", "degraded_reason", "kernel_entries", "kernel_bytes",
                "memory_kernel_entries", "tuning_problems", "candidates", "winners", "file_bytes", "max_bytes", "remote",
                "remote_mode"});
    t.add({s.directory, s.database, s.mode, s.degraded_reason, std::to_string(s.kernel_entries),
           std::to_string(s.kernel_bytes), std::to_string(s.memory_kernel_entries), std::to_string(s.tuning_problems),
           std::to_string(s.candidates), std::to_string(s.winners), std::to_string(s.file_bytes),
           std::to_string(s.max_bytes), s.remote, s.remote_mode});
    t.print();
    return 0;
  }
  if (o.json) {
    std::printf(
        "{%s\"directory\": %s, \"database\": %s, \"mode\": %s, \"degraded_reason\": %s, \"kernel_entries\": %llu, "
        "\"kernel_bytes\": %llu, \"memory_kernel_entries\": %llu, \"tuning_problems\": %llu, \"candidates\": %llu, "
        "\"winners\": %llu, \"file_bytes\": %llu, \"max_bytes\": %llu, \"remote\": %s, \"remote_mode\": %s, "
        "\"counters\": %s}\n",
        json_version_member().c_str(), json_string(s.directory).c_str(), json_string(s.database).c_str(),
        json_string(s.mode).c_str(),
        json_string(s.degraded_reason).c_str(), static_cast<unsigned long long>(s.kernel_entries),
        static_cast<unsigned long long>(s.kernel_bytes), static_cast<unsigned long long>(s.memory_kernel_entries),
        static_cast<unsigned long long>(s.tuning_problems), static_cast<unsigned long long>(s.candidates),
        static_cast<unsigned long long>(s.winners), static_cast<unsigned long long>(s.file_bytes),
        static_cast<unsigned long long>(s.max_bytes), json_string(s.remote).c_str(), json_string(s.remote_mode).c_str(),
        counters_json(s.counters).c_str());
    return 0;
  }
  std::printf("directory:       %s\n", s.directory.empty() ? "(none)" : s.directory.c_str());
  std::printf("database:        %s\n", s.database.empty() ? "(none: in memory)" : s.database.c_str());
  std::printf("mode:            %s%s%s\n", s.mode.c_str(), s.degraded_reason.empty() ? "" : " -- ",
              s.degraded_reason.c_str());
  std::printf("kernel entries:  %llu (%s; limit %s)\n", static_cast<unsigned long long>(s.kernel_entries),
              human_bytes(s.kernel_bytes).c_str(), s.max_bytes ? human_bytes(s.max_bytes).c_str() : "none");
  std::printf("tuned problems:  %llu (%llu candidates, %llu winners)\n",
              static_cast<unsigned long long>(s.tuning_problems), static_cast<unsigned long long>(s.candidates),
              static_cast<unsigned long long>(s.winners));
  std::printf("file size:       %s\n", human_bytes(s.file_bytes).c_str());
  if (s.counters.corrupt) std::printf("damage found on opening: %llu\n", static_cast<unsigned long long>(s.counters.corrupt));
  if (!s.remote.empty()) {
    // The counters are this process's: `swz cache stats` itself makes no remote call.
    const CacheCounters& c = s.counters;
    std::printf("remote:          %s (%s)\n", s.remote.c_str(), s.remote_mode.c_str());
    std::printf("remote calls:    %llu (hits %llu, misses %llu, errors %llu, rejected %llu, stores %llu, skipped %llu)\n",
                static_cast<unsigned long long>(c.remote_calls), static_cast<unsigned long long>(c.remote_hits),
                static_cast<unsigned long long>(c.remote_misses), static_cast<unsigned long long>(c.remote_errors),
                static_cast<unsigned long long>(c.remote_rejected), static_cast<unsigned long long>(c.remote_stores),
                static_cast<unsigned long long>(c.remote_skipped));
    if (c.remote_calls)
      std::printf("remote latency:  mean %.2f ms, max %.2f ms\n",
                  static_cast<double>(c.remote_latency_us_total) / 1000.0 / static_cast<double>(c.remote_calls),
                  static_cast<double>(c.remote_latency_us_max) / 1000.0);
  }
  return 0;
}

int run_ls(Cache& cache, const CacheArgs& o) {
  const auto kernels = cache.list_kernels();
  const auto problems = cache.list_tuning();
  if (o.format == Format::Csv) {
    // One table for both kinds: a kernel row names its expression, a tuning row its problem and one winner.
    CsvTable t({"kind", "key", "arch", "what", "bytes", "last_use_us", "candidates", "space_hash", "winner",
                "winner_ms"});
    for (const auto& k : kernels)
      t.add({"kernel", k.key, k.fields.arch, k.fields.name_expression, std::to_string(k.bytes),
             std::to_string(k.last_use_us), "", "", "", ""});
    for (const auto& p : problems) {
      const std::string what = p.problem.operation + " " + p.problem.problem;
      if (p.winners.empty())
        t.add({"tuning", p.key, p.problem.arch, what, "", std::to_string(p.updated_us), std::to_string(p.candidates),
               "", "", ""});
      for (const auto& w : p.winners)
        t.add({"tuning", p.key, p.problem.arch, what, "", std::to_string(p.updated_us), std::to_string(p.candidates),
               w.first, w.second.config, csv_number(w.second.median_ms, 4)});
    }
    t.print();
    return 0;
  }
  if (o.json) {
    std::string out = "{" + json_version_member() + "\"kernels\": [";
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      const auto& k = kernels[i];
      out += std::string(i ? ", " : "") + "{\"key\": " + json_string(k.key) +
             ", \"name_expression\": " + json_string(k.fields.name_expression) + ", \"arch\": " + json_string(k.fields.arch) +
             ", \"nvrtc_version\": " + json_string(k.fields.nvrtc_version) +
             ", \"templates_hash\": " + json_string(k.fields.templates_hash) +
             ", \"options\": " + json_list(k.fields.options) +
             ", \"format_version\": " + std::to_string(k.fields.format_version) +
             ", \"bytes\": " + std::to_string(k.bytes) + ", \"is_ptx\": " + (k.is_ptx ? "true" : "false") +
             ", \"last_use_us\": " + std::to_string(k.last_use_us) +
             ", \"memory_only\": " + (k.memory_only ? "true" : "false") + "}";
    }
    out += "], \"tuning\": [";
    for (std::size_t i = 0; i < problems.size(); ++i) {
      const auto& p = problems[i];
      out += std::string(i ? ", " : "") + "{\"key\": " + json_string(p.key) + ", \"operation\": " +
             json_string(p.problem.operation) + ", \"problem\": " + json_string(p.problem.problem) +
             ", \"device_name\": " + json_string(p.problem.device_name) + ", \"arch\": " + json_string(p.problem.arch) +
             ", \"sm_count\": " + std::to_string(p.problem.sm_count) +
             ", \"nvrtc_version\": " + json_string(p.problem.nvrtc_version) +
             ", \"templates_hash\": " + json_string(p.problem.templates_hash) +
             ", \"candidates\": " + std::to_string(p.candidates) + ", \"winners\": {";
      bool first = true;
      for (const auto& w : p.winners) {
        out += std::string(first ? "" : ", ") + json_string(w.first) + ": {\"config\": " + json_string(w.second.config) +
               ", \"median_ms\": " + json_num(w.second.median_ms) + "}";
        first = false;
      }
      out += "}, \"updated_us\": " + std::to_string(p.updated_us) + "}";
    }
    std::printf("%s]}\n", out.c_str());
    return 0;
  }
  std::printf("kernels: %zu\n", kernels.size());
  if (!kernels.empty()) std::printf("  %-16s  %-8s  %10s  %-19s  %s\n", "KEY", "ARCH", "BYTES", "LAST USE", "NAME EXPRESSION");
  for (const auto& k : kernels)
    std::printf("  %-16s  %-8s  %10llu  %-19s  %s%s\n", k.key.substr(0, 16).c_str(), k.fields.arch.c_str(),
                static_cast<unsigned long long>(k.bytes), local_time(k.last_use_us).c_str(),
                k.fields.name_expression.c_str(), k.memory_only ? "  (memory only)" : "");
  std::printf("tuned problems: %zu\n", problems.size());
  for (const auto& p : problems) {
    std::printf("  %-16s  %s %s on %s (%s, %d SMs): %llu candidates\n", p.key.substr(0, 16).c_str(),
                p.problem.operation.c_str(), p.problem.problem.c_str(), p.problem.device_name.c_str(),
                p.problem.arch.c_str(), p.problem.sm_count, static_cast<unsigned long long>(p.candidates));
    for (const auto& w : p.winners)
      std::printf("      space %s: winner %s (%.4f ms)\n", w.first.substr(0, 16).c_str(), w.second.config.c_str(),
                  w.second.median_ms);
  }
  return 0;
}

int run_verify(Cache& cache, const CacheArgs& o) {
  const VerifyReport r = cache.verify();
  auto u = [](std::uint64_t v) { return std::to_string(v); };
  if (o.format == Format::Csv) {
    CsvTable t({"database_ok", "integrity", "kernels_checked", "kernels_bad", "problems_checked", "problems_bad",
                "candidates_checked", "candidates_bad", "winners_checked", "winners_bad", "read_only", "not_checked"});
    std::string not_checked;
    for (const auto& n : r.not_checked) not_checked += (not_checked.empty() ? "" : "; ") + n;
    t.add({boolean(r.database_ok), r.integrity, u(r.kernels_checked), u(r.kernels_bad), u(r.problems_checked),
           u(r.problems_bad), u(r.candidates_checked), u(r.candidates_bad), u(r.winners_checked), u(r.winners_bad),
           boolean(r.read_only), not_checked});
    t.print();
  } else if (o.json) {
    std::printf(
        "{%s\"database_ok\": %s, \"integrity\": %s, \"kernels_checked\": %s, \"kernels_bad\": %s, "
        "\"problems_checked\": %s, \"problems_bad\": %s, \"candidates_checked\": %s, \"candidates_bad\": %s, "
        "\"winners_checked\": %s, \"winners_bad\": %s, \"read_only\": %s, \"not_checked\": %s}\n",
        json_version_member().c_str(), r.database_ok ? "true" : "false", json_string(r.integrity).c_str(),
        u(r.kernels_checked).c_str(),
        u(r.kernels_bad).c_str(), u(r.problems_checked).c_str(), u(r.problems_bad).c_str(),
        u(r.candidates_checked).c_str(), u(r.candidates_bad).c_str(), u(r.winners_checked).c_str(),
        u(r.winners_bad).c_str(), r.read_only ? "true" : "false", json_list(r.not_checked).c_str());
  } else {
    const char* fate = r.read_only ? "(left: read-only)" : "(deleted)";
    std::printf("database: %s (%s)\n", r.database_ok ? "ok" : "NOT OK", r.integrity.c_str());
    std::printf("kernels:    %s checked, %s bad %s\n", u(r.kernels_checked).c_str(), u(r.kernels_bad).c_str(), fate);
    std::printf("problems:   %s checked, %s bad %s\n", u(r.problems_checked).c_str(), u(r.problems_bad).c_str(), fate);
    std::printf("candidates: %s checked, %s bad %s\n", u(r.candidates_checked).c_str(), u(r.candidates_bad).c_str(),
                fate);
    std::printf("winners:    %s checked, %s bad %s\n", u(r.winners_checked).c_str(), u(r.winners_bad).c_str(), fate);
    for (const auto& n : r.not_checked) std::printf("not checked: %s\n", n.c_str());
  }
  return r.database_ok && r.bad() == 0 && r.not_checked.empty() ? 0 : 1;
}

int run_gc(Cache& cache, const CacheArgs& o) {
  const auto size = o.get("max-size");
  if (!size) throw UsageError("`swz cache gc` needs --max-size SIZE (e.g. 0, 500M, 2G)");
  std::uint64_t max_bytes = 0;
  try {
    max_bytes = parse_byte_size(*size);
  } catch (const Error& e) {
    throw UsageError(std::string("--max-size: ") + e.what());
  }
  const GcReport r = cache.gc(max_bytes);
  if (o.format == Format::Csv) {
    CsvTable t({"evicted_entries", "evicted_bytes", "kept_entries", "kept_bytes"});
    t.add({std::to_string(r.evicted_entries), std::to_string(r.evicted_bytes), std::to_string(r.kept_entries),
           std::to_string(r.kept_bytes)});
    t.print();
  } else if (o.json)
    std::printf("{%s\"evicted_entries\": %llu, \"evicted_bytes\": %llu, \"kept_entries\": %llu, \"kept_bytes\": %llu}\n",
                json_version_member().c_str(), static_cast<unsigned long long>(r.evicted_entries),
                static_cast<unsigned long long>(r.evicted_bytes), static_cast<unsigned long long>(r.kept_entries),
                static_cast<unsigned long long>(r.kept_bytes));
  else
    std::printf("evicted %llu kernel entries (%s); kept %llu (%s)\n", static_cast<unsigned long long>(r.evicted_entries),
                human_bytes(r.evicted_bytes).c_str(), static_cast<unsigned long long>(r.kept_entries),
                human_bytes(r.kept_bytes).c_str());
  return 0;
}

int run_import(Cache& cache, const CacheArgs& o, const std::string& file) {
  TransferOptions t;
  t.key_file = o.get("key").value_or("");
  const ImportReport r = cache.import_from(file, t);
  if (o.format == Format::Csv) {
    CsvTable table({"kernels_added", "kernels_present", "candidates", "winners", "skipped_corrupt", "authenticated"});
    table.add({std::to_string(r.kernels_added), std::to_string(r.kernels_present), std::to_string(r.candidates),
               std::to_string(r.winners), std::to_string(r.skipped_corrupt), boolean(r.authenticated)});
    table.print();
  } else if (o.json)
    std::printf(
        "{%s\"kernels_added\": %llu, \"kernels_present\": %llu, \"candidates\": %llu, \"winners\": %llu, "
        "\"skipped_corrupt\": %llu, \"authenticated\": %s}\n",
        json_version_member().c_str(), static_cast<unsigned long long>(r.kernels_added), static_cast<unsigned long long>(r.kernels_present),
        static_cast<unsigned long long>(r.candidates), static_cast<unsigned long long>(r.winners),
        static_cast<unsigned long long>(r.skipped_corrupt), r.authenticated ? "true" : "false");
  else
    std::printf(
        "imported %llu new kernels (%llu already present), %llu candidates, %llu winners; %llu corrupt rows "
        "skipped; %s\n",
        static_cast<unsigned long long>(r.kernels_added), static_cast<unsigned long long>(r.kernels_present),
        static_cast<unsigned long long>(r.candidates), static_cast<unsigned long long>(r.winners),
        static_cast<unsigned long long>(r.skipped_corrupt),
        r.authenticated ? "signature verified" : "unsigned import: its author is trusted");
  return 0;
}

int run_cache(Args& args) {
  if (args.peek_positional() == std::optional<std::string>("warm")) {
    args.next_positional();
    return run_cache_warm(args);
  }
  CacheArgs o;
  for (const char* name : kValueOptions)
    if (auto v = args.value(name)) o.values[name] = *v;
  // --cache-dir is what swz run and swz autotune call the cache's directory; here it is --dir too.
  if (auto v = args.value("cache-dir")) {
    if (o.get("dir")) throw UsageError("give --dir or --cache-dir, not both (they name the same directory)");
    o.values["dir"] = *v;
  }
  o.format = read_format(args, {Format::Text, Format::Json, Format::Csv});
  o.json = o.format == Format::Json;
  o.read_only = args.flag("read-only");
  o.force_target = args.flag("force-target");
  const auto action = args.next_positional();
  if (!action) throw UsageError("`swz cache` needs an action: ls, stats, verify, gc, clear, export, import, explain");
  const std::string a = parse_choice("action", *action,
                                     {"ls", "stats", "verify", "check", "gc", "clear", "export", "import", "explain",
                                      "warm"});
  if (a == "warm") throw UsageError("write `swz cache warm` first, then its options (see --help)");
  // Validate every argument before touching the cache: bad usage changes nothing.
  std::string file;
  if (a == "ls" || a == "stats" || a == "verify" || a == "check") allow_only(o, a, {}, true);
  if (a == "gc") allow_only(o, a, {"max-size"}, true);
  if (a == "clear") allow_only(o, a, {}, false);
  if (a == "export") allow_only(o, a, {"sign"}, false);
  if (a == "import") allow_only(o, a, {"key"}, true);
  if (o.force_target && a != "export") throw UsageError("--force-target applies only to `swz cache export`");
  for (const char* k : {"sign", "key"})
    if (o.get(k) && o.get(k)->empty()) throw UsageError(std::string("--") + k + " needs a KEYFILE path");
  if (a == "export" || a == "import") file = need_file(args, a);
  if (a == "gc" && o.get("max-size")) {
    try {
      parse_byte_size(*o.get("max-size"));
    } catch (const Error& e) {
      throw UsageError(std::string("--max-size: ") + e.what());
    }
  }
  if (a == "gc" && !o.get("max-size")) throw UsageError("`swz cache gc` needs --max-size SIZE (e.g. 0, 500M, 2G)");
  std::string explain_what;
  std::optional<std::string> bare_problem;
  if (a == "explain") explain_what = explain_form(o, args, bare_problem);
  args.finish();

  CacheSettings settings = default_cache_settings();
  if (auto dir = o.get("dir")) settings.directory = *dir;
  if (o.read_only) settings.read_only = true;
  Cache cache(settings);
  if (a == "clear" || a == "gc" || a == "import") {
    const CacheStats s = cache.stats();
    if (s.mode == "read-only")
      throw Error(ErrorKind::Cache,
                  "the cache " + s.database + " is read-only" +
                      (s.degraded_reason.empty() ? std::string(" (as asked)") : " (" + s.degraded_reason + ")") +
                      "; `swz cache " + a + "` would change nothing");
  }
  if (a == "stats") return run_stats(cache, o);
  if (a == "ls") return run_ls(cache, o);
  if (a == "verify" || a == "check") return run_verify(cache, o);
  if (a == "gc") return run_gc(cache, o);
  if (a == "clear") {
    const CacheStats before = cache.stats();
    cache.clear();
    std::printf("cleared %llu kernel entries and %llu tuned problems from %s\n",
                static_cast<unsigned long long>(before.kernel_entries),
                static_cast<unsigned long long>(before.tuning_problems),
                before.database.empty() ? "memory" : before.database.c_str());
    return 0;
  }
  if (a == "export") {
    TransferOptions t;
    t.key_file = o.get("sign").value_or("");
    t.allow_special_target = o.force_target;
    cache.export_to(file, t);
    const CacheStats s = cache.stats();
    std::printf("exported %llu kernel entries and %llu tuned problems to %s (%s)\n",
                static_cast<unsigned long long>(s.kernel_entries + s.memory_kernel_entries),
                static_cast<unsigned long long>(s.tuning_problems), file.c_str(),
                t.key_file.empty() ? "unsigned" : "signed");
    return 0;
  }
  if (a == "import") return run_import(cache, o, file);
  return run_explain(cache, o, explain_what, bare_problem);
}

}  // namespace

void allow_only(const CacheArgs& o, const std::string& action, const std::set<std::string>& allowed, bool formats_ok) {
  for (const auto& kv : o.values)
    if (kv.first != "dir" && !allowed.count(kv.first))
      throw UsageError("--" + kv.first + " does not apply to `swz cache " + action + "` (see --help)");
  if (o.format != Format::Text && !formats_ok)
    throw UsageError("--format " + std::string(format_name(o.format)) + " does not apply to `swz cache " + action +
                     "` (accepted: text)");
}

const Command& cache_command() {
  static const Command cmd{"cache", "list, check, trim, export and explain the kernel and tuning cache", kHelp,
                           &run_cache};
  return cmd;
}

}  // namespace cli
}  // namespace swz
