// bench: the GPU soak — the library used as a busy application would: several Engines (TuneOnMiss and
// Default policies, staging on and off) shared by several threads, each on its own stream, calling
// transpose, GEMM and the declared row families (rowsum, rowscan: Engine::run_family) on random odd
// shapes, dtypes, layouts, pitches and misaligned pointers for a set time. Every result is checked
// (transpose exactly, GEMM against the library's f64 reference kernel, the row families on the host),
// guard regions must stay poisoned, a watchdog reports any call that does not return, and RSS and
// device memory are sampled so growth shows. Exit 0 only with 0 hangs, 0 failures, 0 wrong results
// and flat memory. Not a test (it needs a GPU and minutes); docs: BENCHMARKS.md "Soak".
#include <cuda_runtime.h>
#if defined(__GLIBC__)
#include <malloc.h>  // malloc_trim
#endif
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "swzjit/swzjit.hpp"

using namespace swz;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kGuard = 256;  // poisoned bytes before and after every output
constexpr std::uint8_t kPoison = 0xFF;

struct Options {
  double seconds = 300;
  int threads = 4;
  double watchdog_s = 300;  // one call (a tune included) taking longer is a hang
  std::uint64_t seed = 1;
  std::string cache_dir;    // empty: a fresh directory under /tmp
  bool tune = true;         // false (--no-tune): the first engine uses the default policy too
  double max_rss_growth_mb = 64, max_device_growth_mb = 256;
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double rss_mb() {
#if defined(__GLIBC__)
  // Hand the heap's free pages back first: each NVRTC compile allocates and frees hundreds of MiB across
  // the threads' malloc arenas, which glibc keeps, so the raw RSS swings by +-300 MiB within one run
  // (1188 -> 1441 -> 1400 -> 1482 -> 2008 MiB at 30 s steps, 870 compiles). What stays after the trim
  // is memory something still holds: the growth the rule is after.
  malloc_trim(0);
#endif
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  return 0;
}

// Bytes malloc hands out now (in use in the arenas plus its own mmapped chunks): when RSS grows and this
// does not, the growth is memory mapped outside malloc (the driver's) or arena pages the trim cannot free.
double heap_in_use_mb() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const struct mallinfo2 mi = mallinfo2();
  return static_cast<double>(mi.uordblks + mi.hblkhd) / (1024.0 * 1024.0);
#else
  return 0;
#endif
}

// Where the resident memory is, by mapping (/proc/self/smaps): file mappings by path, anonymous ones by
// their size (glibc's thread arenas are 64 MiB reservations; the driver's mappings have other sizes).
void print_resident_by_mapping() {
  std::ifstream f("/proc/self/smaps");
  std::map<std::string, std::pair<double, int>> by;  // name -> (RSS MiB, mappings)
  std::string line, name;
  while (std::getline(f, line)) {
    unsigned long long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      std::istringstream is(line);
      std::string range, perms, off, dev, inode, path;
      is >> range >> perms >> off >> dev >> inode;
      std::getline(is, path);
      path.erase(0, path.find_first_not_of(' '));
      const unsigned long long mib = (hi - lo) >> 20;
      name = !path.empty() ? path : "anon " + perms + (mib >= 64 ? " >= 64 MiB" : mib >= 8 ? " 8-63 MiB" : mib >= 1 ? " 1-7 MiB" : " < 1 MiB");
      by[name].second += 1;
    } else if (line.rfind("Rss:", 0) == 0) {
      by[name].first += std::atof(line.c_str() + 4) / 1024.0;
    }
  }
  std::vector<std::pair<double, std::string>> top;
  for (const auto& [n, v] : by) top.push_back({v.first, n + " (" + std::to_string(v.second) + " mappings)"});
  std::sort(top.rbegin(), top.rend());
  std::printf("resident memory by mapping (MiB):\n");
  for (std::size_t i = 0; i < top.size() && i < 10; ++i) std::printf("  %8.1f  %s\n", top[i].first, top[i].second.c_str());
}

double device_used_mb() {
  std::size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) return 0;
  return static_cast<double>(total_b - free_b) / (1024.0 * 1024.0);
}

// A device buffer with poisoned guard regions around `bytes` of payload at `misalign` bytes past a
// 256-byte boundary. Every transfer is ordered on the thread's own stream, as the engine's work is.
// NOTE: cudaMemset and pageable cudaMemcpy run on the legacy default stream, which a non-blocking stream
// does not wait for (a pageable upload may return before its DMA lands): mixing them made the first
// version of this program report wrong results that were its own.
class Buffer {
 public:
  Buffer(std::size_t bytes, std::size_t misalign, cudaStream_t stream)
      : bytes_(bytes), misalign_(misalign), stream_(stream) {
    total_ = kGuard + misalign + bytes + kGuard;
    bench::check(cudaMalloc(&base_, total_), "cudaMalloc");
    bench::check(cudaMemsetAsync(base_, kPoison, total_, stream_), "cudaMemsetAsync(poison)");
  }
  ~Buffer() {
    cudaStreamSynchronize(stream_);
    cudaFree(base_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const { return static_cast<std::uint8_t*>(base_) + kGuard + misalign_; }
  DevicePtr ptr() const { return reinterpret_cast<DevicePtr>(data()); }
  void upload(const std::vector<std::uint8_t>& h) const {
    bench::check(cudaMemcpyAsync(data(), h.data(), bytes_, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync(upload)");
    bench::check(cudaStreamSynchronize(stream_), "upload");  // `h` may go away after this
  }
  std::vector<std::uint8_t> download_all() const {
    std::vector<std::uint8_t> h(total_);
    bench::check(cudaMemcpyAsync(h.data(), base_, total_, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync(download)");
    bench::check(cudaStreamSynchronize(stream_), "download");
    return h;
  }
  std::size_t payload_offset() const { return kGuard + misalign_; }
  std::size_t bytes() const { return bytes_; }

  /// True when the guard bytes on both sides are still the poison.
  static bool guards_intact(const std::vector<std::uint8_t>& all, std::size_t payload_offset, std::size_t bytes) {
    for (std::size_t i = 0; i < payload_offset; ++i)
      if (all[i] != kPoison) return false;
    for (std::size_t i = payload_offset + bytes; i < all.size(); ++i)
      if (all[i] != kPoison) return false;
    return true;
  }

 private:
  void* base_ = nullptr;
  std::size_t bytes_, misalign_, total_;
  cudaStream_t stream_;
};

std::vector<std::uint8_t> random_elements(DType t, std::size_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int eb = dtype_bytes(t);
  std::vector<std::uint8_t> h(count * static_cast<std::size_t>(eb));
  for (std::size_t i = 0; i < count; ++i) store_element(t, h.data() + i * eb, u(rng));
  return h;
}

// --- what each thread reports ------------------------------------------------------------------

struct Stats {
  std::atomic<long> transposes{0}, gemms{0}, rows{0}, failures{0}, wrong{0}, guard_hits{0};
};

struct Slot {  // the watchdog's view of one thread
  std::atomic<long long> started_ns{0};  // 0: idle
  std::mutex mu;
  std::string what;
};

std::mutex g_log_mu;
void log_line(const std::string& s) {
  std::lock_guard<std::mutex> lock(g_log_mu);
  std::printf("%s\n", s.c_str());
  std::fflush(stdout);
}

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// --- one transpose call, checked exactly ----------------------------------------------------------

bool run_transpose(Engine& engine, cudaStream_t stream, std::mt19937_64& rng, bool tune_shape, std::string* what,
                   const std::function<void(const std::string&)>& set_what) {
  static const DType kTypes[] = {DType::F32, DType::F16, DType::BF16};
  TransposeProblem p;
  p.dtype = kTypes[rng() % 3];
  if (tune_shape) {  // a few fixed shapes, so TuneOnMiss engines tune each once and then hit
    static const long long kShapes[][2] = {{1024, 2048}, {777, 1031}, {4096, 256}};
    const auto& s = kShapes[rng() % 3];
    p.rows = s[0];
    p.cols = s[1];
  } else {
    p.rows = 1 + static_cast<long long>(rng() % 700);
    p.cols = 1 + static_cast<long long>(rng() % 700);
  }
  if (!tune_shape) {  // fixed shapes stay packed single matrices, so each is tuned once
    p.batch = 1 + static_cast<long long>(rng() % 3);
    if (rng() % 3 == 0) p.ld_in = p.cols + static_cast<long long>(rng() % 9);
    if (rng() % 3 == 0) p.ld_out = p.rows + static_cast<long long>(rng() % 9);
  }
  const TransposeProblem r = p.resolved();
  const int eb = dtype_bytes(p.dtype);
  const std::size_t in_elems = static_cast<std::size_t>(r.stride_in * r.batch);
  const std::size_t out_elems = static_cast<std::size_t>(r.stride_out * r.batch);
  const std::size_t mis_in = (!tune_shape && rng() % 4 == 0) ? static_cast<std::size_t>(eb) * (rng() % 4) : 0;
  const std::size_t mis_out = (!tune_shape && rng() % 4 == 0) ? static_cast<std::size_t>(eb) * (rng() % 4) : 0;
  std::ostringstream label;
  label << "transpose " << to_string(p.dtype) << " " << p.rows << "x" << p.cols << " batch " << p.batch << " ld "
        << r.ld_in << "," << r.ld_out << " misalign " << mis_in << "," << mis_out;
  *what = label.str();
  set_what(*what);

  Buffer in(in_elems * eb, mis_in, stream), out(out_elems * eb, mis_out, stream);
  const std::vector<std::uint8_t> h_in = random_elements(p.dtype, in_elems, rng);
  in.upload(h_in);
  engine.transpose(p, in.ptr(), out.ptr(), stream);
  bench::check(cudaStreamSynchronize(stream), "transpose stream sync");
  const std::vector<std::uint8_t> all = out.download_all();
  if (!Buffer::guards_intact(all, out.payload_offset(), out.bytes())) {
    *what += ": guard region overwritten";
    return false;
  }
  const std::uint8_t* o = all.data() + out.payload_offset();
  for (long long b = 0; b < r.batch; ++b)
    for (long long i = 0; i < r.rows; ++i)
      for (long long j = 0; j < r.cols; ++j) {
        const std::size_t src = static_cast<std::size_t>(b * r.stride_in + i * r.ld_in + j) * eb;
        const std::size_t dst = static_cast<std::size_t>(b * r.stride_out + j * r.ld_out + i) * eb;
        if (std::memcmp(h_in.data() + src, o + dst, static_cast<std::size_t>(eb)) != 0) {
          *what += ": wrong element at batch " + std::to_string(b) + " (" + std::to_string(i) + "," +
                   std::to_string(j) + ") (config now chosen: " + engine.transpose_config(p, in.ptr(), out.ptr()).to_string() +
                   ")";
          return false;
        }
      }
  // Pitch gaps of the output must stay poisoned too.
  for (long long b = 0; b < r.batch; ++b)
    for (long long j = 0; j < r.cols; ++j)
      for (long long i = r.rows; i < r.ld_out; ++i)
        for (int x = 0; x < eb; ++x)
          if (o[static_cast<std::size_t>(b * r.stride_out + j * r.ld_out + i) * eb + x] != kPoison) {
            *what += ": pitch gap written";
            return false;
          }
  return true;
}

// --- one GEMM call, checked against the f64 reference kernel ---------------------------------------

bool run_gemm(Engine& engine, cudaStream_t stream, std::mt19937_64& rng, bool tune_shape, std::string* what,
              const std::function<void(const std::string&)>& set_what) {
  static const DType kTypes[] = {DType::F32, DType::F16, DType::BF16};
  GemmProblem p;
  p.dtype = kTypes[rng() % 3];
  p.out_dtype = p.dtype == DType::F32 ? DType::F32 : (rng() % 3 == 0 ? DType::F32 : p.dtype);
  const auto order = [&] { return rng() % 2 ? MatrixOrder::RowMajor : MatrixOrder::ColMajor; };
  p.a_order = order();
  p.b_order = order();
  p.c_order = order();
  if (tune_shape) {  // the shapes whose successive tunes hung (issue 10), and a small one
    static const long long kShapes[][3] = {{128, 14336, 4096}, {4096, 4096, 512}, {300, 500, 700}};
    const auto& s = kShapes[rng() % 3];
    p.m = s[0];
    p.n = s[1];
    p.k = s[2];
    p.a_order = MatrixOrder::RowMajor;
    p.b_order = MatrixOrder::ColMajor;
    p.c_order = MatrixOrder::RowMajor;
    if (p.dtype == DType::F32) p.dtype = DType::F16;
    p.out_dtype = p.dtype;
  } else {
    p.m = 1 + static_cast<long long>(rng() % 300);
    p.n = 1 + static_cast<long long>(rng() % 300);
    p.k = static_cast<long long>(rng() % 400);  // K = 0 included: C = beta * C
    if (rng() % 8 == 0) p.k = 2000 + static_cast<long long>(rng() % 3000);  // long K: split-K paths
  }
  p.batch = tune_shape ? 1 : 1 + static_cast<long long>(rng() % 2);
  // Now and then a batch big enough that the Hopper kernel takes it on an sm_90 GPU (its units span matrices).
  if (!tune_shape && rng() % 6 == 0) p.batch = 8 + static_cast<long long>(rng() % 40);
  const GemmProblem r0 = p.resolved();
  if (!tune_shape && rng() % 3 == 0) {
    p.lda = r0.lda + static_cast<long long>(rng() % 5);
    p.ldb = r0.ldb + static_cast<long long>(rng() % 5);
    p.ldc = r0.ldc + static_cast<long long>(rng() % 5);
  }
  const GemmProblem r = p.resolved();
  const int ib = dtype_bytes(p.dtype), ob = dtype_bytes(p.out_dtype);
  const std::size_t a_elems = static_cast<std::size_t>(r.stride_a * r.batch);
  const std::size_t b_elems = static_cast<std::size_t>(r.stride_b * r.batch);
  const std::size_t c_elems = static_cast<std::size_t>(r.stride_c * r.batch);
  const std::size_t mis_elems = (!tune_shape && rng() % 4 == 0) ? 1 + rng() % 3 : 0;  // elements off 256 B
  const std::size_t mis = mis_elems * static_cast<std::size_t>(ib), mis_c = mis_elems * static_cast<std::size_t>(ob);
  const float alpha = rng() % 2 ? 1.0f : 0.5f + static_cast<float>(rng() % 100) / 100.0f;
  const float beta = rng() % 2 ? 0.0f : static_cast<float>(rng() % 100) / 100.0f;
  std::ostringstream label;
  label << "gemm " << to_string(p.dtype) << ">" << to_string(p.out_dtype) << " " << p.m << "x" << p.n << "x" << p.k
        << " A" << (p.a_order == MatrixOrder::RowMajor ? "r" : "c") << " B"
        << (p.b_order == MatrixOrder::RowMajor ? "r" : "c") << " C" << (p.c_order == MatrixOrder::RowMajor ? "r" : "c")
        << " ld " << r.lda << "," << r.ldb << "," << r.ldc << " batch " << r.batch << " misalign " << mis_elems
        << " alpha " << alpha << " beta " << beta;
  *what = label.str();
  set_what(*what);

  Buffer a(a_elems * ib, mis, stream), b(b_elems * ib, mis, stream), c(c_elems * ob, mis_c, stream),
      ref(c_elems * ob, 0, stream);
  a.upload(random_elements(p.dtype, a_elems, rng));
  b.upload(random_elements(p.dtype, b_elems, rng));
  const std::vector<std::uint8_t> c0 = random_elements(p.out_dtype, c_elems, rng);
  c.upload(c0);
  ref.upload(c0);
  // K = 0 reads neither operand: half the time they come as an empty framework tensor does, null.
  const bool null_ab = r.k == 0 && rng() % 2 == 0;
  if (null_ab) *what += " (A, B null)";
  engine.gemm(p, null_ab ? 0 : a.ptr(), null_ab ? 0 : b.ptr(), c.ptr(), alpha, beta, stream);
  engine.gemm_reference(p, a.ptr(), b.ptr(), ref.ptr(), alpha, beta, stream, /*f64_accumulate=*/true);
  bench::check(cudaStreamSynchronize(stream), "gemm stream sync");
  const std::vector<std::uint8_t> got_all = c.download_all(), ref_all = ref.download_all();
  if (!Buffer::guards_intact(got_all, c.payload_offset(), c.bytes())) {
    *what += ": guard region overwritten";
    return false;
  }
  const std::uint8_t* got = got_all.data() + c.payload_offset();
  const std::uint8_t* want = ref_all.data() + ref.payload_offset();
  double err2 = 0, norm2 = 0;
  for (std::size_t i = 0; i < c_elems; ++i) {
    const double g = load_element(p.out_dtype, got + i * ob), w = load_element(p.out_dtype, want + i * ob);
    if (!std::isfinite(g) && std::isfinite(w)) {
      *what += ": non-finite element " + std::to_string(i);
      return false;
    }
    err2 += (g - w) * (g - w);
    norm2 += w * w;
  }
  const double err = std::sqrt(err2 / std::max(norm2, 1e-30));
  const double tol = p.dtype == DType::F32 ? 1e-5 : 1e-2;
  if (err > tol) {
    *what += ": relative Frobenius error " + std::to_string(err) + " (config now chosen: " +
             engine.gemm_config(p, a.ptr(), b.ptr()).to_string() + ")";
    return false;
  }
  return true;
}

// --- one row-family call (rowsum or rowscan through run_family), checked in f64 on the host ----------

bool run_rows(Engine& engine, cudaStream_t stream, std::mt19937_64& rng, bool tune_shape, std::string* what,
              const std::function<void(const std::string&)>& set_what) {
  const bool scan = rng() % 2 == 0;
  static const std::shared_ptr<const Family> sum_family = get_family("rowsum"), scan_family = get_family("rowscan");
  const Family& f = scan ? *scan_family : *sum_family;
  long long batch = 1, rows, cols;
  if (tune_shape) {  // fixed shapes, so TuneOnMiss engines tune each once and then hit
    static const long long kShapes[][2] = {{1000, 4100}, {333, 777}};
    const auto& sh = kShapes[rng() % 2];
    rows = sh[0];
    cols = sh[1];
  } else {
    batch = 1 + static_cast<long long>(rng() % 3);
    rows = 1 + static_cast<long long>(rng() % 700);
    cols = 1 + static_cast<long long>(rng() % 700);
  }
  const std::string problem = "batch=" + std::to_string(batch) + ",rows=" + std::to_string(rows) +
                              ",cols=" + std::to_string(cols);
  const std::size_t in_elems = static_cast<std::size_t>(batch * rows * cols);
  const std::size_t out_elems = scan ? in_elems : static_cast<std::size_t>(batch * rows);
  const std::size_t mis = tune_shape ? 0 : 4 * (rng() % 4);  // f32 pointers off 16 bytes
  *what = f.name() + " " + problem + " misalign " + std::to_string(mis);
  set_what(*what);

  Buffer in(in_elems * 4, mis, stream), out(out_elems * 4, mis, stream);
  const std::vector<std::uint8_t> h_in = random_elements(DType::F32, in_elems, rng);
  in.upload(h_in);
  engine.run_family(f, f.parse_problem(problem), {{"in", in.ptr()}, {"out", out.ptr()}}, stream);
  bench::check(cudaStreamSynchronize(stream), "row family stream sync");
  const std::vector<std::uint8_t> all = out.download_all();
  if (!Buffer::guards_intact(all, out.payload_offset(), out.bytes())) {
    *what += ": guard region overwritten";
    return false;
  }
  const float* x = reinterpret_cast<const float*>(h_in.data());
  const std::uint8_t* got = all.data() + out.payload_offset();
  double err2 = 0, norm2 = 0;
  for (long long r = 0; r < batch * rows; ++r) {
    double acc = 0;
    for (long long c = 0; c < cols; ++c) {
      acc += x[r * cols + c];
      if (!scan && c + 1 < cols) continue;
      const std::size_t i = static_cast<std::size_t>(scan ? r * cols + c : r);
      float g;
      std::memcpy(&g, got + i * 4, 4);
      if (!std::isfinite(g)) {
        *what += ": non-finite element " + std::to_string(i);
        return false;
      }
      err2 += (g - acc) * (g - acc);
      norm2 += acc * acc;
    }
  }
  const double err = std::sqrt(err2 / std::max(norm2, 1e-30));
  if (err > f.def().tolerance) {
    *what += ": relative Frobenius error " + std::to_string(err) + " (config now chosen: " +
             f.config_text(engine.family_config(f, f.parse_problem(problem))) + ")";
    return false;
  }
  return true;
}

// --- the run ---------------------------------------------------------------------------------------

struct EngineSlot {
  std::string name;
  std::unique_ptr<Engine> engine;
  bool tune_shapes;  // TuneOnMiss engines get mostly a few fixed shapes, so their tunes end
};

int usage(const char* argv0) {
  std::printf(
      "usage: %s [--seconds S] [--threads T] [--watchdog S] [--seed N] [--cache-dir DIR] [--no-tune]\n"
      "  Soaks the library on the GPU: T threads, each with its own stream, share three Engines\n"
      "  (TuneOnMiss; Default; Default without operand staging) over one scratch cache, calling\n"
      "  transpose, GEMM and the row families rowsum/rowscan (run_family) on random shapes, dtypes,\n"
      "  layouts, pitches and misaligned pointers (K = 0 GEMMs now and then with null A and B), and\n"
      "  checking every result. Defaults: --seconds 300 --threads 4 --watchdog 300 --seed 1; the cache is\n"
      "  a fresh directory under /tmp unless --cache-dir names one. Exit 0: no hang, failure, wrong result\n"
      "  or memory growth (RSS after malloc_trim > 64 MiB, device > 256 MiB between the first sample after\n"
      "  warm-up and the end). --no-tune: the first engine takes the default policy too (no tunes, so\n"
      "  memory growth that remains is not the tuner's).\n",
      argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto next = [&]() -> std::string {
      if (i + 1 >= argc) std::exit(usage(argv[0]));
      return argv[++i];
    };
    if (a == "--seconds") opt.seconds = bench::parse_real(next().c_str(), "--seconds", 0.001, 1e7);
    else if (a == "--threads") opt.threads = static_cast<int>(bench::parse_count(next().c_str(), "--threads", 1, 64));
    else if (a == "--watchdog") opt.watchdog_s = bench::parse_real(next().c_str(), "--watchdog", 0.001, 1e7);
    else if (a == "--seed") opt.seed = bench::parse_u64(next().c_str(), "--seed");
    else if (a == "--cache-dir") opt.cache_dir = next();
    else if (a == "--no-tune") opt.tune = false;
    else if (a == "-h" || a == "--help") { usage(argv[0]); return 0; }
    else return usage(argv[0]);
  }
  if (!(opt.seconds > 0) || opt.threads < 1 || opt.threads > 64 || !(opt.watchdog_s > 0)) return usage(argv[0]);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("soak: skipped: no CUDA device\n");
    return 77;
  }
  if (opt.cache_dir.empty()) {
    char tmpl[] = "/tmp/swz_soak_XXXXXX";
    const char* d = mkdtemp(tmpl);
    if (!d) {
      std::perror("mkdtemp");
      return 1;
    }
    opt.cache_dir = d;
  }
  std::printf("soak: %.0f s, %d threads, seed %llu, cache %s\n", opt.seconds, opt.threads,
              static_cast<unsigned long long>(opt.seed), opt.cache_dir.c_str());

  std::vector<EngineSlot> engines;
  {
    EngineOptions o;
    o.cache_dir = opt.cache_dir;
    o.policy = opt.tune ? TunePolicy::TuneOnMiss : TunePolicy::Default;
    engines.push_back({opt.tune ? "tune-on-miss" : "default (fixed shapes)", std::make_unique<Engine>(o), true});
    o.policy = TunePolicy::Default;
    engines.push_back({"default", std::make_unique<Engine>(o), false});
    o.stage_narrow_operands = false;
    engines.push_back({"default-unstaged", std::make_unique<Engine>(o), false});
  }

  Stats stats;
  std::vector<Slot> slots(static_cast<std::size_t>(opt.threads));
  std::atomic<bool> stop{false};
  const auto t0 = Clock::now();

  std::vector<std::thread> workers;
  for (int t = 0; t < opt.threads; ++t)
    workers.emplace_back([&, t] {
      std::mt19937_64 rng(opt.seed * 1000003ull + static_cast<std::uint64_t>(t));
      cudaStream_t stream = nullptr;
      bench::check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
      Slot& slot = slots[static_cast<std::size_t>(t)];
      const auto set_what = [&](const std::string& w) {
        std::lock_guard<std::mutex> lock(slot.mu);
        slot.what = w;
      };
      while (!stop.load()) {
        EngineSlot& es = engines[rng() % engines.size()];
        // TuneOnMiss engines mostly see a few fixed shapes (tuned once, then hits), and now and then a
        // random one (a fresh tune: the path where tunes hung); the others see random problems only.
        const bool tune_shape = es.tune_shapes && rng() % 4 != 0;
        std::string what;
        slot.started_ns = now_ns();
        bool ok = false;
        const int op = static_cast<int>(rng() % 5);  // 2 in 5 GEMM, 2 in 5 transpose, 1 in 5 a row family
        try {
          if (op < 2) {
            ok = run_gemm(*es.engine, stream, rng, tune_shape, &what, set_what);
            ++stats.gemms;
          } else if (op < 4) {
            ok = run_transpose(*es.engine, stream, rng, tune_shape, &what, set_what);
            ++stats.transposes;
          } else {
            ok = run_rows(*es.engine, stream, rng, tune_shape, &what, set_what);
            ++stats.rows;
          }
          if (!ok) {
            ++stats.wrong;
            log_line("WRONG [" + es.name + "] " + what);
          }
        } catch (const std::exception& e) {
          ++stats.failures;
          log_line("FAILED [" + es.name + "] " + what + ": " + e.what());
        }
        slot.started_ns = 0;
      }
      cudaStreamDestroy(stream);
    });

  // The watchdog and the memory sampler: this thread.
  double rss_first = 0, dev_first = 0, rss_last = 0, dev_last = 0;
  bool hung = false;
  double next_report = 30;
  while (seconds_since(t0) < opt.seconds) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const long long now = now_ns();
    for (int t = 0; t < opt.threads; ++t) {
      Slot& s = slots[static_cast<std::size_t>(t)];
      const long long st = s.started_ns.load();
      if (st != 0 && static_cast<double>(now - st) / 1e9 > opt.watchdog_s) {
        std::lock_guard<std::mutex> lock(s.mu);
        log_line("HANG thread " + std::to_string(t) + " in " + s.what + " for more than " +
                 bench::fmt(opt.watchdog_s, 0) + " s");
        hung = true;
      }
    }
    if (hung) break;
    const double el = seconds_since(t0);
    if (el >= next_report) {
      rss_last = rss_mb();
      dev_last = device_used_mb();
      // The first sample after a warm-up (a quarter of the run, at least 30 s) is the baseline.
      if (rss_first == 0 && el >= std::max(30.0, opt.seconds / 4)) {
        rss_first = rss_last;
        dev_first = dev_last;
      }
      // What the engines did so far: RSS that follows compiles or module loads points at their owners.
      std::uint64_t compiles_now = 0, loads_now = 0;
      for (auto& e : engines) {
        const EngineCounters c = e.engine->counters();
        compiles_now += c.compiles;
        loads_now += c.kernel_loads;
      }
      log_line("[" + bench::fmt(el, 0) + " s] transposes " + std::to_string(stats.transposes.load()) + ", gemms " +
               std::to_string(stats.gemms.load()) + ", row families " + std::to_string(stats.rows.load()) + ", wrong " + std::to_string(stats.wrong.load()) + ", failed " +
               std::to_string(stats.failures.load()) + ", compiles " + std::to_string(compiles_now) +
               ", module loads " + std::to_string(loads_now) + ", RSS " + bench::fmt(rss_last, 0) + " MiB (malloc in use " + bench::fmt(heap_in_use_mb(), 0) + "), device " +
               bench::fmt(dev_last, 0) + " MiB");
      next_report += 30;
    }
  }
  if (hung) {
    log_line("soak: a call hung; exiting without joining the threads");
    std::fflush(stdout);
    _exit(3);
  }
  stop = true;
  // Threads finish their current call; one more watchdog period bounds that too.
  const auto stop_t = Clock::now();
  for (auto& w : workers) {
    while (true) {
      bool busy = false;
      for (auto& s : slots) busy = busy || s.started_ns.load() != 0;
      if (!busy || seconds_since(stop_t) > opt.watchdog_s) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    bool busy = false;
    for (auto& s : slots) busy = busy || s.started_ns.load() != 0;
    if (busy) {
      log_line("HANG at shutdown: a call did not return within the watchdog");
      std::fflush(stdout);
      _exit(3);
    }
    w.join();
  }
  rss_last = rss_mb();
  dev_last = device_used_mb();
  if (rss_first == 0) {
    rss_first = rss_last;
    dev_first = dev_last;
  }
  std::uint64_t tunes = 0, hits = 0, compiles = 0, loads = 0;
  for (auto& e : engines) {
    const EngineCounters c = e.engine->counters();
    tunes += c.tunes;
    hits += c.tuned_hits;
    compiles += c.compiles;
    loads += c.kernel_loads;
  }
  const double rss_growth = rss_last - rss_first, dev_growth = dev_last - dev_first;
  print_resident_by_mapping();
  const bool mem_ok = rss_growth <= opt.max_rss_growth_mb && dev_growth <= opt.max_device_growth_mb;
  std::printf("\n| soak | value |\n| --- | ---: |\n");
  std::printf("| seconds | %.0f |\n| threads x engines | %d x %zu |\n", seconds_since(t0), opt.threads, engines.size());
  std::printf("| transposes checked | %ld |\n| GEMMs checked | %ld |\n| row-family runs checked | %ld |\n",
              stats.transposes.load(), stats.gemms.load(), stats.rows.load());
  std::printf("| tunes (TuneOnMiss) | %llu |\n| tuned hits | %llu |\n| NVRTC compiles | %llu |\n",
              static_cast<unsigned long long>(tunes), static_cast<unsigned long long>(hits),
              static_cast<unsigned long long>(compiles));
  std::printf("| module loads | %llu |\n", static_cast<unsigned long long>(loads));
  std::printf("| hangs | 0 |\n| wrong results | %ld |\n| failed calls | %ld |\n", stats.wrong.load(),
              stats.failures.load());
  std::printf("| RSS after warm-up -> end | %.0f -> %.0f MiB (%+.0f) |\n", rss_first, rss_last, rss_growth);
  std::printf("| device memory after warm-up -> end | %.0f -> %.0f MiB (%+.0f) |\n", dev_first, dev_last, dev_growth);
  const bool pass = stats.wrong == 0 && stats.failures == 0 && mem_ok;
  std::printf("soak: %s\n", pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
