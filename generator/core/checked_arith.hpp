// generator (internal, shared with runtime/ and tools/): checked 64-bit arithmetic for sizes, pitches,
// strides and byte counts. An overflow throws InvalidArgument naming the quantity, never wraps (issue 10).
#pragma once

#include <string>

#include "swzjit/error.hpp"

namespace swz {
namespace detail {

/// The largest element or byte count a problem may describe (the public headers promise 2^62).
constexpr long long kMaxElements = 1LL << 62;

/// a * b; throws InvalidArgument "<what> = a * b does not fit in 64 bits".
inline long long checked_mul(long long a, long long b, const char* what) {
  long long r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw_invalid(std::string(what) + " = " + std::to_string(a) + " * " + std::to_string(b) +
                  " does not fit in 64 bits; use smaller sizes");
  return r;
}

/// a + b; throws InvalidArgument "<what> = a + b does not fit in 64 bits".
inline long long checked_add(long long a, long long b, const char* what) {
  long long r = 0;
  if (__builtin_add_overflow(a, b, &r))
    throw_invalid(std::string(what) + " = " + std::to_string(a) + " + " + std::to_string(b) +
                  " does not fit in 64 bits; use smaller sizes");
  return r;
}

/// The elements a batch of matrices spans: (batch - 1) * stride + (lines - 1) * ld + line, 0 when any
/// of batch, lines, line is 0. Throws InvalidArgument naming `what` when the span passes kMaxElements
/// elements or kMaxElements bytes (elem_bytes each), so byte offsets into it never overflow.
inline long long checked_extent(long long batch, long long stride, long long lines, long long ld, long long line,
                                int elem_bytes, const char* what) {
  if (batch <= 0 || lines <= 0 || line <= 0) return 0;
  const long long e = checked_add(checked_add(checked_mul(batch - 1, stride, what), checked_mul(lines - 1, ld, what), what),
                                  line, what);
  if (e > kMaxElements / elem_bytes)
    throw_invalid(std::string(what) + " spans " + std::to_string(e) + " elements of " + std::to_string(elem_bytes) +
                  " bytes, more than 2^62 bytes; use smaller sizes");
  return e;
}

/// ceil(a / b) for a >= 0, b > 0, without the overflow of (a + b - 1) / b.
inline long long ceil_div_ll(long long a, long long b) { return a / b + (a % b != 0 ? 1 : 0); }

}  // namespace detail
}  // namespace swz
