// tests/generator/core: the family contract's tensor maps (FamilyTensorMap, include/swzjit/family.hpp)
// without a GPU: the text form round trip and the definition hash, parse and validation errors naming the
// line or the field, evaluated maps and the per-problem checks that rule configurations out, the argument
// kinds, the alignment check that runs before the driver, and NVRTC compiles for sm_90.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "runtime/engine/engine_impl.hpp"
#include "runtime/jit/kernel_args.hpp"
#include "swzjit/autotune.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"
#include "tests/generator/core/family_test_util.hpp"
#include "tests/generator/core/family_tma_fixtures.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using namespace swz;

namespace {

using swz_test::invalid;
using swz_test::replace;

const std::string kText = swz_test::tma_transpose_family_text();
const std::string kMapLine = "tensormap tin = in dims [cols, rows] strides [cols] box [TILE, TILE] swizzle SWZ";

bool has(const std::string& s, const std::string& part) {
  if (s.find(part) != std::string::npos) return true;
  MESSAGE("\"" << s << "\" lacks \"" << part << "\"");
  return false;
}

std::string family_error(const std::string& from, const std::string& to) {
  return invalid([&] { Family f(FamilyDef::parse(replace(kText, from, to))); });
}

}  // namespace

TEST_CASE("family tensor maps: the text form round trip, and the map in the definition hash") {
  const FamilyDef d = FamilyDef::parse(kText);
  REQUIRE(d.tensor_maps.size() == 1);
  const FamilyTensorMap& t = d.tensor_maps[0];
  CHECK(t.name == "tin");
  CHECK(t.buffer == "in");
  CHECK(t.dims == std::vector<std::string>{"cols", "rows"});
  CHECK(t.strides == std::vector<std::string>{"cols"});
  CHECK(t.box == std::vector<std::string>{"TILE", "TILE"});
  CHECK(t.swizzle == "SWZ");
  CHECK(has(d.to_text(), kMapLine + "\n"));
  const FamilyDef again = FamilyDef::parse(d.to_text());
  CHECK(again.to_text() == d.to_text());
  const Family f(d);
  CHECK(Family(again).definition_hash() == f.definition_hash());
  // Built in C++, the same map writes the same text; another swizzle is another definition.
  FamilyDef built = d;
  built.tensor_maps = {FamilyTensorMap{"tin", "in", {"cols", "rows"}, {"cols"}, {"TILE", "TILE"}, "SWZ"}};
  CHECK(Family(built).definition_hash() == f.definition_hash());
  built.tensor_maps[0].swizzle = "128";
  CHECK(Family(built).definition_hash() != f.definition_hash());
  // Rank 1 needs no strides (nor writes any); a map without "swizzle" does not swizzle.
  const FamilyDef one = FamilyDef::parse(replace(kText, kMapLine, "tensormap tin = in dims [rows * cols] box [TILE]"));
  CHECK(one.tensor_maps[0].strides.empty());
  CHECK(one.tensor_maps[0].swizzle == "0");
  CHECK(has(one.to_text(), "tensormap tin = in dims [rows * cols] box [TILE] swizzle 0\n"));
}

TEST_CASE("family tensor maps: parse errors name the line, validation names the field") {
  const std::string form = "expected \"tensormap NAME = BUFFER dims [E, ...] strides [E, ...] box [E, ...] swizzle 0|32|64|128\"";
  CHECK(has(invalid([&] { FamilyDef::parse(replace(kText, " box [TILE, TILE]", "")); }), "family line 12: " + form));
  CHECK(has(invalid([&] { FamilyDef::parse(replace(kText, "box [TILE, TILE]", "box TILE, TILE")); }), "('[' after box)"));
  CHECK(has(invalid([&] { FamilyDef::parse(replace(kText, "box [TILE, TILE]", "box [TILE, TILE")); }), "(no ']' after box)"));
  CHECK(has(invalid([&] { FamilyDef::parse(replace(kText, "box [TILE, TILE]", "boxes [TILE, TILE]")); }), "got \"boxes\""));
  CHECK(has(invalid([&] { FamilyDef::parse(replace(kText, "swizzle SWZ", "swizzle")); }), form));
  CHECK(has(invalid([&] { FamilyDef::parse(replace(kText, "tensormap tin =", "tensormap =")); }), "expected tensormap NAME = ..."));
  CHECK(has(family_error("tensormap tin = in", "tensormap tin = input"), "family.tensor_maps.tin: \"input\" is not a buffer"));
  CHECK(has(family_error("tensormap tin =", "tensormap out ="), "family.tensor_maps.out: the name is also a dim, a param, a buffer"));
  CHECK(has(family_error("strides [cols]", "strides [cols, 1]"), "family.tensor_maps.tin.strides: one per dim after the first (1), got 2"));
  CHECK(has(family_error("box [TILE, TILE]", "box [TILE]"), "family.tensor_maps.tin.box: one extent per dim (2), got 1"));
  CHECK(has(family_error("dims [cols, rows] strides [cols]", "dims [1, 1, 1, 1, 1, 1] strides [16, 16, 16, 16, 16]"),
            "family.tensor_maps.tin.dims: 1 to 5 extents, got 6"));
  CHECK(has(family_error("box [TILE, TILE]", "box [TILE, SIZE]"), "family.tensor_maps.tin.box[1]: 'SIZE' is not a dim or a param"));
  CHECK(has(family_error("min_arch = 90", "min_arch = 80"), "family.min_arch: a family with tensor maps runs on sm_90 or later"));
  CHECK(has(family_error("tma_transpose<TILE, SWZ>(tin,", "tma_transpose<TILE, SWZ>(tmap,"),
            "'tmap' is not a buffer, a tensor map, a dim or a param"));
  // The reference has no configuration: a map over params is not for it.
  CHECK(has(family_error("tma_transpose_reference(in,", "tma_transpose_reference(tin,"),
            "family.reference: passes the tensor map 'tin', which uses the param 'TILE'"));
}

TEST_CASE("family tensor maps: evaluated per configuration; a map TMA cannot take rules the configuration out") {
  const Family f(FamilyDef::parse(kText));
  const FamilyValues p{{"rows", 1000}, {"cols", 36}, {"align_in", 16}};
  // TILE x SWZ: three swizzled (the tile row is the swizzle span) and three plain.
  CHECK(f.space(p).size() == 6);
  const FamilyValues c = f.parse_config("TILE=16,SWZ=64");
  const FamilyTensorMapShape s = f.tensor_map_shape(0, c, p);
  CHECK(s.buffer == 0);
  CHECK(s.dtype == DType::F32);
  CHECK(s.rank == 2);
  CHECK(s.dims[0] == 36);
  CHECK(s.dims[1] == 1000);
  CHECK(s.stride_bytes[0] == 144);
  CHECK(s.box[0] == 16);
  CHECK(s.box[1] == 16);
  CHECK(s.swizzle_bytes == 64);
  const std::vector<FamilyKernelArg> args = f.kernel_args(c, p);
  REQUIRE(args.size() == 4);
  CHECK(args[0].kind == FamilyKernelArg::TensorMap);
  CHECK(args[0].tensor_map == 0);
  CHECK(args[1].kind == FamilyKernelArg::Buffer);
  CHECK(detail::tensor_map_shapes(f, args, c, p).size() == 1);
  CHECK(detail::tensor_map_shapes(f, f.reference_args(p), {}, p).empty());
  // What the driver would refuse is refused here, naming the map, and rules the configuration out.
  {
    const Family g(FamilyDef::parse(replace(replace(kText, "require = cols % 4 == 0\n", ""), "require = SWZ == 0 || TILE * 4 == SWZ\n", "")));
    const FamilyValues odd{{"rows", 10}, {"cols", 6}, {"align_in", 16}};
    CHECK(has(g.check_config(c, odd), "tma_transpose tensor map tin: strides[1] = 6 elements = 24 bytes (TMA needs a multiple of 16 bytes)"));
    CHECK(has(g.check_config(g.parse_config("TILE=32,SWZ=64"), p), "box[0] = 128 bytes, wider than the 64-byte swizzle span"));
    CHECK(g.check_config(g.parse_config("TILE=8,SWZ=128"), p).empty());
  }
  {
    const Family g(FamilyDef::parse(replace(kText, "box [TILE, TILE]", "box [TILE, 300]")));
    CHECK(has(g.check_config(c, p), "tin: box[1] \"300\" = 300 (1..256)"));
    CHECK(g.space(p).empty());
  }
  {
    const Family g(FamilyDef::parse(replace(kText, "swizzle SWZ", "swizzle SWZ + 1")));
    CHECK(has(g.check_config(c, p), "tin: swizzle = 65 (0, 32, 64 or 128 bytes)"));
  }
  {
    const Family g(FamilyDef::parse(replace(kText, "[rows * cols] input", "[rows * cols - 1] input")));
    CHECK(has(g.check_config(c, p), "tin: spans 36000 elements of buffer in, which has 35999"));
  }
  {
    const Family g(FamilyDef::parse(replace(kText, "box [TILE, TILE]", "box [2, TILE]")));
    CHECK(has(g.check_config(c, p), "tin: box[0] = 2 elements = 8 bytes (TMA moves whole 16-byte chunks"));
  }
  // An empty problem has no map (extents are >= 1): no configuration fits it.
  CHECK(f.space(FamilyValues{{"rows", 0}, {"cols", 4}, {"align_in", 16}}).empty());
}

TEST_CASE("family tensor maps: a misaligned pointer is refused before the driver is asked") {
  const Family f(FamilyDef::parse(kText));
  const FamilyValues p{{"rows", 64}, {"cols", 64}, {"align_in", 16}};
  const FamilyTensorMapShape s = f.tensor_map_shape(0, f.default_config(p), p);
  detail::TensorMapBytes out;
  CHECK(has(invalid([&] { detail::encode_tensor_map(s, 0x10008, 0, "tma_transpose tensor map tin", out); }),
            "tma_transpose tensor map tin: the buffer's pointer is 8-byte aligned; TMA needs 16"));
  // And the family refuses such calls first: its requirement on align_in.
  CHECK(f.space(FamilyValues{{"rows", 64}, {"cols", 64}, {"align_in", 8}}).empty());
}

TEST_CASE("family tensor maps: NVRTC compiles the TMA kernel for sm_90; a compile-only tune compiles every candidate") {
  swz_cache_test::TempDir dir;
  EngineOptions eo;
  eo.cache_dir = dir.path();
  Engine engine(eo);
  const Family f(FamilyDef::parse(kText));
  const KernelEntry k = engine.compile_family(f, f.parse_config("TILE=32,SWZ=128"), "sm_90");
  CHECK(k.lowered_name.find("tma_transpose") != std::string::npos);
  TuneOptions o;
  o.compile_only = true;
  o.arch = "sm_90";
  o.compile_threads = 2;
  const TuneReport t = autotune_family(engine, f, FamilyValues{{"rows", 100}, {"cols", 1000}, {"align_in", 16}}, o);
  REQUIRE(t.candidates.size() == 6);
  for (const TuneCandidate& c : t.candidates) CHECK_MESSAGE(c.status == "compiled", (c.config + ": " + c.reason));
  // A family with tensor maps is for sm_90 and later: an sm_80 compile is refused.
  CHECK_THROWS(engine.compile_family(f, f.parse_config("TILE=32,SWZ=128"), "sm_80"));
}

TEST_CASE("family sm_count: a persistent grid follows the device's SM count; the kernel, block and space do not") {
  const Family f(FamilyDef::parse(swz_test::tma_transpose_persistent_family_text()));
  const FamilyValues p{{"rows", 1000}, {"cols", 36}, {"align_in", 16}};
  const FamilyValues c = f.parse_config("TILE=16,SWZ=64");
  CHECK(f.shape(c, with_sm_count(p, 132)).grid[0] == 132);  // 3 x 63 tiles
  CHECK(f.shape(c, with_sm_count(p, 1000)).grid[0] == 3 * 63);
  CHECK(f.shape(c, with_sm_count(p, 132)).name_expression == f.shape(c, with_sm_count(p, 7)).name_expression);
  // Without it, the evaluation says what is missing; the space and the default need no device.
  CHECK(has(invalid([&] { f.shape(c, p); }), "sm_count (the device's SM count) was not given"));
  CHECK(f.space(p).size() == 6);
  CHECK(f.check_config(c, p).empty());
  CHECK(f.default_config(p) == f.parse_config("TILE=32,SWZ=128"));
  // Reserved, and only for the grid and the arguments.
  const std::string text = swz_test::tma_transpose_persistent_family_text();
  const auto error = [&](const std::string& from, const std::string& to) {
    return invalid([&] { Family g(FamilyDef::parse(replace(text, from, to))); });
  };
  CHECK(has(error("dims = rows cols", "dims = rows cols sm_count"), "family.dims: \"sm_count\" is reserved"));
  CHECK(has(error("dims = rows cols", "dims = rows cols dram_gbps"), "family.dims: \"dram_gbps\" is reserved"));
  CHECK(has(error("param TILE =", "param dram_gbps = 1 ;default 1\nparam TILE ="), "family.params: \"dram_gbps\" is reserved"));
  CHECK(has(error("param TILE =", "param sm_count = 1 ;default 1\nparam TILE ="), "family.params: \"sm_count\" is reserved"));
  CHECK(has(error("require = cols % 4 == 0", "require = cols % sm_count == 0"), "'sm_count' is not a dim or a param"));
  CHECK(has(error("block = TILE, TILE", "block = TILE, min(TILE, sm_count)"), "'sm_count' is not a dim or a param"));
  CHECK(has(error("smem = TILE * TILE * 4 + 1024", "smem = TILE * TILE * 4 + sm_count"), "'sm_count' is not a dim or a param"));
  CHECK(has(error("tma_transpose_persistent<TILE, SWZ>", "tma_transpose_persistent<TILE, sm_count>"), "uses sm_count"));
  CHECK(has(error("box [TILE, TILE]", "box [TILE, sm_count]"), "'sm_count' is not a dim or a param"));
  // An argument may read it.
  const Family g(FamilyDef::parse(replace(text, "(tin, out, rows, cols)", "(tin, out, rows, cols + 0 * sm_count)")));
  CHECK(g.kernel_args(c, with_sm_count(p, 132))[3].value == 36);
  // A compile-only tune needs no device: the block does not follow it.
  swz_cache_test::TempDir dir;
  EngineOptions eo;
  eo.cache_dir = dir.path();
  Engine engine(eo);
  TuneOptions o;
  o.compile_only = true;
  o.arch = "sm_90";
  o.compile_threads = 2;
  const TuneReport t = autotune_family(engine, f, p, o);
  REQUIRE(t.candidates.size() == 6);
  for (const TuneCandidate& tc : t.candidates) CHECK_MESSAGE(tc.status == "compiled", (tc.config + ": " + tc.reason));
}
