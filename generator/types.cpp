// generator: element types (include/swzjit/types.hpp).
#include "swzjit/types.hpp"

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

}  // namespace swz
