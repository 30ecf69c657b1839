// bench: timing helpers shared by the benchmark programs (see bench_common.hpp).
#include "bench_common.hpp"

#include "swzjit/error.hpp"
#include "swzjit/types.hpp"
#include "tools/cli.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace swz {
namespace bench {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "bench: %s failed: %s (%s)\n", what, cudaGetErrorName(e), cudaGetErrorString(e));
    std::exit(1);
  }
}

Timer::Timer(cudaStream_t stream) : stream_(stream) {
  int dev = 0, l2 = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev), "cudaDeviceGetAttribute(L2)");
  flush_bytes_ = static_cast<std::size_t>(std::max(l2, 1 << 20)) * 2;
  check(cudaMalloc(&flush_, flush_bytes_), "cudaMalloc(flush)");
  check(cudaEventCreate(&start_), "cudaEventCreate");
  check(cudaEventCreate(&stop_), "cudaEventCreate");
}

Timer::~Timer() {
  cudaFree(flush_);
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}

Timing Timer::time(const std::function<void()>& work, int reps, int warmup) {
  for (int i = 0; i < warmup; ++i) work();
  check(cudaStreamSynchronize(stream_), "warm-up");
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    check(cudaMemsetAsync(flush_, i & 0xff, flush_bytes_, stream_), "L2 flush");
    check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    work();
    check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float t = 0;
    check(cudaEventElapsedTime(&t, start_, stop_), "cudaEventElapsedTime");
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  Timing r;
  r.reps = reps;
  r.median = ms[ms.size() / 2];
  r.p20 = ms[ms.size() / 5];
  r.p80 = ms[(ms.size() * 4) / 5];
  r.min = ms.front();
  return r;
}

void fill_random_device(void* dst, std::size_t bytes, std::uint64_t seed) {
  std::vector<std::uint16_t> h((bytes + 1) / 2);
  std::uint64_t s = seed;
  for (auto& v : h) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    // Finite fp16/bf16 bit patterns (exponent field never all-ones); fp32 words built from two of
    // them are finite too, so arithmetic checks never meet NaN.
    v = static_cast<std::uint16_t>((s >> 16) % 0x7c00u) | static_cast<std::uint16_t>(s & 0x8000u);
  }
  check(cudaMemcpy(dst, h.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy(random fill)");
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string fmt(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

namespace {
// f's value, or the end of the program with status 2 and the parser's message.
template <typename F>
auto or_exit(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const cli::UsageError& e) {
    std::fprintf(stderr, "bench: %s\n", e.what());
    std::exit(2);
  }
}
}  // namespace

long long parse_count(const char* text, const char* option, long long lo, long long hi) {
  return or_exit([&] { return cli::parse_int(option, text, lo, hi); });
}

double parse_real(const char* text, const char* option, double lo, double hi) {
  return or_exit([&] { return cli::parse_real(option, text, lo, hi); });
}

std::string parse_choice(const std::string& text, const char* option, const std::vector<std::string>& choices) {
  return or_exit([&] { return cli::parse_choice(option, text, choices); });
}

std::uint64_t parse_u64(const char* text, const char* option) {
  // parse_integer's strictness (digits only) over the whole unsigned range.
  const std::string t = text;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos || errno == ERANGE) {
    std::fprintf(stderr, "bench: %s: '%s' is not a whole number (allowed: 0 to 18446744073709551615)\n", option, text);
    std::exit(2);
  }
  return static_cast<std::uint64_t>(v);
}

bool parse_shape(const std::string& text, long long* m, long long* n, long long* k, long long* batch) {
  std::vector<long long> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t x = text.find('x', start);
    try {
      parts.push_back(parse_integer("shape", text.substr(start, x == std::string::npos ? std::string::npos : x - start), 0,
                                    1LL << 40));
    } catch (const Error&) {
      return false;
    }
    if (x == std::string::npos) break;
    start = x + 1;
  }
  if (parts.size() != 3 && !(batch != nullptr && parts.size() == 4)) return false;
  *m = parts[0], *n = parts[1], *k = parts[2];
  if (batch != nullptr) *batch = parts.size() == 4 ? parts[3] : 1;
  return batch == nullptr || *batch >= 1;
}

}  // namespace bench
}  // namespace swz
