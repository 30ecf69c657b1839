// tests/fuzz: TransposeConfig::parse and GemmConfig::parse (generator/) on arbitrary text. A parsed
// config must print as text that parses back to the same text (a stable round trip); a config that
// validates must give a source, a launch shape and a bank analysis without any sanitizer report.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "swzjit/error.hpp"
#include "swzjit/gemm.hpp"
#include "swzjit/transpose.hpp"

namespace {

[[noreturn]] void fail(const char* what, const std::string& a, const std::string& b) {
  std::fprintf(stderr, "fuzz_config: %s\n  first:  %s\n  second: %s\n", what, a.c_str(), b.c_str());
  std::abort();
}

template <class Config>
bool round_trip(const std::string& text, Config* out) {
  Config c;
  try {
    c = Config::parse(text);
  } catch (const swz::Error&) {
    return false;  // refusing the text is fine; only a refusal by another means would be a bug
  }
  const std::string printed = c.to_string();
  Config again;
  try {
    again = Config::parse(printed);
  } catch (const swz::Error& e) {
    fail("to_string() of a parsed config does not parse", text, printed + "  (" + e.what() + ")");
  }
  if (again.to_string() != printed) fail("round trip is not stable", printed, again.to_string());
  *out = c;
  return true;
}

void exercise_transpose(const std::string& text) {
  swz::TransposeConfig c;
  if (!round_trip(text, &c)) return;
  try {
    c.validate();
  } catch (const swz::Error&) {
    return;
  }
  (void)c.smem_bytes();
  (void)c.elems_per_thread();
  (void)swz::transpose_source(c);
  (void)swz::transpose_name_expression(c);
  (void)swz::transpose_launch_shape(c, 4097, 1025, 3);
  try {
    (void)swz::transpose_launch_shape(c, 1LL << 31, 1LL << 31, 1);
  } catch (const swz::Error&) {  // a problem too large to launch may be refused
  }
  (void)swz::analyze_transpose(c);
}

void exercise_gemm(const std::string& text) {
  swz::GemmConfig c;
  if (!round_trip(text, &c)) return;
  try {
    c.validate();
  } catch (const swz::Error&) {
    return;
  }
  (void)c.smem_bytes();
  (void)c.threads();
  (void)c.vec_bytes();
  (void)swz::gemm_source(c);
  (void)swz::gemm_name_expression(c);
  (void)swz::gemm_launch_shape(c, 4097, 1025, 3);
  try {
    (void)swz::gemm_launch_shape(c, 2147483647LL, 2147483647LL, 65535);
  } catch (const swz::Error&) {  // a problem too large to launch may be refused
  }
  (void)swz::analyze_gemm(c);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096) return -1;  // configs are one short line; longer inputs only slow the search
  const std::string text(reinterpret_cast<const char*>(data), size);
  exercise_transpose(text);
  exercise_gemm(text);
  return 0;
}
