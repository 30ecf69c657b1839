// examples: an application using swz::Engine as it would in production: transposes and GEMMs of
// several shapes on random data, each result checked against a host f64 reference, each timed.
// Without a GPU it compiles (or finds in the cache) the kernels it would use for sm_90 and stops there.
#include <swzjit/swzjit.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr const char* kArch = "sm_90";  // the compile-only warm-up's target (H100)

struct TransposeCase {
  swz::DType dtype;
  long long rows, cols, batch;
};
struct GemmCase {
  swz::DType dtype, out_dtype;
  long long m, n, k;
  swz::MatrixOrder a_order, b_order;
};

const std::vector<TransposeCase> kTransposes = {
    {swz::DType::F32, 4096, 4096, 1}, {swz::DType::F32, 1000, 777, 3}, {swz::DType::BF16, 2048, 1536, 1}};
const std::vector<GemmCase> kGemms = {
    {swz::DType::F32, swz::DType::F32, 512, 384, 256, swz::MatrixOrder::RowMajor, swz::MatrixOrder::RowMajor},
    {swz::DType::F32, swz::DType::F32, 129, 127, 300, swz::MatrixOrder::RowMajor, swz::MatrixOrder::ColMajor},
    {swz::DType::BF16, swz::DType::F32, 512, 512, 512, swz::MatrixOrder::ColMajor, swz::MatrixOrder::RowMajor}};

swz::TransposeProblem transpose_problem(const TransposeCase& c) {
  swz::TransposeProblem p;
  p.dtype = c.dtype;
  p.rows = c.rows;
  p.cols = c.cols;
  p.batch = c.batch;
  return p.resolved();
}

swz::GemmProblem gemm_problem(const GemmCase& c) {
  swz::GemmProblem g;
  g.dtype = c.dtype;
  g.out_dtype = c.out_dtype;
  g.m = c.m;
  g.n = c.n;
  g.k = c.k;
  g.a_order = c.a_order;
  g.b_order = c.b_order;
  return g.resolved();
}

std::string describe(const swz::GemmProblem& g) {
  const auto order = [](swz::MatrixOrder o) { return o == swz::MatrixOrder::RowMajor ? "row" : "col"; };
  return swz::to_string(g.dtype) + ">" + swz::to_string(g.out_dtype) + " " + std::to_string(g.m) + "x" +
         std::to_string(g.n) + "x" + std::to_string(g.k) + " A=" + order(g.a_order) + " B=" + order(g.b_order);
}

// The CPU part: the default configurations the engine would run, compiled for kArch (from the cache
// when an earlier run stored them).
void warm_up(swz::Engine& engine) {
  for (const TransposeCase& c : kTransposes) {
    const swz::TransposeProblem p = transpose_problem(c);
    const swz::TransposeConfig cfg = swz::default_transpose_config(p.dtype, p.max_vec_bytes(0, 0));
    const swz::KernelEntry k = engine.compile_transpose(cfg, kArch);
    std::printf("  transpose %s %lldx%lld: %s (%d registers)\n", swz::to_string(p.dtype).c_str(), p.rows, p.cols,
                cfg.to_string().c_str(), k.registers);
  }
  for (const GemmCase& c : kGemms) {
    const swz::GemmProblem g = gemm_problem(c);
    const swz::GemmConfig cfg = swz::default_gemm_config(g, g.max_vec_bytes(0, 0), kArch);
    const swz::KernelEntry k = engine.compile_gemm(cfg, kArch);
    std::printf("  gemm %s: %s (%d registers)\n", describe(g).c_str(), cfg.to_string().c_str(), k.registers);
  }
}

// Random values in [-1, 1) stored as `dtype`; `values` gets what was stored (rounded), as doubles.
std::vector<unsigned char> random_matrix(swz::DType dtype, long long n, std::mt19937& rng, std::vector<double>& values) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int eb = swz::dtype_bytes(dtype);
  std::vector<unsigned char> bytes(static_cast<std::size_t>(n * eb));
  values.resize(static_cast<std::size_t>(n));
  for (long long i = 0; i < n; ++i) {
    swz::store_element(dtype, bytes.data() + i * eb, dist(rng));
    values[static_cast<std::size_t>(i)] = swz::load_element(dtype, bytes.data() + i * eb);
  }
  return bytes;
}

// Runs `launch` once, then `reps` more times between events; the mean time in ms.
template <class F>
double time_ms(swz::Stream& stream, int reps, F&& launch) {
  launch();
  swz::Event start, stop;
  start.record(stream.handle());
  for (int i = 0; i < reps; ++i) launch();
  stop.record(stream.handle());
  return swz::elapsed_ms(start, stop) / reps;
}

int run_transposes(swz::Engine& engine, swz::Stream& stream, std::mt19937& rng) {
  int failures = 0;
  for (const TransposeCase& c : kTransposes) {
    const swz::TransposeProblem p = transpose_problem(c);
    const long long n = p.rows * p.cols * p.batch;
    const int eb = swz::dtype_bytes(p.dtype);
    std::vector<double> in_values;
    const auto in_bytes = random_matrix(p.dtype, n, rng, in_values);
    swz::DeviceBuffer in(in_bytes.size()), out(in_bytes.size());
    in.copy_from_host(in_bytes.data(), in_bytes.size());
    out.memset8(0xff);
    const double ms = time_ms(stream, 20, [&] { engine.transpose(p, in.ptr(), out.ptr(), stream.handle()); });
    std::vector<unsigned char> got(in_bytes.size());
    out.copy_to_host(got.data(), got.size(), 0, stream.handle());
    long long wrong = 0;
    for (long long b = 0; b < p.batch; ++b)
      for (long long r = 0; r < p.rows; ++r)
        for (long long col = 0; col < p.cols; ++col) {
          const double want = in_values[static_cast<std::size_t>(b * p.rows * p.cols + r * p.cols + col)];
          const long long o = b * p.rows * p.cols + col * p.rows + r;
          if (swz::load_element(p.dtype, got.data() + o * eb) != want) ++wrong;
        }
    const swz::TransposeConfig cfg = engine.transpose_config(p, in.ptr(), out.ptr());
    std::printf("  transpose %-4s %5lldx%-5lld batch %lld  %-52s %8.4f ms %7.1f GB/s  %s\n",
                swz::to_string(p.dtype).c_str(), p.rows, p.cols, p.batch, cfg.to_string().c_str(), ms,
                2.0 * static_cast<double>(n * eb) / (ms * 1e6), wrong ? "WRONG" : "exact");
    failures += wrong ? 1 : 0;
  }
  return failures;
}

int run_gemms(swz::Engine& engine, swz::Stream& stream, std::mt19937& rng) {
  int failures = 0;
  const float alpha = 1.5f, beta = 0.5f;
  for (const GemmCase& c : kGemms) {
    const swz::GemmProblem g = gemm_problem(c);
    std::vector<double> a, b, c0;
    const auto a_bytes = random_matrix(g.dtype, g.m * g.k, rng, a);
    const auto b_bytes = random_matrix(g.dtype, g.k * g.n, rng, b);
    const auto c_bytes = random_matrix(g.out_dtype, g.m * g.n, rng, c0);
    swz::DeviceBuffer da(a_bytes.size()), db(b_bytes.size()), dc(c_bytes.size());
    da.copy_from_host(a_bytes.data(), a_bytes.size());
    db.copy_from_host(b_bytes.data(), b_bytes.size());
    dc.copy_from_host(c_bytes.data(), c_bytes.size());
    // One checked call on the random C, then timed calls (alpha = 1, beta = 0: C is only written).
    engine.gemm(g, da.ptr(), db.ptr(), dc.ptr(), alpha, beta, stream.handle());
    std::vector<unsigned char> got(c_bytes.size());
    dc.copy_to_host(got.data(), got.size(), 0, stream.handle());
    double err2 = 0, ref2 = 0;
    for (long long i = 0; i < g.m; ++i)
      for (long long j = 0; j < g.n; ++j) {
        double sum = 0;
        for (long long p = 0; p < g.k; ++p) {
          const double av = a[static_cast<std::size_t>(g.a_order == swz::MatrixOrder::RowMajor ? i * g.lda + p : p * g.lda + i)];
          const double bv = b[static_cast<std::size_t>(g.b_order == swz::MatrixOrder::RowMajor ? p * g.ldb + j : j * g.ldb + p)];
          sum += av * bv;
        }
        const std::size_t o = static_cast<std::size_t>(i * g.ldc + j);
        const double want = alpha * sum + beta * c0[o];
        const double d = swz::load_element(g.out_dtype, got.data() + o * swz::dtype_bytes(g.out_dtype)) - want;
        err2 += d * d;
        ref2 += want * want;
      }
    const double rel = std::sqrt(err2 / ref2);
    const double tolerance = g.dtype == swz::DType::F32 ? 1e-5 : 1e-2;
    const double ms = time_ms(stream, 20, [&] { engine.gemm(g, da.ptr(), db.ptr(), dc.ptr(), 1.0f, 0.0f, stream.handle()); });
    const swz::GemmConfig cfg = engine.gemm_config(g, da.ptr(), db.ptr());
    std::printf("  gemm %-34s %-60s %8.4f ms %7.2f TFLOP/s  rel.err %.2e %s\n", describe(g).c_str(),
                cfg.to_string().c_str(), ms, 2.0 * static_cast<double>(g.m * g.n * g.k) / (ms * 1e9), rel,
                rel <= tolerance ? "ok" : "WRONG");
    failures += rel <= tolerance ? 0 : 1;
  }
  return failures;
}

}  // namespace

int main() {
  try {
    swz::Engine engine;  // opens the cache ($SWZJIT_CACHE_DIR, else XDG, else ~/.cache/swzjit)
    std::printf("kernels for %s (compiled now, or found in the cache):\n", kArch);
    warm_up(engine);
    const swz::EngineCounters warm = engine.counters();
    std::printf("  %llu NVRTC compiles, %llu cache hits\n", static_cast<unsigned long long>(warm.compiles),
                static_cast<unsigned long long>(engine.cache().counters().hits));

    std::string why;
    if (!swz::driver_available(&why) || swz::device_count() == 0) {
      std::printf("no GPU (%s): skipped the GPU part\n", why.empty() ? "no device" : why.c_str());
      return 0;
    }
    std::printf("on %s:\n", swz::device_info(0).name.c_str());
    std::mt19937 rng(11);
    swz::Stream stream;
    const int failures = run_transposes(engine, stream, rng) + run_gemms(engine, stream, rng);
    std::printf("%s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
  } catch (const swz::Error& e) {
    std::fprintf(stderr, "engine_app: %s\n", e.what());
    return 1;
  }
}
