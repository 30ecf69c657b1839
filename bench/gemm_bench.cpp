// bench: GEMM throughput of libswzjit's SGEMM / HGEMM kernels beside cuBLAS in one process — cublasSgemm
// with the default FP32 math mode (no TF32) and cublasGemmEx (f16/bf16, CUBLAS_COMPUTE_32F) — at the
// issue's shapes, every layout, random data in [-1, 1], L2 flushed before every repetition, CUDA events,
// medians. For each (dtype, layout, shape) every config of the default space is timed and the best is
// reported with TFLOP/s, the ratio to cuBLAS and its relative Frobenius error against cuBLAS's result.
//   swz_bench_gemm [--reps N] [--quick] [--dtype f32|f16|bf16] [--layout NN|NT|TN|TT[,...]] [--shape MxNxK]
//                  [--verbose] [--extra "CONFIG[;...]"]
//   --verbose prints every config's time; --extra adds configs (those matching the dtype and layout of a
//   measurement) to the default space, for exploring candidates before they enter the space.
//   swz_bench_gemm --ncu "CONFIG@MxNxK[;...]"   (one launch each, for ncu; prints predicted wavefronts)
//   swz_bench_gemm --tuned [...]   instead of the sweep: per shape, what Engine::gemm runs untuned and after
//   autotune_gemm (as `swz autotune gemm` and TunePolicy::TuneOnMiss run it; on an H100 the Hopper variant
//   where it applies), re-timed interleaved in this run beside cuBLAS; prints tuned/default and geometric
//   means. --llm: the shapes M in {16, 128, 2048, 8192} x (N, K) in {(4096, 4096), (14336, 4096),
//   (4096, 14336), (11008, 4096)} instead of the default ones. --rounds N: the tuned mode's alternating rounds
//   (default 6, a multiple of 3 keeps every position even): more where the two columns of one config differ.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_common.hpp"
#include "swzjit/autotune.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"

using namespace swz;
using swz::bench::check;
using swz::bench::fmt;

namespace {

void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "bench: %s failed: cuBLAS status %d\n", what, static_cast<int>(s));
    std::exit(1);
  }
}


void fill_uniform(void* dst, std::size_t elems, DType t, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const std::size_t eb = static_cast<std::size_t>(dtype_bytes(t));
  std::vector<std::uint8_t> h(elems * eb);
  for (std::size_t i = 0; i < elems; ++i) {
    const float f = u(rng);
    store_element(t, &h[i * eb], f);
  }
  check(cudaMemcpy(dst, h.data(), h.size(), cudaMemcpyHostToDevice), "cudaMemcpy(fill)");
}

std::vector<double> to_doubles(const void* d, std::size_t elems, DType t) {
  const std::size_t eb = static_cast<std::size_t>(dtype_bytes(t));
  std::vector<std::uint8_t> h(elems * eb);
  check(cudaMemcpy(h.data(), d, h.size(), cudaMemcpyDeviceToHost), "cudaMemcpy(copy back)");
  std::vector<double> out(elems);
  for (std::size_t i = 0; i < elems; ++i) out[i] = load_element(t, &h[i * eb]);
  return out;
}

double rel_frobenius(const std::vector<double>& x, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    num += std::isfinite(x[i]) ? (x[i] - ref[i]) * (x[i] - ref[i]) : 1e300;
    den += ref[i] * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

struct Shape {
  long long m, n, k;
};

GemmProblem make_problem(DType t, const std::string& layout, const Shape& s) {
  GemmProblem p;
  p.dtype = t;
  p.out_dtype = t;
  p.m = s.m, p.n = s.n, p.k = s.k;
  p.a_order = layout[0] == 'N' ? MatrixOrder::RowMajor : MatrixOrder::ColMajor;
  p.b_order = layout[1] == 'N' ? MatrixOrder::RowMajor : MatrixOrder::ColMajor;
  return p.resolved();
}

// A, B (random in [-1, 1]), C and cuBLAS's C of one measurement, packed, freed at the end of it.
struct Operands {
  void *a = nullptr, *b = nullptr, *c = nullptr, *cref = nullptr;
  Operands(DType t, const Shape& s) {
    const std::size_t eb = dtype_bytes(t);
    const std::size_t a_elems = static_cast<std::size_t>(s.m * s.k), b_elems = static_cast<std::size_t>(s.k * s.n),
                      c_elems = static_cast<std::size_t>(s.m * s.n);
    check(cudaMalloc(&a, a_elems * eb), "cudaMalloc(A)");
    check(cudaMalloc(&b, b_elems * eb), "cudaMalloc(B)");
    check(cudaMalloc(&c, c_elems * eb), "cudaMalloc(C)");
    check(cudaMalloc(&cref, c_elems * eb), "cudaMalloc(Cref)");
    fill_uniform(a, a_elems, t, 11 + s.m);
    fill_uniform(b, b_elems, t, 17 + s.n);
  }
  ~Operands() { cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(cref); }
  Operands(const Operands&) = delete;
  Operands& operator=(const Operands&) = delete;
};

// C (row-major M x N) = A * B through cuBLAS's column-major view: C^T = B^T A^T.
void cublas_gemm(cublasHandle_t h, const GemmProblem& p, const void* a, const void* b, void* c) {
  const float one = 1.0f, zero = 0.0f;
  const cublasOperation_t op_b = p.b_order == MatrixOrder::RowMajor ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasOperation_t op_a = p.a_order == MatrixOrder::RowMajor ? CUBLAS_OP_N : CUBLAS_OP_T;
  const int m = static_cast<int>(p.n), n = static_cast<int>(p.m), k = static_cast<int>(p.k);
  if (p.dtype == DType::F32) {
    cublas_check(cublasSgemm(h, op_b, op_a, m, n, k, &one, static_cast<const float*>(b), static_cast<int>(p.ldb),
                             static_cast<const float*>(a), static_cast<int>(p.lda), &zero, static_cast<float*>(c),
                             static_cast<int>(p.ldc)),
                 "cublasSgemm");
  } else {
    const cudaDataType_t dt = p.dtype == DType::F16 ? CUDA_R_16F : CUDA_R_16BF;
    cublas_check(cublasGemmEx(h, op_b, op_a, m, n, k, &one, b, dt, static_cast<int>(p.ldb), a, dt,
                              static_cast<int>(p.lda), &zero, c, dt, static_cast<int>(p.ldc), CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
  }
}

int run_ncu(Engine& engine, const std::string& list) {
  std::stringstream ss(list);
  std::string item;
  std::printf("config;shape;blocks;ktiles;pred_st_wavefronts;pred_st_ideal;pred_ld_wavefronts;pred_ld_ideal\n");
  while (std::getline(ss, item, ';')) {
    const auto at = item.find('@');
    if (at == std::string::npos) {
      std::fprintf(stderr, "--ncu: '%s' is not CONFIG@MxNxK\n", item.c_str());
      return 2;
    }
    const GemmConfig c = GemmConfig::parse(item.substr(0, at));
    Shape s{};
    bench::parse_shape(item.substr(at + 1), &s.m, &s.n, &s.k);  // checked with the options
    const char l0 = gemm_a_kmajor(c.layout()) ? 'N' : 'T', l1 = gemm_b_kmajor(c.layout()) ? 'T' : 'N';
    const GemmProblem p = make_problem(c.in_dtype(), std::string{l0, l1}, s);
    GemmProblem po = p;
    po.out_dtype = c.out_dtype();
    const std::size_t ei = dtype_bytes(p.dtype), eo = dtype_bytes(po.out_dtype);
    void *a, *b, *cc;
    check(cudaMalloc(&a, s.m * s.k * ei), "cudaMalloc");
    check(cudaMalloc(&b, s.k * s.n * ei), "cudaMalloc");
    check(cudaMalloc(&cc, s.m * s.n * eo), "cudaMalloc");
    fill_uniform(a, s.m * s.k, p.dtype, 1);
    fill_uniform(b, s.k * s.n, p.dtype, 2);
    engine.gemm_kernel(c);
    engine.launch_gemm(c, po, reinterpret_cast<DevicePtr>(a), reinterpret_cast<DevicePtr>(b),
                       reinterpret_cast<DevicePtr>(cc), 1, 0, nullptr);
    check(cudaDeviceSynchronize(), "ncu launch");
    const LaunchShape ls = gemm_launch_shape(c, s.m, s.n, 1);
    const int bk = c.tile().bk;
    const long long blocks = ls.grid[0], ktiles = (s.k + bk - 1) / bk;
    const GemmAnalysis an = analyze_gemm(c);
    std::printf("%s;%lldx%lldx%lld;%lld;%lld;%lld;%lld;%lld;%lld\n", c.to_string().c_str(), s.m, s.n, s.k, blocks, ktiles,
                an.store_wavefronts * blocks * ktiles, an.store_ideal * blocks * ktiles,
                an.load_wavefronts * blocks * ktiles, an.load_ideal * blocks * ktiles);
    cudaFree(a), cudaFree(b), cudaFree(cc);
  }
  return 0;
}

// --tuned: what an application gets, untuned and tuned, in one run. "default" is Engine::gemm with no
// config on an engine whose cache holds no winner (TunePolicy::Default): on an sm_90 device the Hopper
// variant's default where it applies, else the mma.sync default; "tuned" is Engine::gemm with no config on
// a second engine after autotune_gemm stored its winner (the variant's space, as `swz autotune gemm` and
// TuneOnMiss tune it). The two are timed in alternating rounds beside cuBLAS (so clocks and neighbours
// affect all alike); each round's time is a median. Both results are checked against cuBLAS's.
int run_tuned(cudaStream_t stream, cublasHandle_t handle, bench::Timer& timer, int reps, int rounds,
              const std::vector<DType>& dtypes, const std::vector<std::string>& layouts, const std::vector<Shape>& shapes) {
  std::vector<std::string> table = {
      "| dtype | layout | M x N x K | cuBLAS TFLOP/s | default TFLOP/s | tuned TFLOP/s | tuned / default (time) | "
      "default vs cuBLAS | tuned vs cuBLAS | tune s | default config | tuned config |",
      "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"};
  int slower = 0, wrong = 0;
  double log_def = 0, log_tuned = 0, min_tuned = 1e9;
  int rows = 0;
  for (DType t : dtypes)
    for (const std::string& layout : layouts)
      for (const Shape& s : shapes) {
        const GemmProblem p = make_problem(t, layout, s);
        const std::size_t eb = dtype_bytes(t);
        const std::size_t c_elems = static_cast<std::size_t>(s.m * s.n);
        const Operands ops(t, s);
        void *a = ops.a, *b = ops.b, *c = ops.c, *cref = ops.cref;
        const DevicePtr da = reinterpret_cast<DevicePtr>(a), db = reinterpret_cast<DevicePtr>(b),
                        dc = reinterpret_cast<DevicePtr>(c);
        const double flops = 2.0 * s.m * s.n * static_cast<double>(s.k);
        // Fresh engines per shape: nothing remembered from another measurement.
        char def_dir[] = "/tmp/swz_bench_gemm_default_XXXXXX", tuned_dir[] = "/tmp/swz_bench_gemm_tuned_XXXXXX";
        EngineOptions eo;
        eo.cache_dir = mkdtemp(def_dir);
        Engine def_engine(eo);
        eo.cache_dir = mkdtemp(tuned_dir);
        Engine tuned_engine(eo);
        bool sa = false, sb = false;
        const GemmProblem ps = p.staged(da, db, &sa, &sb);
        const int align = ps.max_vec_bytes(sa ? 0 : da, sb ? 0 : db);
        const TuneReport rep = autotune_gemm(tuned_engine, ps, align);
        // The default as the tune saw it (the device's: its SM count and DRAM bandwidth), which is what the
        // untuned engine runs.
        const std::string def = rep.default_config;
        if (rep.winner.empty()) {
          std::printf("# %s %s %lldx%lldx%lld: the tune found no winner\n", to_string(t).c_str(), layout.c_str(), s.m,
                      s.n, s.k);
          ++wrong;
          continue;
        }
        std::vector<double> cb_ms, def_ms, tuned_ms;
        // `rounds` rounds (6 by default), each starting one place further in the order cuBLAS, default, tuned:
        // every one is timed first, second and third alike, so a clock that drifts within a round favours none.
        for (int round = 0; round < rounds; ++round)
          for (int i = 0; i < 3; ++i) {
            const int which = (round + i) % 3;
            if (which == 0) cb_ms.push_back(timer.time([&] { cublas_gemm(handle, p, a, b, cref); }, reps).median);
            if (which == 1)
              def_ms.push_back(timer.time([&] { def_engine.gemm(p, da, db, dc, 1.0f, 0.0f, stream); }, reps).median);
            if (which == 2)
              tuned_ms.push_back(timer.time([&] { tuned_engine.gemm(p, da, db, dc, 1.0f, 0.0f, stream); }, reps).median);
          }
        const double cbm = bench::median(cb_ms), dm = bench::median(def_ms), tm = bench::median(tuned_ms);
        double err = 0;
        for (Engine* e : {&def_engine, &tuned_engine}) {
          check(cudaMemsetAsync(c, 0xff, c_elems * eb, stream), "poison");
          e->gemm(p, da, db, dc, 1.0f, 0.0f, stream);
          cublas_gemm(handle, p, a, b, cref);
          check(cudaStreamSynchronize(stream), "verify");
          err = std::max(err, rel_frobenius(to_doubles(c, c_elems, t), to_doubles(cref, c_elems, t)));
        }
        const double tol = t == DType::F32 ? 1e-5 : 1e-2;
        if (!(err < tol)) ++wrong;
        // The same config re-timed twice differs by noise alone; a different one counts as slower past 1%.
        const bool same = rep.winner == def;
        const bool is_slower = !same && tm > dm * 1.01;
        if (is_slower) ++slower;
        log_def += std::log(cbm / dm);
        log_tuned += std::log(cbm / tm);
        min_tuned = std::min(min_tuned, cbm / tm);
        ++rows;
        const std::string row = "| " + to_string(t) + " | " + layout + " | " + std::to_string(s.m) + "x" +
                                std::to_string(s.n) + "x" + std::to_string(s.k) + " | " + fmt(flops / (cbm * 1e9), 1) +
                                " | " + fmt(flops / (dm * 1e9), 1) + " | " + fmt(flops / (tm * 1e9), 1) + " | " +
                                fmt(tm / dm, 3) + (is_slower ? " SLOWER" : "") + " | " + fmt(cbm / dm, 2) + "x | " +
                                fmt(cbm / tm, 2) + "x | " + fmt(rep.seconds, 1) + " | " + def + " | " +
                                (same ? std::string("(the default)") : rep.winner) + (err < tol ? "" : " MISMATCH") +
                                " |";
        std::printf("%s\n", row.c_str());
        std::fflush(stdout);
        table.push_back(row);
      }
  std::printf("\n");
  for (const auto& line : table) std::printf("%s\n", line.c_str());
  if (rows > 0)
    std::printf("\ngeometric mean vs cuBLAS over %d shapes: default %.3fx, tuned %.3fx; lowest tuned %.2fx\n", rows,
                std::exp(log_def / rows), std::exp(log_tuned / rows), min_tuned);
  std::printf("tuned slower than a different default by more than 1%% (time): %d; wrong results or failed tunes: %d\n",
              slower, wrong);
  return wrong ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 20, rounds = 6;
  bool quick = false, verbose = false, tuned_mode = false, llm = false;
  std::vector<std::string> extra;
  std::string ncu, only_dtype, only_layout, only_shape;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::max(5, static_cast<int>(bench::parse_count(argv[++i], "--reps", 1, 100000)));
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = static_cast<int>(bench::parse_count(argv[++i], "--rounds", 1, 1000));
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "--tuned") {
      tuned_mode = true;
    } else if (a == "--llm") {
      llm = true;
    } else if (a == "--verbose") {
      verbose = true;
    } else if (a == "--extra" && i + 1 < argc) {
      std::stringstream ss(argv[++i]);
      std::string item;
      while (std::getline(ss, item, ';'))
        if (!item.empty()) extra.push_back(GemmConfig::parse(item).to_string());
    } else if (a == "--ncu" && i + 1 < argc) {
      ncu = argv[++i];
      std::stringstream ss(ncu);
      std::string item;
      while (std::getline(ss, item, ';')) {
        const auto at = item.find('@');
        long long m, n, k;
        if (at == std::string::npos || !bench::parse_shape(item.substr(at + 1), &m, &n, &k)) {
          std::fprintf(stderr, "bench: --ncu item '%s' is not CONFIG@MxNxK\n", item.c_str());
          return 2;
        }
      }
    } else if (a == "--dtype" && i + 1 < argc) {
      only_dtype = bench::parse_choice(argv[++i], "--dtype", {"f32", "f16", "bf16"});
    } else if (a == "--layout" && i + 1 < argc) {
      only_layout = argv[++i];
      std::stringstream ss(only_layout);
      std::string item;
      while (std::getline(ss, item, ',')) bench::parse_choice(item, "--layout", {"NN", "NT", "TN", "TT"});
    } else if (a == "--shape" && i + 1 < argc) {
      only_shape = argv[++i];
      long long m, n, k;
      if (!bench::parse_shape(only_shape, &m, &n, &k)) {
        std::fprintf(stderr, "bench: --shape '%s' is not MxNxK (e.g. 4096x4096x4096)\n", only_shape.c_str());
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "usage: swz_bench_gemm [--reps N] [--quick] [--dtype f32|f16|bf16] [--layout NN|NT|TN|TT] "
                   "[--shape MxNxK | --llm] [--verbose] [--tuned [--rounds N]] [--extra \"CONFIG[;...]\"] | "
                   "--ncu \"CONFIG@MxNxK[;...]\"\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  check(cudaSetDevice(0), "cudaSetDevice");
  check(cudaFree(nullptr), "context creation");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  char tmpl[] = "/tmp/swz_bench_gemm_cache_XXXXXX";
  EngineOptions eo;
  eo.cache_dir = mkdtemp(tmpl);
  Engine engine(eo);
  if (!ncu.empty()) return run_ncu(engine, ncu);

  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cublasHandle_t handle;
  cublas_check(cublasCreate(&handle), "cublasCreate");
  cublas_check(cublasSetStream(handle, stream), "cublasSetStream");
  cublas_check(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");  // FP32 stays FP32: no TF32
  bench::Timer timer(stream);
  std::printf("device: %s, %d SMs; %d repetitions per measurement, L2 flushed before each; cuBLAS default math "
              "(no TF32), GemmEx with CUBLAS_COMPUTE_32F\n",
              prop.name, prop.multiProcessorCount, reps);

  std::vector<Shape> shapes = {{4096, 4096, 4096}, {8192, 8192, 8192}, {4096, 4096, 1024},
                               {8192, 1024, 8192}, {3000, 5000, 700},  {127, 129, 4100}};
  if (quick) shapes = {{4096, 4096, 4096}, {8192, 8192, 8192}};
  if (llm) {  // decode to prefill: M tokens x the (N, K) of common LLM projections
    shapes.clear();
    for (long long m : {16, 128, 2048, 8192})
      for (const auto& nk : {std::pair<long long, long long>{4096, 4096}, {14336, 4096}, {4096, 14336}, {11008, 4096}})
        shapes.push_back(Shape{m, nk.first, nk.second});
  }
  if (!only_shape.empty()) {
    Shape s{};
    bench::parse_shape(only_shape, &s.m, &s.n, &s.k);  // checked with the options
    shapes = {s};
  }
  std::vector<std::string> layouts = {"NN", "NT", "TN", "TT"};
  if (quick) layouts = {"NN", "NT"};
  if (!only_layout.empty()) {  // one or several, "NN,TT"
    layouts.clear();
    std::stringstream ss(only_layout);
    std::string item;
    while (std::getline(ss, item, ','))
      if (!item.empty()) layouts.push_back(item);
  }
  std::vector<DType> dtypes = {DType::F32, DType::F16, DType::BF16};
  if (!only_dtype.empty()) dtypes = {parse_dtype(only_dtype)};

  if (tuned_mode) return run_tuned(stream, handle, timer, reps, rounds, dtypes, layouts, shapes);

  std::vector<std::string> table = {
      "| dtype | layout | M x N x K | cuBLAS ms | cuBLAS TFLOP/s | swz ms | swz TFLOP/s | vs cuBLAS (time) | "
      "rel. error vs cuBLAS | best config | gemm() TFLOP/s | gemm() vs cuBLAS | gemm() rel. error |",
      "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |"};
  for (DType t : dtypes)
    for (const std::string& layout : layouts)
      for (const Shape& s : shapes) {
        const GemmProblem p = make_problem(t, layout, s);
        const std::size_t eb = dtype_bytes(t);
        const std::size_t c_elems = static_cast<std::size_t>(s.m * s.n);
        const Operands ops(t, s);
        void *a = ops.a, *b = ops.b, *c = ops.c, *cref = ops.cref;
        const double flops = 2.0 * s.m * s.n * static_cast<double>(s.k);
        const bench::Timing cb = timer.time([&] { cublas_gemm(handle, p, a, b, cref); }, reps);
        check(cudaStreamSynchronize(stream), "cuBLAS");
        // The space for what Engine::gemm runs: narrow operands (odd pitches) are staged into 16-byte pitches
        // (timed: each repetition includes the staging copies), the others keep this call's alignment.
        bool sa = false, sb = false;
        const GemmProblem ps = p.staged(reinterpret_cast<DevicePtr>(a), reinterpret_cast<DevicePtr>(b), &sa, &sb);
        const bool staged = sa || sb;
        const int align = ps.max_vec_bytes(sa ? 0 : reinterpret_cast<DevicePtr>(a), sb ? 0 : reinterpret_cast<DevicePtr>(b));
        std::vector<GemmConfig> space = gemm_search_space(t, t, ps.kernel_layout(), align);
        for (const std::string& e : extra) {
          const GemmConfig ec = GemmConfig::parse(e);
          if (ec.in_dtype() == t && ec.out_dtype() == t && ec.layout() == p.kernel_layout() && ec.vec_bytes() <= align &&
              std::none_of(space.begin(), space.end(), [&](const GemmConfig& x) { return x == ec; }))
            space.push_back(ec);
        }
        {  // compile the space in parallel first
          std::vector<std::thread> pool;
          const unsigned nt = std::max(1u, std::thread::hardware_concurrency());
          for (unsigned w = 0; w < nt; ++w)
            pool.emplace_back([&, w] {
              for (std::size_t i = w; i < space.size(); i += nt) engine.compile_gemm(space[i]);
            });
          for (auto& th : pool) th.join();
        }
        double best_ms = 1e30;
        std::string best;
        for (const GemmConfig& cfg : space) {
          const bench::Timing tm = timer.time(
              [&] {
                if (staged)
                  engine.gemm(p, reinterpret_cast<DevicePtr>(a), reinterpret_cast<DevicePtr>(b),
                              reinterpret_cast<DevicePtr>(c), 1.0f, 0.0f, stream, &cfg);
                else
                  engine.launch_gemm(cfg, p, reinterpret_cast<DevicePtr>(a), reinterpret_cast<DevicePtr>(b),
                                     reinterpret_cast<DevicePtr>(c), 1.0f, 0.0f, stream);
              },
              reps);
          if (verbose)
            std::printf("#   %8.3f ms %7.1f TFLOP/s  %s\n", tm.median, flops / (tm.median * 1e9), cfg.to_string().c_str());
          if (tm.median < best_ms) best_ms = tm.median, best = cfg.to_string();
        }
        // Verify the reported kernel against cuBLAS's result on the same inputs.
        const GemmConfig winner = GemmConfig::parse(best);
        check(cudaMemsetAsync(c, 0xff, c_elems * eb, stream), "poison");
        engine.gemm(p, reinterpret_cast<DevicePtr>(a), reinterpret_cast<DevicePtr>(b), reinterpret_cast<DevicePtr>(c),
                    1.0f, 0.0f, stream, &winner);
        cublas_gemm(handle, p, a, b, cref);
        check(cudaStreamSynchronize(stream), "verify");
        const double err = rel_frobenius(to_doubles(c, c_elems, t), to_doubles(cref, c_elems, t));
        const double tol = t == DType::F32 ? 1e-5 : 1e-2;
        // What an application's Engine::gemm runs with no config (on sm_90: the Hopper variant where it
        // applies, else the mma.sync default or tuned winner), timed and verified the same way.
        const auto engine_call = [&] {
          engine.gemm(p, reinterpret_cast<DevicePtr>(a), reinterpret_cast<DevicePtr>(b), reinterpret_cast<DevicePtr>(c),
                      1.0f, 0.0f, stream);
        };
        const bench::Timing en = timer.time(engine_call, reps);
        check(cudaMemsetAsync(c, 0xff, c_elems * eb, stream), "poison");
        engine_call();
        check(cudaStreamSynchronize(stream), "verify gemm()");
        const double en_err = rel_frobenius(to_doubles(c, c_elems, t), to_doubles(cref, c_elems, t));
        const std::string row = "| " + to_string(t) + " | " + layout + " | " + std::to_string(s.m) + "x" +
                                std::to_string(s.n) + "x" + std::to_string(s.k) + " | " + fmt(cb.median, 3) + " | " +
                                fmt(flops / (cb.median * 1e9), 1) + " | " + fmt(best_ms, 3) + " | " +
                                fmt(flops / (best_ms * 1e9), 1) + " | " + fmt(cb.median / best_ms, 2) + "x | " +
                                fmt(err, 7) + (err < tol ? "" : " MISMATCH") + " | " + best + (staged ? (sa && sb ? " (A, B staged)" : sa ? " (A staged)" : " (B staged)") : "") + " | " +
                                fmt(flops / (en.median * 1e9), 1) + " | " + fmt(cb.median / en.median, 2) + "x | " +
                                fmt(en_err, 7) + (en_err < tol ? "" : " MISMATCH") + " |";
        std::printf("%s\n", row.c_str());
        std::fflush(stdout);
        table.push_back(row);
      }
  std::printf("\n");
  for (const auto& line : table) std::printf("%s\n", line.c_str());
  cublasDestroy(handle);
  cudaStreamDestroy(stream);
  return 0;
}
