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

}  // namespace swz
