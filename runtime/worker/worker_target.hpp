// runtime/worker (internal): what the benchmark worker (runtime/worker/worker_server.cpp) asks of the
// problem it tunes, whatever its family: the support kernels, one candidate's launch, poisoning the
// outputs before a verification run and checking them after. Every problem is a declared family's (the
// transpose and the GEMMs among them): runtime/worker/worker_family.cpp implements it.
#pragma once

#include <string>

#include "runtime/driver/driver_api.hpp"
#include "runtime/worker/worker_protocol.hpp"
#include "swzjit/device.hpp"
#include "swzjit/jit.hpp"

namespace swz {
namespace detail {
namespace worker {

/// A kernel image of a request, loaded in the worker's context.
inline Module load_image(const KernelImage& image, int device) {
  CompiledKernel k;
  k.image = image.image;
  k.is_ptx = image.is_ptx;
  k.arch = image.arch;
  k.lowered_name = image.lowered_name;
  return Module(k, device);
}

class Target {
 public:
  virtual ~Target() = default;
  /// Loads the support kernels, fills the inputs and computes the reference output (once).
  virtual void support(const SupportRequest& req) = 0;
  /// Enqueues one run of a candidate; returns the first failing launch's result and names it in `what`.
  virtual CUresult launch(const BenchJob& job, CUfunction f, std::string* what) = 0;
  /// Poisons the outputs; run before a candidate's verification launch.
  virtual void prepare() = 0;
  /// "" when the outputs match the reference and nothing outside them was written, else why not.
  virtual std::string check_output() = 0;
};

}  // namespace worker
}  // namespace detail
}  // namespace swz
