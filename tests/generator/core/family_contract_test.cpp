// tests/generator/core: the family contract's problem-dependent parts (include/swzjit/family.hpp): type
// dims, aligns (the alignment class), lets, defaults as expressions, value ranges, one-struct arguments,
// space functions and the problem-aware bank analysis; their text form and their errors.
#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "runtime/jit/kernel_args.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"
#include "tests/generator/core/family_test_util.hpp"

using namespace swz;

namespace {

// A copy kernel whose element type, vector width and alignment class come from the problem.
const char* kCopyText = R"(family = vcopy
about = out = in, vectorized as the pointers allow
dims = dtype:type n
align align_in = in
align align_out = out
let eb = elem_bytes(dtype)
let bytes = min(min(align_in, align_out), pow2_align(n * eb))
param VEC = 1 2 4 8 ; default max(1, min(4, bytes / eb))
param BLOCK = 64..66 128 ; default 128 - 64 * (VEC == 8)
require = VEC * eb <= bytes
buffer in = dtype [n] input
buffer out = dtype [n] output
kernel = vcopy<dtype, VEC, BLOCK, elem_bytes(dtype)>({in, out, n, int:VEC})
grid = max(1, ceil_div(n, BLOCK * VEC))
block = BLOCK
reference = vcopy_reference<dtype>(in, out, n)
reference.grid = max(1, ceil_div(n, 256))
reference.block = 256
--- source
template <typename T, int VEC, int BLOCK, int EB> struct P { const T* in; T* out; long long n; int vec; };
template <typename T, int VEC, int BLOCK, int EB> __global__ void vcopy(P<T, VEC, BLOCK, EB> p) {}
template <typename T> __global__ void vcopy_reference(const T* in, T* out, long long n) {}
)";

using swz_test::invalid;
using swz_test::replace;

}  // namespace

TEST_CASE("family contract: type dims, aligns, lets and default expressions") {
  const Family f(FamilyDef::parse(kCopyText));
  CHECK(f.problem_names() == std::vector<std::string>{"dtype", "n", "align_in", "align_out"});
  CHECK(f.is_type_dim("dtype"));
  CHECK(!f.is_type_dim("n"));
  const FamilyValues p = f.parse_problem("dtype=f16,n=1000,align_in=16,align_out=8");
  CHECK(p.at("dtype") == static_cast<long long>(DType::F16));
  CHECK(f.problem_text(p) == "dtype=f16,n=1000,align_in=16,align_out=8");
  CHECK(f.buffer_dtype(0, p) == DType::F16);
  // bytes = min(16, 8, pow2_align(2000) = 16) = 8: VEC default min(4, 8 / 2) = 4.
  CHECK(f.default_config(p).at("VEC") == 4);
  CHECK(f.default_config(p).at("BLOCK") == 128);
  // The alignment class decides: 2-byte pointers allow VEC = 1 only, and the default follows.
  const FamilyValues q = f.parse_problem("dtype=f16,n=1000,align_in=2,align_out=16");
  CHECK(f.default_config(q).at("VEC") == 1);
  CHECK(f.check_config(f.parse_config("VEC=2"), q).find("VEC * eb <= bytes") != std::string::npos);
  CHECK(f.check_config(f.parse_config("VEC=2"), p) == "");
  // A default that does not satisfy the requirements falls back to the space's first configuration.
  const FamilyValues odd = f.parse_problem("dtype=f32,n=1,align_in=16,align_out=16");  // bytes = 4
  CHECK(f.default_config(odd).at("VEC") == 1);
  // A default expression that fails for a problem (here: a division by zero) falls back the same way.
  const Family zero(FamilyDef::parse(replace(kCopyText, "; default max(1, min(4, bytes / eb))", "; default 4 / (n - 64)")));
  CHECK(zero.default_config(zero.parse_problem("dtype=f32,n=64,align_in=16,align_out=16")).at("VEC") == 1);
  CHECK(zero.default_config(zero.parse_problem("dtype=f32,n=66,align_in=16,align_out=16")).at("VEC") == 2);
  // Ranges: 64..66 is 64, 65, 66.
  CHECK(f.def().params[1].values == std::vector<long long>{64, 65, 66, 128});
  CHECK(f.space(p).size() == 3 * 4);  // VEC 1, 2, 4 (8 * 2 > 8 bytes) x 4 blocks
  // Type dims in template arguments: the C++ type, or a number through elem_bytes.
  const FamilyValues c = f.parse_config("VEC=4,BLOCK=64");
  CHECK(f.name_expression(c, p) == "vcopy<__half, 4, 64, 2>");
  CHECK(f.shape(c, p).name_expression == "vcopy<__half, 4, 64, 2>");
  CHECK(f.reference_name_expression(p) == "vcopy_reference<__half>");
  CHECK(f.name_expression(c, f.parse_problem("dtype=bf16,n=8,align_in=16,align_out=16")) ==
        "vcopy<__nv_bfloat16, 4, 64, 2>");
  CHECK(invalid([&] { f.name_expression(c); }).find("element type") != std::string::npos);
  // Aligns are part of the problem: missing, or not a power of two up to 16, is refused.
  CHECK(invalid([&] { f.parse_problem("dtype=f32,n=4,align_in=16"); }).find("alignment 'align_out' missing") !=
        std::string::npos);
  CHECK(invalid([&] { f.parse_problem("dtype=f32,n=4,align_in=16,align_out=32"); }).find("power of two") !=
        std::string::npos);
  CHECK(invalid([&] { f.parse_problem("dtype=i8,n=4,align_in=16,align_out=16"); }).find("dtype") != std::string::npos);
}

TEST_CASE("family contract: one-struct arguments are packed at their natural alignment") {
  const Family f(FamilyDef::parse(kCopyText));
  CHECK(f.def().launch.packed);
  CHECK(!f.def().reference.packed);
  const FamilyValues p = f.parse_problem("dtype=f32,n=1000,align_in=16,align_out=16");
  const std::vector<FamilyKernelArg> args = f.kernel_args(f.parse_config("VEC=4,BLOCK=128"), p);
  REQUIRE(args.size() == 4);
  CHECK(args[3].kind == FamilyKernelArg::Int32);
  detail::PackedArgs packed(args, [](int i) { return DevicePtr(0x100 * (i + 1)); }, true);
  const unsigned char* base = static_cast<const unsigned char*>(packed.data()[0]);
  long long v = 0;
  int w = 0;
  std::memcpy(&v, base + 8, 8);
  CHECK(v == 0x200);
  std::memcpy(&v, base + 16, 8);
  CHECK(v == 1000);
  std::memcpy(&w, base + 24, 4);
  CHECK(w == 4);
}

TEST_CASE("family contract: the text form keeps every new part") {
  const FamilyDef d = FamilyDef::parse(kCopyText);
  const FamilyDef again = FamilyDef::parse(d.to_text());
  CHECK(again.to_text() == d.to_text());
  CHECK(Family(FamilyDef(again)).definition_hash() == Family(FamilyDef(d)).definition_hash());
  CHECK(d.to_text().find("param BLOCK = 64..66 128 ; default 128 - 64 * (VEC == 8)") != std::string::npos);
  CHECK(d.to_text().find("kernel = vcopy<dtype, VEC, BLOCK, elem_bytes(dtype)>({in, out, n, int:VEC})") != std::string::npos);
  CHECK(d.to_text().find("buffer in = dtype [n] input") != std::string::npos);
  CHECK(d.to_text().find("align align_out = out") != std::string::npos);
  CHECK(d.to_text().find("let eb = elem_bytes(dtype)") != std::string::npos);
}

TEST_CASE("family contract: errors name what is wrong") {
  const std::string good = kCopyText;
  auto family_error = [&](const std::string& from, const std::string& to) {
    return invalid([&] { Family f(FamilyDef::parse(replace(good, from, to))); });
  };
  CHECK(family_error("align align_in = in", "align align_in = nowhere").find("not a buffer") != std::string::npos);
  FamilyDef kind = FamilyDef::parse(good);
  kind.dims[0] = "dtype:kind";
  CHECK(invalid([&] { Family f(kind); }).find("NAME:type") != std::string::npos);
  CHECK(family_error("let eb = elem_bytes(dtype)", "let eb = elem_bytes(VEC)").find("not a dim, an align or an earlier let") !=
        std::string::npos);
  CHECK(family_error("; default max(1, min(4, bytes / eb))", "; default BLOCK").find("declared before it") !=
        std::string::npos);
  CHECK(family_error("vcopy<dtype, VEC, BLOCK, elem_bytes(dtype)>", "vcopy<dtype, VEC, BLOCK, n>")
            .find("problem dimension 'n'") != std::string::npos);
  // A let is a problem value too (even one of type dims only): template arguments spell it out.
  CHECK(family_error("vcopy<dtype, VEC, BLOCK, elem_bytes(dtype)>", "vcopy<dtype, VEC, BLOCK, eb>")
            .find("problem dimension 'eb'") != std::string::npos);
  CHECK(invalid([&] { FamilyDef::parse(replace(good, "dims = dtype:type n", "dims = dtype n")); })
            .find("neither an element type") != std::string::npos);
  CHECK(invalid([&] { FamilyDef::parse(replace(good, "64..66", "66..64")); }).find("LO <= HI") != std::string::npos);
  // A space too large to enumerate is refused when enumerated, unless a space function picks candidates.
  FamilyDef wide = FamilyDef::parse(replace(good, "param BLOCK = 64..66 128", "param BLOCK = 1..1024\nparam X = 0..200"));
  const Family w(wide);
  const FamilyValues p = w.parse_problem("dtype=f32,n=64,align_in=16,align_out=16");
  CHECK(invalid([&] { w.space(p); }).find("space_fn") != std::string::npos);
  wide.space_fn = [](const FamilyValues&) {
    return std::vector<FamilyValues>{{{"VEC", 1}, {"BLOCK", 64}, {"X", 0}}, {{"VEC", 8}, {"BLOCK", 64}, {"X", 0}},
                                     {{"VEC", 1}, {"BLOCK", 2000}, {"X", 0}}};
  };
  // A space function is code the text does not show: without its version no winner id could cover it.
  CHECK(invalid([&] { Family unversioned(wide); }).find("space_version") != std::string::npos);
  wide.space_version = "picker-1";
  const Family picked(wide);
  FamilyDef wide2 = wide;
  wide2.space_version = "picker-2";
  CHECK(Family(wide2).definition_hash() != picked.definition_hash());
  CHECK(w.definition_hash() != picked.definition_hash());
  CHECK(picked.space(p).size() == 1);  // VEC=8 breaks a requirement, BLOCK=2000 is not one of its values
  // The bank analysis sees the problem's values beside the params.
  FamilyDef analysed = FamilyDef::parse(good);
  analysed.smem_accesses = [](const FamilyValues& v) {
    SmemInstruction ins{SmemOp::Sts, 4, {}};
    for (int lane = 0; lane < 32; ++lane) ins.addresses.push_back(4LL * lane * (v.count("eb") ? v.at("eb") : 1));
    return std::vector<SmemInstruction>{ins};
  };
  const Family a(analysed);
  const FamilyValues c = a.parse_config("VEC=1,BLOCK=64");
  CHECK(a.analyze(c).excess_wavefronts == 0);  // no problem: stride 4 bytes
  CHECK(a.analyze(c, a.parse_problem("dtype=f32,n=64,align_in=16,align_out=16")).excess_wavefronts > 0);  // 16 bytes
}
