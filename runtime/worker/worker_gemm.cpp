// runtime: the benchmark worker's GEMM side (runtime/worker_gemm.hpp): the inputs are filled on the GPU by
// templates/gemm_check.cuh, the reference C comes from templates/gemm_reference.cuh (f64 sums) once per
// worker, and each candidate's C is compared with it on the GPU (relative Frobenius error, guards).
#include "generator/core/checked_arith.hpp"
#include "runtime/worker/worker_gemm.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "swzjit/error.hpp"
#include "swzjit/gemm.hpp"
#include "generator/families/gemm/gemm_splitk.hpp"
#include "templates/gemm_check.cuh"
#include "templates/gemm_splitk.cuh"

namespace swz {
namespace detail {
namespace worker {
namespace {

constexpr std::size_t kGuardBytes = std::size_t{1} << 20;  // before and after C
constexpr int kCheckThreads = 256;

std::size_t round_up(std::size_t v, std::size_t to) { return (v + to - 1) / to * to; }

int kind_bytes(int kind) { return kind == tpl::kGemmF32 ? 4 : 2; }

}  // namespace

GemmTarget::GemmTarget(const GemmDesc& desc, int device, const DeviceInfo& info, CUstream stream)
    : d_(desc), device_(device), sm_count_(std::max(1, info.sm_count)), stream_(stream) {
  const auto bad = [](const std::string& m) { throw_invalid("gemm problem: " + m); };
  for (int kind : {d_.in_kind, d_.out_kind})
    if (kind < tpl::kGemmF16 || kind > tpl::kGemmF32) bad("element kind " + std::to_string(kind));
  if (d_.m < 1 || d_.n < 1 || d_.k < 1 || d_.batch < 1 || d_.batch > 65535) bad("empty or oversized problem");
  const long long a_rows = d_.a_kmajor ? d_.m : d_.k, a_line = d_.a_kmajor ? d_.k : d_.m;
  const long long b_rows = d_.b_kmajor ? d_.n : d_.k, b_line = d_.b_kmajor ? d_.k : d_.n;
  if (d_.lda < a_line || d_.ldb < b_line || d_.ldc < d_.n) bad("pitches smaller than a line");
  if (d_.batch > 1 && (d_.stride_a < 0 || d_.stride_b < 0 || d_.stride_c < detail::checked_mul(d_.m, d_.ldc, "C")))
    bad("batch strides");
  if (!(d_.tolerance > 0)) bad("tolerance");
  const std::size_t ei = static_cast<std::size_t>(kind_bytes(d_.in_kind));
  const std::size_t eo = static_cast<std::size_t>(kind_bytes(d_.out_kind));
  a_elems_ = detail::checked_extent(d_.batch, d_.stride_a, a_rows, d_.lda, d_.lda, static_cast<int>(ei), "A");
  b_elems_ = detail::checked_extent(d_.batch, d_.stride_b, b_rows, d_.ldb, d_.ldb, static_cast<int>(ei), "B");
  detail::checked_extent(d_.batch, d_.batch > 1 ? d_.stride_c : 0, d_.m, d_.ldc, d_.ldc, static_cast<int>(eo), "C");
  body_elems_ = tpl::gemm_check_body_elems(d_.m, d_.ldc, d_.batch, d_.batch > 1 ? d_.stride_c : d_.m * d_.ldc);
  guard_elems_ = static_cast<long long>(kGuardBytes / eo);
  const std::size_t c_bytes = 2 * kGuardBytes + round_up(static_cast<std::size_t>(body_elems_) * eo, 256);
  c_total_elems_ = static_cast<long long>(c_bytes / eo);
  a_ = DeviceBuffer(round_up(static_cast<std::size_t>(a_elems_) * ei, 256), device_);
  b_ = DeviceBuffer(round_up(static_cast<std::size_t>(b_elems_) * ei, 256), device_);
  c_ = DeviceBuffer(c_bytes, device_);
  ref_ = DeviceBuffer(c_bytes, device_);
  sums_ = DeviceBuffer(16, device_);
  counts_ = DeviceBuffer(32, device_);
  params_ = tpl::GemmParams{reinterpret_cast<const void*>(a_.ptr()), reinterpret_cast<const void*>(b_.ptr()),
                            reinterpret_cast<void*>(c_.ptr() + kGuardBytes), static_cast<int>(d_.m),
                            static_cast<int>(d_.n), static_cast<int>(d_.k), d_.lda, d_.ldb, d_.ldc, d_.batch,
                            d_.stride_a, d_.stride_b, d_.stride_c, static_cast<float>(d_.alpha),
                            static_cast<float>(d_.beta), 0, 0};
}

void GemmTarget::launch_check(int mode, long long elems, DevicePtr fill, unsigned seed) {
  tpl::GemmCheckParams cp{};
  cp.mode = mode;
  cp.seed = seed;
  cp.fill = reinterpret_cast<void*>(fill);
  cp.fill_elems = mode == tpl::kGemmCheckFill ? elems : 0;
  cp.out = reinterpret_cast<const void*>(c_.ptr());
  cp.ref = reinterpret_cast<const void*>(ref_.ptr());
  cp.out_total_elems = c_total_elems_;
  cp.guard_elems = guard_elems_;
  cp.m = d_.m;
  cp.n = d_.n;
  cp.ldc = d_.ldc;
  cp.batch = d_.batch;
  cp.stride_c = d_.batch > 1 ? d_.stride_c : d_.m * d_.ldc;
  cp.sums = reinterpret_cast<double*>(sums_.ptr());
  cp.counts = reinterpret_cast<unsigned long long*>(counts_.ptr());
  void* args[] = {&cp};
  const long long wanted = (elems + kCheckThreads - 1) / kCheckThreads;
  const unsigned blocks = static_cast<unsigned>(std::max(1LL, std::min<long long>(wanted, 32LL * sm_count_)));
  check(driver_api().cuLaunchKernel(check_, blocks, 1, 1, kCheckThreads, 1, 1, 0, stream_, args, nullptr),
        mode == tpl::kGemmCheckFill ? "launching the GEMM input fill" : "launching the GEMM output check");
}

void GemmTarget::support(const SupportRequest& req) {
  if (req.reference.image.empty()) throw_invalid("a GEMM Support request needs the reference kernel");
  check_module_ = std::make_unique<Module>(load_image(req.check, device_));
  check_ = check_module_->kernel().handle();
  reference_module_ = std::make_unique<Module>(load_image(req.reference, device_));
  reference_ = reference_module_->kernel().handle();
  if (!req.splitk_reduce.image.empty()) {
    splitk_module_ = std::make_unique<Module>(load_image(req.splitk_reduce, device_));
    splitk_ = splitk_module_->kernel().handle();
  }
  launch_check(tpl::kGemmCheckFill, a_elems_, a_.ptr(), d_.seed);
  launch_check(tpl::kGemmCheckFill, b_elems_, b_.ptr(), d_.seed + 1);
  // The reference C: poison first, so its padding holds exactly what a candidate's must.
  const DriverApi& api = driver_api();
  check(api.cuMemsetD32Async(ref_.ptr(), tpl::kGemmCheckPoison32, ref_.size() / 4, stream_), "poisoning the reference C");
  tpl::GemmParams rp = params_;
  rp.c = reinterpret_cast<void*>(ref_.ptr() + kGuardBytes);
  void* args[] = {&rp};
  const LaunchShape s = gemm_reference_launch_shape(d_.m, d_.n, d_.batch);
  check(api.cuLaunchKernel(reference_, s.grid[0], s.grid[1], s.grid[2], s.block[0], s.block[1], s.block[2], 0, stream_,
                           args, nullptr),
        "launching the reference GEMM");
  check(api.cuStreamSynchronize(stream_), "computing the reference GEMM");
}

CUresult GemmTarget::launch(const BenchJob& job, CUfunction f, std::string* what) {
  const DriverApi& api = driver_api();
  if (job.k_splits <= 1) {
    void* args[] = {&params_};
    *what = "cuLaunchKernel";
    return api.cuLaunchKernel(f, job.grid[0], job.grid[1], job.grid[2], job.block[0], job.block[1], job.block[2],
                              job.dynamic_smem, stream_, args, nullptr);
  }
  // Split-K: the candidate writes f32 partials of each K slice into the workspace, the reduction sums
  // them into C with the problem's alpha and beta (the engine's launch sequence, minus its allocation).
  if (!splitk_) throw_invalid("candidate " + job.config + " splits K, but the Support request had no reduction kernel");
  const long long splits = job.k_splits;
  if (static_cast<long long>(job.grid[2]) != d_.batch * splits)
    throw_invalid("candidate " + job.config + ": grid z " + std::to_string(job.grid[2]) + " is not batch x splits (" +
                  std::to_string(d_.batch * splits) + "; at most 65535)");
  const long long ldw = gemm_splitk_workspace_ld(d_.n), stride_w = gemm_splitk_workspace_stride(d_.m, d_.n);
  const std::size_t bytes = static_cast<std::size_t>(detail::checked_mul(
      detail::checked_mul(d_.batch * splits, stride_w, "split-K workspace"), 4, "split-K workspace bytes"));
  if (workspace_.size() < bytes) {
    check(api.cuStreamSynchronize(stream_), "finishing the runs that use the old split-K workspace");
    workspace_ = DeviceBuffer();  // free the smaller one first
    workspace_ = DeviceBuffer(bytes, device_);
  }
  tpl::GemmParams gp = params_;
  gp.c = reinterpret_cast<void*>(workspace_.ptr());
  gp.ldc = ldw;
  gp.stride_c = stride_w;
  gp.alpha = 1.0f;
  gp.beta = 0.0f;
  gp.k_splits = static_cast<int>(splits);
  gp.k_slice = static_cast<int>(job.k_slice);
  void* args[] = {&gp};
  *what = "cuLaunchKernel (split-K partials)";
  CUresult r = api.cuLaunchKernel(f, job.grid[0], job.grid[1], job.grid[2], job.block[0], job.block[1], job.block[2],
                                  job.dynamic_smem, stream_, args, nullptr);
  if (r != CUDA_SUCCESS) return r;
  tpl::GemmSplitKParams rp{reinterpret_cast<const float*>(workspace_.ptr()), params_.c, params_.m, params_.n, ldw,
                           stride_w, params_.ldc, d_.batch > 1 ? d_.stride_c : d_.m * d_.ldc, d_.batch,
                           static_cast<int>(splits), params_.alpha, params_.beta};
  void* rargs[] = {&rp};
  const LaunchShape s = gemm_splitk_reduce_launch_shape(d_.m, d_.n, d_.batch);
  *what = "cuLaunchKernel (split-K reduction)";
  return api.cuLaunchKernel(splitk_, s.grid[0], s.grid[1], s.grid[2], s.block[0], s.block[1], s.block[2], 0, stream_,
                            rargs, nullptr);
}

void GemmTarget::prepare() {
  const DriverApi& api = driver_api();
  check(api.cuMemsetD32Async(c_.ptr(), tpl::kGemmCheckPoison32, c_.size() / 4, stream_), "poisoning C");
  check(api.cuMemsetD32Async(sums_.ptr(), 0u, 4, stream_), "clearing the check sums");
  check(api.cuMemsetD32Async(counts_.ptr(), 0u, 8, stream_), "clearing the check counts");
  check(api.cuMemsetD32Async(counts_.ptr() + 8, 0xFFFFFFFFu, 2, stream_), "clearing the check counts");
  check(api.cuMemsetD32Async(counts_.ptr() + 24, 0xFFFFFFFFu, 2, stream_), "clearing the check counts");
}

std::string GemmTarget::where(long long index) const {
  const long long j = index - guard_elems_;
  if (j < 0) return "the guard before C (" + std::to_string(-j) + " elements before it)";
  if (j >= body_elems_) return "the guard after C (" + std::to_string(j - body_elems_) + " elements after it)";
  const long long sc = d_.batch > 1 ? d_.stride_c : d_.m * d_.ldc;
  const long long b = j / sc, rem = j - b * sc, r = rem / d_.ldc, c = rem - r * d_.ldc;
  return "C[" + std::to_string(b) + "][" + std::to_string(r) + "][" + std::to_string(c) + "]";
}

std::string GemmTarget::check_output() {
  launch_check(tpl::kGemmCheckVerify, c_total_elems_, 0, 0);
  unsigned long long counts[4] = {0, 0, 0, 0};
  double sums[2] = {0, 0};
  counts_.copy_to_host(counts, sizeof counts, 0, stream_);
  sums_.copy_to_host(sums, sizeof sums, 0, stream_);
  if (counts[0] != 0)
    return std::to_string(counts[0]) + " element(s) outside C written; first: " + where(static_cast<long long>(counts[1]));
  if (counts[2] != 0)
    return std::to_string(counts[2]) + " element(s) of C non-finite (not written, or C read although beta = 0); first: " +
           where(static_cast<long long>(counts[3]));
  const double rel = sums[1] > 0 ? std::sqrt(sums[0] / sums[1]) : std::sqrt(sums[0]);
  if (!(rel <= d_.tolerance)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "relative Frobenius error %.3g against the reference exceeds %.0e", rel,
                  d_.tolerance);
    return buf;
  }
  return {};
}

}  // namespace worker
}  // namespace detail
}  // namespace swz
