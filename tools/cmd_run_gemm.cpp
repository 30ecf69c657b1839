// tools: `swz run gemm` — run the library's GEMM on random data on GPU 0, verify it against the trusted
// reference kernel (f64 sums; relative Frobenius error, guard regions), time it with the L2 flushed
// and print TFLOP/s; says whether the config is a tuned winner from the cache (swz autotune gemm) or the
// default. tools/cmd_run.cpp dispatches here when the family is "gemm".
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../generator/core/checked_arith.hpp"  // the library's checked size arithmetic (header-only)
#include "cli.hpp"
#include "commands.hpp"
#include "gemm_args.hpp"
#include "output.hpp"
#include "swzjit/device.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"

namespace swz {
namespace cli {

const char kRunGemmHelp[] =
    "usage: swz run gemm --m M --n N --k K [--dtype f32|f16|bf16] [--out f32|f16|bf16] [--layout NN|NT|TN|TT]\n"
    "                    [--c-order row|col] [--batch B] [--alpha A] [--beta B] [--config STR] [--reps N]\n"
    "                    [--seed N] [--cache-dir DIR] [--format text|json|csv]\n\n"
    "C = alpha * A * B + beta * C on random data (inputs in [-1, 1]) on GPU 0 with libswzjit; the result is\n"
    "checked against the reference kernel (one thread per element, f64 sums): relative Frobenius error\n"
    "(must be < 1e-5 for f32, < 1e-2 for f16/bf16 inputs) and 4 KiB guard regions around C. Then --reps\n"
    "launches (default 20) are timed, L2 flushed before each; prints the median and TFLOP/s (2*M*N*K*B).\n"
    "Without --config the engine's choice is used: the winner `swz autotune gemm` stored for this problem\n"
    "on this GPU (\"tuned\"), else the default config (\"default\").\n"
    "Layout letters: A then B; N = row-major as in C = A*B, T = column-major.\n"
    "--seed N (0..4294967293): A is drawn from seed N, B from N+1, C from N+2 (default 1, as before);\n"
    "printed. --format: text (default), json (one object; --json is the same) or csv (header + one row).\n"
    "example: swz run gemm --m 4096 --n 4096 --k 4096 --dtype f16 --out f32 --layout NT\n";

namespace {

constexpr std::size_t kGuard = 4096;

std::uint64_t splitmix(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Random values in [-1, 1) as the element type's bits (bf16/f16 from an f32 by truncation / conversion).
// Random values in [-1, 1) stored as the element type (rounded to nearest even).
void fill(std::vector<std::uint8_t>& buf, DType t, std::uint64_t seed) {
  std::uint64_t s = seed;
  const std::size_t eb = static_cast<std::size_t>(dtype_bytes(t));
  for (std::size_t i = 0; i + eb <= buf.size(); i += eb)
    store_element(t, &buf[i], static_cast<float>(static_cast<double>(splitmix(s) >> 11) / 9007199254740992.0) * 2.0f - 1.0f);
}


}  // namespace

int run_gemm(Args& args) {
  args.next_positional();  // "gemm"
  GemmProblem p;
  const bool explicit_config = args.given("config");
  GemmConfig forced;
  if (explicit_config) forced = GemmConfig::parse(*args.value("config"));
  read_gemm_dtypes(args, p, explicit_config ? to_string(forced.in_dtype()) : "f32",
                   explicit_config ? to_string(forced.out_dtype()) : "");
  read_gemm_layout(args, p);
  const auto m = args.value("m"), n = args.value("n"), k = args.value("k");
  if (!m || !n || !k) throw UsageError("--m M, --n N and --k K are required");
  p.m = parse_int("--m", *m, 0, 2147483647LL);
  p.n = parse_int("--n", *n, 0, 2147483647LL);
  p.k = parse_int("--k", *k, 0, 2147483647LL);
  p.batch = parse_int("--batch", args.value_or("batch", "1"), 1, 1 << 20);
  const float alpha = static_cast<float>(parse_real("--alpha", args.value_or("alpha", "1"), -1e30, 1e30));
  const float beta = static_cast<float>(parse_real("--beta", args.value_or("beta", "0"), -1e30, 1e30));
  const int reps = static_cast<int>(parse_int("--reps", args.value_or("reps", "20"), 1, 100000));
  const std::uint64_t seed = static_cast<std::uint64_t>(parse_int("--seed", args.value_or("seed", "1"), 0, 4294967293LL));
  const Format format = read_format(args, {Format::Text, Format::Json, Format::Csv});
  const std::string cache_dir = args.value_or("cache-dir", "");
  args.finish();
  const GemmProblem r = p.resolved();

  std::string why;
  if (!driver_available(&why)) throw Error(ErrorKind::NoDevice, "swz run needs a GPU: " + why);
  const DeviceInfo dev = device_info(0);
  const std::size_t ei = static_cast<std::size_t>(dtype_bytes(r.dtype)), eo = static_cast<std::size_t>(dtype_bytes(r.out_dtype));
  const bool ar = r.a_order == MatrixOrder::RowMajor, br = r.b_order == MatrixOrder::RowMajor,
             cr = r.c_order == MatrixOrder::RowMajor;
  // Checked: resolved() bounds each operand's span, not these whole-pitch sizes (issue 10).
  const auto bytes = [](long long batch, long long stride, long long lines, long long ld, std::size_t eb, const char* what) {
    using detail::checked_add;
    using detail::checked_mul;
    return static_cast<std::size_t>(checked_mul(
        checked_add(checked_mul(batch - 1, stride, what), checked_mul(lines, ld, what), what), static_cast<long long>(eb), what));
  };
  const std::size_t a_bytes = bytes(r.batch, r.stride_a, ar ? r.m : r.k, r.lda, ei, "bytes of A");
  const std::size_t b_bytes = bytes(r.batch, r.stride_b, br ? r.k : r.n, r.ldb, ei, "bytes of B");
  const std::size_t c_bytes = bytes(r.batch, r.stride_c, cr ? r.m : r.n, r.ldc, eo, "bytes of C");
  std::vector<std::uint8_t> ha(a_bytes), hb(b_bytes), hc(c_bytes + 2 * kGuard);
  fill(ha, r.dtype, seed), fill(hb, r.dtype, seed + 1), fill(hc, r.out_dtype, seed + 2);
  DeviceBuffer da(std::max<std::size_t>(a_bytes, 16)), db(std::max<std::size_t>(b_bytes, 16)), dc(hc.size()), dref(hc.size());
  if (a_bytes) da.copy_from_host(ha.data(), a_bytes);
  if (b_bytes) db.copy_from_host(hb.data(), b_bytes);
  dc.copy_from_host(hc.data(), hc.size());
  dref.copy_from_host(hc.data(), hc.size());

  EngineOptions eo_opts;
  eo_opts.cache_dir = cache_dir;
  Engine engine(eo_opts);
  Stream stream(0);
  const std::uint64_t tuned_before = engine.counters().tuned_hits;
  const GemmConfig cfg = explicit_config ? forced : engine.gemm_config(r, da.ptr(), db.ptr());
  const bool tuned = engine.counters().tuned_hits > tuned_before;
  engine.gemm(r, da.ptr(), db.ptr(), dc.ptr() + kGuard, alpha, beta, stream.handle(), &cfg);
  engine.gemm_reference(r, da.ptr(), db.ptr(), dref.ptr() + kGuard, alpha, beta, stream.handle());
  stream.synchronize();
  std::vector<std::uint8_t> got(hc.size()), ref(hc.size());
  dc.copy_to_host(got.data(), got.size());
  dref.copy_to_host(ref.data(), ref.size());
  long long guard_bad = 0;
  for (std::size_t i = 0; i < kGuard; ++i) {
    guard_bad += got[i] != hc[i];
    guard_bad += got[got.size() - 1 - i] != hc[hc.size() - 1 - i];
  }
  double num = 0, den = 0;
  for (std::size_t i = kGuard; i + eo <= kGuard + c_bytes; i += eo) {
    const double x = load_element(r.out_dtype, &got[i]), y = load_element(r.out_dtype, &ref[i]);
    num += std::isfinite(x) ? (x - y) * (x - y) : 1e30;
    den += y * y;
  }
  const double err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  const double tol = r.dtype == DType::F32 ? 1e-5 : 1e-2;
  const bool ok = guard_bad == 0 && err < tol;

  std::vector<double> times;
  if (ok && r.m && r.n) {
    DeviceBuffer flush(static_cast<std::size_t>(std::max<long long>(dev.l2_bytes, 1 << 20)) * 2, 0);
    Event e0(0), e1(0);
    for (int i = 0; i < 3; ++i) engine.gemm(r, da.ptr(), db.ptr(), dc.ptr() + kGuard, alpha, beta, stream.handle(), &cfg);
    for (int i = 0; i < reps; ++i) {
      flush.memset32(static_cast<std::uint32_t>(i), stream.handle());
      e0.record(stream.handle());
      engine.gemm(r, da.ptr(), db.ptr(), dc.ptr() + kGuard, alpha, beta, stream.handle(), &cfg);
      e1.record(stream.handle());
      times.push_back(elapsed_ms(e0, e1));
    }
    std::sort(times.begin(), times.end());
  }
  const double median = times.empty() ? 0 : times[times.size() / 2];
  const double tflops = median > 0 ? 2.0 * r.m * r.n * static_cast<double>(r.k) * r.batch / (median * 1e9) : 0;
  bool sa = false, sb = false;
  const GemmProblem rs = r.staged(da.ptr(), db.ptr(), &sa, &sb);
  const std::string key = r.key(r.max_vec_bytes(da.ptr(), db.ptr()));
  const char* source = explicit_config ? "given" : tuned ? "tuned" : "default";
  if (format == Format::Json) {
    std::printf("{%s\"problem\": %s, \"device\": %s, \"config\": %s, \"config_source\": \"%s\", \"seed\": %llu, "
                "\"verified\": %s, \"relative_error\": %s, \"tolerance\": %g, \"guards_intact\": %s, "
                "\"median_ms\": %s, \"tflops\": %s, \"repetitions\": %zu}\n",
                json_version_member().c_str(), json_string(key).c_str(), json_string(dev.name).c_str(),
                json_string(cfg.to_string()).c_str(), source, static_cast<unsigned long long>(seed), boolean(ok),
                json_number(err, 9).c_str(), tol, boolean(guard_bad == 0), json_number(median, 4).c_str(),
                json_number(tflops, 2).c_str(), times.size());
    return ok ? 0 : 1;
  }
  if (format == Format::Csv) {
    CsvTable t({"problem", "device", "config", "config_source", "seed", "verified", "relative_error", "tolerance",
                "guards_intact", "median_ms", "tflops", "repetitions"});
    t.add({key, dev.name, cfg.to_string(), source, std::to_string(seed), boolean(ok), csv_number(err, 9), fixed(tol, 9),
           boolean(guard_bad == 0), fixed(median, 4), fixed(tflops, 2), std::to_string(times.size())});
    t.print();
    return ok ? 0 : 1;
  }
  std::printf("gemm %s on %s\n", key.c_str(), dev.name.c_str());
  if (sa || sb)
    std::printf("staged       %s into 16-byte pitches (lda %lld, ldb %lld) before the kernel\n", staged_operands(sa, sb),
                rs.lda, rs.ldb);
  std::printf("config       %s (%s)\n", cfg.to_string().c_str(),
              explicit_config ? "given" : tuned ? "tuned: the cached autotuner winner" : "default: no tuned winner cached");
  std::printf("seed         %llu (A; B and C: the next two)\n", static_cast<unsigned long long>(seed));
  std::printf("verified     %s: relative Frobenius error %.3g vs the f64 reference (limit %.0e), guards %s\n",
              ok ? "yes" : "NO", err, tol, guard_bad ? "DISTURBED" : "intact");
  if (!times.empty())
    std::printf("time         %.4f ms median of %zu (L2 flushed)  ->  %.1f TFLOP/s\n", median, times.size(), tflops);
  return ok ? 0 : 1;
}

}  // namespace cli
}  // namespace swz
