// tests/fuzz: the kernels of the cubin seeds in corpus/cubin/ (static shared memory, launch bounds,
// local memory), so fuzz_cubin starts from images that carry every record runtime/jit/cubin.cpp reads:
//   nvcc -cubin -arch=sm_90 -o corpus/cubin/sm_90.cubin cubin_kernels.cu   (and sm_80)
extern "C" __global__ void fuzz_plain(float* out) {
  __shared__ float tile[32][33];
  tile[threadIdx.y][threadIdx.x] = out[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = tile[threadIdx.x][threadIdx.y];
}

extern "C" __global__ void __launch_bounds__(128, 2) fuzz_bounded(float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] *= 2.0f;
}

extern "C" __global__ void fuzz_spilling(float* out, int k) {
  float local[64];
  for (int i = 0; i < 64; ++i) local[i] = out[i * k];
  out[threadIdx.x] = local[(threadIdx.x * k) & 63];
}
