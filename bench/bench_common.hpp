// bench: timing helpers shared by the benchmark programs (CUDA runtime API): L2 flush, events,
// medians, random fills. Benchmarks only; tests never time anything.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace swz {
namespace bench {

/// Exits with a message naming the call when a CUDA runtime call fails.
void check(cudaError_t e, const char* what);

/// Statistics of repeated timings, in milliseconds.
struct Timing {
  double median = 0, p20 = 0, p80 = 0, min = 0;
  int reps = 0;
};

/// Times `work` (enqueued on `stream`) `reps` times after `warmup` runs; before every repetition the L2
/// is flushed by writing a buffer twice its size; CUDA events bracket each repetition.
class Timer {
 public:
  explicit Timer(cudaStream_t stream);
  ~Timer();
  Timing time(const std::function<void()>& work, int reps, int warmup = 3);

 private:
  cudaStream_t stream_;
  void* flush_ = nullptr;
  std::size_t flush_bytes_ = 0;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

/// Fills `bytes` of device memory with random bits whose 16-bit halves are never 0xFFFF (so a
/// 0xFF-poisoned output can never pass a check by accident), from a host buffer.
void fill_random_device(void* dst, std::size_t bytes, std::uint64_t seed);

/// The median of `v` (the upper one of an even count, as Timer's).
double median(std::vector<double> v);

/// "12.3" style formatting helpers.
std::string fmt(double v, int decimals);

// Command-line values read by swz's own option parsers (tools/cli.hpp), so the bench and `swz` accept and
// refuse alike; what they refuse ends the program with status 2 and their message.
/// The value of option `option`: a whole number in [lo, hi] (cli::parse_int: digits only).
long long parse_count(const char* text, const char* option, long long lo, long long hi);
/// The value of option `option`: a plain decimal number in [lo, hi] (cli::parse_real).
double parse_real(const char* text, const char* option, double lo, double hi);
/// The value of option `option`: one of `choices` (cli::parse_choice).
std::string parse_choice(const std::string& text, const char* option, const std::vector<std::string>& choices);
/// The value of command-line option `option`: a whole number from 0 to 2^64 - 1 (a seed), else exit 2.
std::uint64_t parse_u64(const char* text, const char* option);
/// A problem size "MxNxK" (each part parse_integer's digits, at most 2^40), or with `batch` also "MxNxKxBATCH"
/// (BATCH >= 1; 1 when left out). False for anything else, the outputs then unspecified.
bool parse_shape(const std::string& text, long long* m, long long* n, long long* k, long long* batch = nullptr);

}  // namespace bench
}  // namespace swz
