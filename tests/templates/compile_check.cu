// tests/templates: build-time nvcc check that every template compiles (sm_80 and sm_90).
// A template error fails the build here instead of first showing at run time under NVRTC.
#include "templates/common.cuh"
#include "templates/gemm_common.cuh"
#include "templates/gemm_reference.cuh"
#include "templates/gemm_splitk.cuh"
#include "templates/hgemm.cuh"
#include "templates/sgemm.cuh"
#include "templates/gemm_sm90.cuh"
#include "templates/swizzle.cuh"
#include "templates/transpose.cuh"
#include "templates/transpose_reference.cuh"
#include "templates/smem_probe.cuh"

namespace swz {
namespace tpl {
template __global__ void transpose_kernel<4, 32, 32, 256, 4, kSmemSwizzle, 0, 5, 0, 5, 0, 0, 0, 0, 0, 0>(const __grid_constant__ TransposeParams);
template __global__ void transpose_kernel<2, 64, 64, 256, 8, kSmemPad, 2, 0, 0, 0, 0, 0, 0, 1, 1, 1>(const __grid_constant__ TransposeParams);
template __global__ void transpose_kernel<4, 32, 32, 256, 1, kSmemPlain, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0>(const __grid_constant__ TransposeParams);
// GEMM: a transposed-A SGEMM, an NN SGEMM with scalar loads, tensor-core HGEMMs (f16 -> f16 k-major,
// bf16 -> f32 MN-major with .trans, 2-byte fallback), and the reference kernel.
template __global__ void sgemm_kernel<128, 128, 8, 64, 32, 2, 4, 4, 256, 2, 1, 0, 4, 1, 4, 5, 0, 0, 0, 8>(
    const __grid_constant__ GemmParams);
template __global__ void sgemm_kernel<64, 64, 16, 32, 32, 2, 4, 4, 128, 1, 0, 1, 1, 0, 0, 0, 2, 2, 6, 1>(
    const __grid_constant__ GemmParams);
template __global__ void hgemm_kernel<kGemmF16, kGemmF16, 128, 256, 32, 64, 64, 4, 1, 1, 8, 2, 3, 3, 2, 3, 3, 8>(
    const __grid_constant__ GemmParams);
template __global__ void hgemm_kernel<kGemmBF16, kGemmF32, 128, 128, 32, 64, 32, 3, 0, 0, 8, 3, 3, 4, 3, 3, 4, 4>(
    const __grid_constant__ GemmParams);
template __global__ void hgemm_kernel<kGemmF16, kGemmBF16, 64, 64, 32, 32, 32, 2, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1>(
    const __grid_constant__ GemmParams);
// Split-K: an HGEMM writing f32 partials, and the reduction for every output kind.
template __global__ void hgemm_kernel<kGemmF16, kGemmF32, 64, 64, 32, 32, 32, 4, 1, 0, 8, 2, 3, 3, 2, 3, 3, 4>(
    const __grid_constant__ GemmParams);
template __global__ void gemm_splitk_reduce_kernel<kGemmF16>(const __grid_constant__ GemmSplitKParams);
template __global__ void gemm_splitk_reduce_kernel<kGemmBF16>(const __grid_constant__ GemmSplitKParams);
template __global__ void gemm_splitk_reduce_kernel<kGemmF32>(const __grid_constant__ GemmSplitKParams);
template __global__ void gemm_reference_kernel<kGemmF32, kGemmF32, 1, 0, 1>(const __grid_constant__ GemmParams);
template __global__ void gemm_reference_kernel<kGemmBF16, kGemmF16, 0, 1, 0>(const __grid_constant__ GemmParams);
template __global__ void transpose_kernel<2, 64, 64, 256, 8, kSmemSwizzle, 0, 2, 0, 5, 3, 2, 7, 1, 1, 0>(
    const __grid_constant__ TransposeParams);
template __global__ void transpose_smem_probe_kernel<2, 32, 128, 256, 2, kSmemSwizzle, 0, 4, 1, 6, 0, 0, 0, 1, 0, 1>(
    int, unsigned int*);
template __global__ void transpose_reference_kernel<4>(const __grid_constant__ TransposeParams);
template __global__ void transpose_reference_kernel<2>(const __grid_constant__ TransposeParams);
}  // namespace tpl
}  // namespace swz
