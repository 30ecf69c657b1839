// tests/templates: build-time nvcc check that every template compiles (sm_80 and sm_90).
// A template error fails the build here instead of first showing at run time under NVRTC.
#include "templates/common.cuh"
#include "templates/swizzle.cuh"
#include "templates/transpose.cuh"

namespace swz {
namespace tpl {
template __global__ void transpose_kernel<4, 32, 32, 256, 4, kSmemSwizzle, 0, 5, 0, 5>(const __grid_constant__ TransposeParams);
template __global__ void transpose_kernel<2, 64, 64, 256, 8, kSmemPad, 2, 0, 0, 0>(const __grid_constant__ TransposeParams);
template __global__ void transpose_kernel<4, 32, 32, 256, 1, kSmemPlain, 0, 0, 0, 0>(const __grid_constant__ TransposeParams);
}  // namespace tpl
}  // namespace swz
