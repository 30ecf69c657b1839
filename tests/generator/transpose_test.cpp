// tests/generator: transpose configs — canonical text, every validation error, the generated
// translation unit, the search space, and static bank analysis of plain / pad / swizzle tiles.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "swzjit/error.hpp"
#include "swzjit/transpose.hpp"

using swz::DType;
using swz::SmemLayout;
using swz::TransposeConfig;

namespace {

TransposeConfig cfg(const std::string& text) { return TransposeConfig::parse(text); }

std::string error_of(const std::string& text) {
  try {
    TransposeConfig::parse(text);
  } catch (const swz::Error& e) {
    CHECK(e.kind() == swz::ErrorKind::InvalidArgument);
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("config text round-trips") {
  for (const char* t : {"f32,tile=32x32,threads=256,vec=4,smem=swizzle:5:0:5", "f16,tile=64x64,threads=256,vec=8,smem=pad:2",
                        "bf16,tile=32x64,threads=128,vec=2,smem=plain"}) {
    CHECK(cfg(t).to_string() == t);
  }
  CHECK(cfg("f32,tile=32x32,threads=256,vec=4,smem=plain").elems_per_thread() == 4);
}

TEST_CASE("every validation error names its field") {
  struct Case {
    const char* text;
    const char* needle;
  } cases[] = {
      {"f64,tile=32x32,threads=256,vec=4,smem=plain", "f32|f16|bf16"},
      {"f32,tile=48x32,threads=256,vec=4,smem=plain", "tile rows"},
      {"f32,tile=32x0,threads=256,vec=4,smem=plain", "tile cols"},
      {"f32,tile=32x32,threads=100,vec=4,smem=plain", "threads"},
      {"f32,tile=32x32,threads=2048,vec=4,smem=plain", "threads"},
      {"f32,tile=32x32,threads=256,vec=8,smem=plain", "vec"},        // 32 bytes > 16
      {"f32,tile=32x32,threads=256,vec=3,smem=plain", "vec"},
      {"f16,tile=4x64,threads=32,vec=8,smem=plain", "divide"},        // vec 8 does not divide 4 rows
      {"f32,tile=32x32,threads=512,vec=4,smem=plain", "split"},       // 1024 elements < 512 x 4
      {"f32,tile=256x256,threads=32,vec=4,smem=plain", "elements per thread"},
      {"f32,tile=128x128,threads=1024,vec=4,smem=plain", "48 KiB"},
      {"f32,tile=32x32,threads=256,vec=4,smem=pad:0", "pad"},
      {"f32,tile=32x32,threads=256,vec=4,smem=swizzle:3:0:2", "|S|"},
      {"f32,tile=32x32,threads=256,vec=4,smem=swizzle:5:2:5", "period"},
      {"f32,tile=32x32,threads=256,vec=4,smem=sparkly", "smem"},
      {"f32,tile=32x32,threads=256,vec=4,colour=red", "unknown field"},
      {"tile=32x32,threads=256,vec=4,smem=plain", "dtype"},
      {"f32,tile=32,threads=256,vec=4,smem=plain", "RxC"},
      {"f32,tile=32x32,threads=many,vec=4,smem=plain", "threads"},
  };
  for (const auto& c : cases) {
    const std::string e = error_of(c.text);
    CHECK_MESSAGE(e.find(c.needle) != std::string::npos, c.text << " -> " << e);
  }
}

TEST_CASE("generated source is one include and one instantiation") {
  const auto c = cfg("f32,tile=64x64,threads=256,vec=4,smem=swizzle:5:0:5");
  const std::string src = swz::transpose_source(c);
  CHECK(src.find("#include \"transpose.cuh\"") != std::string::npos);
  CHECK(src.find("template __global__ void swz::tpl::transpose_kernel<4, 64, 64, 256, 4, 2, 0, 5, 0, 5, 0, 0, 0, 0, 0, 0>") !=
        std::string::npos);
  CHECK(swz::transpose_name_expression(c) == "swz::tpl::transpose_kernel<4, 64, 64, 256, 4, 2, 0, 5, 0, 5, 0, 0, 0, 0, 0, 0>");
  // No device code in the generated text: only the comment, the include and the instantiation.
  int lines = 0;
  for (char ch : src) lines += ch == '\n';
  CHECK(lines == 3);
  CHECK(swz::transpose_source_name(c) != swz::transpose_source_name(cfg("f32,tile=64x64,threads=256,vec=4,smem=plain")));
}

TEST_CASE("static analysis: plain fp32 32x32 shows the seed's 32-way read; swizzle and pad are conflict-free") {
  // vec = 1, 32x32 tile, 256 threads: the seed kernel. Reads walk a column: 32-way.
  const auto plain = swz::analyze_transpose(cfg("f32,tile=32x32,threads=256,vec=1,smem=plain"));
  CHECK(plain.load_instructions == 32);
  CHECK(plain.load_wavefronts == 32 * 32);
  CHECK(plain.load_ideal == 32);
  CHECK(plain.store_wavefronts == plain.store_ideal);  // row-wise stores are clean
  int max_way = 0;
  for (const auto& i : plain.instrs) max_way = std::max(max_way, i.max_way);
  CHECK(max_way == 32);
  // The seed's fix, tx ^ ty, is Swizzle<5,0,5> on a 32-wide fp32 tile.
  const auto xor_ty = swz::analyze_transpose(cfg("f32,tile=32x32,threads=256,vec=1,smem=swizzle:5:0:5"));
  CHECK(xor_ty.excess() == 0);
  const auto pad = swz::analyze_transpose(cfg("f32,tile=32x32,threads=256,vec=1,smem=pad:1"));
  CHECK(pad.excess() == 0);
  // Vectorized plain tile: 4-wide vectors make both phases conflicted.
  const auto vplain = swz::analyze_transpose(cfg("f32,tile=64x64,threads=256,vec=4,smem=plain"));
  CHECK(vplain.excess() > 0);
}

TEST_CASE("choosing swizzle and pad parameters yields zero excess for every shape in the space") {
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    const auto space = swz::transpose_search_space(t);
    CHECK(space.size() >= 20);
    std::set<std::string> names;
    int swizzled = 0, padded = 0, plain = 0;
    for (const auto& c : space) {
      CHECK(names.insert(c.to_string()).second);  // no duplicates
      const auto a = swz::analyze_transpose(c);
      if (c.smem == SmemLayout::Plain) {
        ++plain;
        continue;
      }
      CHECK_MESSAGE(a.excess() == 0, c.to_string());
      (c.smem == SmemLayout::Swizzle ? swizzled : padded)++;
    }
    CHECK(swizzled > 0);
    CHECK(padded > 0);
    CHECK(plain > 0);
  }
  // Alignment caps the vector width.
  for (const auto& c : swz::transpose_search_space(DType::F32, 4)) CHECK(c.vec == 1);
  for (const auto& c : swz::transpose_search_space(DType::F16, 2)) CHECK(c.vec == 1);
}

TEST_CASE("launch shape covers the problem and clamps to hardware limits") {
  const auto c = cfg("f32,tile=32x64,threads=256,vec=4,smem=plain");
  auto s = swz::transpose_launch_shape(c, 16384, 8192, 1);
  CHECK(s.grid[0] == 128);
  CHECK(s.grid[1] == 512);
  CHECK(s.grid[2] == 1);
  CHECK(s.block[0] == 256);
  s = swz::transpose_launch_shape(c, 1LL << 30, 1, 100000);
  CHECK(s.grid[1] == 65535);
  CHECK(s.grid[2] == 65535);
  s = swz::transpose_launch_shape(c, 0, 0, 1);
  CHECK(s.grid[0] == 1);
}

TEST_CASE("TransposeConfig::parse refuses what it used to let override or ignore (issue 10 item 7)") {
  const std::string base = "f32,tile=32x32,threads=256,vec=4";
  CHECK(error_of(base + ",smem=plain,tile=64x64").find("field 'tile' given twice") != std::string::npos);
  CHECK(error_of(base + ",smem=plain,smem=pad:1").find("field 'smem' given twice") != std::string::npos);
  CHECK(error_of(base + ",raster=0,raster=1").find("given twice") != std::string::npos);
  CHECK(error_of(base + ",smem=plain+3:3:3").find("composes swizzles only") != std::string::npos);
  CHECK(error_of(base + ",smem=pad:1+3:3:3").find("composes swizzles only") != std::string::npos);
  CHECK(error_of(base + ",smem=swizzle:2:0:5+").find("ends in '+'") != std::string::npos);
  CHECK(error_of(base + ",smem=swizzle:2:0:5:").find("ends in ':'") != std::string::npos);
  CHECK(error_of(base + ",smem=plain,").find("ends in ','") != std::string::npos);
  // numbers: decimal only
  CHECK(error_of("f32,tile= 32x32,threads=256,vec=4,smem=plain").find("is not an integer") != std::string::npos);
  CHECK(error_of("f32,tile=32x32,threads=+256,vec=4,smem=plain").find("is not an integer") != std::string::npos);
  CHECK(error_of("f32,tile=32x32,threads=0x100,vec=4,smem=plain").find("is not an integer") != std::string::npos);
  // the canonical forms still round-trip
  for (const char* ok : {"f32,tile=32x32,threads=256,vec=4,smem=swizzle:2:0:5+1:0:6",
                         "f16,tile=32x128,threads=256,vec=4,smem=plain,raster=1,pair=1"})
    CHECK(cfg(ok).to_string() == ok);
}
