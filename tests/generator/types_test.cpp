// tests/generator: element types and their host conversions (generator/core/types.cpp), which tests, tools
// and benchmarks use to build inputs and read results.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "swzjit/error.hpp"
#include "swzjit/types.hpp"

using swz::DType;

namespace {

std::uint16_t bits16(DType t, float v) {
  std::uint16_t h;
  swz::store_element(t, &h, v);
  return h;
}
float back(DType t, std::uint16_t h) { return swz::load_element(t, &h); }

}  // namespace

TEST_CASE("dtype names and sizes") {
  CHECK(swz::dtype_bytes(DType::F32) == 4);
  CHECK(swz::dtype_bytes(DType::BF16) == 2);
  CHECK(swz::parse_dtype("f16") == DType::F16);
  CHECK_THROWS_AS(swz::parse_dtype("fp16"), swz::Error);
}

TEST_CASE("f16 conversions: exact values, ties to even, subnormals, overflow, NaN") {
  CHECK(bits16(DType::F16, 1.0f) == 0x3c00);
  CHECK(bits16(DType::F16, -2.0f) == 0xc000);
  CHECK(bits16(DType::F16, 65504.0f) == 0x7bff);
  CHECK(bits16(DType::F16, 65520.0f) == 0x7c00);                // rounds up to infinity
  CHECK(bits16(DType::F16, 1.0f + 1.0f / 2048) == 0x3c00);      // tie -> even (down)
  CHECK(bits16(DType::F16, 1.0f + 3.0f / 2048) == 0x3c02);      // tie -> even (up)
  CHECK(bits16(DType::F16, std::ldexp(1.0f, -24)) == 0x0001);   // smallest subnormal
  CHECK(bits16(DType::F16, std::ldexp(1.0f, -26)) == 0x0000);   // underflow to zero
  CHECK(bits16(DType::F16, -0.0f) == 0x8000);
  CHECK(std::isnan(back(DType::F16, bits16(DType::F16, NAN))));
  CHECK(std::isinf(back(DType::F16, 0x7c00)));
  CHECK(back(DType::F16, 0x0001) == std::ldexp(1.0f, -24));
  // every finite f16 survives f16 -> f32 -> f16
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    if (((h >> 10) & 0x1f) == 0x1f) continue;
    CHECK(bits16(DType::F16, back(DType::F16, static_cast<std::uint16_t>(h))) == h);
  }
}

TEST_CASE("bf16 conversions round to nearest even and keep NaN") {
  CHECK(bits16(DType::BF16, 1.0f) == 0x3f80);
  float f;
  std::uint32_t x = 0x3f808000u;  // exactly halfway between 0x3f80 and 0x3f81: ties to even
  std::memcpy(&f, &x, 4);
  CHECK(bits16(DType::BF16, f) == 0x3f80);
  x = 0x3f818000u;
  std::memcpy(&f, &x, 4);
  CHECK(bits16(DType::BF16, f) == 0x3f82);
  CHECK(std::isnan(back(DType::BF16, bits16(DType::BF16, NAN))));
  CHECK(back(DType::BF16, 0x3f80) == 1.0f);
  float g = 0;
  swz::store_element(DType::F32, &g, 0.375f);
  CHECK(swz::load_element(DType::F32, &g) == 0.375f);
}
