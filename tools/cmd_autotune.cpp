// tools: `swz autotune transpose|gemm` -- tune a transpose or GEMM problem (include/swzjit/autotune.hpp)
// with a progress bar or plain progress lines on stderr, then a table of the best configs and the counts;
// --compile-only fills the kernel cache for a target without a GPU.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"
#include "gemm_args.hpp"
#include "output.hpp"
#include "problem_list.hpp"
#include "swzjit/autotune.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/jit.hpp"

namespace swz {
namespace cli {

namespace {

const char kHelp[] =
    "usage: swz autotune transpose --rows R --cols C [--dtype f32|f16|bf16] [--batch B] [COMMON]\n"
    "       swz autotune FAMILY --problem D=V,... [COMMON]   (a declared family: swz family --help)\n"
    "       swz autotune gemm --m M --n N --k K [--dtype f32|f16|bf16] [--out f32|f16|bf16]\n"
    "                         [--layout NN|NT|TN|TT] [--c-order row|col] [--batch B] [COMMON]\n"
    "COMMON: [--budget-s S] [--max-candidates N] [--keep-conflicted] [--compile-only --arch sm_XX]\n"
    "        [--config CFG]... [--compile-threads N] [--seed N] [--timeout-s S] [--top N] [--cache-dir DIR]\n"
    "        [--format text|json|csv] [--quiet]\n"
    "       swz autotune --problems FILE [--shard i/n] [COMMON]   every problem of FILE (one per line,\n"
    "                         e.g. `gemm --m 4096 --n 4096 --k 4096 --dtype f16`; # comments), or only the\n"
    "                         i-th of n slices (0 <= i < n): n machines with the same FILE split it exactly\n"
    "\n"
    "Tune a packed problem on GPU 0: take the family's search space, drop configs whose static bank\n"
    "analysis shows conflicts, compile the rest in parallel (NVRTC, through the kernel cache) while a\n"
    "separate worker process verifies each on random data (guard regions around the output; a GEMM's C\n"
    "is NaN-poisoned and compared with the trusted reference kernel's, relative Frobenius error at most\n"
    "1e-5 for f32, 1e-2 for f16/bf16 inputs) and times it (L2 flushed before each run, median of enough\n"
    "runs), re-time the best few interleaved, and store every result and the winner in the cache.\n"
    "Candidates measured by an earlier tune are reused; a later process (swz run gemm, an Engine) gets\n"
    "the winner with no compile and no benchmark.\n"
    "\n"
    "transpose options:\n"
    "  --rows R, --cols C     the matrix shape (required)\n"
    "  --dtype T              element type (default f32)\n"
    "  --batch B              number of matrices (default 1)\n"
    "gemm options (C = A * B, alpha = 1, beta = 0 while tuning):\n"
    "  --m M, --n N, --k K    the problem shape (required)\n"
    "  --dtype T              A and B: f32 (SGEMM) or f16/bf16 (tensor-core HGEMM) (default f32)\n"
    "  --out T                C: f32 for f32 inputs; f16, bf16 or f32 for 16-bit inputs (default: --dtype)\n"
    "  --layout L             A then B: N = row-major as in C = A*B, T = column-major (default NN)\n"
    "  --c-order O            C row- or column-major (default row)\n"
    "  --batch B              number of products, at most 65535 (default 1)\n"
    "common options:\n"
    "  --budget-s S           stop starting new candidates after S seconds (0 = no limit)\n"
    "  --max-candidates N     measure at most the first N configs of the space, plus the default config (0 = all)\n"
    "  --keep-conflicted      keep configs the bank analysis shows conflicted (plain tiles)\n"
    "  --compile-only         only fill the kernel cache (no GPU needed); needs --arch\n"
    "  --arch A               the target for --compile-only: sm_80 ... sm_121 (swz info lists them)\n"
    "  --config CFG           add a config to the space (repeatable), e.g.\n"
    "                         f32,tile=32x32,threads=256,vec=4,smem=plain (see `swz gen gemm --help` for GEMM)\n"
    "  --compile-threads N    NVRTC compiles at once (default 0: all the process's compile threads);\n"
    "                         those are one per core up to 8, or SWZJIT_COMPILE_THREADS, and N never\n"
    "                         exceeds them. --threads N is the old\n"
    "                         spelling, still accepted with a warning: elsewhere --threads is the block size\n"
    "  --seed N               seed of the random data each candidate is verified on, 0..4294967295\n"
    "                         (default: the fixed one, 24301 = 0x5EED, for every family); printed in\n"
    "                         the output\n"
    "  --timeout-s S          a candidate taking longer is killed and recorded as timeout (default 10)\n"
    "  --top N                rows of the result table (default 10)\n"
    "  --cache-dir DIR        the cache to use (default $SWZJIT_CACHE_DIR, $XDG_CACHE_HOME/swzjit, ~/.cache/swzjit)\n"
    "  --format F             text (default: a table of the --top best), json (one object: the report with\n"
    "                         every candidate, the engine and cache counters; --json is the same) or csv\n"
    "                         (a header row, one row per candidate, as cutlass_profiler writes it)\n"
    "  --quiet                no progress on stderr\n"
    "\n"
    "Progress goes to stderr: a bar on a terminal (compiled k/n, benchmarked k/n, failures, best so far,\n"
    "ETA), one line per event otherwise. Candidate statuses: ok, compile-failed, resource-limit,\n"
    "launch-failed, wrong-result, timeout, skipped-static (compiled, for --compile-only: a table row says\n"
    "cached when the kernel came from the kernel cache instead of a fresh NVRTC compile).\n"
    "exit codes: 0 a winner was found (or, with --compile-only, something compiled), 1 otherwise or on\n"
    "error, 2 bad usage\n"
    "\n"
    "examples:\n"
    "  swz autotune transpose --rows 16384 --cols 8192 --dtype f32\n"
    "  swz autotune gemm --m 4096 --n 4096 --k 4096 --dtype f16 --layout NT\n"
    "  swz autotune gemm --m 4096 --n 4096 --k 4096 --dtype f32 --layout NN --budget-s 30 --json\n"
    "  swz autotune gemm --m 4096 --n 4096 --k 4096 --dtype bf16 --out f32 --layout NT \\\n"
    "      --compile-only --arch sm_90                                            # no GPU needed\n"
    "  swz autotune transpose --rows 4096 --cols 4096 --dtype f16 --budget-s 2 --json\n"
    "  swz autotune transpose --rows 16384 --cols 8192 --compile-only --arch sm_90   # no GPU needed\n";

std::string num(double v) {
  if (!(v == v) || v > 1e300 || v < -1e300) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string u(std::uint64_t v) { return std::to_string(v); }

double parse_seconds(const std::string& arg, const std::string& text, double hi) { return parse_real(arg, text, 0, hi); }

// Progress on stderr: a redrawn bar on a terminal, one line per event otherwise.
class ProgressView {
 public:
  ProgressView(bool quiet, bool compile_only)
      : quiet_(quiet), tty_(isatty(STDERR_FILENO) != 0), compile_only_(compile_only) {}

  void update(const TuneProgress& p) {
    if (quiet_) return;
    const int n = std::max(1, p.total);
    if (!tty_) {
      if (compile_only_)
        std::fprintf(stderr, "swz autotune: [compiled %d/%d] %s\n", p.compiled, n, p.last.c_str());
      else
        std::fprintf(stderr, "swz autotune: [compiled %d/%d, benchmarked %d/%d, %d failed] %s\n", p.compiled, n,
                     p.benchmarked, n, p.failed, p.last.c_str());
      return;
    }
    const double done = compile_only_ ? static_cast<double>(p.compiled) / n
                                      : static_cast<double>(p.compiled + p.benchmarked) / (2.0 * n);
    const int width = 24, filled = static_cast<int>(done * width + 0.5);
    std::string bar(static_cast<std::size_t>(std::min(width, filled)), '#');
    bar.resize(width, '.');
    std::string eta = "--";
    if (done > 0 && done < 1) eta = std::to_string(static_cast<int>(p.elapsed_s * (1 - done) / done + 0.5)) + "s";
    if (done >= 1) eta = "0s";
    std::string line = "[" + bar + "] compiled " + std::to_string(p.compiled) + "/" + std::to_string(n);
    if (!compile_only_) {
      line += "  benchmarked " + std::to_string(p.benchmarked) + "/" + std::to_string(n) + "  failed " +
              std::to_string(p.failed);
      if (p.best_ms > 0) line += "  best " + num(p.best_ms) + " ms";
    }
    line += "  ETA " + eta;
    if (p.phase == "retime") line += "  (re-timing the best)";
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    drawn_ = true;
  }
  void end() {
    if (drawn_) std::fprintf(stderr, "\n");
    drawn_ = false;
  }

 private:
  bool quiet_, tty_, compile_only_;
  bool drawn_ = false;
};

void print_json(const std::string& family, const TuneReport& r, Engine& engine) {
  const EngineCounters e = engine.counters();
  const CacheCounters c = engine.cache().counters();
  std::string failures;
  for (const auto& f : r.failures) failures += (failures.empty() ? "" : ", ") + json_string(f.first) + ": " + u(f.second);
  std::string candidates;
  for (const auto& k : r.candidates)
    candidates += std::string(candidates.empty() ? "" : ", ") + "{\"config\": " + json_string(k.config) +
                  ", \"status\": " + json_string(k.status) + ", \"reason\": " + json_string(k.reason) +
                  ", \"median_ms\": " + num(k.median_ms) + ", \"p20_ms\": " + num(k.p20_ms) +
                  ", \"p80_ms\": " + num(k.p80_ms) + ", \"repetitions\": " + u(k.repetitions) +
                  ", \"retime_ms\": " + num(k.retime_ms) + ", \"retime_p20_ms\": " + num(k.retime_p20_ms) +
                  ", \"retime_p80_ms\": " + num(k.retime_p80_ms) +
                  ", \"from_cache\": " + (k.from_cache ? "true" : "false") +
                  ", \"kernel_cached\": " + (k.kernel_cached ? "true" : "false") + "}";
  std::printf(
      "{%s\"family\": %s, \"seed\": %u, \"problem\": %s, \"device\": %s, \"arch\": %s, \"winner\": %s, \"winner_ms\": %s, "
      "\"winner_gbps\": %s, \"winner_tflops\": %s, \"default_config\": %s, \"default_ms\": %s, "
      "\"space_size\": %d, \"static_rejected\": %d, \"compiled\": %d, \"kernel_cache_hits\": %d, "
      "\"benchmarked\": %d, \"reused\": %d, \"retimed\": %d, \"worker_restarts\": %d, \"failures\": {%s}, "
      "\"budget_exhausted\": %s, \"seconds\": %s, \"space_hash\": %s, "
      "\"engine\": {\"compiles\": %s, \"kernel_loads\": %s, \"tuned_hits\": %s, \"tuned_misses\": %s, "
      "\"tunes\": %s, \"benchmark_runs\": %s, \"launches\": %s}, "
      "\"cache\": {\"hits\": %s, \"misses\": %s, \"builds\": %s, \"joined\": %s, \"corrupt\": %s, "
      "\"store_failures\": %s, \"evictions\": %s, \"tuning_hits\": %s, \"tuning_misses\": %s}, "
      "\"candidates\": [%s]}\n",
      json_version_member().c_str(), json_string(family).c_str(), r.seed, json_string(r.problem).c_str(),
      json_string(r.device).c_str(), json_string(r.arch).c_str(),
      json_string(r.winner).c_str(), num(r.winner_ms).c_str(), num(r.winner_gbps).c_str(), num(r.winner_tflops).c_str(),
      json_string(r.default_config).c_str(), num(r.default_ms).c_str(), r.space_size, r.static_rejected, r.compiled,
      r.kernel_cache_hits, r.benchmarked, r.reused, r.retimed, r.worker_restarts, failures.c_str(),
      r.budget_exhausted ? "true" : "false", num(r.seconds).c_str(), json_string(r.space_hash).c_str(),
      u(e.compiles).c_str(), u(e.kernel_loads).c_str(), u(e.tuned_hits).c_str(), u(e.tuned_misses).c_str(),
      u(e.tunes).c_str(), u(e.benchmark_runs).c_str(), u(e.launches).c_str(), u(c.hits).c_str(),
      u(c.misses).c_str(), u(c.builds).c_str(), u(c.joined).c_str(), u(c.corrupt).c_str(),
      u(c.store_failures).c_str(), u(c.evictions).c_str(), u(c.tuning_hits).c_str(), u(c.tuning_misses).c_str(),
      candidates.c_str());
}

// What a table row's rate column shows: GB/s (transpose) or TFLOP/s (GEMM) for a time in ms.
struct Rate {
  const char* unit;
  double work;  // bytes moved or floating-point operations
  double scale;  // per ms -> unit
  double of(double ms) const { return ms > 0 ? work / (ms * scale) : 0.0; }
};

// The word a row shows for a candidate: a compile-only candidate whose kernel the cache served says so.
std::string row_status(const TuneCandidate& c) {
  return c.status == "compiled" && c.kernel_cached ? "cached" : c.status;
}

// NOTE: `--problems FILE` tunes each problem in this process; their rows form one CSV with one header.
bool g_csv_header_printed = false;

void print_csv(const std::string& family, const TuneReport& r, const Rate& rate) {
  CsvTable t({"family", "problem", "device", "arch", "seed", "config", "status", "kernel", "from_tuning_cache",
              "median_ms", "p20_ms", "p80_ms", "rate", "rate_unit", "repetitions", "winner", "default",
              "reason", "retime_ms", "retime_p20_ms", "retime_p80_ms"});
  for (const auto& c : r.candidates) {
    const bool ok = c.status == "ok", retimed = ok && c.retime_ms > 0;
    t.add({family, r.problem, r.device, r.arch, std::to_string(r.seed), c.config, c.status,
           c.status == "skipped-static" ? "" : c.kernel_cached ? "cached" : "compiled", boolean(c.from_cache),
           ok ? fixed(c.median_ms, 4) : "", ok ? fixed(c.p20_ms, 4) : "", ok ? fixed(c.p80_ms, 4) : "",
           ok ? fixed(rate.of(c.median_ms), 2) : "", rate.unit, std::to_string(c.repetitions), boolean(c.config == r.winner),
           boolean(c.config == r.default_config), c.reason, retimed ? fixed(c.retime_ms, 4) : "",
           retimed ? fixed(c.retime_p20_ms, 4) : "", retimed ? fixed(c.retime_p80_ms, 4) : ""});
  }
  t.print(!g_csv_header_printed);
  g_csv_header_printed = true;
}

void print_table(const std::string& family, const TuneReport& r, const Rate& rate, int top, const TuneOptions& options) {
  const bool compile_only = options.compile_only;
  std::printf("%s %s%s%s (%s), seed %u\n", family.c_str(), r.problem.c_str(), r.device.empty() ? "" : " on ",
              r.device.c_str(), r.arch.c_str(), r.seed);
  std::size_t width = 6;
  for (const auto& c : r.candidates) width = std::max(width, c.config.size());
  const int shown = std::min<int>(top, static_cast<int>(r.candidates.size()));
  if (shown > 0 && compile_only) {
    std::printf("\n  %-*s  %s\n", static_cast<int>(width), "config", "status");
    for (int i = 0; i < shown; ++i) {
      const TuneCandidate& c = r.candidates[static_cast<std::size_t>(i)];
      std::printf("  %-*s  %s%s%s\n", static_cast<int>(width), c.config.c_str(), row_status(c).c_str(),
                  c.reason.empty() ? "" : ": ", c.reason.c_str());
    }
  } else if (shown > 0) {
    // Two measurements, never ranked together: the first pass (every candidate alone) and the final re-time
    // (the best few and the default interleaved on a busy GPU, usually at lower clocks), which picks the winner.
    std::printf("\n  %-*s  %10s  %19s  %8s  %10s  %s\n", static_cast<int>(width), "config", "median ms", "p20..p80 ms",
                rate.unit, "re-time ms", "status");
    for (int i = 0; i < shown; ++i) {
      const TuneCandidate& c = r.candidates[static_cast<std::size_t>(i)];
      // "reused": measured by an earlier tune (the tuning cache); "cached" alone means the kernel cache.
      std::string status = c.status + (c.from_cache ? " (reused)" : "");
      if (!c.reason.empty()) status += ": " + (c.reason.size() > 90 ? c.reason.substr(0, 90) + "..." : c.reason);
      if (c.status == "ok") {
        char spread[32];
        std::snprintf(spread, sizeof spread, "%.4f..%.4f", c.p20_ms, c.p80_ms);
        char retime[32] = "-";
        if (c.retime_ms > 0) std::snprintf(retime, sizeof retime, "%.4f", c.retime_ms);
        std::printf("  %-*s  %10.4f  %19s  %8.1f  %10s  %s%s%s\n", static_cast<int>(width), c.config.c_str(), c.median_ms,
                    spread, rate.of(c.median_ms), retime, status.c_str(), c.config == r.winner ? "  <- winner" : "",
                    c.config == r.default_config ? "  (default)" : "");
      } else {
        std::printf("  %-*s  %10s  %19s  %8s  %10s  %s\n", static_cast<int>(width), c.config.c_str(), "-", "-", "-", "-",
                    status.c_str());
      }
    }
  }
  if (shown > 0 && shown < static_cast<int>(r.candidates.size()))
    std::printf("  ... %d more (--top N, or --format json|csv for all)\n", static_cast<int>(r.candidates.size()) - shown);
  if (shown > 0 && !compile_only && r.retimed > 0)
    std::printf("  (re-time: the %d re-timed together after warm-up%s, listed first by it;\n"
                "  the winner is chosen on it. The other rows follow by their first pass, timed alone: compare\n"
                "  within each measurement, not across them)\n",
                r.retimed, r.default_ms > 0 ? ", the default among them" : "");
  std::string failures;
  for (const auto& f : r.failures) failures += (failures.empty() ? "" : ", ") + std::to_string(f.second) + " " + f.first;
  const int measured = r.space_size - r.static_rejected;
  std::printf("\nspace %d configs: %d rejected statically, %d candidates\n", r.space_size, r.static_rejected, measured);
  std::printf("compiles %d, kernel cache hits %d", r.compiled, r.kernel_cache_hits);
  if (!compile_only)
    std::printf(", benchmarked %d, reused from the tuning cache %d, re-timed %d", r.benchmarked, r.reused, r.retimed);
  std::printf("\nfailures: %s%s\n", failures.empty() ? "none" : failures.c_str(),
              r.worker_restarts ? (" (worker restarted " + std::to_string(r.worker_restarts) + "x)").c_str() : "");
  // Why not every config ran: the cap the caller asked for, or the time budget running out (either or both).
  if (options.max_candidates > 0 && r.space_size > options.max_candidates)
    std::printf("--max-candidates %d: only the first %d of the space's %d configs were tried (and the default)\n",
                options.max_candidates, options.max_candidates, r.space_size);
  if (r.time_budget_exhausted)
    std::printf("time budget exhausted (--budget-s %s): not every candidate was measured\n",
                num(options.max_seconds).c_str());
  if (!compile_only) {
    if (r.winner.empty())
      std::printf("no winner: no candidate succeeded\n");
    else
      std::printf("winner %s: %.4f ms, %.1f %s (stored in the cache)\n", r.winner.c_str(), r.winner_ms,
                  rate.of(r.winner_ms), rate.unit);
    // Tuned vs default, from the measurement the winner was chosen on (the final re-time).
    if (!r.winner.empty() && !r.default_config.empty()) {
      if (r.default_ms > 0)
        std::printf("tuned vs default: %.1f vs %.1f %s (%.2fx; default %s: %.4f ms%s)\n", rate.of(r.winner_ms),
                    rate.of(r.default_ms), rate.unit, r.default_ms / r.winner_ms, r.default_config.c_str(),
                    r.default_ms, r.winner == r.default_config ? ", kept as the winner" : "");
      else
        std::printf("tuned vs default: the default %s did not run ok in the final measurement\n",
                    r.default_config.c_str());
    }
  }
  std::printf("%.2f s\n", r.seconds);
}

int run_autotune(Args& args) {
  if (args.given("problems")) return run_each_problem(args, "autotune", &run_autotune);
  if (args.given("shard")) throw UsageError("--shard i/n needs --problems FILE");
  const auto family_arg = args.next_positional();
  if (!family_arg) throw UsageError("say what to tune: `swz autotune transpose ...` or `swz autotune gemm ...` (see --help)");
  // Any other name is a declared family (swz family ls) or a .family file.
  const std::shared_ptr<const Family> declared =
      *family_arg == "transpose" || *family_arg == "gemm" ? nullptr : load_family(*family_arg);
  const std::string family = declared ? declared->name() : *family_arg;
  const bool gemm = family == "gemm";
  TransposeProblem problem;
  GemmProblem gproblem;
  FamilyValues fproblem;
  if (declared) {
    const auto p = args.value("problem");
    if (!p) throw UsageError("--problem D=V,... is required (dims of " + family + ": " + declared->problem_text({}) + ")");
    fproblem = declared->parse_problem(*p);
  } else if (gemm) {
    const auto m = args.value("m"), n = args.value("n"), k = args.value("k");
    if (!m || !n || !k) throw UsageError("--m M, --n N and --k K are required");
    read_gemm_dtypes(args, gproblem, "f32");
    read_gemm_layout(args, gproblem);
    gproblem.m = parse_int("--m", *m, 1, 2147483647LL);
    gproblem.n = parse_int("--n", *n, 1, 2147483647LL);
    gproblem.k = parse_int("--k", *k, 1, 2147483647LL);
    gproblem.batch = parse_int("--batch", args.value_or("batch", "1"), 1, 65535);
  } else {
    const auto rows_s = args.value("rows");
    const auto cols_s = args.value("cols");
    if (!rows_s || !cols_s) throw UsageError("--rows R and --cols C are required");
    try {
      problem.dtype = parse_dtype(args.value_or("dtype", "f32"));
    } catch (const Error& e) {
      throw UsageError(std::string("--dtype: ") + e.what());
    }
    problem.rows = parse_int("--rows", *rows_s, 1, 1LL << 31);
    problem.cols = parse_int("--cols", *cols_s, 1, 1LL << 31);
    problem.batch = parse_int("--batch", args.value_or("batch", "1"), 1, 1 << 20);
  }
  TuneOptions options;
  options.max_seconds = parse_seconds("--budget-s", args.value_or("budget-s", "0"), 1e6);
  options.max_candidates = static_cast<int>(parse_int("--max-candidates", args.value_or("max-candidates", "0"), 0, 1000000));
  options.keep_conflicted = args.flag("keep-conflicted");
  options.compile_only = args.flag("compile-only");
  options.arch = args.value_or("arch", "");
  options.extra_configs = args.values("config");
  if (args.given("threads")) {
    // NOTE: --threads is the block size in every config option (swz gen|compile|analyze|run); here it
    // once meant compile threads. The old spelling works for one release.
    if (args.given("compile-threads")) throw UsageError("give --compile-threads only (--threads is its old spelling)");
    std::fprintf(stderr, "swz autotune: warning: --threads is deprecated here (elsewhere it is the block size); "
                         "use --compile-threads\n");
    options.compile_threads = static_cast<int>(parse_int("--threads", *args.value("threads"), 0, 1024));
  } else {
    options.compile_threads =
        static_cast<int>(parse_int("--compile-threads", args.value_or("compile-threads", "0"), 0, 1024));
  }
  if (auto seed = args.value("seed")) options.seed = parse_int("--seed", *seed, 0, 4294967295LL);
  options.candidate_timeout_s = parse_seconds("--timeout-s", args.value_or("timeout-s", "10"), 3600);
  if (options.candidate_timeout_s <= 0) throw UsageError("--timeout-s must be > 0");
  const int top = static_cast<int>(parse_int("--top", args.value_or("top", "10"), 0, 1000000));
  const Format format = read_format(args, {Format::Text, Format::Json, Format::Csv});
  const bool quiet = args.flag("quiet");
  EngineOptions eo;
  eo.cache_dir = args.value_or("cache-dir", "");
  args.finish();
  if (!options.arch.empty() && !options.compile_only)
    throw UsageError("--arch applies only with --compile-only (a tune targets the GPU it runs on)");
  if (options.compile_only && options.arch.empty())
    throw UsageError("--compile-only needs --arch (e.g. --arch sm_90): there may be no GPU to ask");
  if (!options.arch.empty() && !is_known_arch(options.arch)) {
    std::vector<std::string> archs = known_archs();
    parse_choice("--arch", options.arch, archs);
  }

  // Bad sizes are usage errors (exit 2), found before the cache is opened or anything is compiled.
  if (gemm) gproblem.resolved().staged(0, 0, nullptr, nullptr);
  else if (!declared) problem.resolved();

  Engine engine(eo);
  ProgressView view(quiet, options.compile_only);
  options.progress = [&view](const TuneProgress& p) { view.update(p); };
  // Device allocations are 256-byte aligned: the alignment is the pitches' and strides'.
  TuneReport report;
  Rate rate{"GB/s", 0, 1e6};
  try {
    if (declared) {
      rate = Rate{"runs/s", 1, 1e-3};
      report = autotune_family(engine, *declared, fproblem, options);
    } else if (gemm) {
      const GemmProblem p = gproblem.resolved();
      rate = Rate{"TFLOP/s", 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k) *
                                 static_cast<double>(p.batch), 1e9};
      // Tune what Engine::gemm will run: narrow operands staged into 16-byte pitches.
      bool sa = false, sb = false;
      const GemmProblem ps = p.staged(0, 0, &sa, &sb);
      if ((sa || sb) && !quiet)
        std::fprintf(stderr, "note: %s: pointer, pitch or stride allow < 8-byte accesses; gemm() stages it into "
                     "16-byte pitches, so the staged problem is tuned\n", staged_operands(sa, sb));
      report = autotune_gemm(engine, ps, ps.max_vec_bytes(0, 0), options);
    } else {
      const TransposeProblem p = problem.resolved();
      rate.work = 2.0 * static_cast<double>(p.rows) * static_cast<double>(p.cols) * static_cast<double>(p.batch) *
                  dtype_bytes(p.dtype);
      report = autotune_transpose(engine, p, p.max_vec_bytes(0, 0), options);
    }
  } catch (...) {
    view.end();
    throw;
  }
  view.end();
  if (format == Format::Json)
    print_json(family, report, engine);
  else if (format == Format::Csv)
    print_csv(family, report, rate);
  else
    print_table(family, report, rate, top, options);
  if (options.compile_only) {
    for (const auto& c : report.candidates)
      if (c.status == "compiled") return 0;
    return 1;
  }
  return report.winner.empty() ? 1 : 0;
}

}  // namespace

const Command& autotune_command() {
  static const Command cmd{"autotune", "tune a kernel on the GPU and cache the winner", kHelp, &run_autotune};
  return cmd;
}

}  // namespace cli
}  // namespace swz
