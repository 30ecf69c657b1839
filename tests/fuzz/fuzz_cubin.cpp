// tests/fuzz: the cubin reader (runtime/jit/cubin.cpp, cubin_resources) on arbitrary bytes. The seeds are
// real cubins (corpus/cubin/, from kernels.cu with nvcc -cubin) holding the kernels named below.
#include <cstddef>
#include <cstdint>
#include <string>

#include "swzjit/error.hpp"
#include "swzjit/jit.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > (1u << 20)) return -1;
  const std::string image(reinterpret_cast<const char*>(data), size);
  for (const char* name : {"fuzz_plain", "fuzz_bounded", "fuzz_spilling", ""}) {
    try {
      const swz::CubinResources r = swz::cubin_resources(image, name);
      (void)r;
    } catch (const swz::Error&) {
    }
  }
  return 0;
}
