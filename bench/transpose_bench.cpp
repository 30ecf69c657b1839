// bench: transpose throughput of libswzjit's kernels beside cudaMemcpyAsync (device to device), in one
// process, same sizes, L2 flushed before every repetition, CUDA events, medians; prints GB/s (bytes
// read + written) and the ratio to the copy. BENCHMARKS.md records its output and command line.
//   swz_bench_transpose [--reps N] [--quick] [--explore] [--ncu CONFIG[;CONFIG...]]
// --explore adds the raster=1 variant of every config. --ncu ... --probe runs each config's shared-memory
// phases alone (no global traffic) instead of the kernel.
// --ncu launches each given config once on a 16384x8192 matrix of its dtype (for `ncu`) and prints the static analysis
// prediction of its shared-memory wavefronts for the whole grid.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_common.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"

using namespace swz;
using swz::bench::check;
using swz::bench::fmt;

namespace {

struct Size {
  DType dtype;
  long long rows, cols;
};

struct Row {
  std::string label, config;
  double gbps = 0, ratio = 0, ms = 0;
  bool verified = false;
};

// Exact host check of one transpose result (out is cols x rows).
bool verify(const void* d_in, const void* d_out, const Size& s) {
  const std::size_t eb = static_cast<std::size_t>(dtype_bytes(s.dtype));
  const std::size_t n = static_cast<std::size_t>(s.rows * s.cols) * eb;
  std::vector<unsigned char> in(n), out(n);
  check(cudaMemcpy(in.data(), d_in, n, cudaMemcpyDeviceToHost), "copy back");
  check(cudaMemcpy(out.data(), d_out, n, cudaMemcpyDeviceToHost), "copy back");
  for (long long r = 0; r < s.rows; ++r)
    for (long long c = 0; c < s.cols; ++c)
      if (std::memcmp(&out[static_cast<std::size_t>(c * s.rows + r) * eb], &in[static_cast<std::size_t>(r * s.cols + c) * eb],
                      eb) != 0)
        return false;
  return true;
}

void compile_all(Engine& engine, const std::vector<TransposeConfig>& configs) {
  std::vector<std::thread> pool;
  std::size_t next = 0;
  std::mutex m;
  const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned t = 0; t < n; ++t)
    pool.emplace_back([&] {
      for (;;) {
        std::size_t i;
        {
          std::lock_guard<std::mutex> lock(m);
          if (next >= configs.size()) return;
          i = next++;
        }
        engine.compile_transpose(configs[i]);
      }
    });
  for (auto& th : pool) th.join();
}

// --ncu --probe: each config's shared-memory phases alone (templates/smem_probe.cuh), no global
// traffic: 528 blocks x 16 repetitions, predictions scaled the same way.
int run_probe(const std::string& list) {
  std::vector<TransposeConfig> configs;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ';')) configs.push_back(TransposeConfig::parse(item));
  unsigned int* sink = nullptr;
  check(cudaMalloc(&sink, 4), "cudaMalloc");
  const int blocks = 528, reps = 16;
  std::printf("config;blocks;pred_st_wavefronts;pred_st_ideal;pred_ld_wavefronts;pred_ld_ideal;pred_st_instr;pred_ld_instr\n");
  for (const auto& c : configs) {
    CompileRequest req;
    req.source = transpose_probe_source(c);
    req.source_name = "swz_probe.cu";
    req.name_expression = transpose_probe_name_expression(c);
    req.arch = device_info(0).arch();
    const CompiledKernel k = compile(req);
    Module m(k, 0);
    const Kernel kern = m.kernel();
    int iterations = reps;
    void* args[] = {&iterations, &sink};
    kern.launch(Dim3{static_cast<unsigned>(blocks), 1, 1}, Dim3{static_cast<unsigned>(c.threads), 1, 1}, 0, nullptr, args);
    check(cudaDeviceSynchronize(), "probe launch");
    const TransposeAnalysis a = analyze_transpose(c);
    const long long n = static_cast<long long>(blocks) * reps;
    std::printf("%s;%lld;%lld;%lld;%lld;%lld;%lld;%lld\n", c.to_string().c_str(), n, a.store_wavefronts * n,
                a.store_ideal * n, a.load_wavefronts * n, a.load_ideal * n, a.store_instructions * n,
                a.load_instructions * n);
  }
  cudaFree(sink);
  return 0;
}

int run_ncu(Engine& engine, const std::string& list) {
  const long long rows = 16384, cols = 8192;  // every config runs on this shape, in its own dtype
  std::vector<TransposeConfig> configs;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ';')) configs.push_back(TransposeConfig::parse(item));
  void *in = nullptr, *out = nullptr;
  const std::size_t bytes = static_cast<std::size_t>(rows * cols) * 4;
  check(cudaMalloc(&in, bytes), "cudaMalloc");
  check(cudaMalloc(&out, bytes), "cudaMalloc");
  bench::fill_random_device(in, bytes, 7);
  std::printf("config;blocks;pred_st_wavefronts;pred_st_ideal;pred_ld_wavefronts;pred_ld_ideal;pred_st_instr;pred_ld_instr\n");
  for (const auto& c : configs) {
    engine.transpose_kernel(c);  // compile + load outside the profiled launch
    const TransposeProblem p{c.dtype, rows, cols};
    const LaunchShape ls = transpose_launch_shape(c, rows, cols, 1);
    const long long blocks = static_cast<long long>(ls.grid[0]) * ls.grid[1] * ls.grid[2];
    const TransposeAnalysis a = analyze_transpose(c);
    engine.launch_transpose(c, p, reinterpret_cast<DevicePtr>(in), reinterpret_cast<DevicePtr>(out), nullptr);
    check(cudaDeviceSynchronize(), "ncu launch");
    std::printf("%s;%lld;%lld;%lld;%lld;%lld;%lld;%lld\n", c.to_string().c_str(), blocks, a.store_wavefronts * blocks,
                a.store_ideal * blocks, a.load_wavefronts * blocks, a.load_ideal * blocks,
                a.store_instructions * blocks, a.load_instructions * blocks);
  }
  cudaFree(in);
  cudaFree(out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 30;
  bool quick = false, explore = false, probe = false;
  std::string ncu;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::max(5, static_cast<int>(bench::parse_count(argv[++i], "--reps", 1, 100000)));
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "--explore") {
      explore = true;
    } else if (a == "--probe") {
      probe = true;
    } else if (a == "--ncu" && i + 1 < argc) {
      ncu = argv[++i];
    } else {
      std::fprintf(stderr, "usage: swz_bench_transpose [--reps N] [--quick] [--explore] [--ncu CONFIG[;CONFIG...] [--probe]]\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  check(cudaSetDevice(0), "cudaSetDevice");
  check(cudaFree(nullptr), "context creation");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  char tmpl[] = "/tmp/swz_bench_cache_XXXXXX";
  EngineOptions eo;
  eo.cache_dir = mkdtemp(tmpl);
  Engine engine(eo);
  if (!ncu.empty()) return probe ? run_probe(ncu) : run_ncu(engine, ncu);

  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  bench::Timer timer(stream);
  std::printf("device: %s, %d SMs, L2 %d MB; %d repetitions per measurement, L2 flushed before each\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize >> 20, reps);

  const std::vector<Size> sizes = {{DType::F32, 16384, 8192}, {DType::F16, 16384, 16384}, {DType::BF16, 16384, 16384}};
  std::vector<std::string> table;
  for (const Size& s : sizes) {
    const std::size_t bytes = static_cast<std::size_t>(s.rows * s.cols) * dtype_bytes(s.dtype);
    void *in = nullptr, *out = nullptr;
    check(cudaMalloc(&in, bytes), "cudaMalloc(in)");
    check(cudaMalloc(&out, bytes), "cudaMalloc(out)");
    bench::fill_random_device(in, bytes, 0x1234 + static_cast<std::uint64_t>(s.dtype));
    const double moved = 2.0 * static_cast<double>(bytes);
    const bench::Timing copy =
        timer.time([&] { check(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, stream), "memcpy"); }, reps);
    const double copy_gbps = moved / (copy.median * 1e6);
    std::vector<Row> rows;
    rows.push_back({"cudaMemcpyAsync D2D", "-", copy_gbps, 1.0, copy.median, true});

    std::vector<TransposeConfig> space = transpose_search_space(s.dtype, 16, true, explore);
    if (s.dtype == DType::F32) {
      // The seed kernel's shape (32x32 tile, 256 threads, 4 scalar elements each), three layouts.
      for (const char* t : {"f32,tile=32x32,threads=256,vec=1,smem=plain", "f32,tile=32x32,threads=256,vec=1,smem=pad:1",
                            "f32,tile=32x32,threads=256,vec=1,smem=swizzle:5:0:5"})
        space.insert(space.begin(), TransposeConfig::parse(t));
    }
    if (quick) space.resize(std::min<std::size_t>(space.size(), 12));
    compile_all(engine, space);
    TransposeProblem p{s.dtype, s.rows, s.cols};
    std::map<std::string, Row> best;  // by variant
    for (const auto& c : space) {
      const bench::Timing t = timer.time(
          [&] { engine.launch_transpose(c, p, reinterpret_cast<DevicePtr>(in), reinterpret_cast<DevicePtr>(out), stream); },
          reps);
      const double gbps = moved / (t.median * 1e6);
      std::string variant = to_string(c.smem);
      if (explore) variant += std::string(c.raster ? " raster1" : "") + (c.streaming ? " cs" : "");
      if (c.vec == 1 && c.tile_rows == 32 && c.tile_cols == 32 && s.dtype == DType::F32) variant = "seed-shape " + variant;
      Row r{variant, c.to_string(), gbps, gbps / copy_gbps, t.median, false};
      auto it = best.find(variant);
      if (it == best.end() || it->second.gbps < gbps) best[variant] = r;
    }
    for (auto& kv : best) {
      // Re-run the best of each variant once and check it exactly before reporting it.
      const TransposeConfig c = TransposeConfig::parse(kv.second.config);
      check(cudaMemsetAsync(out, 0xff, bytes, stream), "poison");
      engine.launch_transpose(c, p, reinterpret_cast<DevicePtr>(in), reinterpret_cast<DevicePtr>(out), stream);
      check(cudaStreamSynchronize(stream), "verify launch");
      kv.second.verified = verify(in, out, s);
      rows.push_back(kv.second);
    }
    std::sort(rows.begin() + 1, rows.end(), [](const Row& a, const Row& b) { return a.gbps > b.gbps; });
    const std::string title = to_string(s.dtype) + " " + std::to_string(s.rows) + "x" + std::to_string(s.cols) + " (" +
                              std::to_string(space.size()) + " configs timed)";
    table.push_back("\n" + title);
    table.push_back("| kernel | best config | ms | GB/s | vs copy | verified |");
    table.push_back("| --- | --- | ---: | ---: | ---: | --- |");
    for (const Row& r : rows)
      table.push_back("| " + r.label + " | " + r.config + " | " + fmt(r.ms, 4) + " | " + fmt(r.gbps, 0) + " | " +
                      fmt(100.0 * r.ratio, 1) + "% | " + (r.verified ? "exact" : "MISMATCH") + " |");
    cudaFree(in);
    cudaFree(out);
  }
  for (const auto& line : table) std::printf("%s\n", line.c_str());
  cudaStreamDestroy(stream);
  return 0;
}
