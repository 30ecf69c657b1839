// tests/generator: the GEMM families — canonical config text, every validation error, the generated
// translation unit, static bank analysis (seed 004's conflicted transposing store, unswizzled ldmatrix,
// zero excess for every config of every default space) and NVRTC compiles of the default spaces.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "swzjit/error.hpp"
#include "swzjit/gemm.hpp"
#include "swzjit/jit.hpp"

using namespace swz;

namespace {

std::string error_of(const std::string& text, ErrorKind want = ErrorKind::InvalidArgument) {
  try {
    GemmConfig::parse(text);
  } catch (const Error& e) {
    CHECK_MESSAGE(e.kind() == want, text << " -> " << e.what());
    return e.what();
  }
  return "no error";
}

const char* kSgemm = "sgemm,NN,tile=128x128x8,warp=64x32,wniter=2,thread=4x4,threads=256,stages=2,vec=4,raster=8,swa=1:4:5,swb=0:0:0";
const char* kHgemm = "hgemm,f16>f32,NT,tile=128x256x32,warp=64x64,stages=4,vec=8,raster=8,swa=2:3:3,swb=2:3:3";

std::string with(const std::string& base, const std::string& field, const std::string& value) {
  const auto p = base.find("," + field + "=");
  REQUIRE(p != std::string::npos);
  const auto e = base.find(',', p + 1);
  return base.substr(0, p + 2 + field.size()) + value + (e == std::string::npos ? "" : base.substr(e));
}

struct DTypePair {
  DType in, out;
};
const DTypePair kPairs[] = {{DType::F32, DType::F32}, {DType::F16, DType::F16}, {DType::F16, DType::F32},
                            {DType::BF16, DType::BF16}, {DType::BF16, DType::F32}, {DType::F16, DType::BF16}};
const GemmLayout kLayouts[] = {GemmLayout::NN, GemmLayout::NT, GemmLayout::TN, GemmLayout::TT};

}  // namespace

TEST_CASE("gemm config text round-trips and derived sizes are right") {
  for (const char* t : {kSgemm, kHgemm}) CHECK(GemmConfig::parse(t).to_string() == t);
  const GemmConfig s = GemmConfig::parse(kSgemm), h = GemmConfig::parse(kHgemm);
  CHECK(s.kind == GemmKernelKind::Sgemm);
  CHECK(s.sgemm.wmiter() == 2);
  CHECK(s.smem_bytes() == 2 * (128 + 128) * 8 * 4);
  CHECK(s.dynamic_smem_bytes() == 0);
  CHECK(s.vec_bytes() == 16);
  CHECK(h.kind == GemmKernelKind::Hgemm);
  CHECK(h.threads() == 256);
  CHECK(h.in_dtype() == DType::F16);
  CHECK(h.out_dtype() == DType::F32);
  CHECK(h.dynamic_smem_bytes() == 4 * (128 + 256) * 32 * 2);
  CHECK(parse_gemm_layout("TN") == GemmLayout::TN);
  CHECK(gemm_a_kmajor(GemmLayout::NT));
  CHECK(gemm_b_kmajor(GemmLayout::NT));
  CHECK(!gemm_a_kmajor(GemmLayout::TN));
  CHECK(!gemm_b_kmajor(GemmLayout::NN));
}

TEST_CASE("every gemm validation error names its field") {
  const std::string s = kSgemm, h = kHgemm;
  struct Case {
    std::string text;
    const char* needle;
  } cases[] = {
      {"dgemm,NN", "family"},
      {"", "names no family"},
      {"sgemm,XY", "NN|NT|TN|TT"},
      {with(s, "tile", "96x128x8"), "tile bm"},
      {with(s, "tile", "128x512x8"), "tile bn"},
      {with(s, "tile", "128x128x3"), "tile bk"},
      {with(s, "tile", "128x128"), "AxBxC"},
      {with(s, "warp", "48x32"), "warp wm"},
      {with(s, "warp", "64x512"), "warp wn"},
      {with(s, "thread", "2x4"), "thread tm"},
      {with(s, "thread", "4x16"), "thread tn"},
      {with(s, "wniter", "3"), "wniter"},
      {with(s, "threads", "128"), "threads"},
      {with(s, "threads", "lots"), "threads"},
      {with(s, "stages", "3"), "stages"},
      {with(s, "vec", "8"), "vec"},
      {with(s, "raster", "0"), "raster"},
      {with(s, "swa", "1:1:5"), "M must be >= 2"},
      {with(s, "swa", "2:4:6"), "spans"},
      {with(s, "swa", "1:2:1"), "not compatible with the thread tiling"},
      {with(s, "swa", "3:0:2"), "|S|"},
      {with(s, "swa", "0:1:0"), "0:0:0"},
      {with(s, "swb", "1:2"), "B:M:S"},
      {"sgemm,NN,tile=256x128x8,warp=128x64,wniter=2,thread=8x8,threads=128,stages=2,vec=4,raster=8,swa=0:0:0,swb=0:0:0",
       "accumulators"},
      {"sgemm,NN,tile=128x256x32,warp=64x64,wniter=2,thread=8x8,threads=256,stages=2,vec=4,raster=8,swa=0:0:0,swb=0:0:0",
       "48 KiB"},
      {s + ",colour=red", "unknown field"},
      {s + ",vec=4", "given twice"},
      {"hgemm,f16,NT", "IN>OUT"},
      {"hgemm,f16>f64,NT", "f32|f16|bf16"},
      {with(h, "tile", "128x256x48"), "tile bk"},
      {with(h, "tile", "24x256x32"), "tile bm"},
      {with(h, "warp", "8x64"), "warp wm"},
      {with(h, "warp", "128x128"), "accumulators"},
      {with(h, "stages", "1"), "stages"},
      {with(with(h, "tile", "256x256x64"), "stages", "4"), "227 KiB"},
      {with(h, "vec", "16"), "vec"},
      {with(h, "swa", "2:2:3"), "M must be >= 3"},
      {with(h, "swb", "3:3:9"), "spans"},
      {with(h, "raster", "65"), "raster"},
      {"hgemm,f16>f16,NN,tile=128x128x32,warp=64x64,stages=3,vec=1,raster=8,swa=0:0:0,swb=0:0:0", "copies per thread"},
  };
  for (const auto& c : cases) {
    const std::string e = error_of(c.text);
    CHECK_MESSAGE(e.find(c.needle) != std::string::npos, c.text << " -> " << e);
  }
  // Unsupported dtype pairs are Unsupported, not InvalidArgument, and say what is supported.
  const std::string e = error_of("hgemm,f32>f32,NT,tile=128x128x32,warp=64x64,stages=3,vec=8,raster=8,swa=0:0:0,swb=0:0:0",
                                 ErrorKind::Unsupported);
  CHECK(e.find("f16 or bf16") != std::string::npos);
  try {
    gemm_search_space(DType::F32, DType::F16, GemmLayout::NN);
    FAIL("f32 -> f16 must be unsupported");
  } catch (const Error& err) {
    CHECK(err.kind() == ErrorKind::Unsupported);
    CHECK(std::string(err.what()).find("f32 -> f32") != std::string::npos);
  }
}

TEST_CASE("generated gemm sources are one include and one instantiation") {
  const GemmConfig s = GemmConfig::parse(kSgemm), h = GemmConfig::parse(kHgemm);
  const std::string ss = gemm_source(s), hs = gemm_source(h);
  CHECK(ss.find("#include \"sgemm.cuh\"") != std::string::npos);
  CHECK(hs.find("#include \"hgemm.cuh\"") != std::string::npos);
  CHECK(gemm_name_expression(s) == "swz::tpl::sgemm_kernel<128, 128, 8, 64, 32, 2, 4, 4, 256, 2, 1, 0, 4, 1, 4, 5, 0, 0, 0, 8>");
  CHECK(gemm_name_expression(h) == "swz::tpl::hgemm_kernel<0, 2, 128, 256, 32, 64, 64, 4, 1, 1, 8, 2, 3, 3, 2, 3, 3, 8>");
  for (const std::string& src : {ss, hs}) CHECK(std::count(src.begin(), src.end(), '\n') == 3);
  CHECK(gemm_source_name(s) != gemm_source_name(h));
  GemmReferenceSpec r;
  r.in = DType::BF16;
  r.out = DType::F32;
  r.layout = GemmLayout::TN;
  CHECK(gemm_reference_name_expression(r) == "swz::tpl::gemm_reference_kernel<1, 2, 0, 0, 1>");
  CHECK(gemm_reference_source(r).find("#include \"gemm_reference.cuh\"") != std::string::npos);
  const LaunchShape ls = gemm_launch_shape(h, 1000, 1000, 100000);
  CHECK(ls.grid[0] == 8 * 4);
  CHECK(ls.grid[2] == 65535);
  CHECK(ls.block[0] == 256);
}

TEST_CASE("static analysis: seed 004's transposing store is 2-way conflicted; the chosen swizzle is free") {
  // Seed 004's A tile (BM = 128, BK = 8, float4 loads): lanes write k-rows 0 and 4 of one column -> 2-way.
  GemmConfig c = GemmConfig::parse(with(kSgemm, "swa", "0:0:0"));
  GemmAnalysis a = analyze_gemm(c);
  CHECK(a.excess_of('A') > 0);
  int worst = 0;
  for (const auto& r : a.instrs)
    if (r.name.rfind("A sts", 0) == 0) worst = std::max(worst, r.max_way);
  CHECK(worst == 2);
  CHECK(a.excess_of('B') == 0);  // B is N-contiguous: plain vector stores and reads
  CHECK(gemm_choose_swizzles(c));
  CHECK(c.sgemm.swizzle_a.b > 0);
  CHECK(analyze_gemm(c).excess() == 0);
  // Unswizzled 128-byte rows make every ldmatrix phase hit one bank group: 8-way.
  GemmConfig h = GemmConfig::parse(
      "hgemm,f16>f16,NT,tile=128x128x64,warp=64x32,stages=3,vec=8,raster=8,swa=0:0:0,swb=0:0:0");
  const GemmAnalysis ha = analyze_gemm(h);
  CHECK(ha.excess_of('A') > 0);
  CHECK(ha.excess_of('B') > 0);
  for (const auto& r : ha.instrs)
    if (r.name.find("ldmatrix") != std::string::npos) CHECK(r.max_way == 8);
  CHECK(gemm_choose_swizzles(h));
  CHECK(h.hgemm.swizzle_a == SwizzleSpec{3, 3, 3});  // CuTe's Swizzle<3,3,3> for 64-element rows
  CHECK(analyze_gemm(h).excess() == 0);
  // Every instruction kind is present: cp.async 16-byte stores and ldmatrix (.trans for MN-major).
  const GemmAnalysis tn = analyze_gemm(GemmConfig::parse(
      "hgemm,bf16>bf16,TN,tile=128x128x32,warp=64x32,stages=3,vec=8,raster=8,swa=3:3:4,swb=3:3:4"));
  std::set<std::string> names;
  for (const auto& r : tn.instrs) names.insert(r.name);
  CHECK(names.count("A cp.async.16 tile store"));
  CHECK(names.count("A ldmatrix.x4.trans"));
  CHECK(names.count("B ldmatrix.x4.trans"));
  CHECK(tn.excess() == 0);
}

TEST_CASE("an omitted swa / swb is chosen by the bank analysis; an explicit one is kept") {
  const char* bare = "hgemm,f16>f16,NN,tile=128x256x64,warp=64x64,stages=3,vec=8,raster=8";
  const GemmConfig h = GemmConfig::parse(bare);
  CHECK(h.hgemm.swizzle_a.b > 0);
  CHECK(h.hgemm.swizzle_b.b > 0);
  CHECK(analyze_gemm(h).excess() == 0);
  GemmConfig chosen = GemmConfig::parse(std::string(bare) + ",swa=0:0:0,swb=0:0:0");
  CHECK(analyze_gemm(chosen).excess() > 0);  // explicit "no swizzle" stays unswizzled
  CHECK(gemm_choose_swizzles(chosen));
  CHECK(chosen.to_string() == h.to_string());
  // Only the missing one is chosen.
  const GemmConfig half = GemmConfig::parse(std::string(bare) + ",swa=0:0:0");
  CHECK(half.hgemm.swizzle_a == SwizzleSpec{0, 0, 0});
  CHECK(half.hgemm.swizzle_b == h.hgemm.swizzle_b);
  const GemmConfig s = GemmConfig::parse("sgemm,NN,tile=128x128x8,warp=64x32,wniter=2,thread=4x4,threads=256,stages=2,vec=4,raster=8");
  CHECK(s.sgemm.swizzle_a.b > 0);
  CHECK(analyze_gemm(s).excess() == 0);
}

TEST_CASE("every config of every default gemm space is valid, unique and free of excess wavefronts") {
  for (const auto& pr : kPairs)
    for (GemmLayout l : kLayouts)
      for (int align : {16, 8, 4, 2}) {
        if (align < dtype_bytes(pr.in)) continue;
        const std::vector<GemmConfig> space = gemm_search_space(pr.in, pr.out, l, align);
        const std::string what = to_string(pr.in) + ">" + to_string(pr.out) + " " + to_string(l) + " align " +
                                 std::to_string(align);
        CHECK_MESSAGE(!space.empty(), what);
        if (align == 16) CHECK_MESSAGE((space.size() >= 10 && space.size() <= 30), what << ": " << space.size());
        std::set<std::string> seen;
        for (const GemmConfig& c : space) {
          CHECK(seen.insert(c.to_string()).second);
          CHECK(c.layout() == l);
          CHECK(c.in_dtype() == pr.in);
          CHECK(c.out_dtype() == pr.out);
          CHECK(c.vec_bytes() <= align);
          CHECK(GemmConfig::parse(c.to_string()) == c);
          const GemmAnalysis a = analyze_gemm(c);
          CHECK_MESSAGE(a.excess() == 0, c.to_string());
          CHECK(a.load_instructions > 0);
          CHECK(a.store_instructions > 0);
        }
      }
}

namespace {

// Compiles `configs` for `arch` on all cores; returns failures as text (empty = all good).
std::vector<std::string> compile_all(const std::vector<GemmConfig>& configs, const std::string& arch) {
  std::vector<std::string> failures;
  std::mutex m;
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  const unsigned n = std::max(2u, std::thread::hardware_concurrency());
  for (unsigned t = 0; t < n; ++t)
    pool.emplace_back([&] {
      for (std::size_t i; (i = next++) < configs.size();) {
        const GemmConfig& c = configs[i];
        std::string problem;
        try {
          CompileRequest req;
          req.source = gemm_source(c);
          req.source_name = gemm_source_name(c);
          req.name_expression = gemm_name_expression(c);
          req.arch = arch;
          const CompiledKernel k = compile(req);
          if (k.is_ptx) {
            problem = "PTX fallback (no cubin to inspect)";
          } else {
            const CubinResources r = cubin_resources(k);
            if (r.local_bytes != 0) problem = "local memory (spills) " + std::to_string(r.local_bytes) + " bytes";
            if (r.registers > 255 || r.registers == 0) problem = "registers " + std::to_string(r.registers);
          }
        } catch (const std::exception& e) {
          problem = e.what();
        }
        if (!problem.empty()) {
          std::lock_guard<std::mutex> lock(m);
          failures.push_back(arch + " " + c.to_string() + ": " + problem);
        }
      }
    });
  for (auto& t : pool) t.join();
  return failures;
}

}  // namespace

TEST_CASE("NVRTC compiles the default gemm spaces for sm_90 (all) and sm_80 (a subset) without spills") {
  // sm_90: every configuration of the f32, f16>f16 and bf16>f32 spaces at full alignment, all layouts.
  // sm_80: every fourth of them plus the narrow-vector fallbacks of one layout (CI time: both archs
  // compile the same templates; the subset is deterministic).
  std::vector<GemmConfig> full, subset;
  for (const auto& pr : {DTypePair{DType::F32, DType::F32}, DTypePair{DType::F16, DType::F16},
                         DTypePair{DType::BF16, DType::F32}})
    for (GemmLayout l : kLayouts)
      for (const GemmConfig& c : gemm_search_space(pr.in, pr.out, l, 16)) full.push_back(c);
  for (std::size_t i = 0; i < full.size(); i += 4) subset.push_back(full[i]);
  for (int align : {8, 4, 2})
    for (const GemmConfig& c : gemm_search_space(DType::F16, DType::F16, GemmLayout::TN, align)) subset.push_back(c);
  for (int align : {8, 4})
    for (const GemmConfig& c : gemm_search_space(DType::F32, DType::F32, GemmLayout::NT, align)) subset.push_back(c);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> failures = compile_all(full, "sm_90");
  const auto more = compile_all(subset, "sm_80");
  failures.insert(failures.end(), more.begin(), more.end());
  std::printf("gemm NVRTC: %zu configs for sm_90, %zu for sm_80 in %.1f s\n", full.size(), subset.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  for (const auto& f : failures) FAIL_CHECK(f);
  CHECK(failures.empty());
}

TEST_CASE("NVRTC compiles the reference kernel for every dtype pair and layout") {
  for (const auto& pr : kPairs) {
    GemmReferenceSpec spec;
    spec.in = pr.in;
    spec.out = pr.out;
    spec.layout = pr.in == DType::F32 ? GemmLayout::TT : GemmLayout::NT;
    CompileRequest req;
    req.source = gemm_reference_source(spec);
    req.source_name = gemm_reference_source_name(spec);
    req.name_expression = gemm_reference_name_expression(spec);
    req.arch = "sm_80";
    CHECK_NOTHROW(compile(req));
  }
}

TEST_CASE("GemmConfig::parse: trailing separators and non-decimal numbers are errors (issue 10)") {
  CHECK(error_of(std::string(kSgemm) + ",").find("ends in ','") != std::string::npos);
  CHECK(error_of(with(kHgemm, "tile", "128x256x32x")).find("tile") != std::string::npos);
  CHECK(error_of(with(kHgemm, "swa", "2:3:3:")).find("swa") != std::string::npos);
  CHECK(error_of(with(kHgemm, "stages", "+4")).find("is not an integer") != std::string::npos);
  CHECK(error_of(with(kHgemm, "vec", "0x8")).find("is not an integer") != std::string::npos);
  CHECK(error_of(with(kHgemm, "raster", " 8")).find("is not an integer") != std::string::npos);
  CHECK(error_of(std::string(kHgemm) + ",stages=2").find("given twice") != std::string::npos);
  CHECK(GemmConfig::parse(kHgemm).to_string() == kHgemm);
}
