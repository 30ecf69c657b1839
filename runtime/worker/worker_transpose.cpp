// runtime/worker: the transpose target of the benchmark worker (runtime/worker/worker_transpose.hpp).
#include "runtime/worker/worker_transpose.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "generator/core/checked_arith.hpp"
#include "swzjit/error.hpp"
#include "templates/transpose.cuh"
#include "templates/transpose_check.cuh"

namespace swz {
namespace detail {
namespace worker {
namespace {

constexpr std::size_t kGuardBytes = std::size_t{1} << 20;  // before and after the output
constexpr int kHelperThreads = 256;

std::size_t round_up(std::size_t v, std::size_t to) { return (v + to - 1) / to * to; }

void validate(const ProblemDesc& p) {
  if (p.elem_bytes != 2 && p.elem_bytes != 4) throw_invalid("element size " + std::to_string(p.elem_bytes));
  if (p.rows < 1 || p.cols < 1 || p.batch < 1) throw_invalid("empty problem");
  if (p.ld_in < p.cols || p.ld_out < p.rows) throw_invalid("pitches smaller than a row");
  if (p.batch > 1 && (p.stride_in < detail::checked_mul(p.rows, p.ld_in, "transpose input matrix") ||
                      p.stride_out < detail::checked_mul(p.cols, p.ld_out, "transpose output matrix")))
    throw_invalid("overlapping batch strides");
}

class TransposeTarget final : public Target {
 public:
  TransposeTarget(const ProblemDesc& p, int device, const DeviceInfo& info, CUstream stream)
      : p_(p), device_(device), sm_count_(info.sm_count), stream_(stream) {
    validate(p_);
    const std::size_t eb = static_cast<std::size_t>(p_.elem_bytes);
    in_elems_ = detail::checked_add(detail::checked_mul(p_.batch - 1, p_.stride_in, "transpose input"),
                                    detail::checked_mul(p_.rows, p_.ld_in, "transpose input"), "transpose input");
    detail::checked_mul(in_elems_, p_.elem_bytes, "transpose input bytes");
    body_elems_ = tpl::check_body_elems(p_.cols, p_.ld_out, p_.batch, p_.stride_out);
    guard_elems_ = static_cast<long long>(kGuardBytes / eb);
    const std::size_t out_bytes = 2 * kGuardBytes + round_up(static_cast<std::size_t>(body_elems_) * eb, 256);
    out_total_elems_ = static_cast<long long>(out_bytes / eb);
    in_ = DeviceBuffer(round_up(static_cast<std::size_t>(in_elems_) * eb, 256), device_);
    out_ = DeviceBuffer(out_bytes, device_);
    result_ = DeviceBuffer(16, device_);
    params_ = tpl::TransposeParams{reinterpret_cast<const void*>(in_.ptr()),
                                   reinterpret_cast<void*>(out_.ptr() + kGuardBytes),
                                   p_.rows, p_.cols, p_.ld_in, p_.ld_out, p_.batch, p_.stride_in, p_.stride_out};
  }

  void support(const SupportRequest& req) override {
    check_module_ = std::make_unique<Module>(load_image(req.check, device_));
    check_ = check_module_->kernel().handle();
    launch_helper(tpl::kCheckFill, in_elems_);
    check(driver_api().cuStreamSynchronize(stream_), "filling the transpose input");
  }

  CUresult launch(const BenchJob& job, CUfunction f, std::string* what) override {
    *what = "cuLaunchKernel";
    void* args[] = {&params_};
    return driver_api().cuLaunchKernel(f, job.grid[0], job.grid[1], job.grid[2], job.block[0], job.block[1],
                                       job.block[2], job.dynamic_smem, stream_, args, nullptr);
  }

  void prepare() override {
    const DriverApi& api = driver_api();
    check(api.cuMemsetD32Async(out_.ptr(), tpl::kCheckPoison32, out_.size() / 4, stream_), "poisoning the output");
    check(api.cuMemsetD32Async(result_.ptr(), 0u, 2, stream_), "clearing the check result");
    check(api.cuMemsetD32Async(result_.ptr() + 8, 0xFFFFFFFFu, 2, stream_), "clearing the check result");
  }

  std::string check_output() override {
    unsigned long long result[2] = {0, 0};
    launch_helper(tpl::kCheckVerify, out_total_elems_);
    result_.copy_to_host(result, sizeof result, 0, stream_);
    return result[0] == 0 ? std::string() : describe_mismatch(result[0], result[1]);
  }

 private:
  void launch_helper(int mode, long long elems) {
    tpl::TransposeCheckParams cp{};
    cp.mode = mode;
    cp.seed = p_.seed;
    cp.in = reinterpret_cast<void*>(in_.ptr());
    cp.in_elems = in_elems_;
    cp.out = reinterpret_cast<const void*>(out_.ptr());
    cp.out_total_elems = out_total_elems_;
    cp.guard_elems = guard_elems_;
    cp.rows = p_.rows;
    cp.cols = p_.cols;
    cp.ld_in = p_.ld_in;
    cp.ld_out = p_.ld_out;
    cp.batch = p_.batch;
    cp.stride_in = p_.stride_in;
    cp.stride_out = p_.stride_out;
    cp.result = reinterpret_cast<unsigned long long*>(result_.ptr());
    void* args[] = {&cp};
    const long long wanted = (elems + kHelperThreads - 1) / kHelperThreads;
    const unsigned blocks = static_cast<unsigned>(std::max(1LL, std::min<long long>(wanted, 32LL * sm_count_)));
    check(driver_api().cuLaunchKernel(check_, blocks, 1, 1, kHelperThreads, 1, 1, 0, stream_, args, nullptr),
          mode == tpl::kCheckFill ? "launching the input fill" : "launching the output check");
  }

  // The first wrong element in words: a guard, an element of out (with the value it should hold), or
  // padding between rows that must stay untouched.
  std::string describe_mismatch(unsigned long long count, unsigned long long index) {
    const std::size_t eb = static_cast<std::size_t>(p_.elem_bytes);
    std::string where;
    unsigned got = 0, want = tpl::kCheckPoison32 & (eb == 2 ? 0xFFFFu : 0xFFFFFFFFu);
    out_.copy_to_host(&got, eb, static_cast<std::size_t>(index) * eb, stream_);
    const long long j = static_cast<long long>(index) - guard_elems_;
    if (j < 0) {
      where = "the guard before the output (" + std::to_string(-j) + " elements before it) was overwritten";
    } else if (j >= body_elems_) {
      where = "the guard after the output (" + std::to_string(j - body_elems_) + " elements after it) was overwritten";
    } else {
      const long long b = j / p_.stride_out, rem = j - b * p_.stride_out, c = rem / p_.ld_out, r = rem - c * p_.ld_out;
      const std::string at = "out[" + std::to_string(b) + "][" + std::to_string(c) + "][" + std::to_string(r) + "]";
      if (c < p_.cols && r < p_.rows) {
        const long long src = b * p_.stride_in + r * p_.ld_in + c;
        in_.copy_to_host(&want, eb, static_cast<std::size_t>(src) * eb, stream_);
        where = at + " is wrong";
      } else {
        where = at + " lies in padding the kernel must not write, and was written";
      }
    }
    char values[80];
    std::snprintf(values, sizeof values, " (got 0x%0*x, expected 0x%0*x)", static_cast<int>(2 * eb), got,
                  static_cast<int>(2 * eb), want);
    return std::to_string(count) + " element(s) wrong; first: " + where + values;
  }

  ProblemDesc p_;
  int device_ = 0;
  int sm_count_ = 1;
  CUstream stream_ = nullptr;
  DeviceBuffer in_, out_, result_;
  long long in_elems_ = 0, out_total_elems_ = 0, guard_elems_ = 0, body_elems_ = 0;
  std::unique_ptr<Module> check_module_;
  CUfunction check_ = nullptr;
  tpl::TransposeParams params_{};
};

}  // namespace

std::unique_ptr<Target> make_transpose_target(const ProblemDesc& desc, int device, const DeviceInfo& info,
                                              CUstream stream) {
  return std::make_unique<TransposeTarget>(desc, device, info, stream);
}

}  // namespace worker
}  // namespace detail
}  // namespace swz
