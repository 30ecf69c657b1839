// generator: element types (include/swzjit/types.hpp).
#include "swzjit/types.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "swzjit/error.hpp"

namespace swz {

int dtype_bytes(DType t) { return t == DType::F32 ? 4 : 2; }

std::string to_string(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
  }
  return "?";
}

DType parse_dtype(const std::string& text) {
  if (text == "f32") return DType::F32;
  if (text == "f16") return DType::F16;
  if (text == "bf16") return DType::BF16;
  throw_invalid("dtype: '" + text + "' is not supported (allowed: f32|f16|bf16)");
}

long long parse_integer(const std::string& what, const std::string& text, long long lo, long long hi) {
  const std::string allowed = " (allowed: a decimal integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ")";
  const bool negative = !text.empty() && text[0] == '-';
  const std::size_t first = negative ? 1 : 0;
  if (text.empty()) throw_invalid(what + ": empty value" + allowed);
  // NOTE: digits only: strtoll's leading spaces, '+' and (base 0) hex made options disagree (issue 10).
  bool digits = text.size() > first;
  for (std::size_t i = first; i < text.size(); ++i) digits = digits && text[i] >= '0' && text[i] <= '9';
  if (!digits) throw_invalid(what + ": '" + text + "' is not a whole number" + allowed);
  if (negative && lo >= 0) throw_invalid(what + ": " + text + " is out of range (negative)" + allowed);
  // Accumulate toward the sign's side so LLONG_MIN parses; past 64 bits is out of range too.
  long long v = 0;
  for (std::size_t i = first; i < text.size(); ++i) {
    const int digit = text[i] - '0';
    if (__builtin_mul_overflow(v, 10LL, &v) ||
        (negative ? __builtin_sub_overflow(v, digit, &v) : __builtin_add_overflow(v, digit, &v)))
      throw_invalid(what + ": " + text + " is out of range" + allowed);
  }
  if (v < lo || v > hi) throw_invalid(what + ": " + text + " is out of range" + allowed);
  return v;
}

namespace {

std::uint16_t f32_to_f16_bits(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  if (std::isnan(f)) return static_cast<std::uint16_t>(sign | 0x7e00u);
  const int exp = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
  std::uint32_t mant = x & 0x7fffffu;
  if (exp >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow (and infinity)
  if (exp <= 0) {                                                    // f16 subnormal or zero
    if (exp < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - exp;
    std::uint32_t h = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = (static_cast<std::uint32_t>(exp) << 10) | (mant >> 13);
  const std::uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;  // a carry into the exponent is still right
  return static_cast<std::uint16_t>(sign | h);
}

float f16_bits_to_f32(std::uint16_t h) {
  const float mag = [&] {
    const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 31) return m ? NAN : INFINITY;
    return e == 0 ? std::ldexp(static_cast<float>(m), -24) : std::ldexp(static_cast<float>(1024 + m), e - 25);
  }();
  return (h & 0x8000u) ? -mag : mag;
}

}  // namespace

float load_element(DType t, const void* p) {
  if (t == DType::F32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  if (t == DType::F16) return f16_bits_to_f32(h);
  const std::uint32_t x = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

void store_element(DType t, void* p, float v) {
  if (t == DType::F32) {
    std::memcpy(p, &v, 4);
    return;
  }
  std::uint16_t h;
  if (t == DType::F16) {
    h = f32_to_f16_bits(v);
  } else {
    std::uint32_t x;
    std::memcpy(&x, &v, 4);
    h = std::isnan(v) ? static_cast<std::uint16_t>(((x >> 16) & 0x8000u) | 0x7fc0u)
                      : static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
  }
  std::memcpy(p, &h, 2);
}

}  // namespace swz
