// swzjit public API: element types shared by every kernel family.
#pragma once

#include <string>

namespace swz {

/// Element type of a kernel's data.
enum class DType { F32, F16, BF16 };

/// Bytes per element.
int dtype_bytes(DType t);
/// "f32", "f16", "bf16".
std::string to_string(DType t);
/// Parse "f32|f16|bf16"; throws InvalidArgument naming the allowed values.
DType parse_dtype(const std::string& text);

/// The one integer parser of the library and of `swz`: decimal digits with an optional leading '-'
/// (no spaces, '+', hex or suffixes), in [lo, hi] (a '-' is out of range when lo >= 0). Otherwise
/// throws InvalidArgument whose message starts with `what` (an option or config field) and gives the
/// allowed range.
long long parse_integer(const std::string& what, const std::string& text, long long lo, long long hi);

/// Host conversions of one element stored as `t` (little-endian bytes at `p`): the value as a float
/// (exact for every f16/bf16 value, subnormals, infinities and NaN included), and `v` rounded to
/// nearest even into `t` (f16 overflow -> infinity, underflow -> subnormal or signed zero, NaN kept).
float load_element(DType t, const void* p);
void store_element(DType t, void* p, float v);

}  // namespace swz
