// tests/runtime: device code that the runtime tests hand to NVRTC (nvrtc_test.cpp compiles it for
// every target without a GPU; runtime_gpu_test.cpp loads and runs it). Includes an embedded template.
#include "swizzle.cuh"

namespace swz_test {

// out[i] = in[Swizzle<B,M,S>(i)]: the device evaluates the same functor the host test does.
// n must be a multiple of the swizzle's period 2^(B+M+|S|), which it maps onto itself.
template <int B, int M, int S>
__global__ void swizzle_gather(const float* __restrict__ in, float* __restrict__ out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = in[swz::tpl::Swizzle<B, M, S>{}(i)];
}

// Reverses each block of N elements through a static shared-memory tile (blockDim.x == N).
template <int N>
__global__ void smem_reverse(const float* __restrict__ in, float* __restrict__ out) {
  __shared__ float tile[N];
  const int base = static_cast<int>(blockIdx.x) * N;
  tile[threadIdx.x] = in[base + threadIdx.x];
  __syncthreads();
  out[base + threadIdx.x] = tile[N - 1 - threadIdx.x];
}

// Reverses each block of n elements through dynamic shared memory (n * 4 bytes per block).
__global__ void dynamic_smem_reverse(const float* __restrict__ in, float* __restrict__ out, int n) {
  extern __shared__ float buffer[];
  const long long base = static_cast<long long>(blockIdx.x) * n;
  for (int i = threadIdx.x; i < n; i += blockDim.x) buffer[i] = in[base + i];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[base + i] = buffer[n - 1 - i];
}

// A dynamically indexed array too large for registers: the kernel needs local memory.
__global__ void local_array(const float* __restrict__ in, float* __restrict__ out, int k) {
  float scratch[256];
  for (int i = 0; i < 256; ++i) scratch[i] = in[i * k + threadIdx.x];
  out[threadIdx.x] = scratch[k & 255] + scratch[(k * 7) & 255];
}

// Stores through `target`: launched with an invalid address it raises a sticky illegal-address error.
__global__ void store_to(int* target, int value) { *target = value; }

}  // namespace swz_test
