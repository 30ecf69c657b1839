// bench: the Hopper (sm_90a) GEMM beside cublasGemmEx (CUBLAS_COMPUTE_32F, the matching transposes) in one
// process: layouts NT, NN, TN, TT (A row/col-major as N/T, B col/row-major as T/N, C row-major), f16 and
// bf16, random data in [-1, 1], L2 flushed before every repetition, CUDA events, medians. Several configs
// per shape; each result is checked against cuBLAS's (relative Frobenius error). The summary table comes last.
//   swz_bench_gemm_sm90 [--reps N] [--dtype f16|bf16] [--shape MxNxK[xBATCH][,...]] [--layout NT|NN|TN|TT[,...]]
//                       [--configs "CFG;CFG..."] [--dump-cubin PREFIX]  (PREFIX.<layout>.cubin: each layout's first cubin, for cuobjdump -sass)
//                       [--mma]  (also Engine::gemm with hopper_gemm off: the mma.sync family's untuned choice)
//                       [--variants "NAME=OPTIONS;NAME=OPTIONS..." [--rounds N]]  (A/B in one process, below)
// Environment: SWZ_BENCH_NVRTC_OPTIONS="-DNAME=1 ..." appends NVRTC options to every compile (for ablations:
// a temporary #if in the template, measured without rebuilding the bench).
// --variants: every config is compiled once per variant (its NVRTC options, space-separated, after
// SWZ_BENCH_NVRTC_OPTIONS'; "base=" for none), each checked against cuBLAS, then timed in N rounds (default
// 3). Each round times cuBLAS, then every variant, starting one variant further each round, so clock
// drift does not favour a place in the order. A variant's ratio is the median over the rounds of its time
// against that round's cuBLAS time. One process, one compile per variant: no process start, cuBLAS
// warm-up or L2 state between the variants. The A/B table comes last. There --reps may be as low as 3: on a
// power-capped H100 the clock moves within tens of milliseconds, and 25 rounds of 5 repetitions gave ratios
// stable to about 0.5% where single rounds of 30 ranged 0.78-1.24x at 8192^3.
// Every explicit config's kernel (and each variant's) is compiled before the first timing, on all cores.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/bench_common.hpp"
#include "generator/families/gemm/gemm_splitk.hpp"
#include "generator/families/gemm_sm90/gemm_sm90.hpp"
#include "swzjit/device.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/jit.hpp"

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

// Uniform [-1, 1) values (xorshift: 8192^2 elements in well under a second).
void fill_uniform(void* dst, std::size_t elems, DType t, std::uint64_t seed) {
  const std::size_t eb = static_cast<std::size_t>(dtype_bytes(t));
  std::vector<std::uint8_t> h(elems * eb);
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (std::size_t i = 0; i < elems; ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    store_element(t, &h[i * eb], static_cast<float>(static_cast<double>(s >> 11) * 0x1.0p-52 - 1.0));
  }
  check(cudaMemcpy(dst, h.data(), h.size(), cudaMemcpyHostToDevice), "cudaMemcpy(fill)");
}

double rel_error(const void* got, const void* ref, std::size_t elems, DType t) {
  const std::size_t eb = static_cast<std::size_t>(dtype_bytes(t));
  std::vector<std::uint8_t> g(elems * eb), r(elems * eb);
  check(cudaMemcpy(g.data(), got, g.size(), cudaMemcpyDeviceToHost), "cudaMemcpy(C)");
  check(cudaMemcpy(r.data(), ref, r.size(), cudaMemcpyDeviceToHost), "cudaMemcpy(Cref)");
  double num = 0, den = 0;
  for (std::size_t i = 0; i < elems; ++i) {
    const double x = load_element(t, &g[i * eb]), y = load_element(t, &r[i * eb]);
    num += std::isfinite(x) ? (x - y) * (x - y) : 1e300;
    den += y * y;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

struct Shape {
  long long m, n, k, batch = 1;
};

// A variant of --variants: a name and the NVRTC options its kernels are compiled with.
struct Variant {
  std::string name;
  std::vector<std::string> options;
};

// One A/B row: a config on a shape and layout, each variant's per-round ratio to cuBLAS.
struct AbRow {
  std::string dtype, layout, shape, config;
  std::vector<std::vector<double>> ratios;  // [variant][round]
  std::vector<double> tflops;               // [variant], median over the rounds
  double worst_err = 0;
};

struct Row {
  std::string dtype, layout;
  Shape s;
  double cublas_tf = 0, default_tf = 0, auto_tf = 0, best_tf = 0, worst_err = 0, mma_tf = 0;
  std::string best_cfg;
};

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

// The problem of a dtype, shape and layout (the layout's letters: A N = row-major (K-contiguous), T =
// column-major; B T = column-major, N = row-major; C row-major).
GemmProblem problem_of(const std::string& dt, const Shape& s, const std::string& layout) {
  GemmProblem p;
  p.dtype = parse_dtype(dt), p.out_dtype = p.dtype;
  p.m = s.m, p.n = s.n, p.k = s.k;
  p.batch = s.batch;
  p.a_order = layout[0] == 'T' ? MatrixOrder::ColMajor : MatrixOrder::RowMajor;
  p.b_order = layout[1] == 'N' ? MatrixOrder::RowMajor : MatrixOrder::ColMajor;
  p.c_order = MatrixOrder::RowMajor;
  return p;
}

// A --configs item split into its leading "sms=N," (a persistent grid for N SMs, 1 to 100000; `device_sms`
// without it) and the config text after it (the whole item where no comma follows, for the parse to
// refuse). An N that is no such number exits 2 saying so (main checks every item before the GPU starts).
std::pair<int, std::string> split_sms(const std::string& item, int device_sms) {
  if (item.rfind("sms=", 0) != 0) return {device_sms, item};
  const std::size_t comma = item.find(',');
  const std::string n = item.substr(4, comma == std::string::npos ? std::string::npos : comma - 4);
  return {static_cast<int>(bench::parse_count(n.c_str(), "--configs sms=", 1, 100000)),
          comma == std::string::npos ? item : item.substr(comma + 1)};
}

// A --configs item (without its "sms=N," prefix) for problem `p`: "auto" is choose_sm90_gemm_config's pick
// for `dram_gbps`, "auto0" its pick where the bandwidth is not known (the H100's rules). Other items get
// the layout the problem has in the kernel's frame (swapped for an item with swap=1).
Sm90GemmConfig config_of(const std::string& text, const GemmProblem& p, const std::string& dt, int sms, int dram_gbps) {
  if (text == "auto0") return choose_sm90_gemm_config(p, sms, 0);
  if (text == "auto") return choose_sm90_gemm_config(p, sms, dram_gbps);
  const bool swap = text.find("swap=1") != std::string::npos;
  return Sm90GemmConfig::parse("in=" + dt + ",out=" + dt + ",layout=" + gemm_sm90_layout(p, swap) + "," + text);
}

}  // namespace

static int run(int argc, char** argv) {
  int reps = 30;
  std::vector<std::string> dtypes = {"f16", "bf16"};
  std::vector<Shape> shapes = {{4096, 4096, 4096}, {8192, 8192, 8192}, {128, 4096, 4096},
                               {128, 14336, 4096}, {2048, 4096, 4096}, {2048, 14336, 4096}};
  // The first is the default config; "auto" is choose_sm90_gemm_config's pick for the shape.
  // A leading "sms=N," launches a persistent grid for N SMs instead of the device's count.
  std::vector<std::string> configs = {"bn=256,stages=4,raster=8,cluster=1",
                                      "bn=256,stages=4,raster=16,cluster=1",
                                      "bn=256,stages=4,raster=8,cluster=2",
                                      "bn=256,stages=4,raster=16,cluster=2",
                                      "bn=256,stages=3,raster=16,cluster=2",
                                      "bn=256,stages=4,raster=8,cluster=1,inflight=0",
                                      "bn=128,stages=6,raster=8,cluster=1",
                                      "bn=128,stages=6,raster=16,cluster=2",
                                      "bn=256,stages=4,raster=8,cluster=1,epilogue=tma",
                                      "bn=256,stages=4,raster=8,cluster=2,epilogue=tma",
                                      "bn=128,stages=6,raster=8,cluster=1,epilogue=tma",
                                      "auto"};
  std::vector<std::string> layouts = {"NT"};
  std::string dump;
  bool mma = false;
  std::vector<Variant> variants;
  int rounds = 3;
  int dram_gbps = -1;  // the device's (DeviceInfo::dram_gbps) unless --dram-gbps names one
  float beta = 0.0f;   // C = A B + beta C (--beta), beside cuBLAS with the same beta
  const auto usage = [&](FILE* to) {
    std::fprintf(to,
                 "usage: %s [--reps N] [--dtype f16|bf16] [--shape MxNxK[xBATCH][,...]] [--layout NT|NN|TN|TT[,...]]\n"
                 "          [--configs \"CFG;...\"] [--dump-cubin PREFIX] [--mma] [--variants \"NAME=OPTS;...\" [--rounds N]]\n"
                 "          [--dram-gbps N] [--beta B]\n"
                 "The Hopper GEMM beside cuBLAS in one process (random data, L2 flushed, medians of N >= 20).\n"
                 "--dram-gbps: the DRAM bandwidth \"auto\" chooses for (default the device's; 0: unknown, as on an H100);\n"
                 "  the config \"auto0\" is the choice for an unknown bandwidth, beside \"auto\" in one run.\n"
                 "--variants: each config compiled once per variant (NVRTC options, e.g. \"base=;old=-DSWZ_X=1\") and\n"
                 "  timed in --rounds rounds (default 3) interleaved with cuBLAS; prints each variant's ratio to cuBLAS.\n"
                 "  There --reps may go down to 3: on a power-capped GPU many short rounds (e.g. --reps 5 --rounds 25)\n"
                 "  keep each ratio's two timings within milliseconds of each other.\n"
                 "--beta B: C = A B + beta C (default 0: C is never read), cuBLAS with the same beta; checked runs start\n"
                 "  from the same random C.\n",
                 argv[0]);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = static_cast<int>(bench::parse_count(argv[++i], "--reps", 1, 100000));
    } else if (a == "--dtype" && i + 1 < argc) {
      dtypes = {bench::parse_choice(argv[++i], "--dtype", {"f16", "bf16"})};
    } else if (a == "--shape" && i + 1 < argc) {
      shapes.clear();
      for (const std::string& text : split(argv[++i], ',')) {
        Shape s{};
        if (!bench::parse_shape(text, &s.m, &s.n, &s.k, &s.batch)) {
          std::fprintf(stderr, "bench: --shape item '%s' is not MxNxK or MxNxKxBATCH (e.g. 4096x4096x4096)\n",
                       text.c_str());
          return 2;
        }
        shapes.push_back(s);
      }
    } else if (a == "--layout" && i + 1 < argc) {
      layouts = split(argv[++i], ',');
      for (const std::string& l : layouts) bench::parse_choice(l, "--layout", {"NT", "NN", "TN", "TT"});
    } else if (a == "--configs" && i + 1 < argc) {
      configs = split(argv[++i], ';');
      for (const std::string& item : configs) split_sms(item, 0);  // a bad sms=N exits here, before the GPU
    } else if (a == "--mma") {
      mma = true;
    } else if (a == "--dump-cubin" && i + 1 < argc) {
      dump = argv[++i];
    } else if (a == "--variants" && i + 1 < argc) {
      for (const std::string& item : split(argv[++i], ';')) {
        const std::size_t eq = item.find('=');
        if (eq == 0 || eq == std::string::npos) {
          std::fprintf(stderr, "bench: --variants item '%s' is not NAME=OPTIONS (e.g. base= or old=-DSWZ_X=1)\n",
                       item.c_str());
          return 2;
        }
        variants.push_back(Variant{item.substr(0, eq), split(item.substr(eq + 1), ' ')});
      }
      if (variants.empty()) {
        std::fprintf(stderr, "bench: --variants names no variant\n");
        return 2;
      }
    } else if (a == "--beta" && i + 1 < argc) {
      beta = static_cast<float>(bench::parse_real(argv[++i], "--beta", -1000.0, 1000.0));
    } else if (a == "--dram-gbps" && i + 1 < argc) {
      dram_gbps = static_cast<int>(bench::parse_count(argv[++i], "--dram-gbps", 0, 1000000));
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = static_cast<int>(bench::parse_count(argv[++i], "--rounds", 1, 100000));
    } else if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }
  check(cudaSetDevice(0), "cudaSetDevice");
  check(cudaFree(nullptr), "context creation");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  if (prop.major != 9 || prop.minor != 0) {
    std::printf("skipped: %s is sm_%d%d; the sm_90a GEMM needs an sm_90 GPU\n", prop.name, prop.major, prop.minor);
    return 0;
  }
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cublasHandle_t handle;
  cublas_check(cublasCreate(&handle), "cublasCreate");
  cublas_check(cublasSetStream(handle, stream), "cublasSetStream");
  reps = std::max(variants.empty() ? 20 : 3, reps);  // medians of at least 20, or 3 per round of an A/B
  bench::Timer timer(stream);
  if (dram_gbps < 0) dram_gbps = swz::device_info(0).dram_gbps;
  std::printf("device: %s, %d SMs, \"auto\" for %d GB/s of DRAM; %d repetitions per measurement (median), L2 flushed before each%s\n",
              prop.name, prop.multiProcessorCount, dram_gbps, reps,
              beta != 0.0f ? ("; beta " + std::to_string(beta) + " (C read)").c_str() : "");

  std::map<std::string, Kernel> kernels;
  std::set<std::string> dumped;
  const auto key_of = [](const Sm90GemmConfig& cfg, const Variant* variant) {
    return (variant ? variant->name + ":" : std::string()) + cfg.to_string();
  };
  const auto request_for = [&](const Sm90GemmConfig& cfg, const Variant* variant) {
    CompileRequest req = gemm_sm90_compile_request(cfg);
    req.extra_options.push_back("--ptxas-options=-v");  // ptxas's report (registers, stack frame, warnings)
    if (const char* extra = std::getenv("SWZ_BENCH_NVRTC_OPTIONS"))  // ablations: e.g. -DNAME=1
      for (const std::string& o : split(extra, ' ')) req.extra_options.push_back(o);
    if (variant) req.extra_options.insert(req.extra_options.end(), variant->options.begin(), variant->options.end());
    return req;
  };
  // Every explicit kernel of the run, compiled up front on all CPU cores (NVRTC is thread-safe): serially,
  // 2 s each, a 4-layout, 5-variant A/B spent most of its device time compiling. A config that does not
  // parse or compile here is reported where the run reaches it.
  std::map<std::string, CompiledKernel> precompiled;
  {
    std::map<std::string, CompileRequest> todo;
    for (const std::string& dt : dtypes)
      for (const Shape& s : shapes)
        for (const std::string& layout : layouts)
          for (const std::string& item : configs) {
            const std::string text = split_sms(item, prop.multiProcessorCount).second;
            try {
              const Sm90GemmConfig cfg = config_of(text, problem_of(dt, s, layout), dt, prop.multiProcessorCount, dram_gbps);
              if (variants.empty()) {
                todo.emplace(key_of(cfg, nullptr), request_for(cfg, nullptr));
              } else {
                for (const Variant& v : variants) todo.emplace(key_of(cfg, &v), request_for(cfg, &v));
              }
            } catch (const Error&) {
            }
          }
    std::vector<std::pair<std::string, CompileRequest>> jobs(todo.begin(), todo.end());
    std::vector<std::unique_ptr<CompiledKernel>> done(jobs.size());
    std::atomic<std::size_t> next{0};
    const unsigned hw = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (unsigned i = 0; i < std::min<std::size_t>(hw, jobs.size()); ++i)
      pool.emplace_back([&] {
        for (std::size_t j; (j = next++) < jobs.size();) {
          try {
            done[j] = std::make_unique<CompiledKernel>(compile(jobs[j].second));
          } catch (...) {  // compiled again, and reported, where the run reaches it (no exception leaves a thread)
          }
        }
      });
    for (std::thread& th : pool) th.join();
    for (std::size_t j = 0; j < jobs.size(); ++j)
      if (done[j]) precompiled.emplace(jobs[j].first, std::move(*done[j]));
    std::printf("precompiled %zu of %zu kernels on %u threads in %.1f s\n", precompiled.size(), jobs.size(), hw,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  // The kernel of `cfg`, compiled with the variant's options (none outside --variants).
  auto kernel_for = [&](const Sm90GemmConfig& cfg, const Variant* variant = nullptr) -> const Kernel& {
    const std::string key = key_of(cfg, variant);
    auto it = kernels.find(key);
    if (it != kernels.end()) return it->second;
    const auto pre = precompiled.find(key);
    const CompiledKernel k = pre != precompiled.end() ? pre->second : compile(request_for(cfg, variant));
    const CubinResources r = cubin_resources(k);
    std::printf("compiled %s%s: %d registers, %d local bytes; NVRTC log:\n%s\n", variant ? (variant->name + ": ").c_str() : "",
                cfg.to_string().c_str(), r.registers, r.local_bytes, k.log.c_str());
    // The first cubin of each layout, as DUMP.<layout>.cubin.
    if (!dump.empty() && dumped.insert(cfg.layout).second)
      std::ofstream(dump + "." + cfg.layout + ".cubin", std::ios::binary) << k.image;
    Kernel kernel = Module(k, 0).kernel();
    kernel.set_max_dynamic_smem(gemm_sm90_smem_bytes(cfg));
    return kernels.emplace(key, kernel).first->second;
  };

  std::map<DType, Kernel> reduces;
  auto reduce_for = [&](DType out) -> const Kernel& {
    auto it = reduces.find(out);
    if (it != reduces.end()) return it->second;
    CompileRequest req;
    req.source = gemm_splitk_reduce_source(out);
    req.source_name = gemm_splitk_reduce_source_name(out);
    req.name_expression = gemm_splitk_reduce_name_expression(out);
    req.arch = "sm_90";
    return reduces.emplace(out, Module(compile(req), 0).kernel()).first->second;
  };

  // The mma.sync family as Engine::gemm runs it on this GPU without the Hopper kernel (its untuned choice).
  EngineOptions mma_options;
  mma_options.hopper_gemm = false;
  std::unique_ptr<Engine> mma_engine = mma ? std::make_unique<Engine>(mma_options) : nullptr;
  std::vector<Row> rows;
  std::vector<AbRow> ab_rows;
  for (const std::string& dt : dtypes)
    for (const Shape& s : shapes)
    for (const std::string& layout : layouts) {
      const DType t = parse_dtype(dt);
      const std::size_t eb = static_cast<std::size_t>(dtype_bytes(t));
      // Batches: packed matrices, one after the other.
      const std::size_t a_elems = static_cast<std::size_t>(s.m * s.k * s.batch),
                        b_elems = static_cast<std::size_t>(s.n * s.k * s.batch),
                        c_elems = static_cast<std::size_t>(s.m * s.n * s.batch);
      void *a = nullptr, *b = nullptr, *c = nullptr, *cref = nullptr, *c0 = nullptr;
      check(cudaMalloc(&a, a_elems * eb), "cudaMalloc(A)");
      check(cudaMalloc(&b, b_elems * eb), "cudaMalloc(B)");
      check(cudaMalloc(&c, c_elems * eb), "cudaMalloc(C)");
      check(cudaMalloc(&cref, c_elems * eb), "cudaMalloc(Cref)");
      if (beta != 0.0f) {  // C's first values, which every checked run starts from
        check(cudaMalloc(&c0, c_elems * eb), "cudaMalloc(C0)");
        fill_uniform(c0, c_elems, t, 23 + static_cast<std::uint64_t>(s.k));
      }
      fill_uniform(a, a_elems, t, 11 + static_cast<std::uint64_t>(s.m));
      fill_uniform(b, b_elems, t, 17 + static_cast<std::uint64_t>(s.n));
      const GemmProblem p = problem_of(dt, s, layout);
      const bool a_col = layout[0] == 'T', b_row = layout[1] == 'N';
      const double flops =
          2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) * static_cast<double>(s.batch);
      auto tflops = [&](double ms) { return flops / (ms * 1e-3) / 1e12; };

      // cuBLAS, column-major: C^T (n x m) = B^T * A^T. Seen column-major, a column-major B (k x n) is B: op T,
      // a row-major B is B^T (n x k, pitch n): op N; a row-major A is A^T (k x m): op N, a column-major A op T.
      const float one = 1.0f;
      const cudaDataType_t cdt = t == DType::F16 ? CUDA_R_16F : CUDA_R_16BF;
      const cublasOperation_t op_b = b_row ? CUBLAS_OP_N : CUBLAS_OP_T, op_a = a_col ? CUBLAS_OP_T : CUBLAS_OP_N;
      const int ldb = static_cast<int>(b_row ? s.n : s.k), lda = static_cast<int>(a_col ? s.m : s.k);
      auto run_cublas = [&] {
        if (s.batch == 1) {
          cublas_check(cublasGemmEx(handle, op_b, op_a, static_cast<int>(s.n), static_cast<int>(s.m),
                                    static_cast<int>(s.k), &one, b, cdt, ldb, a, cdt, lda, &beta, cref, cdt,
                                    static_cast<int>(s.n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                       "cublasGemmEx");
        } else {
          cublas_check(cublasGemmStridedBatchedEx(handle, op_b, op_a, static_cast<int>(s.n), static_cast<int>(s.m),
                                                  static_cast<int>(s.k), &one, b, cdt, ldb, s.n * s.k, a, cdt, lda,
                                                  s.m * s.k, &beta, cref, cdt, static_cast<int>(s.n), s.m * s.n,
                                                  static_cast<int>(s.batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                       "cublasGemmStridedBatchedEx");
        }
      };
      Row row;
      row.dtype = dt;
      row.layout = layout;
      row.s = s;
      row.cublas_tf = tflops(timer.time(run_cublas, reps).median);
      // With beta, the timed runs summed into C again and again: the reference and every checked run start
      // from C's first values; without, C is poisoned before a checked run.
      const auto reset_c = [&] {
        if (beta != 0.0f) {
          check(cudaMemcpyAsync(c, c0, c_elems * eb, cudaMemcpyDeviceToDevice, stream), "C = C0");
        } else {
          check(cudaMemsetAsync(c, 0xFF, c_elems * eb, stream), "poison C");
        }
      };
      if (beta != 0.0f) {
        check(cudaMemcpyAsync(cref, c0, c_elems * eb, cudaMemcpyDeviceToDevice, stream), "Cref = C0");
        run_cublas();
        check(cudaStreamSynchronize(stream), "cuBLAS reference");
      }
      std::printf("%s %s %lldx%lldx%lld batch %lld  cuBLAS %s TFLOP/s\n", dt.c_str(), layout.c_str(), s.m, s.n, s.k,
                  s.batch, fmt(row.cublas_tf, 1).c_str());
      if (mma_engine) {
        auto run_mma = [&] {
          mma_engine->gemm(p, reinterpret_cast<DevicePtr>(a), reinterpret_cast<DevicePtr>(b),
                           reinterpret_cast<DevicePtr>(c), 1.0f, beta, stream);
        };
        reset_c();
        run_mma();
        check(cudaStreamSynchronize(stream), "Engine::gemm (mma.sync)");
        const double err = rel_error(c, cref, c_elems, t);
        row.mma_tf = tflops(timer.time(run_mma, reps).median);
        std::printf("  %-45s %7s TFLOP/s  %5s x cuBLAS  rel.err %.2e%s\n", "Engine::gemm, mma.sync family",
                    fmt(row.mma_tf, 1).c_str(), fmt(row.mma_tf / row.cublas_tf, 3).c_str(), err,
                    err < 1e-2 ? "" : "  WRONG");
      }
      for (std::size_t ci = 0; ci < configs.size(); ++ci) {
        Sm90GemmConfig cfg;
        const auto [sms, text] = split_sms(configs[ci], prop.multiProcessorCount);
        try {
          cfg = config_of(text, p, dt, prop.multiProcessorCount, dram_gbps);
        } catch (const Error& e) {
          std::printf("  config %s: %s\n", configs[ci].c_str(), e.what());
          continue;
        }
        // Split configs: the f32 workspace and the reduction are part of what is timed.
        const std::size_t ws_bytes = gemm_sm90_workspace_bytes(cfg, p, sms);
        void* ws = nullptr;
        if (ws_bytes > 0) check(cudaMalloc(&ws, ws_bytes), "cudaMalloc(workspace)");
        const Kernel* reduce = cfg.uses_reduce_kernel() ? &reduce_for(t) : nullptr;
        const Sm90GemmLaunch launch = gemm_sm90_prepare(cfg, p, reinterpret_cast<DevicePtr>(a),
                                                        reinterpret_cast<DevicePtr>(b), reinterpret_cast<DevicePtr>(c),
                                                        1.0f, beta, sms, 0, reinterpret_cast<DevicePtr>(ws));
        if (!variants.empty()) {
          // A/B: every variant checked, then rounds of cuBLAS and the variants in a rotating order.
          AbRow ab;
          ab.dtype = dt, ab.layout = layout, ab.config = (sms != prop.multiProcessorCount ? "sms=" + std::to_string(sms) + "," : "") +
                                                        cfg.to_string();
          ab.shape = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
                     (s.batch > 1 ? "x" + std::to_string(s.batch) : "");
          std::vector<const Kernel*> ks;
          for (const Variant& v : variants) {
            ks.push_back(&kernel_for(cfg, &v));
            reset_c();
            gemm_sm90_launch(*ks.back(), launch, stream, false, reduce);
            check(cudaStreamSynchronize(stream), "sm_90a gemm");
            const double err = rel_error(c, cref, c_elems, t);
            ab.worst_err = std::max(ab.worst_err, err);
            std::printf("  %-8s %s  rel.err %.2e%s\n", v.name.c_str(), cfg.to_string().c_str(), err, err < 1e-2 ? "" : "  WRONG");
          }
          const std::size_t nv = variants.size();
          ab.ratios.assign(nv, {});
          std::vector<std::vector<double>> tfs(nv);
          for (int r = 0; r < rounds; ++r) {
            const double cb = tflops(timer.time(run_cublas, reps).median);
            std::printf("  round %d: cuBLAS %s", r + 1, fmt(cb, 1).c_str());
            for (std::size_t j = 0; j < nv; ++j) {
              const std::size_t vi = (j + static_cast<std::size_t>(r)) % nv;
              const Kernel& kv = *ks[vi];
              const double tf = tflops(timer.time([&] { gemm_sm90_launch(kv, launch, stream, false, reduce); }, reps).median);
              tfs[vi].push_back(tf);
              ab.ratios[vi].push_back(tf / cb);
              std::printf(", %s %s (%s)", variants[vi].name.c_str(), fmt(tf, 1).c_str(), fmt(tf / cb, 3).c_str());
            }
            std::printf("\n");
          }
          for (std::size_t vi = 0; vi < nv; ++vi) ab.tflops.push_back(bench::median(tfs[vi]));
          ab_rows.push_back(ab);
          if (ws) cudaFree(ws);
          continue;
        }
        const Kernel& kernel = kernel_for(cfg);
        reset_c();
        gemm_sm90_launch(kernel, launch, stream, false, reduce);
        check(cudaStreamSynchronize(stream), "sm_90a gemm");
        const double err = rel_error(c, cref, c_elems, t);
        const double tf =
            tflops(timer.time([&] { gemm_sm90_launch(kernel, launch, stream, false, reduce); }, reps).median);
        if (ws) cudaFree(ws);
        const std::string sms_note = sms != prop.multiProcessorCount ? "sms=" + std::to_string(sms) + "," : "";
        std::printf("  %s%-45s %7s TFLOP/s  %5s x cuBLAS  rel.err %.2e%s\n", sms_note.c_str(), cfg.to_string().c_str(),
                    fmt(tf, 1).c_str(), fmt(tf / row.cublas_tf, 3).c_str(), err, err < 1e-2 ? "" : "  WRONG");
        row.worst_err = std::max(row.worst_err, err);
        if (ci == 0) row.default_tf = tf;
        if (configs[ci] == "auto") row.auto_tf = tf;
        if (tf > row.best_tf && err < 1e-2) {
          row.best_tf = tf;
          row.best_cfg = configs[ci];
        }
      }
      rows.push_back(row);
      cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(cref), cudaFree(c0);
    }

  std::printf("\nsummary (TFLOP/s, median of %d; default = %s)\n", reps, configs.front().c_str());
  std::printf("%-5s %-3s %-18s %8s %8s %8s %8s %7s %7s %9s %8s  %s\n", "dtype", "lay", "MxNxK", "cuBLAS", "default", "auto",
              "best", "auto/cb", "best/cb", "max.err", "mma.sync", "best config");
  for (const Row& r : rows) {
    char shape[64];
    if (r.s.batch > 1) {
      std::snprintf(shape, sizeof shape, "%lldx%lldx%lldx%lld", r.s.m, r.s.n, r.s.k, r.s.batch);
    } else {
      std::snprintf(shape, sizeof shape, "%lldx%lldx%lld", r.s.m, r.s.n, r.s.k);
    }
    std::printf("%-5s %-3s %-18s %8s %8s %8s %8s %7s %7s %9.2e %8s  %s\n", r.dtype.c_str(), r.layout.c_str(), shape, fmt(r.cublas_tf, 1).c_str(),
                fmt(r.default_tf, 1).c_str(), fmt(r.auto_tf, 1).c_str(), fmt(r.best_tf, 1).c_str(),
                fmt(r.auto_tf / r.cublas_tf, 3).c_str(), fmt(r.best_tf / r.cublas_tf, 3).c_str(), r.worst_err,
                r.mma_tf > 0 ? fmt(r.mma_tf, 1).c_str() : "-", r.best_cfg.c_str());
  }
  if (!ab_rows.empty()) {
    // Each variant: the median over the rounds of its ratio to that round's cuBLAS, then the rounds' ratios.
    std::printf("\nA/B (ratio to cuBLAS in the same round, median of %d rounds; each round's ratios in brackets)\n", rounds);
    std::printf("%-5s %-3s %-16s", "dtype", "lay", "MxNxK");
    for (const Variant& v : variants) std::printf(" %16s", v.name.c_str());
    std::printf("  %9s  config\n", "max.err");
    std::vector<std::vector<double>> all(variants.size());
    for (const AbRow& r : ab_rows) {
      std::printf("%-5s %-3s %-16s", r.dtype.c_str(), r.layout.c_str(), r.shape.c_str());
      for (std::size_t vi = 0; vi < variants.size(); ++vi) {
        const double med = bench::median(r.ratios[vi]);
        all[vi].push_back(med);
        std::printf(" %16s", (fmt(med, 3) + " " + fmt(r.tflops[vi], 0)).c_str());
      }
      std::printf("  %9.2e  %s\n", r.worst_err, r.config.c_str());
      std::printf("%-26s", "");
      for (std::size_t vi = 0; vi < variants.size(); ++vi) {
        std::string rs = "[";
        for (std::size_t k = 0; k < r.ratios[vi].size(); ++k) rs += (k ? " " : "") + fmt(r.ratios[vi][k], 3);
        std::printf(" %s]", rs.c_str());
      }
      std::printf("\n");
    }
    std::printf("geometric mean of the medians:");
    for (std::size_t vi = 0; vi < variants.size(); ++vi) {
      double lg = 0;
      for (double x : all[vi]) lg += std::log(x);
      std::printf(" %s %s", variants[vi].name.c_str(), fmt(std::exp(lg / static_cast<double>(all[vi].size())), 4).c_str());
    }
    std::printf("\n");
  }
  cublasDestroy(handle);
  cudaStreamDestroy(stream);
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench: %s\n", e.what());
    return 1;
  }
}
