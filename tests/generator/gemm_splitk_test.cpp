// tests/generator: split-K for both GEMM families — the config field (text, parsing, validation), the f32
// partial-sum instantiation, the slicing of K and the workspace geometry, the launch shape, the split
// variants of the default spaces, the engine's default choice, and NVRTC compiles of the reduction and
// of split configs for sm_80 and sm_90.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/gemm.hpp"
#include "generator/families/gemm/gemm_splitk.hpp"
#include "swzjit/jit.hpp"

using namespace swz;

namespace {

const char* kUnsplit = "hgemm,f16>f16,NT,tile=64x64x32,warp=32x32,stages=4,vec=8,raster=4,swa=2:3:3,swb=2:3:3";

std::string split_text(int split) { return std::string(kUnsplit) + ",split=" + std::to_string(split); }

std::string error_of(const std::string& text) {
  try {
    GemmConfig::parse(text);
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidArgument);
    return e.what();
  }
  return "no error";
}

GemmProblem problem(DType in, DType out, long long m, long long n, long long k) {
  GemmProblem p;
  p.dtype = in;
  p.out_dtype = out;
  p.m = m, p.n = n, p.k = k;
  p.a_order = MatrixOrder::RowMajor;
  p.b_order = MatrixOrder::ColMajor;
  return p;
}

void check_compiles(const CompileRequest& req, const std::string& what) {
  try {
    const CompiledKernel k = compile(req);
    if (!k.is_ptx) {
      const CubinResources r = cubin_resources(k);
      CHECK_MESSAGE(r.local_bytes == 0, what << ": " << r.local_bytes << " bytes of local memory (spills)");
      CHECK_MESSAGE((r.registers > 0 && r.registers <= 255), what << ": registers " << r.registers);
    }
  } catch (const Error& e) {
    FAIL_CHECK(what << ": " << e.what() << "\n" << e.compile_log());
  }
}

}  // namespace

TEST_CASE("split-K config text: printed only when split > 1, parsed back, validated by name") {
  // Unsplit texts (and so their cache keys) are unchanged; split=1 written out parses to the same config.
  const GemmConfig plain = GemmConfig::parse(kUnsplit);
  CHECK(plain.to_string() == kUnsplit);
  CHECK(plain.hgemm.split == 1);
  CHECK(gemm_k_splits(plain) == 1);
  CHECK(GemmConfig::parse(std::string(kUnsplit) + ",split=1") == plain);
  for (int split : {2, 4, 16, 64}) {
    const GemmConfig c = GemmConfig::parse(split_text(split));
    CHECK(c.hgemm.split == split);
    CHECK(gemm_k_splits(c) == split);
    CHECK(c.to_string() == split_text(split));
    CHECK(!(c == plain));
    // The rest of the config is what it was: same dtypes, tiles, shared memory, threads.
    CHECK(c.out_dtype() == DType::F16);
    CHECK(c.dynamic_smem_bytes() == plain.dynamic_smem_bytes());
    CHECK(c.threads() == plain.threads());
  }
  for (const char* bad : {"0", "-2", "65", "1000"}) {
    const std::string e = error_of(std::string(kUnsplit) + ",split=" + bad);
    CHECK_MESSAGE(e.find("split") != std::string::npos, e);
    CHECK_MESSAGE(e.find("[1, 64]") != std::string::npos, e);
  }
  CHECK(error_of(std::string(kUnsplit) + ",split=many").find("split='many' is not an integer") != std::string::npos);
  CHECK(error_of(split_text(4) + ",split=8").find("given twice") != std::string::npos);
  // SGEMM configs take the same field.
  const std::string sg = "sgemm,NN,tile=64x64x16,warp=32x32,wniter=2,thread=4x4,threads=128,stages=2,vec=4,raster=4,"
                         "swa=1:4:5,swb=0:0:0";
  CHECK(GemmConfig::parse(sg).to_string() == sg);
  const GemmConfig sg8 = GemmConfig::parse(sg + ",split=8");
  CHECK(sg8.sgemm.split == 8);
  CHECK(gemm_k_splits(sg8) == 8);
  CHECK(sg8.to_string() == sg + ",split=8");
  CHECK(gemm_k_slice(sg8, 4100) == 528);  // ceil(4100 / 8) = 513 -> a multiple of bk = 16 (this config's)
  // The split kernel takes its k-slice from the launch (SPLIT = 1); unsplit configs keep the default.
  CHECK(gemm_name_expression(sg8) == gemm_name_expression(GemmConfig::parse(sg)).substr(0, gemm_name_expression(GemmConfig::parse(sg)).size() - 1) + ", 1>");
  CHECK(gemm_name_expression(GemmConfig::parse(sg + ",split=4")) == gemm_name_expression(sg8));
  CHECK(error_of(sg + ",split=65").find("[1, 64]") != std::string::npos);
}

TEST_CASE("split-K instantiation: the HGEMM writes f32 partials; the reduction converts") {
  const GemmConfig plain = GemmConfig::parse(kUnsplit), split = GemmConfig::parse(split_text(8));
  // Template argument 2 is OUT_KIND: f16 (0) unsplit, f32 (2) for the partial sums.
  CHECK(gemm_name_expression(plain) == "swz::tpl::hgemm_kernel<0, 0, 64, 64, 32, 32, 32, 4, 1, 1, 8, 2, 3, 3, 2, 3, 3, 4>");
  CHECK(gemm_name_expression(split) == "swz::tpl::hgemm_kernel<0, 2, 64, 64, 32, 32, 32, 4, 1, 1, 8, 2, 3, 3, 2, 3, 3, 4>");
  CHECK(gemm_source(split).find("#include \"hgemm.cuh\"") != std::string::npos);
  CHECK(gemm_source(split).find("split=8") != std::string::npos);  // the config in the header comment
  CHECK(gemm_source_name(split) != gemm_source_name(plain));
  // Splits 4 and 8 share one kernel: the slicing is a launch parameter.
  CHECK(gemm_name_expression(GemmConfig::parse(split_text(4))) == gemm_name_expression(split));

  CHECK(gemm_splitk_reduce_name_expression(DType::F16) == "swz::tpl::gemm_splitk_reduce_kernel<0>");
  CHECK(gemm_splitk_reduce_name_expression(DType::BF16) == "swz::tpl::gemm_splitk_reduce_kernel<1>");
  CHECK(gemm_splitk_reduce_name_expression(DType::F32) == "swz::tpl::gemm_splitk_reduce_kernel<2>");
  const std::string src = gemm_splitk_reduce_source(DType::BF16);
  CHECK(src.find("#include \"gemm_splitk.cuh\"") != std::string::npos);
  CHECK(src.find("template __global__ void swz::tpl::gemm_splitk_reduce_kernel<1>(") != std::string::npos);
  CHECK(gemm_splitk_reduce_source_name(DType::F16) != gemm_splitk_reduce_source_name(DType::BF16));
}

TEST_CASE("split-K slicing, workspace geometry and launch shapes") {
  const GemmConfig plain = GemmConfig::parse(kUnsplit);
  const GemmConfig s16 = GemmConfig::parse(split_text(16)), s4 = GemmConfig::parse(split_text(4));
  // k_slice = ceil(K / splits) rounded up to bk (32), at least one k-tile; unsplit: 0.
  CHECK(gemm_k_slice(plain, 4100) == 0);
  CHECK(gemm_k_slice(s16, 4100) == 288);  // ceil(4100 / 16) = 257 -> 288; 15 slices cover K
  CHECK(gemm_k_slice(s16, 4096) == 256);
  CHECK(gemm_k_slice(s4, 40) == 32);      // slices [0, 32), [32, 40), then two empty ones
  CHECK(gemm_k_slice(s4, 1) == 32);
  CHECK(gemm_k_slice(s4, 0) == 32);
  CHECK(gemm_k_slice(s4, 2147483647LL) % 32 == 0);
  for (long long k : {1LL, 31LL, 97LL, 1000LL, 4100LL, 65537LL})
    for (const GemmConfig* c : {&s4, &s16}) {
      const long long slice = gemm_k_slice(*c, k);
      CHECK(slice % c->hgemm.bk == 0);
      CHECK(slice * gemm_k_splits(*c) >= k);  // the slices cover K
    }
  // Workspace rows padded to 4 floats (16 bytes).
  CHECK(gemm_splitk_workspace_ld(129) == 132);
  CHECK(gemm_splitk_workspace_ld(128) == 128);
  CHECK(gemm_splitk_workspace_ld(1) == 4);
  CHECK(gemm_splitk_workspace_stride(127, 129) == 127 * 132);

  // Grid z = matrices x splits, at most 65535: a launch covers 65535 / splits matrices.
  CHECK(gemm_max_batch_per_launch(plain) == 65535);
  CHECK(gemm_max_batch_per_launch(s16) == 65535 / 16);
  LaunchShape ls = gemm_launch_shape(s16, 127, 129, 1);
  CHECK(ls.grid[0] == 2 * 3);
  CHECK(ls.grid[1] == 1);
  CHECK(ls.grid[2] == 16);
  CHECK(ls.block[0] == 128);
  CHECK(gemm_launch_shape(s16, 127, 129, 3).grid[2] == 48);
  CHECK(gemm_launch_shape(s16, 127, 129, 100000).grid[2] == (65535 / 16) * 16);
  CHECK(gemm_launch_shape(s16, 127, 129, 100000).grid[2] <= 65535);
  CHECK(gemm_launch_shape(plain, 127, 129, 3).grid[2] == 3);
  // The reduction: one thread per 4 columns of a row, grid-stride beyond 2^20 blocks.
  const LaunchShape rs = gemm_splitk_reduce_launch_shape(127, 129, 3);
  CHECK(rs.block[0] == 256);
  CHECK(rs.grid[0] == (3 * 127 * 33 + 255) / 256);
  CHECK(gemm_splitk_reduce_launch_shape(1, 1, 1).grid[0] == 1);
  CHECK(gemm_splitk_reduce_launch_shape(1LL << 20, 1LL << 16, 1).grid[0] == (1u << 20));
}

TEST_CASE("split-K in the default spaces and in the engine's default choice") {
  for (DType in : {DType::F16, DType::BF16})
    for (DType out : {in, DType::F32})
      for (GemmLayout l : {GemmLayout::NN, GemmLayout::NT, GemmLayout::TN, GemmLayout::TT}) {
        int found = 0;
        for (const GemmConfig& c : gemm_search_space(in, out, l, 16))
          if (gemm_k_splits(c) > 1) {
            ++found;
            CHECK(c.hgemm.bm == 64);
            CHECK(c.hgemm.bn == 64);
            CHECK(analyze_gemm(c).excess() == 0);
            CHECK(GemmConfig::parse(c.to_string()) == c);
          }
        CHECK_MESSAGE(found == 4, to_string(in) << ">" << to_string(out) << " " << to_string(l));
        // Narrow copies (misaligned calls) keep their split variants too.
        for (int align : {8, 4, 2}) {
          int narrow = 0;
          for (const GemmConfig& c : gemm_search_space(in, out, l, align)) narrow += gemm_k_splits(c) > 1 ? 1 : 0;
          CHECK_MESSAGE(narrow == 4, to_string(in) << ">" << to_string(out) << " " << to_string(l) << " align " << align);
        }
      }
  // SGEMM spaces: the same four splits of a 64x64 tile, at every alignment.
  for (GemmLayout l : {GemmLayout::NN, GemmLayout::NT, GemmLayout::TN, GemmLayout::TT})
    for (int align : {16, 8, 4}) {
      int found = 0;
      for (const GemmConfig& c : gemm_search_space(DType::F32, DType::F32, l, align))
        if (gemm_k_splits(c) > 1) {
          ++found;
          CHECK(c.sgemm.bm == 64);
          CHECK(c.sgemm.bn == 64);
          CHECK(analyze_gemm(c).excess() == 0);
          CHECK(GemmConfig::parse(c.to_string()) == c);
        }
      CHECK_MESSAGE(found == 4, to_string(l) << " align " << align);
    }

  // The benchmark shape: 6 tiles of 64x64 for 132 SMs, K = 4100 -> 32 slices (192 blocks, 160 k each).
  const GemmConfig d = default_gemm_config(problem(DType::F16, DType::F16, 127, 129, 4100), 16);
  CHECK(gemm_k_splits(d) == 32);
  CHECK(d.hgemm.bm == 64);
  CHECK(d.out_dtype() == DType::F16);
  CHECK(gemm_k_splits(default_gemm_config(problem(DType::BF16, DType::F32, 127, 129, 4100), 16)) == 32);
  // 20 tiles: 32 or 16 slices would be 640 / 320 blocks (> 2 waves): 8.
  CHECK(gemm_k_splits(default_gemm_config(problem(DType::F16, DType::F16, 256, 320, 4096), 16)) == 8);
  // K = 1500: 32 or 16 slices would be under 128 deep: 8.
  CHECK(gemm_k_splits(default_gemm_config(problem(DType::F16, DType::F16, 127, 129, 1500), 16)) == 8);
  // Short K or big M x N: no split; f32 splits like the 16-bit types.
  CHECK(gemm_k_splits(default_gemm_config(problem(DType::F16, DType::F16, 127, 129, 1000), 16)) == 1);
  CHECK(gemm_k_splits(default_gemm_config(problem(DType::F16, DType::F16, 4096, 4096, 4096), 16)) == 1);
  const GemmConfig f32d = default_gemm_config(problem(DType::F32, DType::F32, 127, 129, 4100), 16);
  CHECK(gemm_k_splits(f32d) == 32);
  CHECK(f32d.kind == GemmKernelKind::Sgemm);
  CHECK(gemm_k_splits(default_gemm_config(problem(DType::F32, DType::F32, 4096, 4096, 4096), 16)) == 1);
  // A batch fills the GPU by itself.
  GemmProblem batched = problem(DType::F16, DType::F16, 127, 129, 4100);
  batched.batch = 64;
  CHECK(gemm_k_splits(default_gemm_config(batched, 16)) == 1);
}

TEST_CASE("NVRTC compiles the split-K reduction and split configs for sm_80 and sm_90 without spills") {
  for (const char* arch : {"sm_80", "sm_90"}) {
    for (DType out : {DType::F16, DType::BF16, DType::F32}) {
      CompileRequest req;
      req.source = gemm_splitk_reduce_source(out);
      req.source_name = gemm_splitk_reduce_source_name(out);
      req.name_expression = gemm_splitk_reduce_name_expression(out);
      req.arch = arch;
      check_compiles(req, std::string(arch) + " reduction " + to_string(out));
    }
    // The engine's defaults for the benchmark shape (f16 and f32) and a bf16 > f32 MN-major split config.
    std::vector<GemmConfig> configs = {default_gemm_config(problem(DType::F16, DType::F16, 127, 129, 4100), 16),
                                       default_gemm_config(problem(DType::F32, DType::F32, 127, 129, 4100), 16)};
    for (const GemmConfig& c : gemm_search_space(DType::BF16, DType::F32, GemmLayout::TN, 16))
      if (gemm_k_splits(c) > 1) {
        configs.push_back(c);
        break;
      }
    REQUIRE(configs.size() == 3);
    for (const GemmConfig& c : configs) {
      REQUIRE(gemm_k_splits(c) > 1);
      CompileRequest req;
      req.source = gemm_source(c);
      req.source_name = gemm_source_name(c);
      req.name_expression = gemm_name_expression(c);
      req.arch = arch;
      check_compiles(req, std::string(arch) + " " + c.to_string());
    }
  }
}
