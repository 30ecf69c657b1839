// runtime (internal): the benchmark worker's GEMM side (runtime/worker_gemm.cpp): A, B and C buffers with
// guards, random inputs and the reference C computed once on the GPU, candidate launches (split-K: with
// a workspace and the reduction kernel), and the check of each candidate's C.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "runtime/driver/driver_api.hpp"
#include "runtime/worker/worker_protocol.hpp"
#include "runtime/worker/worker_target.hpp"
#include "swzjit/device.hpp"
#include "swzjit/jit.hpp"
#include "templates/gemm_common.cuh"

namespace swz {
namespace detail {
namespace worker {

/// One GEMM problem in the worker's context (current for the worker's whole life).
class GemmTarget final : public Target {
 public:
  /// Validates `desc` and allocates A, B, C and the reference C (each C between 1 MiB guards).
  /// @throws Error(InvalidArgument) for a malformed problem, Error(Driver...) from CUDA.
  GemmTarget(const GemmDesc& desc, int device, const DeviceInfo& info, CUstream stream);

  /// Loads the check and reference kernels, fills A and B and computes the reference C (once).
  void support(const SupportRequest& req) override;
  /// Enqueues one run of a candidate: its kernel with the problem's GemmParams, or for split-K
  /// (job.k_splits > 1) its kernel into the f32 workspace and then the reduction into C. (The Hopper
  /// variant's candidates are the family gemm_sm90's, run by the family target.) Returns the
  /// first failing launch's result (CUDA_SUCCESS when all launched) and names that launch in `what`.
  /// @throws Error(InvalidArgument) for a split-K job the worker cannot run (no reduction kernel, a grid
  /// that does not match), Error from CUDA when the workspace cannot be allocated.
  CUresult launch(const BenchJob& job, CUfunction f, std::string* what) override;
  /// Poisons C and clears the check's sums; run before the candidate's verification launch.
  void prepare() override;
  /// After the candidate ran: "" when C matches the reference within the tolerance and nothing outside
  /// C was written, else why not. @throws Error from CUDA (a fault of the candidate surfaces here).
  std::string check_output() override;

 private:
  void launch_check(int mode, long long elems, DevicePtr fill, unsigned seed);
  std::string where(long long index) const;

  GemmDesc d_;
  int device_ = 0;
  int sm_count_ = 1;
  CUstream stream_ = nullptr;
  DeviceBuffer a_, b_, c_, ref_, sums_, counts_;
  long long a_elems_ = 0, b_elems_ = 0, c_total_elems_ = 0, guard_elems_ = 0, body_elems_ = 0;
  std::unique_ptr<Module> check_module_, reference_module_, splitk_module_;
  CUfunction check_ = nullptr, reference_ = nullptr, splitk_ = nullptr;
  DeviceBuffer workspace_;  // split-K partial sums: grown to the largest split candidate, then reused
  tpl::GemmParams params_{};
};

}  // namespace worker
}  // namespace detail
}  // namespace swz
