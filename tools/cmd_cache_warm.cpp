// tools: `swz cache warm --problems FILE [--shard i/n] [--arch A]` -- fetch (local cache, then the
// remote tier) or compile every kernel a deployment's problems need, before the first request.
#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "output.hpp"
#include "problem_list.hpp"
#include "swzjit/cache.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/jit.hpp"

namespace swz {
namespace cli {

namespace {

/// The kernel one problem needs: with an arch, the default config compiled for it (no GPU needed);
/// without, the config a call would use on GPU 0 (a cached or remote tuned winner, else the
/// default), loaded on the device.
std::string warm_one(Engine& engine, const ParsedProblem& p, const std::string& arch) {
  if (p.family == "gemm") {
    const GemmProblem g = p.gemm.resolved();
    if (!arch.empty()) {
      const GemmConfig cfg = default_gemm_config(g, g.max_vec_bytes(0, 0), arch);
      engine.compile_gemm(cfg, arch);
      return cfg.to_string();
    }
    const GemmConfig cfg = engine.gemm_config(g, 0, 0);
    engine.gemm_kernel(cfg);
    return cfg.to_string();
  }
  const TransposeProblem t = p.transpose.resolved();
  if (!arch.empty()) {
    const TransposeConfig cfg = default_transpose_config(t.dtype, t.max_vec_bytes(0, 0));
    engine.compile_transpose(cfg, arch);
    return cfg.to_string();
  }
  const TransposeConfig cfg = engine.transpose_config(t, 0, 0);
  engine.transpose_kernel(cfg);
  return cfg.to_string();
}

}  // namespace

int run_cache_warm(Args& args) {
  const auto file = args.value("problems");
  if (!file) throw UsageError("`swz cache warm` needs --problems FILE (one problem per line, see --help)");
  const auto shard_text = args.value("shard");
  const Shard shard = shard_text ? parse_shard(*shard_text) : Shard{};
  const std::string arch = args.value_or("arch", "");
  std::string dir = args.value_or("dir", "");
  if (auto v = args.value("cache-dir")) {  // swz run's and swz autotune's name for it
    if (!dir.empty()) throw UsageError("give --dir or --cache-dir, not both (they name the same directory)");
    dir = *v;
  }
  const Format format = read_format(args, {Format::Text, Format::Json, Format::Csv});
  const bool json = format == Format::Json;
  const bool list_only = args.flag("list");
  const bool quiet = args.flag("quiet");
  args.finish();
  if (!arch.empty() && !is_known_arch(arch)) parse_choice("--arch", arch, known_archs());
  const auto all = read_problem_file(*file);
  const auto mine = select_shard(all, shard);
  if (list_only) {
    for (const auto& p : mine) std::printf("%s:%d: %s\n", file->c_str(), p.line, p.text.c_str());
    return 0;
  }

  // NOTE: warm runs before a server takes requests, so a slow remote call is cheaper than the compile
  // a timeout would cause: its default bound is 1 s, not a launch's 50 ms (an explicit value wins).
  ::setenv("SWZJIT_REMOTE_CACHE_TIMEOUT_MS", "1000", 0);
  EngineOptions eo;
  eo.cache_dir = dir;
  Engine engine(eo);
  const CacheCounters before = engine.cache().counters();
  const auto t0 = std::chrono::steady_clock::now();
  int failed = 0;
  std::uint64_t failed_builds = 0;  // builds that threw (e.g. no NVRTC): not kernels compiled
  std::string rows;
  CsvTable csv({"line", "problem", "source", "config", "error"});
  for (std::size_t k = 0; k < mine.size(); ++k) {
    const std::string where = *file + ":" + std::to_string(mine[k].line);
    const ParsedProblem p = parse_problem(mine[k], where);
    const CacheCounters c0 = engine.cache().counters();
    std::string config, error;
    try {
      config = warm_one(engine, p, arch);
    } catch (const Error& e) {
      // One problem that cannot be built (e.g. an HGEMM for sm_75) does not stop the others.
      error = std::string(to_string(e.kind())) + ": " + e.what();
      ++failed;
    }
    const CacheCounters c1 = engine.cache().counters();
    if (!error.empty()) failed_builds += c1.builds - c0.builds;
    const char* source = !error.empty()                     ? "failed"
                         : c1.builds > c0.builds             ? "compiled"
                         : c1.remote_hits > c0.remote_hits   ? "remote"
                                                             : "local";
    if (!quiet && format == Format::Text)
      std::fprintf(stderr, "[%zu/%zu] %s: %s: %s%s%s\n", k + 1, mine.size(), where.c_str(), mine[k].text.c_str(),
                   source, error.empty() ? (" " + config).c_str() : ": ", error.c_str());
    rows += std::string(rows.empty() ? "" : ", ") + "{\"line\": " + std::to_string(mine[k].line) +
            ", \"problem\": " + json_string(mine[k].text) + ", \"source\": \"" + source +
            "\", \"config\": " + json_string(config) + ", \"error\": " + json_string(error) + "}";
    csv.add({std::to_string(mine[k].line), mine[k].text, source, config, error});
  }
  const CacheCounters after = engine.cache().counters();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto d = [](std::uint64_t a, std::uint64_t b) { return static_cast<unsigned long long>(a - b); };
  const CacheStats s = engine.cache().stats();
  if (format == Format::Csv) {
    csv.print();
  } else if (json) {
    std::printf(
        "{%s\"problems\": %zu, \"failed\": %d, \"compiled\": %llu, \"local_hits\": %llu, \"remote_hits\": %llu, "
        "\"remote_errors\": %llu, \"remote_rejected\": %llu, \"remote_stores\": %llu, \"remote_calls\": %llu, "
        "\"remote_latency_us_total\": %llu, \"remote_latency_us_max\": %llu, \"seconds\": %.3f, \"remote\": %s, "
        "\"rows\": [%s]}\n",
        json_version_member().c_str(), mine.size(), failed, d(after.builds, before.builds + failed_builds), d(after.hits, before.hits),
        d(after.remote_hits, before.remote_hits), d(after.remote_errors, before.remote_errors),
        d(after.remote_rejected, before.remote_rejected), d(after.remote_stores, before.remote_stores),
        d(after.remote_calls, before.remote_calls), d(after.remote_latency_us_total, before.remote_latency_us_total),
        static_cast<unsigned long long>(after.remote_latency_us_max), seconds, json_string(s.remote).c_str(),
        rows.c_str());
  } else {
    std::printf("warmed %zu problems (%d failed): %llu kernels compiled, %llu from the local cache, %llu from the "
                "remote cache%s%s\n",
                mine.size(), failed, d(after.builds, before.builds + failed_builds), d(after.hits, before.hits),
                d(after.remote_hits, before.remote_hits), s.remote.empty() ? "" : " ", s.remote.c_str());
  }
  return failed ? 1 : 0;
}

}  // namespace cli
}  // namespace swz
