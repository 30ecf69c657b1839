// tests/runtime/worker (GPU suite): the check kernel's fill mode (templates/family_check.cuh), which writes a
// tuning worker's family inputs on the GPU -- values in [-1, 1) of each element type, spread (never a
// constant or zeros), the same for the same seed, different for another, at any byte alignment, nothing
// written outside the buffer. Skips visibly without a GPU.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "runtime/tune/autotune_family_check.hpp"
#include "swzjit/device.hpp"
#include "swzjit/error.hpp"
#include "swzjit/jit.hpp"
#include "templates/family_check.cuh"

using namespace swz;

namespace {

float decode(int dtype, const std::uint8_t* at) {
  std::uint32_t bits = 0;
  if (dtype == tpl::kFamilyCheckF32) {
    std::memcpy(&bits, at, 4);
  } else {
    std::uint16_t h;
    std::memcpy(&h, at, 2);
    if (dtype == tpl::kFamilyCheckBF16) {
      bits = static_cast<std::uint32_t>(h) << 16;
    } else {  // f16 -> f32 (normal and subnormal values; the fill makes no inf or NaN)
      const std::uint32_t sign = (h >> 15) & 1u, exp = (h >> 10) & 31u, man = h & 1023u;
      float v = exp == 0 ? std::ldexp(static_cast<float>(man), -24) : std::ldexp(static_cast<float>(man | 1024u), static_cast<int>(exp) - 25);
      return sign ? -v : v;
    }
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

TEST_CASE("family fill: the worker's inputs are spread values in [-1, 1), fixed by the seed, at any alignment") {
  std::string why;
  if (!driver_available(&why)) {
    MESSAGE("skipped: " << why);
    return;
  }
  const CompiledKernel ck = compile(detail::family_check_request(device_info(0).arch()));
  Module module(ck, 0);
  Kernel k = module.kernel();
  constexpr std::size_t kGuard = 256;
  for (const int dtype : {tpl::kFamilyCheckF32, tpl::kFamilyCheckF16, tpl::kFamilyCheckBF16}) {
    const std::size_t eb = dtype == tpl::kFamilyCheckF32 ? 4 : 2;
    for (const std::size_t shift : {std::size_t{0}, std::size_t{1}, eb}) {
      CAPTURE(dtype);
      CAPTURE(shift);
      const long long elems = 100003;
      const std::size_t bytes = kGuard + shift + static_cast<std::size_t>(elems) * eb + kGuard;
      DeviceBuffer d(bytes);
      const auto run = [&](unsigned long long seed) {
        d.memset8(0x5A, nullptr);
        tpl::FamilyCheckParams p{};
        p.mode = tpl::kFamilyCheckFill;
        p.dtype = dtype;
        p.got = reinterpret_cast<const unsigned char*>(d.ptr());
        p.head_bytes = kGuard + shift;
        p.elems = elems;
        p.seed = seed;
        void* args[] = {&p};
        k.launch(Dim3{64, 1, 1}, Dim3{tpl::kFamilyCheckThreads, 1, 1}, 0, nullptr, args);
        synchronize(nullptr);
        std::vector<std::uint8_t> h(bytes);
        d.copy_to_host(h.data(), bytes);
        return h;
      };
      const std::vector<std::uint8_t> a = run(0x5EEDu), again = run(0x5EEDu), other = run(0x5EEEu);
      CHECK(a == again);
      CHECK(a != other);
      for (std::size_t i = 0; i < kGuard + shift; ++i) REQUIRE(a[i] == 0x5A);
      for (std::size_t i = kGuard + shift + static_cast<std::size_t>(elems) * eb; i < bytes; ++i) REQUIRE(a[i] == 0x5A);
      double sum = 0, sq = 0;
      long long outside = 0, negative = 0;
      std::set<float> distinct;
      for (long long i = 0; i < elems; ++i) {
        const float v = decode(dtype, a.data() + kGuard + shift + static_cast<std::size_t>(i) * eb);
        outside += !(v >= -1.0f && v <= 1.0f);
        negative += v < 0;
        sum += v;
        sq += static_cast<double>(v) * v;
        if (distinct.size() < 5000) distinct.insert(v);
      }
      CHECK(outside == 0);
      CHECK(std::fabs(sum / elems) < 0.02);                // mean near 0
      CHECK(std::fabs(sq / elems - 1.0 / 3.0) < 0.02);     // the variance of U(-1, 1)
      CHECK(negative > elems / 3);
      CHECK(distinct.size() > 1000);
    }
  }
}
