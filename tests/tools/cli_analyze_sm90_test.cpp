// tests/tools: `swz analyze gemm_sm90` (tools/cmd_analyze_sm90.cpp): the layout proof of the Hopper GEMM in
// text, json and csv, a chosen --config, its --help, and bad usage (exit 2 naming the argument); and
// `swz gen|compile gemm_sm90` (tools/cmd_kernel.cpp): the source and an sm_90a NVRTC compile with its time.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cli_formats.hpp"
#include "cli_support.hpp"
#include "swzjit/jit.hpp"  // nvrtc_available

using swz_test::json_valid;
using swz_test::parse_csv;
using swz_test::run_swz;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

int count(const std::string& s, const std::string& part) {
  int n = 0;
  for (std::size_t p = s.find(part); p != std::string::npos; p = s.find(part, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("swz analyze gemm_sm90 proves the default config's layouts in text") {
  const auto r = run_swz("analyze gemm_sm90");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(contains(r.out, "in=f16,out=f16,layout=NT,bn=256,stages=4"));
  CHECK(contains(r.out, "operand A: K-major, 2-byte elements, 64 x 16 per wgmma"));
  CHECK(contains(r.out, "operand B: K-major, 2-byte elements, 256 x 16 per wgmma"));
  CHECK(count(r.out, "\n  matches\n") == 2);
  // the kernel's descriptors, decoded: 128-byte rows, 8-row groups 1024 bytes apart, +32 bytes per k step
  CHECK(contains(r.out, "start 0x420 lbo 16 sbo 1024 base 0 128B"));
  CHECK(contains(r.out, "64 x 128 (2-byte elements, 128B swizzle)"));
  CHECK(contains(r.out, "stmatrix.x4"));
  CHECK(contains(r.out, "layouts match"));
}

TEST_CASE("swz analyze gemm_sm90 --config, --format json and csv") {
  const std::string cfg = "--config in=bf16,out=f32,bn=128,stages=6,cluster=2";
  auto r = run_swz("analyze gemm_sm90 " + cfg + " --format json");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  std::vector<std::string> keys;
  REQUIRE(json_valid(r.out, &keys));
  REQUIRE(!keys.empty());
  CHECK(keys[0] == "swzjit_version");
  CHECK(contains(r.out, "\"config\": \"in=bf16,out=f32,layout=NT,bn=128,stages=6"));
  CHECK(contains(r.out, "\"matches\": true"));
  CHECK(count(r.out, "\"operand\": ") == 2);
  CHECK(count(r.out, "\"descriptor\": \"0x") == 6 * 8 + 6 * 4);  // every stage: A 2 consumers x 4, B 4
  CHECK(count(r.out, "\"inner\": 64, \"outer\": 64") == 6 * 2);  // B: half of bn per CTA of the cluster
  CHECK_FALSE(contains(r.out, "stmatrix"));                     // f32 C: pairs only

  r = run_swz("analyze gemm_sm90 " + cfg + " --format csv");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto rows = parse_csv(r.out);
  REQUIRE(rows.size() == 3u);
  CHECK(rows[0][0] == "family");
  CHECK(rows[0][2] == "operand");
  CHECK(rows[1][2] == "A");
  CHECK(rows[2][2] == "B");
  CHECK(rows[2][5] == "128");
  CHECK(rows[1][10] == "true");
  CHECK(rows[2][10] == "true");
  CHECK(rows[2][11].empty());
}

TEST_CASE("swz analyze gemm_sm90 --config layout=TN,epilogue=tma: MN-major operands and operand C") {
  const std::string cfg = "--config \"in=f16,out=f16,layout=TN,epilogue=tma\"";
  auto r = run_swz("analyze gemm_sm90 " + cfg);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(contains(r.out, "layout=TN,bn=256,stages=4"));
  CHECK(contains(r.out, "operand A: MN-major, 2-byte elements, 64 x 16 per wgmma"));
  CHECK(contains(r.out, "operand B: MN-major, 2-byte elements, 256 x 16 per wgmma"));
  // the kernel's MN-major descriptors: the next 64-wide box 8192 bytes on, 16 K rows (2048 bytes) per k step
  CHECK(contains(r.out, "start 0xc00 lbo 8192 sbo 1024 base 0 128B"));
  CHECK(contains(r.out, "operand C (TMA-store epilogue)"));
  CHECK(contains(r.out, "32768 elements compared"));  // 128 x 256 C elements of a tile
  CHECK(contains(r.out, "stores: stmatrix.x4"));
  CHECK(contains(r.out, "excess 0), max-way 1"));
  CHECK(count(r.out, "\n  matches\n") == 3);
  CHECK(contains(r.out, "layouts match"));

  r = run_swz("analyze gemm_sm90 " + cfg + " --format json");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  REQUIRE(json_valid(r.out));
  CHECK(contains(r.out, "\"c_store\": {\"operand\": \"C\""));
  CHECK(contains(r.out, "\"major\": \"MN-major\""));
  CHECK(count(r.out, "\"matches\": true") == 4);  // the whole, A, B, C

  r = run_swz("analyze gemm_sm90 " + cfg + " --format csv");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto rows = parse_csv(r.out);
  REQUIRE(rows.size() == 4u);
  CHECK(rows[3][2] == "C");
  CHECK(rows[3][9] == "32768");
  CHECK(rows[3][10] == "true");

  // Without the TMA-store epilogue there is no operand C.
  r = run_swz("analyze gemm_sm90 --config layout=NN --format json");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(contains(r.out, "\"c_store\": null"));
}

TEST_CASE("swz analyze gemm_sm90: --help and bad usage") {
  auto r = run_swz("analyze --help");
  CHECK(r.code == 0);
  CHECK(contains(r.out, "swz analyze gemm_sm90 [--config TEXT]"));
  r = run_swz("analyze gemm_sm90 --config bn=100");
  CHECK(r.code == 2);
  CHECK(contains(r.err, "bn=100"));
  r = run_swz("analyze gemm_sm90 --format svg");
  CHECK(r.code == 2);
  CHECK(contains(r.err, "text|json|csv"));
  r = run_swz("analyze gemm_sm90 --tile 64x64");
  CHECK(r.code == 2);
  CHECK(contains(r.err, "--tile"));
}

TEST_CASE("swz gen and compile gemm_sm90: the source, an sm_90a compile with registers, spills and its time") {
  auto r = run_swz("gen gemm_sm90 --config in=bf16,out=bf16,layout=TN,bn=128,stages=6,splits=4");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(contains(r.out, "#include \"gemm_sm90.cuh\""));
  CHECK(contains(r.out, "swz::tpl::gemm_sm90_kernel<1, 2, 128, 6, 8, 1, 1, 1, 0>"));  // split: f32 partials; TN: both MN-major
  CHECK(contains(r.out, "arch sm_90a"));
  r = run_swz("gen gemm_sm90 --config sm90:in=f16,out=f16,bn=128,stages=6,splits=2,reduce=cluster");  // a winner's text
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(contains(r.out, "gemm_sm90_splitk2_kernel<0, 0, 128, 6, 8, 1, 0, 0, 0>"));

  std::string why;
  if (!swz::nvrtc_available(&why)) {
    MESSAGE("skipped the compile: NVRTC not available: " << why);
    return;
  }
  r = run_swz("compile gemm_sm90 --config in=f16,out=f16,epilogue=tma --format json");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  std::vector<std::string> keys;
  REQUIRE(json_valid(r.out, &keys));
  CHECK(contains(r.out, "\"config\": \"in=f16,out=f16,layout=NT,bn=256,stages=4,raster=8,persistent=1,inflight=1,cluster=1,epilogue=tma\""));
  CHECK(contains(r.out, "\"arch\": \"sm_90a\""));
  CHECK(contains(r.out, "\"local_bytes\": 0"));
  CHECK(contains(r.out, "\"code_bytes\": "));
  CHECK_FALSE(contains(r.out, "\"code_bytes\": 0,"));
  CHECK(contains(r.out, "\"compile_ms\": "));
  r = run_swz("compile gemm_sm90");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(contains(r.out, "compile time"));
  CHECK(contains(r.out, "bytes of machine code"));
  CHECK(contains(r.out, "sm_90a (cubin"));
  MESSAGE(r.out);

  r = run_swz("compile gemm_sm90 --arch sm_80");
  CHECK(r.code == 2);
  CHECK(contains(r.err, "sm_90a only"));
  r = run_swz("compile gemm_sm90 --config bn=100");
  CHECK(r.code != 0);
  CHECK(contains(r.err, "bn=100"));
  r = run_swz("compile --help");
  CHECK(contains(r.out, "gemm_sm90"));
}
