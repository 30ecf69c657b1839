// tools: `swz run transpose` — run the library's transpose on random data, verify it exactly against a
// host reference (poisoned output, guard regions), time it with the L2 flushed, and show where the
// first launch's time went (context, cache, compile or load).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../generator/core/checked_arith.hpp"  // the library's checked size arithmetic (header-only)
#include "cli.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "swzjit/device.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "transpose_args.hpp"

namespace swz {
namespace cli {

namespace {

using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

constexpr std::uint8_t kPoison = 0xFF;  // all-ones: NaN for floats; never produced by the random fill
constexpr std::size_t kGuardBytes = 4096;

std::uint64_t splitmix(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Random elements whose bit patterns are never all-ones (so an unwritten output cannot pass).
void fill_random(std::vector<std::uint8_t>& buf, int eb, std::uint64_t seed) {
  std::uint64_t s = seed;
  if (eb == 4) {
    auto* p = reinterpret_cast<std::uint32_t*>(buf.data());
    for (std::size_t i = 0; i < buf.size() / 4; ++i) {
      const std::uint64_t r = splitmix(s);  // finite floats in (-2, 2)
      p[i] = static_cast<std::uint32_t>((r & 0x80000000u) | ((126u + ((r >> 33) & 1u)) << 23) | ((r >> 8) & 0x7fffffu));
    }
  } else {
    auto* p = reinterpret_cast<std::uint16_t*>(buf.data());
    for (std::size_t i = 0; i < buf.size() / 2; ++i) p[i] = static_cast<std::uint16_t>(splitmix(s) % 0x7c00u);
  }
}

// Exact check of out (with its guards) against the transpose of in; returns the number of bad elements.
long long verify(const TransposeProblem& p, const std::vector<std::uint8_t>& in, const std::vector<std::uint8_t>& out_all) {
  const int eb = dtype_bytes(p.dtype);
  long long bad = 0;
  for (std::size_t i = 0; i < kGuardBytes; ++i) {
    bad += out_all[i] != kPoison;
    bad += out_all[out_all.size() - 1 - i] != kPoison;
  }
  const std::uint8_t* out = out_all.data() + kGuardBytes;
  for (long long b = 0; b < p.batch; ++b)
    for (long long c = 0; c < p.cols; ++c) {
      const std::uint8_t* orow = out + (b * p.stride_out + c * p.ld_out) * eb;
      for (long long r = 0; r < p.rows; ++r)
        bad += std::memcmp(orow + r * eb, in.data() + (b * p.stride_in + r * p.ld_in + c) * eb, eb) != 0;
    }
  return bad;
}

int run_run(Args& args) {
  if (args.peek_positional() == std::optional<std::string>("gemm")) return run_gemm(args);  // tools/cmd_run_gemm.cpp
  if (is_declared_family(args)) return family_run(args);                                   // tools/cmd_family.cpp
  const auto t_main = Clock::now();
  const bool explicit_config = args.given("config") || args.given("tile") || args.given("threads") ||
                               args.given("vec") || args.given("smem") || args.given("pair") ||
                               args.given("raster") || args.given("cache");
  TransposeConfig forced;
  if (explicit_config) forced = read_transpose_config(args, args.given("dtype") ? "" : "f32");
  const std::string dtype_s = explicit_config ? to_string(forced.dtype) : args.value_or("dtype", "f32");
  const auto rows_s = args.value("rows");
  const auto cols_s = args.value("cols");
  const long long batch = parse_int("--batch", args.value_or("batch", "1"), 1, 1 << 20);
  const long long pitch_pad = parse_int("--pad-ld", args.value_or("pad-ld", "0"), 0, 1 << 20);
  const int reps = static_cast<int>(parse_int("--reps", args.value_or("reps", "20"), 1, 100000));
  const bool tune = args.flag("tune");
  const Format format = read_format(args, {Format::Text, Format::Json, Format::Csv});
  const auto seed_text = args.value("seed");
  const std::string cache_dir = args.value_or("cache-dir", "");
  expect_family(args, "run");
  if (!rows_s || !cols_s) throw UsageError("--rows R and --cols C are required");
  TransposeProblem problem;
  problem.dtype = parse_dtype(dtype_s);
  problem.rows = parse_int("--rows", *rows_s, 0, 1LL << 31);
  problem.cols = parse_int("--cols", *cols_s, 0, 1LL << 31);
  problem.batch = batch;
  problem.ld_in = problem.cols + pitch_pad;
  problem.ld_out = problem.rows + pitch_pad;
  args.finish();
  const TransposeProblem p = problem.resolved();
  const int eb = dtype_bytes(p.dtype);
  // The default is what swz run always used: derived from the shape, so each shape has its own data.
  const std::uint64_t seed = seed_text ? static_cast<std::uint64_t>(parse_int("--seed", *seed_text, 0, 4294967295LL))
                                       : 0x5eed0000ULL + static_cast<std::uint64_t>(p.rows * 131 + p.cols);
  // Checked: resolved() bounds the spans, not batch whole strides (issue 10).
  const std::size_t in_bytes = static_cast<std::size_t>(
      detail::checked_mul(detail::checked_mul(p.batch, p.stride_in, "input elements"), eb, "input bytes"));
  const std::size_t out_bytes = static_cast<std::size_t>(
      detail::checked_mul(detail::checked_mul(p.batch, p.stride_out, "output elements"), eb, "output bytes"));

  // 1. The CUDA context (excluded from the first-launch figure, as is the application's own data).
  const auto t_ctx0 = Clock::now();
  std::string why;
  if (!driver_available(&why)) throw Error(ErrorKind::NoDevice, "swz run needs a GPU: " + why);
  const DeviceInfo dev = device_info(0);
  DeviceBuffer probe(256, 0);
  const auto t_ctx1 = Clock::now();

  // 2. The application's data: random input, poisoned output with guard regions.
  std::vector<std::uint8_t> h_in(in_bytes);
  fill_random(h_in, eb, seed);
  DeviceBuffer d_in(std::max<std::size_t>(in_bytes, 16), 0), d_out(out_bytes + 2 * kGuardBytes, 0);
  if (in_bytes) d_in.copy_from_host(h_in.data(), in_bytes);
  d_out.memset8(kPoison);
  Stream stream(0);
  const auto t_data = Clock::now();

  // 3. The library: engine (cache open), configuration, kernel (cache or NVRTC), launch.
  EngineOptions eo;
  eo.policy = tune ? TunePolicy::TuneOnMiss : TunePolicy::Default;
  eo.cache_dir = cache_dir;
  Engine engine(eo);
  const auto t_engine = Clock::now();
  const DevicePtr in_ptr = d_in.ptr(), out_ptr = d_out.ptr() + kGuardBytes;
  const TransposeConfig cfg = explicit_config ? forced : engine.transpose_config(p, in_ptr, out_ptr);
  const auto t_cfg = Clock::now();
  engine.transpose_kernel(cfg);
  const auto t_kernel = Clock::now();
  engine.transpose(p, in_ptr, out_ptr, stream.handle(), &cfg);
  const auto t_launch = Clock::now();
  stream.synchronize();

  std::vector<std::uint8_t> h_out(out_bytes + 2 * kGuardBytes);
  d_out.copy_to_host(h_out.data(), h_out.size());
  const long long bad = verify(p, h_in, h_out);

  // 4. Timing: L2 flushed before each repetition, events around each launch.
  std::vector<double> times;
  if (bad == 0 && p.rows && p.cols) {
    DeviceBuffer flush(static_cast<std::size_t>(std::max<long long>(dev.l2_bytes, 1 << 20)) * 2, 0);
    Event e0(0), e1(0);
    for (int i = 0; i < 3; ++i) engine.transpose(p, in_ptr, out_ptr, stream.handle(), &cfg);
    for (int i = 0; i < reps; ++i) {
      flush.memset32(static_cast<std::uint32_t>(i), stream.handle());
      e0.record(stream.handle());
      engine.transpose(p, in_ptr, out_ptr, stream.handle(), &cfg);
      e1.record(stream.handle());
      times.push_back(elapsed_ms(e0, e1));
    }
    std::sort(times.begin(), times.end());
  }
  const double median = times.empty() ? 0 : times[times.size() / 2];
  const double gbps = median > 0 ? 2.0 * static_cast<double>(p.rows * p.cols * p.batch * eb) / (median * 1e6) : 0;
  const double ctx_ms = ms_between(t_ctx0, t_ctx1), data_ms = ms_between(t_ctx1, t_data);
  const double first_launch_ms = ms_between(t_main, t_launch) - ctx_ms - data_ms;
  const EngineCounters ec = engine.counters();
  const CacheCounters cc = engine.cache().counters();

  const std::string config_source =
      explicit_config ? "given" : ec.tuned_hits ? "tuned, from the cache" : tune ? "tuned now" : "default";
  if (format == Format::Csv) {
    CsvTable t({"problem", "device", "config", "config_source", "seed", "verified", "bad_elements", "median_ms", "gbps",
                "repetitions", "first_launch_ms", "compiles"});
    t.add({p.key(p.max_vec_bytes(in_ptr, out_ptr)), dev.name, cfg.to_string(), config_source, std::to_string(seed),
           boolean(bad == 0), std::to_string(bad), fixed(median, 4), fixed(gbps, 1), std::to_string(times.size()),
           fixed(first_launch_ms, 3), std::to_string(ec.compiles)});
    t.print();
  } else if (format == Format::Json) {
    std::printf(
        "{%s\"problem\": \"%s\", \"device\": %s, \"config\": \"%s\", \"seed\": %llu, \"verified\": %s, "
        "\"bad_elements\": %lld, "
        "\"median_ms\": %.4f, \"gbps\": %.1f, \"repetitions\": %zu, \"first_launch_ms\": %.3f, "
        "\"first_launch_breakdown_ms\": {\"engine\": %.3f, \"config\": %.3f, \"kernel\": %.3f, \"launch\": %.3f}, "
        "\"context_ms\": %.1f, \"data_ms\": %.1f, \"compiles\": %llu, \"kernel_cache_hits\": %llu, "
        "\"kernel_cache_misses\": %llu, \"tuned_hits\": %llu, \"tuned_misses\": %llu, \"benchmark_runs\": %llu}\n",
        json_version_member().c_str(), p.key(p.max_vec_bytes(in_ptr, out_ptr)).c_str(), json_string(dev.name).c_str(),
        cfg.to_string().c_str(), static_cast<unsigned long long>(seed), bad == 0 ? "true" : "false", bad, median, gbps, times.size(), first_launch_ms,
        ms_between(t_data, t_engine), ms_between(t_engine, t_cfg), ms_between(t_cfg, t_kernel),
        ms_between(t_kernel, t_launch), ctx_ms, data_ms, static_cast<unsigned long long>(ec.compiles),
        static_cast<unsigned long long>(cc.hits), static_cast<unsigned long long>(cc.misses),
        static_cast<unsigned long long>(ec.tuned_hits), static_cast<unsigned long long>(ec.tuned_misses),
        static_cast<unsigned long long>(ec.benchmark_runs));
  } else {
    std::printf("transpose %s on %s\n", p.key(p.max_vec_bytes(in_ptr, out_ptr)).c_str(), dev.name.c_str());
    std::printf("config       %s (%s)\n", cfg.to_string().c_str(), config_source.c_str());
    std::printf("seed         %llu (random input)\n", static_cast<unsigned long long>(seed));
    std::printf("verified     %s\n", bad == 0 ? "exact match with the host reference; guards intact"
                                              : (std::to_string(bad) + " bad elements").c_str());
    if (!times.empty())
      std::printf("time         %.4f ms median of %zu (L2 flushed)  ->  %.1f GB/s (read + write)\n", median,
                  times.size(), gbps);
    std::printf("first launch %.2f ms after main(), excluding context creation (%.0f ms) and data setup:\n"
                "             engine+cache %.2f, config %.2f, kernel %.2f (%llu compiles), launch %.3f ms\n",
                first_launch_ms, ctx_ms, ms_between(t_data, t_engine), ms_between(t_engine, t_cfg),
                ms_between(t_cfg, t_kernel), static_cast<unsigned long long>(ec.compiles),
                ms_between(t_kernel, t_launch));
  }
  return bad == 0 ? 0 : 1;
}

std::string run_help() {
  return std::string(
    "usage: swz run transpose --rows R --cols C [--dtype f32|f16|bf16] [--batch B] [--pad-ld N]\n"
    "                         [config options] [--tune] [--reps N] [--seed N] [--cache-dir DIR]\n"
    "                         [--format text|json|csv]\n"
    "       swz run FAMILY --problem D=V,... [--config K=V,...] [--seed N] [--reps N] [--cache-dir DIR]\n"
    "                         [--format text|json|csv]   (a declared family: random inputs in [-1, 1],\n"
    "                         checked against its reference, timed; see swz family --help)\n"
    "       swz run gemm ...  (below)\n\n"
    "Transpose a random R x C matrix (or a batch) on GPU 0 with libswzjit, verify the result exactly\n"
    "against a host reference (poisoned output, guard regions on both sides), then time it: median of\n"
    "--reps launches (default 20), L2 flushed before each, bandwidth counting bytes read + written.\n"
    "Without config options the engine uses the tuned winner from the cache, else (--tune) tunes now,\n"
    "else a default. --pad-ld N adds N elements to both leading dimensions. Also shows the time from\n"
    "main() to the first launch, excluding CUDA context creation and data setup.\n"
    "--seed N (0..4294967295) draws the random input; default: 0x5eed0000 + 131*R + C (one per shape,\n"
    "as before); the seed used is printed. --format: text (default), json (one object; --json is the\n"
    "same) or csv (a header row and one row).\n\n"
    "example: swz run transpose --rows 16384 --cols 8192 --dtype f32\n\n") + transpose_config_help() + "\n" +
    kRunGemmHelp;
}

}  // namespace

const Command& run_command() {
  static const Command cmd{"run", "run, verify and time a kernel on the GPU", nullptr, &run_run, &run_help};
  return cmd;
}

}  // namespace cli
}  // namespace swz
