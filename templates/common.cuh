// templates: macros and tiny helpers shared by every kernel template and by host C++.
// Compiled three ways: by NVRTC (__CUDACC_RTC__), by nvcc (__CUDACC__) and by the host compiler.
// No standard headers here: NVRTC is given only the embedded templates.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define SWZ_HD __host__ __device__ __forceinline__
#define SWZ_DEVICE_CODE 1
#else
#define SWZ_HD inline
#define SWZ_DEVICE_CODE 0
#endif

namespace swz {
namespace tpl {

SWZ_HD constexpr int imax(int a, int b) { return a > b ? a : b; }
SWZ_HD constexpr int imin(int a, int b) { return a < b ? a : b; }
// NOTE: long long, so iabs(INT_MIN) is 2^31 rather than an overflow.
SWZ_HD constexpr long long iabs(int a) { return a < 0 ? -static_cast<long long>(a) : a; }
SWZ_HD constexpr bool is_pow2(long long v) { return v > 0 && (v & (v - 1)) == 0; }
SWZ_HD constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

}  // namespace tpl
}  // namespace swz
