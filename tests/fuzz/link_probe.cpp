// tests/fuzz: a program linked with --no-as-needed, so every library on the library's link line
// becomes a NEEDED entry whatever the compiler's default; no_libcuda.cmake then checks that
// libcuda is not among them (issue 10 item 10: sanitizer builds link without --as-needed).
#include <cstdio>

#include "swzjit/types.hpp"

int main() {
  std::printf("%s\n", swz::to_string(swz::DType::F32).c_str());
  return 0;
}
