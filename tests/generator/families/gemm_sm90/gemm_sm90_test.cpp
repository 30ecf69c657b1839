// tests/generator/families/gemm_sm90 (CPU suite): the Hopper GEMM's host side without a GPU -- config text
// round trip and validation, source and name expression, launch shape, the problem checks that send
// TMA-incompatible problems back to the mma.sync family, and NVRTC compiles of the default configs for
// sm_90a with ptxas's report: no local memory, no ignored setmaxnreg (C7508), no serialized wgmma (C7510).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <vector>

#include "generator/families/gemm/gemm_splitk.hpp"
#include "generator/families/gemm_sm90/gemm_sm90.hpp"
#include "generator/families/gemm_sm90/gemm_sm90_analysis.hpp"
#include "generator/families/gemm_sm90/gemm_sm90_space.hpp"
#include "swzjit/error.hpp"
#include "swzjit/jit.hpp"

using namespace swz;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The message of the swz::Error of `kind` that `f` throws ("" when it throws nothing or something else).
template <class F> std::string error_of(ErrorKind kind, F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind() == kind ? std::string(e.what()) : std::string();
  }
  return std::string();
}

GemmProblem nt_problem(DType in, DType out, long long m, long long n, long long k) {
  GemmProblem p;
  p.dtype = in;
  p.out_dtype = out;
  p.m = m, p.n = n, p.k = k;
  p.a_order = MatrixOrder::RowMajor;
  p.b_order = MatrixOrder::ColMajor;
  p.c_order = MatrixOrder::RowMajor;
  return p;
}

// As nt_problem in `layout` ("NT", "NN", "TN" or "TT": A then B, N row-major, T column-major), resolved.
GemmProblem layout_problem(const std::string& layout, DType in, DType out, long long m, long long n, long long k) {
  GemmProblem p = nt_problem(in, out, m, n, k);
  p.a_order = layout[0] == 'N' ? MatrixOrder::RowMajor : MatrixOrder::ColMajor;
  p.b_order = layout[1] == 'N' ? MatrixOrder::RowMajor : MatrixOrder::ColMajor;
  return p.resolved();
}

}  // namespace

TEST_CASE("gemm_sm90: config text round trip") {
  Sm90GemmConfig c;
  CHECK(c.to_string() == "in=f16,out=f16,layout=NT,bn=256,stages=4,raster=8,persistent=1,inflight=1,cluster=1");
  CHECK(Sm90GemmConfig::parse(c.to_string()) == c);
  c.in = DType::BF16, c.out = DType::F32, c.bn = 128, c.stages = 6, c.raster = 1, c.persistent = false, c.inflight = 0, c.cluster = 2;
  const std::string text = c.to_string();
  CHECK(text == "in=bf16,out=f32,layout=NT,bn=128,stages=6,raster=1,persistent=0,inflight=0,cluster=2");
  const Sm90GemmConfig back = Sm90GemmConfig::parse(text);
  CHECK(back.in == DType::BF16);
  CHECK(back.out == DType::F32);
  CHECK(back.bn == 128);
  CHECK(back.stages == 6);
  CHECK(back.raster == 1);
  CHECK_FALSE(back.persistent);
  CHECK(back.inflight == 0);
  CHECK(back.cluster == 2);
  // Fields may come in any order and be left out (defaults).
  CHECK(Sm90GemmConfig::parse("stages=3, in=bf16").to_string() ==
        "in=bf16,out=f16,layout=NT,bn=256,stages=3,raster=8,persistent=1,inflight=1,cluster=1");
  for (const char* l : {"NT", "NN", "TN", "TT"}) {
    CAPTURE(l);
    const Sm90GemmConfig lc = Sm90GemmConfig::parse(std::string("layout=") + l + ",bn=128,stages=6");
    CHECK(lc.layout == l);
    CHECK(lc.a_mn_major() == (l[0] == 'T'));
    CHECK(lc.b_mn_major() == (l[1] == 'N'));
    CHECK(Sm90GemmConfig::parse(lc.to_string()) == lc);
    CHECK(contains(lc.to_string(), std::string(",layout=") + l + ","));
  }
  // The TMA-store epilogue: printed only when on, so texts without the field keep their meaning.
  const Sm90GemmConfig te = Sm90GemmConfig::parse("epilogue=tma,bn=128,stages=6");
  CHECK(te.tma_epilogue);
  CHECK(te.to_string() == "in=f16,out=f16,layout=NT,bn=128,stages=6,raster=8,persistent=1,inflight=1,cluster=1,epilogue=tma");
  CHECK(Sm90GemmConfig::parse(te.to_string()) == te);
  CHECK_FALSE(Sm90GemmConfig::parse("epilogue=regs").tma_epilogue);
  CHECK(Sm90GemmConfig::parse("epilogue=regs") == Sm90GemmConfig());
}

TEST_CASE("gemm_sm90: validation names the field") {
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("bn=200"); }), "bn=200"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("bn=16"); }), "multiple of 16 in 32..256"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("bn=272,stages=2"); }), "bn=272"));
  // Widths between the powers of two: one CTA a tile, K whole, the roles as they are.
  CHECK_NOTHROW(Sm90GemmConfig::parse("bn=192,stages=4,epilogue=tma"));
  CHECK_NOTHROW(Sm90GemmConfig::parse("bn=96,stages=8"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("bn=96,stages=8,cluster=2"); }),
                 "takes cluster=1"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("bn=96,stages=8,splits=2,reduce=cluster"); }),
                 "takes splits=1"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("bn=176,stages=5,splits=3"); }),
                 "takes splits=1"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("bn=176,stages=5,tail=4"); }), "takes tail=1"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("bn=48,stages=8,swap=1"); }), "takes swap=0"));
  // An N-contiguous B comes in 64-wide boxes: 192 fits, 224 does not.
  CHECK_NOTHROW(Sm90GemmConfig::parse("layout=NN,bn=192,stages=4,epilogue=tma"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("layout=TN,bn=224,stages=5"); }),
                 "a multiple of 64"));
  // The C chunks of the TMA-store epilogue: 64, 32 or 16 columns of 16-bit C (any width), 32 of f32.
  CHECK_NOTHROW(Sm90GemmConfig::parse("bn=96,stages=6,epilogue=tma"));
  CHECK_NOTHROW(Sm90GemmConfig::parse("in=bf16,out=bf16,bn=112,stages=6,epilogue=tma"));
  CHECK_NOTHROW(Sm90GemmConfig::parse("bn=48,stages=8,epilogue=tma"));
  CHECK_NOTHROW(Sm90GemmConfig::parse("out=f32,bn=96,stages=6,epilogue=tma"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("out=f32,bn=112,stages=6,epilogue=tma"); }),
                 "f32 C in chunks of 32 columns, which bn=112 is not a multiple of; use epilogue=regs or a bn that is a multiple of 32"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("stages=5"); }), "stages <= 4"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("bn=128,stages=8"); }), "stages <= 7"));
  CHECK_NOTHROW(Sm90GemmConfig::parse("bn=128,stages=7"));
  // The C buffers of the TMA-store epilogue take 32 KiB: one stage fewer for bn 128, still 4 for bn 256.
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("bn=128,stages=7,epilogue=tma"); }),
                 "stages <= 6"));
  CHECK_NOTHROW(Sm90GemmConfig::parse("bn=256,stages=4,epilogue=tma"));
  // Narrower chunks, smaller buffers (4 chunk buffers of 64 rows x 128, 64 or 32 bytes): a stage more for bn 80,
  // 96, 112, 144, 208 than with 32 KiB.
  CHECK(tpl::sm90_c_buffer_bytes(256, 2) == 32768);
  CHECK(tpl::sm90_c_buffer_bytes(96, 2) == 16384);
  CHECK(tpl::sm90_c_buffer_bytes(112, 2) == 8192);
  CHECK(tpl::sm90_c_buffer_bytes(96, 4) == 32768);
  CHECK(gemm_sm90_smem_bytes(Sm90GemmConfig::parse("bn=96,stages=7,epilogue=tma")) ==
        gemm_sm90_smem_bytes(Sm90GemmConfig::parse("bn=96,stages=7")) + 16384);
  CHECK_NOTHROW(Sm90GemmConfig::parse("bn=96,stages=7,epilogue=tma"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("bn=96,stages=8,epilogue=tma"); }),
                 "stages <= 7"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("out=f32,bn=96,stages=7,epilogue=tma"); }),
                 "stages <= 6"));
  for (const auto& bn_most : std::vector<std::array<int, 2>>{{80, 8}, {96, 7}, {112, 7}, {144, 6}, {176, 5}, {208, 5}, {224, 4}}) {
    CAPTURE(bn_most[0]);
    Sm90GemmConfig c = Sm90GemmConfig::parse("epilogue=tma");
    c.bn = bn_most[0];
    CHECK(gemm_sm90_max_stages(c) == bn_most[1]);
  }
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("epilogue=smem"); }), "epilogue=smem"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("stages=1"); }), "stages=1"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("raster=65"); }), "raster=65"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("in=f32"); }), "in=f32"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("layout=NX"); }), "layout=NX"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("layout=nt"); }), "layout=nt"));
  Sm90GemmConfig bad_layout;
  bad_layout.layout = "N";
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [&] { bad_layout.validate(); }), "NT, NN, TN or TT"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("tile=128"); }), "'tile'"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("persistent=2"); }), "persistent"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("bn=x"); }), "bn"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("inflight=2"); }), "inflight"));
  Sm90GemmConfig bad;
  bad.inflight = 3;
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [&] { bad.validate(); }), "inflight=3"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("cluster=4"); }), "cluster"));
  Sm90GemmConfig bad_cluster;
  bad_cluster.cluster = 0;
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [&] { bad_cluster.validate(); }), "cluster=0"));
}

TEST_CASE("gemm_sm90: source, name expression, shared memory, launch shape") {
  Sm90GemmConfig c;
  CHECK(gemm_sm90_name_expression(c) == "swz::tpl::gemm_sm90_kernel<0, 0, 256, 4, 8, 1, 0, 0, 0>");
  Sm90GemmConfig pair = c;
  pair.cluster = 2;
  CHECK(gemm_sm90_name_expression(pair) == "swz::tpl::gemm_sm90_cluster2_kernel<0, 0, 256, 4, 8, 1, 0, 0, 0>");
  Sm90GemmConfig tn = c;
  tn.layout = "TN";  // A M-contiguous and B N-contiguous: both transposed
  CHECK(gemm_sm90_name_expression(tn) == "swz::tpl::gemm_sm90_kernel<0, 0, 256, 4, 8, 1, 1, 1, 0>");
  tn.layout = "NN";
  CHECK(gemm_sm90_name_expression(tn) == "swz::tpl::gemm_sm90_kernel<0, 0, 256, 4, 8, 1, 0, 1, 0>");
  tn.layout = "TT";
  CHECK(gemm_sm90_name_expression(tn) == "swz::tpl::gemm_sm90_kernel<0, 0, 256, 4, 8, 1, 1, 0, 0>");
  tn.tma_epilogue = true;
  CHECK(gemm_sm90_name_expression(tn) == "swz::tpl::gemm_sm90_kernel<0, 0, 256, 4, 8, 1, 1, 0, 1>");
  CHECK(gemm_sm90_smem_bytes(tn) == 4 * 49152 + 32768 + 64 + 1024);  // + the C buffers: 2 x 2 x 8 KiB
  CHECK(contains(gemm_sm90_source(pair), gemm_sm90_name_expression(pair)));
  CHECK(contains(gemm_sm90_source(c), "#include \"gemm_sm90.cuh\""));
  CHECK(contains(gemm_sm90_source(c), gemm_sm90_name_expression(c)));
  CHECK(gemm_sm90_compile_request(c).arch == "sm_90a");
  // 4 stages of (128 + 256) x 64 x 2 bytes, barriers, 1024 bytes of alignment slack.
  CHECK(gemm_sm90_smem_bytes(c) == 4 * 49152 + 64 + 1024);
  CHECK(gemm_sm90_smem_bytes(c) <= tpl::kSm90MaxSmem);

  const LaunchShape s = gemm_sm90_launch_shape(c, 4096, 4096, 4096, 132);
  CHECK(s.grid[0] == 128);  // 32 x 16 = 512 tiles, persistent: 4 waves of 132 SMs, 128 CTAs of 4 tiles each
  CHECK(s.block[0] == 384);
  c.persistent = false;
  CHECK(gemm_sm90_launch_shape(c, 4096, 4096, 4096, 132).grid[0] == 512);
  CHECK(gemm_sm90_launch_shape(c, 127, 257, 4096, 132).grid[0] == 2);  // 1 x 2 tiles
  CHECK(gemm_sm90_launch_shape(c, 0, 257, 4096, 132).grid[0] == 1);
  // Clusters of two: 3 tile rows make 2 cluster rows; the grid is a whole number of clusters.
  c.cluster = 2;
  CHECK(gemm_sm90_launch_shape(c, 300, 257, 4096, 132).grid[0] == 2 * 2 * 2);
  c.persistent = true;
  // 256 cluster tiles in 4 waves of 66 (65 on 131 SMs): 64 clusters of 4.
  CHECK(gemm_sm90_launch_shape(c, 4096, 4096, 4096, 132).grid[0] == 128);
  CHECK(gemm_sm90_launch_shape(c, 4096, 4096, 4096, 131).grid[0] == 128);
  CHECK(gemm_sm90_launch_shape(c, 4096, 4096, 4096, 100).grid[0] == 2 * 43);  // 6 waves of 50: 43 clusters
  CHECK(gemm_sm90_launch_shape(c, 1024, 4096, 4096, 132).grid[0] == 2 * 64);  // one wave: a cluster a tile
  CHECK(gemm_sm90_launch_shape(c, 127, 100, 4096, 132).grid[0] == 2);
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [&] { gemm_sm90_launch_shape(c, -1, 1, 4096, 132); }), "m -1"));
}

TEST_CASE("gemm_sm90: with much DRAM bandwidth per SM, one matrix of 65..384 rows takes the narrowest tiles that fill one wave") {
  const int h200 = 4814, h100 = 3352;  // GB/s: 36.5 and 25.4 per SM of 132
  struct Want {
    long long m, n, k;
    int bn;
  };
  // Where 128-wide tiles spill past the wave (256 x 11008: 172 of them, a wave and 40) and where they fill half
  // to one wave (128 x 11008: 86): the narrowest multiple of 16 whose tiles fit one wave (256 x 11008: 126 of
  // 176; 128 x 11008: 115 of 96), with the TMA epilogue in chunks of 64, 32 or 16 columns.
  for (const Want w : {Want{256, 11008, 4096, 176}, Want{192, 11008, 4096, 176}, Want{256, 12288, 4096, 192},
                       Want{256, 11008, 14336, 176}, Want{256, 14336, 4096, 224}, Want{384, 11008, 4096, 256},
                       Want{128, 28672, 4096, 224}, Want{256, 9216, 4096, 144}, Want{192, 14336, 4096, 224},
                       Want{128, 9216, 4096, 80}, Want{128, 10240, 4096, 80}, Want{256, 5120, 4096, 80},
                       Want{128, 11008, 4096, 96}, Want{128, 12288, 4096, 96}, Want{128, 11008, 14336, 96}}) {
    for (const DType t : {DType::F16, DType::BF16}) {
      const GemmProblem p = nt_problem(t, t, w.m, w.n, w.k);
      const Sm90GemmConfig c = choose_sm90_gemm_config(p, 132, h200);
      CAPTURE(c.to_string());
      CHECK(c.bn == w.bn);
      CHECK(c.tma_epilogue);
      CHECK(c.cluster == 1);
      CHECK(c.splits == 1);
      CHECK(c.tail == 1);
      CHECK(c.stages == gemm_sm90_max_stages(c));
      CHECK_NOTHROW(c.validate());
      CHECK(gemm_sm90_launch_shape(c, w.m, w.n, w.k, 132).grid[0] <= 132);  // one wave
      CHECK((w.m + 127) / 128 * ((w.n + c.bn - 17) / (c.bn - 16)) > 132);  // 16 narrower spills past it
      // The H100 (its rules unmeasured for this) keeps 128-wide tiles.
      CHECK(choose_sm90_gemm_config(p, 132, h100).bn == 128);
      CHECK(choose_sm90_gemm_config(p, 132, 0).bn == 128);
    }
  }
  // f32 C takes multiples of 32 (its chunks are 32 columns): 256 x 11008 on 192, 128 x 11008 on 96.
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F32, 256, 11008, 4096), 132, h200).bn == 192);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::BF16, DType::F32, 128, 11008, 4096), 132, h200).bn == 96);
  // An N-contiguous B (NN, TN) comes in 64-wide boxes: 192; TT's B is K-contiguous: 176. A column-major C runs
  // C^T (the frame's M is the problem's N).
  for (const char* layout : {"NN", "TN", "TT"}) {
    const GemmProblem p = layout_problem(layout, DType::F16, DType::F16, 256, 11008, 4096);
    CAPTURE(layout);
    CHECK(choose_sm90_gemm_config(p, 132, h200).bn == (layout[1] == 'N' ? 192 : 176));
  }
  GemmProblem col = nt_problem(DType::F16, DType::F16, 11008, 256, 4096);
  col.c_order = MatrixOrder::ColMajor;
  CHECK(choose_sm90_gemm_config(col.resolved(), 132, h200).bn == 176);
  // Only as measured: one matrix of 65..384 rows. A batch, M <= 64 (whose stages shrink to M's rows), squarer
  // shapes with fewer 128 x 256 tiles than SMs (1024 x 4096, 2048 x 2048: two waves of 128 x 128), and 128-wide
  // tiles that fill at most half a wave (128 x 8192: 64; 128 x 4096 splits K instead) keep their widths.
  GemmProblem two = nt_problem(DType::BF16, DType::BF16, 128, 11008, 4096);
  two.batch = 2;
  CHECK(choose_sm90_gemm_config(two.resolved(), 132, h200).bn == 128);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 64, 24576, 4096), 132, h200).bn == 128);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 1024, 4096, 4096), 132, h200).bn == 128);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 2048, 2048, 4096), 132, h200).bn == 128);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 512, 8192, 4096), 132, h200).bn == 128);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 128, 8192, 4096), 132, h200).bn_pow2());
  CHECK(sm90_wave_space(nt_problem(DType::F16, DType::F16, 128, 8192, 4096), 132).empty());
  // Nor where 128-wide tiles fill more than 80% of the wave (128 x 14336: 112 of 132; 128 x 13568: 106), though
  // the tuner's wave space still holds the narrower widths there; 128 x 13440 (105 tiles) narrows (to 112).
  for (const long long n : {14336LL, 13568LL}) {
    const GemmProblem p = nt_problem(DType::F16, DType::F16, 128, n, 4096);
    CHECK(choose_sm90_gemm_config(p, 132, h200) == choose_sm90_gemm_config(p, 132, h100));
    CHECK_FALSE(sm90_wave_space(p, 132).empty());
  }
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 128, 13440, 4096), 132, h200).bn == 112);
  // The LLM shapes: on the H100 every one keeps a power-of-two width; on the H200 one is in the rule's
  // reach (128 x 11008, above), and it and 128 x 14336 have a wave space.
  for (const long long m : {16LL, 128LL, 2048LL, 8192LL})
    for (const auto& nk : {std::array<long long, 2>{4096, 4096}, std::array<long long, 2>{14336, 4096},
                           std::array<long long, 2>{4096, 14336}, std::array<long long, 2>{11008, 4096}}) {
      const GemmProblem p = nt_problem(DType::F16, DType::F16, m, nk[0], nk[1]);
      const bool space = m == 128 && nk[1] == 4096 && nk[0] > 4096;  // (M = 16 has its swapped space instead)
      const bool reach = space && nk[0] == 11008;
      CAPTURE(m);
      CAPTURE(nk[0]);
      CAPTURE(nk[1]);
      CHECK(choose_sm90_gemm_config(p, 132, h100).bn_pow2());
      CHECK(choose_sm90_gemm_config(p, 132, h200).bn_pow2() == !reach);
      CHECK(sm90_wave_space(p, 132).empty() == !space);
    }
  // The width helper: 2 tile rows x 11008 columns fit 132 SMs from 176 (multiples of 16) or 192 (of 64); 4 rows
  // never fit (172 tiles of 256). Its step: 16 for 16-bit C, 32 for f32 C, 64 for an N-contiguous B.
  CHECK(gemm_sm90_wave_width(2, 11008, 132, 16) == 176);
  CHECK(gemm_sm90_wave_width(2, 11008, 132, 32) == 192);
  CHECK(gemm_sm90_wave_width(2, 11008, 132, 64) == 192);
  CHECK(gemm_sm90_wave_width(1, 4096, 132, 16) == 32);
  CHECK(gemm_sm90_wave_width(4, 11008, 132, 16) == 0);
  CHECK(gemm_sm90_wave_step(Sm90GemmConfig::parse("in=f16,out=f16,layout=NT")) == 16);
  CHECK(gemm_sm90_wave_step(Sm90GemmConfig::parse("in=bf16,out=bf16,layout=TT")) == 16);
  CHECK(gemm_sm90_wave_step(Sm90GemmConfig::parse("in=f16,out=f32,layout=NT")) == 32);
  CHECK(gemm_sm90_wave_step(Sm90GemmConfig::parse("in=f16,out=f16,layout=NN")) == 64);
  // The tuner's widths of one wave, all through TMA: the narrowest (176: 63 tiles a row) at its deepest ring and
  // one stage less, the next two multiples of 16, the narrowest of 64 (192), 128 and 256.
  const std::vector<Sm90GemmConfig> wave = sm90_wave_space(nt_problem(DType::F16, DType::F16, 256, 11008, 4096), 132);
  std::set<std::string> texts;
  for (const Sm90GemmConfig& c : wave) {
    CHECK_NOTHROW(c.validate());
    CHECK(c.tma_epilogue);
    if (c.bn != 128) CHECK(gemm_sm90_launch_shape(c, 256, 11008, 4096, 132).grid[0] <= 132);
    texts.insert(c.to_string());
  }
  const std::string head = "in=f16,out=f16,layout=NT,", tail = ",raster=8,persistent=1,inflight=1,cluster=1,epilogue=tma";
  for (const char* bn_stages : {"bn=176,stages=5", "bn=176,stages=4", "bn=192,stages=4", "bn=208,stages=5",
                                "bn=128,stages=6", "bn=256,stages=4"}) {
    const std::string text = head + bn_stages + tail;
    CAPTURE(text);
    CHECK(texts.count(text) == 1);
  }
  CHECK(wave.size() == 6);
  // An N-contiguous B keeps to multiples of 64; the tune's space holds the wave's widths beside the rest, the
  // default first.
  GemmProblem nn = nt_problem(DType::F16, DType::F16, 256, 11008, 4096);
  nn.b_order = MatrixOrder::RowMajor;
  for (const Sm90GemmConfig& c : sm90_wave_space(nn.resolved(), 132)) CHECK(c.bn % 64 == 0);
  const std::vector<Sm90GemmConfig> tune = sm90_device_space(nt_problem(DType::F16, DType::F16, 256, 11008, 4096), 132, h200);
  CHECK(tune.front().bn == 176);
  for (const Sm90GemmConfig& c : wave) CHECK(std::find(tune.begin(), tune.end(), c) != tune.end());
}

TEST_CASE("gemm_sm90: the persistent grid takes the fewest waves the SMs allow, and spreads them evenly") {
  // Units (cluster tiles x K slices x matrices) against the grid's clusters, for shapes, SM counts and
  // configs: never more clusters than units or than the SMs hold; no more waves than with every SM busy;
  // and (but for the tail) no cluster more than those waves need, so each runs the same number of units or
  // one fewer.
  int checked = 0;
  for (const char* text : {"in=f16,out=f16", "in=f16,out=f16,cluster=2", "in=bf16,out=bf16,bn=128,stages=6,splits=3",
                           "in=bf16,out=bf16,bn=64,stages=9,cluster=2", "in=f16,out=f16,tail=4,epilogue=tma"}) {
    const Sm90GemmConfig c = Sm90GemmConfig::parse(text);
    for (const long long m : {1LL, 129LL, 1000LL, 2048LL, 4100LL})
      for (const long long n : {64LL, 1000LL, 4096LL, 11008LL})
        for (const int sms : {1, 7, 78, 114, 132}) {
          const long long rows = (m + gemm_sm90_tile_rows(c) - 1) / gemm_sm90_tile_rows(c);
          long long units = (rows + c.cluster - 1) / c.cluster * ((n + c.bn - 1) / c.bn) * gemm_sm90_k_splits(c, 4096);
          const Sm90TailPlan plan = gemm_sm90_tail_plan(c, m, n, 4096, 1, sms);
          if (c.uses_tail()) units = plan.dp_tiles + plan.tail_tiles * plan.slices;
          const long long slots = std::max(1, sms / c.cluster);
          const long long clusters = gemm_sm90_launch_shape(c, m, n, 4096, sms).grid[0] / c.cluster;
          INFO(text << " " << m << " x " << n << " on " << sms << " SMs: " << units << " units, " << clusters << " clusters");
          CHECK(clusters >= 1);
          CHECK(clusters <= std::min(units, slots));
          CHECK((units + clusters - 1) / clusters == (units + slots - 1) / slots);  // the waves
          const long long waves = (units + clusters - 1) / clusters;
          if (plan.slices > 1) CHECK(clusters == slots);  // the tail's slices are planned for a whole wave
          else CHECK((clusters - 1) * waves < units);  // one cluster fewer would take another wave
          ++checked;
        }
  }
  CHECK(checked == 5 * 5 * 4 * 5);
}

TEST_CASE("gemm_sm90: the shape-based choice: 128-wide tiles when 256-wide ones leave SMs idle, pairs for many tiles") {
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 4096, 4096, 4096), 132).bn == 256);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 4096, 4096, 4096), 132).cluster == 1);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 4096, 4096, 4096), 132).tma_epilogue);
  const Sm90GemmConfig big = choose_sm90_gemm_config(nt_problem(DType::BF16, DType::BF16, 8192, 8192, 8192), 132);
  CHECK(big.bn == 256);
  CHECK(big.cluster == 2);  // 2048 tiles: B shared by pairs of CTAs
  // Groups of 16 tile rows for 128 x 256 tiles one CTA each (a wave's least L2 footprint), of 8 cluster rows
  // for pairs, and 8 where the last wave goes in K slices (measured that way).
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 4096, 4096, 4096), 132).raster == 16);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::BF16, DType::BF16, 2048, 14336, 4096), 132).raster == 16);
  CHECK(big.raster == 8);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::BF16, DType::BF16, 2048, 11008, 4096), 132).raster == 8);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 128, 4096, 4096), 132).raster == 8);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 128, 4096, 4096), 132).cluster == 1);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 2048, 4096, 4096), 132).bn == 256);  // 256 tiles
  // 688 wide tiles fill 87% of 6 waves' slots, 1376 narrow ones 95% of 11: the narrow ones where K is too
  // short for the tail's slices (7 k-blocks), else the wide ones with the last wave's 28 in 4 slices.
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 2048, 11008, 448), 132).bn == 128);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 2048, 11008, 448), 132).tail == 1);
  const Sm90GemmConfig tail = choose_sm90_gemm_config(nt_problem(DType::BF16, DType::BF16, 2048, 11008, 4096), 132);
  CHECK(tail.bn == 256);
  CHECK(tail.tail == 4);
  CHECK(tail.cluster == 1);
  CHECK(tail.tma_epilogue);
  const Sm90GemmConfig tail2 = choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 8192, 14336, 4096), 132);
  CHECK(tail2.cluster == 2);  // 1792 cluster tiles = 27 waves of 66 + 10
  CHECK(tail2.tail == 4);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 8192, 11008, 4096), 132).bn == 256);
  // With much DRAM bandwidth per SM (the H200) the tail runs on 128 x 128 tiles, one CTA each, where their
  // last wave is at most half full too (2048 x 11008: 1376 tiles, 10 waves + 56; 8192 x 14336: 7168, 54 + 40).
  const int h200 = 4814, h100 = 3352;  // GB/s: 36.5 and 25.4 per SM of 132
  for (const Sm90GemmConfig& t : {choose_sm90_gemm_config(nt_problem(DType::BF16, DType::BF16, 2048, 11008, 4096), 132, h200),
                                  choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 8192, 14336, 4096), 132, h200)}) {
    CAPTURE(t.to_string());
    CHECK(t.bn == 128);
    CHECK(t.stages == 6);
    CHECK(t.cluster == 1);
    CHECK(t.tail == 4);
    CHECK(t.tma_epilogue);
  }
  CHECK(gemm_sm90_tail_plan(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 2048, 11008, 4096), 132, h200), 2048,
                            11008, 4096, 1, 132)
            .tail_tiles == 56);
  CHECK(gemm_sm90_tail_plan(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 8192, 14336, 4096), 132, h200), 8192,
                            14336, 4096, 1, 132)
            .tail_tiles == 40);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::BF16, DType::BF16, 2048, 11008, 4096), 132, h100) == tail);
  // The frame's M and N (a column-major C swaps them) and batches count as for the wide tiles' tail; a K too
  // short for slices (7 k-blocks) takes no tail.
  GemmProblem col_c = nt_problem(DType::F16, DType::F16, 2048, 11008, 4096);
  col_c.c_order = MatrixOrder::ColMajor;
  const Sm90GemmConfig col_tail = choose_sm90_gemm_config(col_c.resolved(), 132, h200);
  CHECK(col_tail.bn == 128);
  CHECK(col_tail.tail == 4);
  CHECK(gemm_sm90_tail_plan(col_tail, 11008, 2048, 4096, 1, 132).slices > 1);
  GemmProblem two = nt_problem(DType::F16, DType::F16, 1024, 11008, 4096);
  two.batch = 2;
  const Sm90GemmConfig two_tail = choose_sm90_gemm_config(two.resolved(), 132, h200);
  CHECK(two_tail.bn == 128);
  CHECK(two_tail.tail == 4);
  CHECK(gemm_sm90_tail_plan(two_tail, 1024, 11008, 4096, 2, 132).slices > 1);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 2048, 11008, 448), 132, h200).tail == 1);
  // Only where the wide tiles' tail applies: 8192^3 (2048 wide tiles, the last wave 52% full) keeps its pairs
  // although its 4096 narrow ones would leave a tail of 4.
  const Sm90GemmConfig big_h200 = choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 8192, 8192, 8192), 132, h200);
  CHECK(big_h200.bn == 256);
  CHECK(big_h200.cluster == 2);
  CHECK(big_h200.tail == 1);
  // No tail where the last wave is more than half full: 4096^2 (512 tiles: 3 waves + 116), 8192 x 11008.
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 4096, 4096, 4096), 132, h200).tail == 1);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 4096, 4096, 4096), 132).tail == 1);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 8192, 11008, 4096), 132).tail == 1);
  // M = 128 x N = 4096: 16 wide tiles; 128 of 64 x 64 (two 64-row tiles a tile row): those, K unsplit, as many
  // stages as fit, C from registers.
  const Sm90GemmConfig skinny = choose_sm90_gemm_config(nt_problem(DType::BF16, DType::F32, 128, 4096, 4096), 132);
  CHECK(skinny.bn == 64);
  CHECK(skinny.arows == 64);
  CHECK(skinny.stages == 14);
  CHECK(skinny.stages == gemm_sm90_max_stages(skinny));
  CHECK(skinny.splits == 1);
  CHECK(skinny.tail == 1);
  CHECK(gemm_sm90_launch_shape(skinny, 128, 4096, 4096, 132).grid[0] == 128);  // 2 x 64 tiles
  CHECK_FALSE(skinny.tma_epilogue);
  CHECK(skinny.in == DType::BF16);
  CHECK(skinny.out == DType::F32);
  CHECK_NOTHROW(skinny.validate());
  // Column-major C swaps M and N: 4096 x 128 is the same 128 x 4096 problem.
  GemmProblem t = nt_problem(DType::F16, DType::F16, 4096, 128, 4096);
  t.c_order = MatrixOrder::ColMajor;
  CHECK(choose_sm90_gemm_config(t, 132) == choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 128, 4096, 4096), 132));
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 128, 4096, 14336), 132).arows == 64);
  // 64-row tiles from 96 rows, and from 65 where A or B is M- or N-contiguous (NN, TN, TT); in NT from 65 to 95
  // the 128 x 32 tiles, which load only M's rows of A.
  for (const std::string layout : {"NT", "NN", "TN", "TT"})
    for (const long long m : {72LL, 88LL, 96LL, 112LL, 128LL}) {  // M-contiguous A: pitches of 16 bytes
      CAPTURE(layout);
      CAPTURE(m);
      const GemmProblem lp = layout_problem(layout, DType::BF16, DType::BF16, m, 4096, 4096);
      const Sm90GemmConfig c = choose_sm90_gemm_config(lp, 132);
      const bool rows64 = m >= 96 || layout != "NT";
      CHECK(c.arows == (rows64 ? 64 : 128));
      CHECK(c.bn == (rows64 ? 64 : 32));
      CHECK(c.splits == 1);
      CHECK(c.stages == gemm_sm90_max_stages(c));
      CHECK_NOTHROW(c.validate());
      CHECK_NOTHROW(gemm_sm90_frame(c, lp, 0, 0));
    }
  // Not past one wave of them (N = 8192: 256 tiles of 64 x 64), nor for two tile rows.
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 128, 8192, 4096), 132).arows == 128);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 256, 4096, 4096), 132).arows == 128);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 256, 2048, 4096), 132).bn == 32);  // 2 x 64 tiles
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 128, 8192, 4096), 132).bn == 64);  // 128 tiles
  // One short tile row (M < 128, only its rows of A loaded) with K up to 8192: 32-wide tiles too.
  for (const long long m : {1LL, 16LL, 64LL, 95LL}) {
    CAPTURE(m);
    const Sm90GemmConfig c = choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, m, 4096, 4096), 132);
    CHECK(c.bn == 32);
    CHECK(c.splits == 1);
    CHECK_FALSE(c.reduce_fixup);
    // Up to 64 rows: short A stages (16, 32 or 64 rows), as many as fit.
    CHECK(c.arows == (m <= 16 ? 16 : m <= 64 ? 64 : 128));
    CHECK(c.stages == (m <= 16 ? 35 : m <= 64 ? 18 : 11));
    CHECK(c.stages == gemm_sm90_max_stages(c));
    CHECK_NOTHROW(c.validate());
  }
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 16, 4096, 8192), 132).bn == 32);
  // Not where 32-wide tiles would be more than a wave (N = 11008: 344), fewer than half of one (N = 2048:
  // 64), their rows mostly empty in several tile rows (M = 180), or K long (M = 16, K 14336: 64-wide tiles
  // in 2 slices).
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 128, 11008, 4096), 132).bn == 128);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 128, 2048, 4096), 132).bn == 128);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 16, 11008, 4096), 132).bn == 128);
  // Longer K at M <= 64: 32-wide tiles with short A stages, K unsplit.
  const Sm90GemmConfig deep = choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 16, 4096, 14336), 132);
  CHECK(deep.bn == 32);
  CHECK(deep.arows == 16);
  CHECK(deep.splits == 1);
  CHECK(deep.stages == 35);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 16, 4096, 8256), 132).arows == 16);  // 129 k-blocks
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 32, 4096, 8256), 132).arows == 32);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 180, 4096, 4096), 132).bn == 128);  // 90 rows a tile row
  // 256 x 4096: 128 tiles of 128 x 64 (the wider narrow tile that fills the SMs), 9 stages.
  const Sm90GemmConfig two_rows = choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 256, 4096, 4096), 132);
  CHECK(two_rows.bn == 64);
  CHECK(two_rows.stages == 9);
  CHECK(two_rows.splits == 1);
}

TEST_CASE("gemm_sm90: with much DRAM bandwidth per SM (the H200) one short tile row splits K in a cluster pair") {
  const int h100 = 3352, h200 = 4814;  // GB/s, DeviceInfo::dram_gbps: 25.4 and 36.5 per SM of 132
  for (const long long m : {16LL, 32LL, 64LL, 96LL, 128LL})
    for (const long long k : {4096LL, 8192LL, 14336LL}) {
      CAPTURE(m);
      CAPTURE(k);
      const GemmProblem p = nt_problem(DType::BF16, DType::BF16, m, 4096, k);
      // At most 32 rows: A and B swap (the next case); the rule below is the choice without the swap.
      const Sm90GemmConfig rich = choose_sm90_gemm_config(p, 132, h200, m > 32);
      CHECK_FALSE(rich.swap_ab);
      CHECK(rich.bn == 64);
      CHECK(rich.splits == 2);
      CHECK(rich.reduce_cluster);
      CHECK_FALSE(rich.reduce_fixup);
      CHECK(rich.cluster == 1);
      CHECK_FALSE(rich.tma_epilogue);
      CHECK(rich.arows == 128);
      CHECK(rich.stages == 9);  // the deepest ring of 128 x 64 stages
      CHECK(rich.stages == gemm_sm90_max_stages(rich));
      CHECK_NOTHROW(rich.validate());
      CHECK(gemm_sm90_launch_shape(rich, m, 4096, k, 132).grid[0] == 128);  // 64 tiles x 2 slices
      CHECK(gemm_sm90_workspace_bytes(rich, p) == 0);
      // The H100, and a device whose bandwidth is not known, keep the rules measured there: K whole.
      const Sm90GemmConfig h = choose_sm90_gemm_config(p, 132, h100);
      CHECK(h == choose_sm90_gemm_config(p, 132));
      CHECK(h == choose_sm90_gemm_config(p, 132, 0));
      CHECK(h.splits == 1);
      CHECK(h.bn == (m >= 96 ? 64 : 32));  // 64-row tiles from 96 rows
    }
  // Elsewhere the rich device's default is the H100's: two tile rows, K under 4096, 64-wide tiles filling
  // more than half a wave (N = 8192) or less than a quarter (N = 2048), wide tiles, a wave of them (M = 16
  // against N = 11008 swaps A and B: the next case).
  for (const auto& s : std::vector<std::array<long long, 3>>{{256, 4096, 4096}, {129, 4096, 4096}, {128, 4096, 2048},
                                                             {16, 4096, 4032}, {16, 8192, 4096}, {16, 2048, 4096},
                                                             {128, 14336, 4096}, {64, 11008, 4096}, {4096, 4096, 4096},
                                                             {2048, 4096, 4096}, {8192, 8192, 8192}}) {
    CAPTURE(s[0]);
    CAPTURE(s[1]);
    CAPTURE(s[2]);
    const GemmProblem p = nt_problem(DType::F16, DType::F16, s[0], s[1], s[2]);
    CHECK(choose_sm90_gemm_config(p, 132, h200) == choose_sm90_gemm_config(p, 132));
  }
  // The edges of a quarter to half a wave: 33 .. 66 tiles of 64 columns on 132 SMs (N 2049 .. 4224).
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 16, 2049, 4096), 132, h200).splits == 2);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 16, 4224, 4096), 132, h200).splits == 2);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 16, 4225, 4096), 132, h200).splits == 1);
  // Batches count: 2 x 2048 columns are 64 tiles.
  GemmProblem batched = nt_problem(DType::F16, DType::F16, 100, 2048, 4096);
  batched.batch = 2;
  CHECK(choose_sm90_gemm_config(batched.resolved(), 132, h200).splits == 2);
  // Per SM: the same bandwidth on fewer SMs is richer (114 SMs at 3352 GB/s: 29.4 each, at 3420: 30.0).
  const GemmProblem skinny = nt_problem(DType::F16, DType::F16, 16, 3584, 4096);  // 56 tiles of 64
  CHECK(choose_sm90_gemm_config(skinny, 114, 3352).splits == 1);
  CHECK(choose_sm90_gemm_config(skinny, 114, 3420).splits == 2);
  // Every layout: an M- or N-contiguous operand takes the same config (its boxes fit 64-wide tiles).
  for (const auto& orders : std::vector<std::pair<MatrixOrder, MatrixOrder>>{
           {MatrixOrder::RowMajor, MatrixOrder::RowMajor}, {MatrixOrder::ColMajor, MatrixOrder::ColMajor},
           {MatrixOrder::ColMajor, MatrixOrder::RowMajor}}) {
    GemmProblem p = nt_problem(DType::BF16, DType::F32, 128, 4096, 14336);
    p.a_order = orders.first;
    p.b_order = orders.second;
    const Sm90GemmConfig c = choose_sm90_gemm_config(p.resolved(), 132, h200);
    CAPTURE(c.to_string());
    CHECK(c.layout == gemm_sm90_layout(p.resolved()));
    CHECK(c.splits == 2);
    CHECK(c.reduce_cluster);
    CHECK_NOTHROW(c.validate());
  }
}

TEST_CASE("gemm_sm90: with much DRAM bandwidth per SM, at most 32 rows of C swap A and B (128 x 32 tiles of C^T)") {
  const int h100 = 3352, h200 = 4814;
  // N = 4096: 32 tiles of C^T in 2 K slices summed in a cluster pair (64 CTAs); K from 4096 on.
  for (const long long m : {1LL, 16LL, 32LL})
    for (const long long k : {4096LL, 14336LL}) {
      CAPTURE(m);
      CAPTURE(k);
      const GemmProblem p = nt_problem(DType::F16, DType::F16, m, 4096, k);
      const Sm90GemmConfig c = choose_sm90_gemm_config(p, 132, h200);
      CHECK(c.swap_ab);
      CHECK(c.layout == "NT");
      CHECK(c.bn == 32);
      CHECK(c.splits == 2);
      CHECK(c.reduce_cluster);
      CHECK(c.stages == gemm_sm90_max_stages(c));
      CHECK(c.stages == 11);
      CHECK_FALSE(c.tma_epilogue);
      const Sm90Frame f = gemm_sm90_frame(c, p, 0, 0);
      CHECK(f.m == 4096);
      CHECK(f.n == m);
      CHECK(f.c_trans);
      CHECK(gemm_sm90_launch_shape(c, f.m, f.n, k, 132).grid[0] == 64);
      CHECK(gemm_sm90_workspace_bytes(c, p) == 0);
      CHECK(gemm_sm90_preferred(c, f, 132));  // not the mma.sync family's
      CHECK_FALSE(choose_sm90_gemm_config(p, 132, h200, false).swap_ab);
      // The H100 and an unknown bandwidth keep their rules.
      CHECK_FALSE(choose_sm90_gemm_config(p, 132, h100).swap_ab);
      CHECK_FALSE(choose_sm90_gemm_config(p, 132).swap_ab);
    }
  // N = 14336 (and 11008): 112 (86) tiles of C^T fill half to one wave, K whole.
  for (const long long n : {11008LL, 14336LL, 8449LL, 16896LL}) {
    CAPTURE(n);
    const Sm90GemmConfig c = choose_sm90_gemm_config(nt_problem(DType::BF16, DType::BF16, 16, n, 4096), 132, h200);
    CHECK(c.swap_ab);
    CHECK(c.bn == 32);
    CHECK(c.splits == 1);
    CHECK(c.stages == 11);
  }
  // Elsewhere no swap: 33..64 rows, K under 4096, N between the two ranges or past a wave, below a quarter
  // wave of pairs, an M-contiguous A (the kernel's 32-wide B would be N-contiguous).
  for (const auto& s : std::vector<std::array<long long, 3>>{{33, 4096, 4096}, {64, 4096, 4096}, {16, 4096, 4032},
                                                             {16, 8192, 4096}, {16, 4225, 4096}, {16, 16897, 4096},
                                                             {16, 2048, 4096}, {16, 8448, 4096}}) {
    CAPTURE(s[0]);
    CAPTURE(s[1]);
    CAPTURE(s[2]);
    CHECK_FALSE(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, s[0], s[1], s[2]), 132, h200).swap_ab);
  }
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 16, 4096, 4033), 132, h200).swap_ab);  // 64 k-blocks
  // Batches are not swapped (not measured): 20 matrices of 16 x 100 keep the pair rule, which the variant
  // prefers to the mma.sync family (a swap there would count 40 units along N = 100 and lose the variant).
  GemmProblem many = nt_problem(DType::F16, DType::F16, 16, 100, 4096);
  many.batch = 20;
  const Sm90GemmConfig mc = choose_sm90_gemm_config(many.resolved(), 132, h200);
  CHECK_FALSE(mc.swap_ab);
  CHECK(mc.reduce_cluster);
  const auto mchoice = sm90_default_choice(many.resolved(), 16, 132, h200);
  REQUIRE(mchoice.has_value());
  CHECK(*mchoice == mc);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 16, 2049, 4096), 132, h200).swap_ab);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 16, 4224, 4096), 132, h200).swap_ab);
  GemmProblem tn = nt_problem(DType::F16, DType::F16, 16, 4096, 4096);
  tn.a_order = MatrixOrder::ColMajor;
  CHECK_FALSE(choose_sm90_gemm_config(tn.resolved(), 132, h200).swap_ab);
  // NN (B N-contiguous: the swapped kernel's M-contiguous A, run as TT) measured both ways: not by default,
  // but in the tune's space.
  GemmProblem nn = nt_problem(DType::F16, DType::F16, 16, 4096, 4096);
  nn.b_order = MatrixOrder::RowMajor;
  CHECK_FALSE(choose_sm90_gemm_config(nn.resolved(), 132, h200).swap_ab);
  const std::vector<Sm90GemmConfig> nn_swaps = sm90_swap_space(nn.resolved());
  REQUIRE(nn_swaps.size() == 14);
  CHECK(nn_swaps.front().layout == "TT");
  CHECK_NOTHROW(gemm_sm90_frame(nn_swaps.front(), nn.resolved(), 0, 0));
  // A column-major C with few columns: the frame's M is N, and the swap runs C as it is stored.
  GemmProblem colc = nt_problem(DType::F16, DType::F16, 4096, 16, 4096);
  colc.c_order = MatrixOrder::ColMajor;
  const Sm90GemmConfig cc = choose_sm90_gemm_config(colc.resolved(), 132, h200);
  CHECK(cc.swap_ab);
  const Sm90Frame fc = gemm_sm90_frame(cc, colc.resolved(), 0, 0);
  CHECK_FALSE(fc.swapped);
  CHECK(fc.c_trans);
  CHECK(fc.m == 4096);
  // The tune's space holds the default, the choice without the swap and its space, the swapped configs.
  const GemmProblem p = nt_problem(DType::F16, DType::F16, 16, 4096, 4096);
  const std::vector<Sm90GemmConfig> space = sm90_device_space(p, 132, h200);
  REQUIRE_FALSE(space.empty());
  CHECK(space.front() == choose_sm90_gemm_config(p, 132, h200));
  const auto has = [&](const Sm90GemmConfig& c) { return std::find(space.begin(), space.end(), c) != space.end(); };
  CHECK(has(choose_sm90_gemm_config(p, 132, h200, false)));
  CHECK(has(choose_sm90_gemm_config(p, 132, 0)));
  const std::vector<Sm90GemmConfig> swaps = sm90_swap_space(p);
  CHECK(swaps.size() == 14);
  for (const Sm90GemmConfig& c : swaps) {
    CAPTURE(c.to_string());
    CHECK(has(c));
    CHECK(c.swap_ab);
    CHECK(c.stages == gemm_sm90_max_stages(c));
    CHECK_NOTHROW(gemm_sm90_frame(c, p, 0, 0));
  }
  CHECK(sm90_swap_space(tn.resolved()).size() == 6);  // 64-wide tiles alone (a pair's 32-wide B parts do not fit)
  CHECK(sm90_swap_space(nt_problem(DType::F16, DType::F16, 65, 4096, 4096)).empty());
  CHECK(sm90_swap_space(nt_problem(DType::F16, DType::F16, 64, 4096, 4096)).size() == 14);
  // The H100 (unknown bandwidth) tunes them too.
  const std::vector<Sm90GemmConfig> unknown = sm90_device_space(p, 132, 0);
  CHECK(std::find(unknown.begin(), unknown.end(), swaps.front()) != unknown.end());
}

TEST_CASE("gemm_sm90: where the Hopper kernel is preferred to the mma.sync family (the measured small-M rule)") {
  const auto frame = [](long long m, long long n) {
    Sm90Frame f;
    f.m = m, f.n = n, f.k = 4096;
    return f;
  };
  const Sm90GemmConfig unsplit;
  CHECK(gemm_sm90_preferred(unsplit, frame(4096, 4096), 132));
  CHECK(gemm_sm90_preferred(unsplit, frame(128, 4096), 132));     // 32 full tiles: 139 vs 100 TFLOP/s
  Sm90GemmConfig narrow;
  narrow.bn = 32, narrow.stages = 11;
  CHECK(gemm_sm90_preferred(narrow, frame(16, 4096), 132));  // 128 tiles of 128 x 32: 23.6 vs 18.3
  CHECK_FALSE(gemm_sm90_preferred(narrow, frame(16, 1024), 132));  // 32 of them
  CHECK_FALSE(gemm_sm90_preferred(unsplit, frame(64, 4096), 132));  // half-empty tiles: mma.sync split-K
  CHECK_FALSE(gemm_sm90_preferred(unsplit, frame(16, 4096), 132));
  CHECK(gemm_sm90_preferred(unsplit, frame(16, 14336), 132));     // 112 tiles
  CHECK(gemm_sm90_preferred(unsplit, frame(64, 14336), 132));
  CHECK_FALSE(gemm_sm90_preferred(unsplit, frame(128, 2048), 132));  // 16 tiles
  CHECK_FALSE(gemm_sm90_preferred(unsplit, frame(0, 4096), 132));
}

TEST_CASE("gemm_sm90: a stage loads only M's rows of A when all of M fits in one tile row") {
  CHECK(gemm_sm90_a_rows(1, false) == 8);  // K-major: boxes of M rounded up to 8 rows
  CHECK(gemm_sm90_a_rows(16, false) == 16);
  CHECK(gemm_sm90_a_rows(17, false) == 24);
  CHECK(gemm_sm90_a_rows(120, false) == 120);
  CHECK(gemm_sm90_a_rows(121, false) == 128);
  CHECK(gemm_sm90_a_rows(4096, false) == 128);
  CHECK(gemm_sm90_a_rows(0, false) == 8);
  CHECK(gemm_sm90_a_rows(1, true) == 64);  // MN-major: whole 64-wide boxes
  CHECK(gemm_sm90_a_rows(64, true) == 64);
  CHECK(gemm_sm90_a_rows(65, true) == 128);
  CHECK(gemm_sm90_a_rows(1000, true) == 128);
}

TEST_CASE("gemm_sm90: problems TMA cannot take are Unsupported, with the reason") {
  const Sm90GemmConfig c;
  const DevicePtr p16 = 0x10000;
  GemmProblem p = nt_problem(DType::F16, DType::F16, 127, 129, 4104);
  const Sm90Frame f = gemm_sm90_frame(c, p, p16, p16);
  CHECK(f.m == 127);
  CHECK(f.n == 129);
  CHECK(f.lda == 4104);
  CHECK(f.ldb == 4104);
  CHECK(f.ldc == 129);
  CHECK_FALSE(f.swapped);

  // Column-major C: C^T = B^T A^T, still both operands K-contiguous.
  GemmProblem pc = p;
  pc.c_order = MatrixOrder::ColMajor;
  const Sm90Frame fc = gemm_sm90_frame(c, pc, p16, p16);
  CHECK(fc.swapped);
  CHECK(fc.m == 129);
  CHECK(fc.n == 127);
  CHECK(fc.ldc == 127);

  CHECK(contains(error_of(ErrorKind::Unsupported, [&] { gemm_sm90_frame(c, p, p16 + 2, p16); }), "16-byte aligned"));
  GemmProblem odd = nt_problem(DType::F16, DType::F16, 64, 64, 100);  // pitch 200 bytes
  CHECK(contains(error_of(ErrorKind::Unsupported, [&] { gemm_sm90_frame(c, odd, p16, p16); }), "multiples of 16 bytes"));
  odd.lda = 104;
  odd.ldb = 104;
  CHECK_NOTHROW(gemm_sm90_frame(c, odd, p16, p16));  // padded pitches are fine
  // Another layout than the config's is a caller error that names the layout to use.
  GemmProblem nn = p;
  nn.b_order = MatrixOrder::RowMajor;
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [&] { gemm_sm90_frame(c, nn, p16, p16); }), "use layout=NN"));
  // Batches: the strides go with their operands; TMA needs them in multiples of 16 bytes.
  GemmProblem batched = p;
  batched.batch = 2;
  const Sm90Frame fb = gemm_sm90_frame(c, batched.resolved(), p16, p16);
  CHECK(fb.batch == 2);
  CHECK(fb.stride_a == 127 * 4104);
  CHECK(fb.stride_b == 129 * 4104);
  CHECK(fb.stride_c == 127 * 129);
  batched.c_order = MatrixOrder::ColMajor;
  const Sm90Frame fbc = gemm_sm90_frame(c, batched.resolved(), p16, p16);
  CHECK(fbc.stride_a == 129 * 4104);  // C^T = B^T A^T
  CHECK(fbc.stride_b == 127 * 4104);
  batched.c_order = MatrixOrder::RowMajor;
  batched.stride_a = 127 * 4104 + 4;
  CHECK(contains(error_of(ErrorKind::Unsupported, [&] { gemm_sm90_frame(c, batched, p16, p16); }), "batch strides"));
  const Sm90GemmConfig dflt;
  CHECK(gemm_sm90_launch_shape(dflt, 300, 300, 64, 132, 4).grid[0] == 3 * 2 * 4);  // units of every matrix
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [&] { gemm_sm90_launch_shape(dflt, 1, 1, 1, 132, 0); }), "batch 0"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument,
                          [&] { gemm_sm90_frame(c, nt_problem(DType::BF16, DType::F16, 8, 8, 8), p16, p16); }),
                 "config is f16>f16"));
}

TEST_CASE("gemm_sm90: all four layouts map onto the kernel's frame, with C either order") {
  const DevicePtr p16 = 0x10000;
  struct Case {
    MatrixOrder a, b, c;
    const char* layout;  // in the kernel's frame
    bool a_mn, b_mn;
  };
  const MatrixOrder R = MatrixOrder::RowMajor, C = MatrixOrder::ColMajor;
  const Case cases[] = {
      {R, C, R, "NT", false, false}, {R, R, R, "NN", false, true}, {C, C, R, "TT", true, false},
      {C, R, R, "TN", true, true},   {R, C, C, "NT", false, false}, {R, R, C, "TT", true, false},
      {C, C, C, "NN", false, true},  {C, R, C, "TN", true, true},
  };
  for (const Case& k : cases) {
    GemmProblem p = nt_problem(DType::F16, DType::F16, 127, 200, 4104);
    p.a_order = k.a, p.b_order = k.b, p.c_order = k.c;
    if (k.a == C) p.lda = 128;  // 127 rows of 2 bytes are no TMA pitch: padded
    CAPTURE(p.a_order == R);
    CAPTURE(p.b_order == R);
    CAPTURE(p.c_order == R);
    CHECK(gemm_sm90_layout(p) == k.layout);
    const Sm90GemmConfig cfg = choose_sm90_gemm_config(p, 132);
    CHECK(cfg.layout == k.layout);
    const GemmProblem r = p.resolved();
    const Sm90Frame f = gemm_sm90_frame(cfg, p, p16, p16);
    CHECK(f.a_mn == k.a_mn);
    CHECK(f.b_mn == k.b_mn);
    CHECK(f.swapped == (k.c == C));
    CHECK(f.m == (k.c == R ? 127 : 200));
    CHECK(f.n == (k.c == R ? 200 : 127));
    CHECK(f.lda == (k.c == R ? r.lda : r.ldb));
    CHECK(f.ldb == (k.c == R ? r.ldb : r.lda));
    // A column-major A packed (pitch 127 elements = 254 bytes) is no TMA operand.
    if (k.a == C) {
      GemmProblem tight = p;
      tight.lda = 127;
      CHECK(contains(error_of(ErrorKind::Unsupported, [&] { gemm_sm90_frame(cfg, tight, p16, p16); }),
                     "multiples of 16 bytes"));
    }
  }
}

TEST_CASE("gemm_sm90: the MN-major descriptor: 8-row groups 1024 bytes apart, the next box 8192 bytes on") {
  static_assert(tpl::kSm90MnBoxBytes == 8192, "64 x 64 16-bit elements");
  constexpr unsigned long long d = tpl::sm90_desc_mn(0x4000u, tpl::kSm90MnBoxBytes);
  static_assert((d & 0x3FFFull) == 0x4000u >> 4, "start address in 16-byte units");
  CHECK(((d >> 16) & 0x3FFFull) == 8192 / 16);  // leading byte offset: the next 64 elements along M/N
  CHECK(((d >> 32) & 0x3FFFull) == 1024 / 16);  // stride byte offset: the next 8 rows along K
  CHECK((d >> 62) == 1);                        // the 128-byte swizzle
  CHECK(((d >> 49) & 7ull) == 0);               // base offset 0: boxes start 1024-byte aligned
  // The k16 steps of a k-tile: 16 K rows (2048 bytes) for MN-major, 32 bytes for K-major.
  for (int k = 0; k < 4; ++k) {
    CHECK((tpl::sm90_operand_desc(0x4000u, k, true) & 0x3FFFull) == (0x4000u + 2048u * k) >> 4);
    CHECK(tpl::sm90_operand_desc(0x4000u, k, false) == tpl::sm90_desc(0x4000u + 32u * k));
  }
  // The kernel adds each step to the descriptor of step 0: for every 16-byte aligned address the 18-bit
  // start-address field holds (a CTA's shared memory, at most kSm90MaxSmem, lies inside it) whose last step
  // stays inside it too, that is the descriptor of the stepped address.
  static_assert(tpl::kSm90MaxSmem <= (1 << 18), "shared-memory addresses fit the descriptor's 18-bit field");
  int wrong = 0;
  for (unsigned addr = 0; addr + tpl::sm90_kstep_offset(3, true) < (1u << 18); addr += 16) {
    for (int k = 0; k < 4; ++k) {
      wrong += tpl::sm90_operand_desc(addr, k, false) != tpl::sm90_desc(addr + 32u * k);
      wrong += tpl::sm90_operand_desc(addr, k, true) != tpl::sm90_desc_mn(addr + 2048u * k, tpl::kSm90MnBoxBytes);
    }
  }
  CHECK(wrong == 0);
}

TEST_CASE("gemm_sm90: the default configs and all layouts compile for sm_90a without local memory, C7508 or C7510") {
  std::string why;
  if (!nvrtc_available(&why)) {
    MESSAGE("skipped: NVRTC not available: " << why);
    return;
  }
  std::vector<Sm90GemmConfig> configs;
  configs.push_back(default_sm90_gemm_config(DType::F16, DType::F16));
  configs.push_back(default_sm90_gemm_config(DType::BF16, DType::F32));
  configs.push_back(Sm90GemmConfig::parse("in=bf16,out=bf16,bn=128,stages=6,raster=4,persistent=0,inflight=0"));
  configs.push_back(Sm90GemmConfig::parse("in=f16,out=f16,cluster=2"));
  configs.push_back(Sm90GemmConfig::parse("in=bf16,out=f32,bn=128,stages=7,cluster=2"));
  // The MN-major operands, with and without clusters, both tile widths.
  configs.push_back(Sm90GemmConfig::parse("in=f16,out=f16,layout=NN"));
  configs.push_back(Sm90GemmConfig::parse("in=bf16,out=bf16,layout=TN,cluster=2"));
  configs.push_back(Sm90GemmConfig::parse("in=f16,out=f32,layout=TT,bn=128,stages=6"));
  configs.push_back(Sm90GemmConfig::parse("in=bf16,out=bf16,layout=NN,bn=128,stages=6,cluster=2"));
  // The TMA-store epilogue: 16-bit and f32 C, clusters, an MN-major layout.
  configs.push_back(Sm90GemmConfig::parse("in=f16,out=f16,epilogue=tma"));
  configs.push_back(Sm90GemmConfig::parse("in=bf16,out=f32,layout=TN,epilogue=tma,cluster=2"));
  configs.push_back(Sm90GemmConfig::parse("in=bf16,out=bf16,bn=128,stages=6,epilogue=tma"));
  // The tail (its finisher sums beside the accumulators): both epilogues, clusters, MN-major operands.
  configs.push_back(Sm90GemmConfig::parse("in=bf16,out=bf16,tail=4,epilogue=tma"));
  configs.push_back(Sm90GemmConfig::parse("in=f16,out=f32,layout=TT,bn=128,stages=6,cluster=2,tail=4,epilogue=tma"));
  configs.push_back(Sm90GemmConfig::parse("in=bf16,out=f32,layout=NN,cluster=2,tail=4"));
  // Pairs of 256-wide tiles with the tail and an M-contiguous A (the default for large TN / TT problems whose
  // last wave of pairs is short): ptxas spilled the rows of cluster tiles here while the kernel computed them.
  configs.push_back(Sm90GemmConfig::parse("in=f16,out=f16,layout=TT,cluster=2,tail=4,epilogue=tma"));
  configs.push_back(Sm90GemmConfig::parse("in=bf16,out=bf16,layout=TN,cluster=2,tail=4,epilogue=tma"));
  // Widths between the powers of two: both epilogues, an N-contiguous B, f32 C.
  configs.push_back(Sm90GemmConfig::parse("in=f16,out=f16,layout=NN,bn=192,stages=4,epilogue=tma"));
  configs.push_back(Sm90GemmConfig::parse("in=bf16,out=f32,layout=TT,bn=176,stages=5"));
  configs.push_back(Sm90GemmConfig::parse("in=f16,out=bf16,bn=96,stages=8"));
  // Short A stages: the deepest rings, K slices summed in the kernel or in a cluster, an M-contiguous A.
  configs.push_back(Sm90GemmConfig::parse("in=bf16,out=bf16,bn=32,stages=35,arows=16"));
  configs.push_back(Sm90GemmConfig::parse("in=f16,out=f32,bn=64,stages=20,arows=16,splits=2,reduce=fixup"));
  configs.push_back(Sm90GemmConfig::parse("in=f16,out=f16,bn=128,stages=10,arows=32,splits=4,reduce=cluster"));
  configs.push_back(Sm90GemmConfig::parse("in=bf16,out=bf16,layout=TN,bn=64,stages=12,arows=64,epilogue=tma"));
  // A and B swapped (C stored transposed: its own kernels): K whole, in a cluster sum, in the kernel's fixup.
  configs.push_back(Sm90GemmConfig::parse("in=bf16,out=bf16,bn=32,stages=11,swap=1"));
  configs.push_back(Sm90GemmConfig::parse("in=f16,out=f16,bn=32,stages=10,splits=2,reduce=cluster,swap=1"));
  configs.push_back(Sm90GemmConfig::parse("in=f16,out=f32,bn=64,stages=9,splits=2,reduce=fixup,swap=1"));
  for (const Sm90GemmConfig& c : configs) {
    CAPTURE(c.to_string());
    CompileRequest req = gemm_sm90_compile_request(c);
    // ptxas's verbose report goes to the log: its warnings and the stack frame of the kernel.
    req.extra_options.push_back("--ptxas-options=-v");
    const CompiledKernel k = compile(req);
    REQUIRE_FALSE(k.is_ptx);  // NVRTC 12.0+ emits sm_90a cubins
    CAPTURE(k.log);
    CHECK_FALSE(contains(k.log, "C7508"));  // setmaxnreg ignored
    CHECK_FALSE(contains(k.log, "C7510"));  // wgmma serialized
    CHECK_FALSE(contains(k.log, "instructions are serialized"));  // any cause (C7510, C7520: a branch around wgmma)
    CHECK_FALSE(contains(k.log, "C7515"));
    CHECK(contains(k.log, " 0 bytes stack frame"));
    const bool spill_free = contains(k.log, " 0 bytes spill stores, 0 bytes spill loads");
    CHECK(spill_free);
    const CubinResources r = cubin_resources(k);
    CHECK(r.local_bytes == 0);
    // Only swapped kernels carry the transposed stores (C_TRANS): the f16 default is 49664 bytes of code with
    // CUDA 13.0's ptxas, against 87552 while every kernel carried both store paths.
    if (&c == &configs.front()) CHECK(r.code_bytes <= 64 * 1024);
    CHECK(r.max_threads_per_block == tpl::kSm90Threads);
    // The entry allocation must fit one block on the SM, and setmaxnreg's budgets the register file.
    CHECK(r.registers * tpl::kSm90Threads <= 65536);
    CHECK(r.registers <= tpl::kSm90ConsumerRegs);
    CHECK(128 * tpl::kSm90ProducerRegs + 256 * tpl::kSm90ConsumerRegs <= 65536);
  }
}

TEST_CASE("gemm_sm90: split-K configs: text, slices, launch shape, workspace, the default rule and the space") {
  Sm90GemmConfig c = Sm90GemmConfig::parse("in=f16,out=f16,bn=128,stages=6,splits=4");
  CHECK(c.splits == 4);
  CHECK(c.to_string() == "in=f16,out=f16,layout=NT,bn=128,stages=6,raster=8,persistent=1,inflight=1,cluster=1,splits=4");
  CHECK(Sm90GemmConfig::parse(c.to_string()) == c);
  CHECK_FALSE(contains(Sm90GemmConfig().to_string(), "splits"));  // unsplit texts stay as stored before
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("splits=0"); }), "splits"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("splits=33"); }), "splits"));
  // The kernel writes f32 partials whatever C's type: the f32-out instantiation.
  CHECK(c.kernel_out() == DType::F32);
  CHECK(gemm_sm90_name_expression(c) == "swz::tpl::gemm_sm90_kernel<0, 2, 128, 6, 8, 1, 0, 0, 0>");
  CHECK(Sm90GemmConfig().kernel_out() == DType::F16);

  // Slices of whole k-blocks, none empty: 4096 = 64 k-blocks in 4; 4 k-blocks cannot make 8 slices.
  CHECK(gemm_sm90_k_splits(c, 4096) == 4);
  CHECK(gemm_sm90_k_splits(c, 4104) == 4);  // 65 k-blocks: 17 + 17 + 17 + 14
  c.splits = 8;
  CHECK(gemm_sm90_k_splits(c, 256) == 4);
  CHECK(gemm_sm90_k_splits(c, 8) == 1);
  CHECK(gemm_sm90_k_splits(c, 0) == 0);  // the reduction alone
  CHECK(gemm_sm90_k_splits(Sm90GemmConfig(), 0) == 1);
  CHECK(gemm_sm90_k_splits(Sm90GemmConfig(), 4096) == 1);

  c.splits = 4;
  CHECK(gemm_sm90_launch_shape(c, 128, 4096, 4096, 132).grid[0] == 128);  // 32 tiles x 4 slices
  CHECK(gemm_sm90_launch_shape(c, 128, 4096, 64, 132).grid[0] == 32);     // one k-block: one slice
  CHECK(gemm_sm90_launch_shape(c, 1024, 4096, 4096, 132).grid[0] == 128);  // 1024 units, persistent: 8 waves

  // Workspace: one slice of whole tile rows (of a cluster) per K slice, rows padded to 4 floats.
  GemmProblem skinny = nt_problem(DType::F16, DType::F16, 16, 4094, 4096);
  CHECK(gemm_sm90_workspace_bytes(c, skinny) == 4ull * 128 * 4096 * 4);
  skinny.batch = 3;  // per matrix
  CHECK(gemm_sm90_workspace_bytes(c, skinny) == 3ull * 4 * 128 * 4096 * 4);
  skinny.batch = 1;
  c.cluster = 2;
  CHECK(gemm_sm90_workspace_bytes(c, nt_problem(DType::F16, DType::F16, 129, 100, 4096)) == 4ull * 256 * 100 * 4);
  c.cluster = 1;
  GemmProblem t = nt_problem(DType::F16, DType::F16, 4094, 16, 4096);
  t.c_order = MatrixOrder::ColMajor;  // C^T: the kernel's m is 16, n 4094
  CHECK(gemm_sm90_workspace_bytes(c, t) == 4ull * 128 * 4096 * 4);
  CHECK(gemm_sm90_workspace_bytes(Sm90GemmConfig(), skinny) == 0);
  CHECK(gemm_sm90_workspace_bytes(c, nt_problem(DType::F16, DType::F16, 16, 4094, 0)) == 0);

  // The default: split where whole tiles keep at most half the SMs busy (K long enough that narrow tiles
  // do not take it).
  const Sm90GemmConfig d = choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 80, 4096, 14336), 132);
  CHECK(d.bn == 128);
  CHECK(d.splits == 4);  // 32 tiles x 4 = 128 units
  // At most 32 rows of C in one tile row with K past 8192 and an N-contiguous B (no 32-wide tiles): 64
  // tiles of 128 x 64 in 2 slices, summed in the kernel (K-contiguous B: 32-wide tiles, short A stages).
  for (const long long m : {16LL, 32LL}) {
    GemmProblem nn = nt_problem(DType::F16, DType::F16, m, 4096, 14336);
    nn.b_order = MatrixOrder::RowMajor;
    nn.ldb = 0;
    const Sm90GemmConfig s = choose_sm90_gemm_config(nn.resolved(), 132);
    CHECK(s.layout == "NN");
    CHECK(s.bn == 64);
    CHECK(s.splits == 2);
    CHECK(s.reduce_fixup);
    CHECK_FALSE(s.tma_epilogue);
    CHECK_NOTHROW(s.validate());
  }
  // 16 x 11008: 172 such tiles, more than a wave: 128-wide tiles, 86 of them, unsplit.
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 16, 11008, 14336), 132).bn == 128);
  CHECK_FALSE(d.reduce_fixup);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 128, 128, 4096), 132).splits == 16);
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 128, 128, 128), 132).splits == 1);  // 2 k-blocks
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 128, 11008, 4096), 132).splits == 1);  // 86 tiles
  CHECK(choose_sm90_gemm_config(nt_problem(DType::F16, DType::F16, 4096, 4096, 4096), 132).splits == 1);
  Sm90Frame f;
  f.m = 16, f.n = 4096, f.k = 4096;
  CHECK(gemm_sm90_preferred(d, f, 132));  // 128 units
  CHECK_FALSE(gemm_sm90_preferred(Sm90GemmConfig(), f, 132));

  // The space around a split default: slice counts instead of clusters and tile orders.
  const std::vector<Sm90GemmConfig> space = sm90_gemm_space(d);
  CHECK(space.size() <= 18);
  // 64-row tiles, 64 and 128 wide, K whole (the default's full A stages: M may span several tile rows).
  CHECK(std::count_if(space.begin(), space.end(), [](const Sm90GemmConfig& s) {
          return s.arows == 64 && s.splits == 1 && (s.bn == 64 || s.bn == 128);
        }) == 2);
  CHECK(space.size() >= 10);
  std::set<int> splits, widths;
  int in_cluster = 0;
  for (const Sm90GemmConfig& s : space) {
    CHECK(s.cluster == 1);
    splits.insert(s.splits);
    widths.insert(s.bn);
    in_cluster += s.reduce_cluster;
    CHECK_NOTHROW(s.validate());
  }
  CHECK(splits == std::set<int>{1, 2, 4, 8});  // 1: the 32- and 64-wide tiles
  CHECK(widths == std::set<int>{32, 64, 128, 256});
  CHECK(in_cluster == 3);  // 2 or 4 slices at bn 128, 2 at bn 64
  CHECK(std::count_if(space.begin(), space.end(), [](const Sm90GemmConfig& s) { return s.reduce_fixup; }) == 4);
  CHECK(std::find(space.begin(), space.end(), d) != space.end());
}

TEST_CASE("gemm_sm90: split-K in a cluster: text, rules, the kernel, launch shape, no workspace") {
  Sm90GemmConfig c = Sm90GemmConfig::parse("in=bf16,out=bf16,bn=128,stages=6,splits=4,reduce=cluster");
  CHECK(c.reduce_cluster);
  CHECK(c.to_string() ==
        "in=bf16,out=bf16,layout=NT,bn=128,stages=6,raster=8,persistent=1,inflight=1,cluster=1,splits=4,reduce=cluster");
  CHECK(Sm90GemmConfig::parse(c.to_string()) == c);
  CHECK(c.kernel_out() == DType::BF16);  // C itself, summed in the cluster
  CHECK_FALSE(c.uses_workspace());
  CHECK(gemm_sm90_name_expression(c) == "swz::tpl::gemm_sm90_splitk4_kernel<1, 1, 128, 6, 8, 1, 0, 0, 0>");
  c.splits = 2;
  CHECK(gemm_sm90_name_expression(c) == "swz::tpl::gemm_sm90_splitk2_kernel<1, 1, 128, 6, 8, 1, 0, 0, 0>");
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("splits=3,reduce=cluster"); }),
                 "splits=2 or 4"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("splits=2,cluster=2,reduce=cluster"); }),
                 "cluster=1"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("splits=2,epilogue=tma,reduce=cluster"); }),
                 "epilogue=tma"));
  // The receive slots (3 x 32 KB at bn 256) fit even a ring of two stages (2 x 48 KB).
  CHECK_NOTHROW(Sm90GemmConfig::parse("bn=256,stages=2,splits=4,reduce=cluster"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("reduce=tree"); }), "reduce=tree"));
  // One cluster of `splits` CTAs per tile and matrix, whatever `persistent` says; no workspace.
  c.splits = 4;
  CHECK(gemm_sm90_launch_shape(c, 128, 4096, 4096, 132).grid[0] == 128);    // 32 tiles x 4
  CHECK(gemm_sm90_launch_shape(c, 1024, 4096, 4096, 132).grid[0] == 1024);  // 256 tiles x 4: waves of clusters
  CHECK(gemm_sm90_launch_shape(c, 128, 4096, 64, 132).grid[0] == 128);      // slices without k-blocks add zeros
  CHECK(gemm_sm90_launch_shape(c, 300, 300, 64, 132, 2).grid[0] == 3 * 3 * 2 * 4);
  CHECK(gemm_sm90_k_splits(c, 64) == 4);
  CHECK(gemm_sm90_workspace_bytes(c, nt_problem(DType::BF16, DType::BF16, 16, 4096, 4096)) == 0);
}

TEST_CASE("gemm_sm90: split-K summed in the kernel (reduce=fixup): text, rules, the kernel, workspace with tile flags") {
  Sm90GemmConfig c = Sm90GemmConfig::parse("in=f16,out=bf16,bn=128,stages=6,splits=4,epilogue=tma,reduce=fixup");
  CHECK(c.reduce_fixup);
  CHECK_FALSE(c.reduce_cluster);
  CHECK(c.to_string() ==
        "in=f16,out=bf16,layout=NT,bn=128,stages=6,raster=8,persistent=1,inflight=1,cluster=1,epilogue=tma,splits=4,"
        "reduce=fixup");
  CHECK(Sm90GemmConfig::parse(c.to_string()) == c);
  CHECK(c.kernel_out() == DType::BF16);  // the kernel stores C itself
  CHECK(c.uses_workspace());             // for the partials and the flags
  CHECK_FALSE(c.uses_reduce_kernel());
  CHECK(gemm_sm90_name_expression(c) == "swz::tpl::gemm_sm90_kernel<0, 1, 128, 6, 8, 1, 0, 0, 1, 1>");
  // One word more of shared memory than the same config without it.
  Sm90GemmConfig plain = c;
  plain.reduce_fixup = false;
  CHECK(gemm_sm90_smem_bytes(c) == gemm_sm90_smem_bytes(plain) + 16);
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("bn=128,stages=6,reduce=fixup"); }),
                 "splits >= 2"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("splits=4,reduce=fixup"); }), "bn <= 128"));
  // Workspace: the partials as for the reduction kernel (4 slices x 128 rows x 4096 f32), then a flag per
  // tile (32), 256-byte aligned.
  const GemmProblem p = nt_problem(DType::F16, DType::BF16, 16, 4096, 4096);
  Sm90GemmConfig ws = c;
  ws.reduce_fixup = false;
  CHECK(gemm_sm90_workspace_bytes(ws, p) == 4ull * 128 * 4096 * 4);
  CHECK(gemm_sm90_workspace_bytes(c, p) == 4ull * 128 * 4096 * 4 + 256);
  CHECK(gemm_sm90_fixup_flags(c, 16, 4096, 1) == 32);
  CHECK(gemm_sm90_fixup_flags(c, 300, 4096, 3) == 3 * 32 * 3);
  c.cluster = 2;  // a flag per tile of every cluster tile: 2 rows of 32 for M 16
  CHECK(gemm_sm90_fixup_flags(c, 16, 4096, 1) == 64);
  c.cluster = 1;
  // K too short to split, or K = 0: the kernel runs unsplit and needs no workspace.
  CHECK(gemm_sm90_k_splits(c, 64) == 1);
  CHECK(gemm_sm90_k_splits(c, 0) == 1);
  CHECK(gemm_sm90_workspace_bytes(c, nt_problem(DType::F16, DType::BF16, 16, 4096, 64)) == 0);
  CHECK(gemm_sm90_workspace_bytes(c, nt_problem(DType::F16, DType::BF16, 16, 4096, 0)) == 0);
  CHECK(gemm_sm90_k_splits(c, 4096) == 4);
}

TEST_CASE("gemm_sm90: with K > 0 no K slice is empty (the kernel zeroes its accumulators once, for K = 0 alone)") {
  // The kernel zeroes d before its units only when K = 0 (templates/gemm_sm90.cuh): an unsplit unit, a slice
  // of the reduction kernel's or the fixup's split and a data-parallel tail tile always run a k-block, so a
  // slice that ran none would store the previous tile's sums. The slices as the launch sets them up:
  // gemm_sm90_k_splits of them, ceil(kblocks / slices) k-blocks each; the tail's from its plan.
  int checked = 0;
  for (const char* text : {"in=f16,out=f16,bn=128,stages=6,splits=4", "in=f16,out=f16,bn=128,stages=6,splits=7,reduce=fixup",
                           "in=bf16,out=f32,bn=64,stages=9,splits=16", "in=bf16,out=bf16,bn=128,stages=6,splits=3,reduce=fixup"}) {
    const Sm90GemmConfig c = Sm90GemmConfig::parse(text);
    for (long long k = 1; k <= 64 * 200; k += 13) {
      const long long kblocks = (k + tpl::kSm90Bk - 1) / tpl::kSm90Bk;
      const int slices = gemm_sm90_k_splits(c, k);
      REQUIRE(slices >= 1);
      const long long per = (kblocks + slices - 1) / slices;  // the launch's kb_per_split
      INFO(text << " K " << k << ": " << slices << " slices of " << per << " k-blocks");
      CHECK((slices - 1) * per < kblocks);  // the last slice starts before K's end
      ++checked;
    }
  }
  for (const char* text : {"in=f16,out=f16,tail=4,epilogue=tma", "in=bf16,out=f32,bn=128,stages=6,tail=2",
                           "in=bf16,out=bf16,bn=64,stages=9,tail=4"}) {
    const Sm90GemmConfig c = Sm90GemmConfig::parse(text);
    for (long long k = 1; k <= 64 * 200; k += 13)
      for (const long long m : {300LL, 1000LL, 2048LL})
        for (const int sms : {3, 7, 10, 132}) {
          const Sm90TailPlan plan = gemm_sm90_tail_plan(c, m, 1000, k, 1, sms);
          const long long kblocks = (k + tpl::kSm90Bk - 1) / tpl::kSm90Bk;
          INFO(text << " M " << m << " K " << k << " SMs " << sms);
          CHECK(plan.kb_per_slice >= 1);
          if (plan.slices > 1) CHECK((plan.slices - 1) * static_cast<long long>(plan.kb_per_slice) < kblocks);
          ++checked;
        }
  }
  CHECK(checked > 5000);
}

TEST_CASE("gemm_sm90: the last wave in K slices (tail): text, rules, the plan, the kernel, workspace, launch shape") {
  Sm90GemmConfig c = Sm90GemmConfig::parse("in=bf16,out=bf16,tail=4,epilogue=tma");
  CHECK(c.uses_tail());
  CHECK(c.kernel_fixup());
  CHECK_FALSE(c.uses_workspace());  // not the split-K workspace: the tail's, sized by gemm_sm90_workspace_bytes
  CHECK(c.kernel_out() == DType::BF16);
  CHECK(c.to_string() == "in=bf16,out=bf16,layout=NT,bn=256,stages=4,raster=8,persistent=1,inflight=1,cluster=1,epilogue=tma,tail=4");
  CHECK(Sm90GemmConfig::parse(c.to_string()) == c);
  CHECK(gemm_sm90_name_expression(c) == "swz::tpl::gemm_sm90_kernel<1, 1, 256, 4, 8, 1, 0, 0, 1, 2>");
  Sm90GemmConfig plain = c;
  plain.tail = 1;
  CHECK(gemm_sm90_smem_bytes(c) == gemm_sm90_smem_bytes(plain) + 16);  // the verdict word
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("tail=3"); }), "tail=3 must be 1 (off), 2 or 4"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("bn=128,stages=6,splits=2,tail=2"); }),
                 "takes splits=1"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("tail=5"); }), "tail"));
  // 2048 x 11008 on 132 SMs: 16 x 43 = 688 tiles = 5 waves + 28, which fit 4 slices (112 units).
  Sm90TailPlan plan = gemm_sm90_tail_plan(c, 2048, 11008, 4096, 1, 132);
  CHECK(plan.dp_tiles == 660);
  CHECK(plan.tail_tiles == 28);
  CHECK(plan.slices == 4);
  CHECK(plan.kb_per_slice == 16);
  CHECK(gemm_sm90_launch_shape(c, 2048, 11008, 4096, 132).grid[0] == 132);  // the tail's slices keep the wave
  // Without the tail, 688 tiles are 6 waves of 132: 115 CTAs run 6 or 5 tiles each.
  Sm90GemmConfig no_tail = c;
  no_tail.tail = 1;
  CHECK(gemm_sm90_launch_shape(no_tail, 2048, 11008, 4096, 132).grid[0] == 115);
  // K too short for slices (7 k-blocks): no tail, so the same even spread.
  CHECK(gemm_sm90_tail_plan(c, 2048, 11008, 448, 1, 132).slices == 1);
  CHECK(gemm_sm90_launch_shape(c, 2048, 11008, 448, 132).grid[0] == 115);
  const GemmProblem p = nt_problem(DType::BF16, DType::BF16, 2048, 11008, 4096);
  CHECK(gemm_sm90_workspace_bytes(c, p, 132) == 28ull * 4 * 128 * 256 * 4 + 256);
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [&] { gemm_sm90_workspace_bytes(c, p); }), "SM count"));
  // 128-wide tiles: 1376 = 10 waves + 56, which fit 2 slices.
  Sm90GemmConfig c128 = Sm90GemmConfig::parse("in=bf16,out=bf16,bn=128,stages=6,tail=4");
  plan = gemm_sm90_tail_plan(c128, 2048, 11008, 4096, 1, 132);
  CHECK(plan.dp_tiles == 1320);
  CHECK(plan.tail_tiles == 56);
  CHECK(plan.slices == 2);
  CHECK(plan.kb_per_slice == 32);
  // Clusters of two: waves of 66 cluster tiles; 2048 x 11008 on 128 x 128: 8 x 86 = 688 = 10 x 66 + 28.
  c128.cluster = 2;
  plan = gemm_sm90_tail_plan(c128, 2048, 11008, 4096, 1, 132);
  CHECK(plan.dp_tiles == 660);
  CHECK(plan.tail_tiles == 28);
  CHECK(plan.slices == 2);
  CHECK(gemm_sm90_workspace_bytes(c128, p, 132) == 28ull * 2 * 2 * 128 * 128 * 4 + 512);
  // No tail: a last wave more than half full (4096^2: 256 = 132 + 124), exactly full, fewer tiles than one
  // wave, K too short for slices of 4 k-blocks, or a config without it.
  for (const auto& s : {std::array<long long, 4>{4096, 4096, 4096, 132}, std::array<long long, 4>{128 * 12, 256 * 11, 4096, 132},
                        std::array<long long, 4>{128, 4096, 4096, 132}, std::array<long long, 4>{2048, 11008, 64 * 7, 132}}) {
    CAPTURE(s[0]);
    plan = gemm_sm90_tail_plan(c, s[0], s[1], s[2], 1, static_cast<int>(s[3]));
    CHECK(plan.slices == 1);
    CHECK(plan.tail_tiles == 0);
    CHECK(plan.dp_tiles == (s[0] + 127) / 128 * ((s[1] + 255) / 256));
    CHECK(gemm_sm90_workspace_bytes(c, nt_problem(DType::BF16, DType::BF16, s[0], s[1], s[2]), static_cast<int>(s[3])) == 0);
  }
  // K of 8 k-blocks: only 2 slices of 4.
  CHECK(gemm_sm90_tail_plan(c, 2048, 11008, 64 * 8, 1, 132).slices == 2);
  CHECK(gemm_sm90_tail_plan(plain, 2048, 11008, 4096, 1, 132).slices == 1);
  // Batches count as tiles: 3 x (2 x 1) on 4 SMs = 4 whole + 2 x 2 slices.
  plan = gemm_sm90_tail_plan(c, 131, 200, 520, 3, 4);
  CHECK(plan.dp_tiles == 4);
  CHECK(plan.tail_tiles == 2);
  CHECK(plan.slices == 2);
  CHECK(gemm_sm90_launch_shape(c, 131, 200, 520, 4, 3).grid[0] == 4);
}

TEST_CASE("gemm_sm90: short A stages (arows): text, rules, shared memory, the kernel, refused where M does not fit") {
  Sm90GemmConfig c = Sm90GemmConfig::parse("in=f16,out=f16,bn=32,stages=35,arows=16");
  CHECK(c.arows == 16);
  CHECK(c.to_string() == "in=f16,out=f16,layout=NT,bn=32,stages=35,raster=8,persistent=1,inflight=1,cluster=1,arows=16");
  CHECK(Sm90GemmConfig::parse(c.to_string()) == c);
  CHECK(Sm90GemmConfig::parse("in=f16,out=f16,arows=128") == Sm90GemmConfig::parse("in=f16,out=f16"));
  // FIXUP (0) is spelled out before A_ROWS; the cluster reduction's kernels take A_ROWS after EPI.
  CHECK(gemm_sm90_name_expression(c) == "swz::tpl::gemm_sm90_kernel<0, 0, 32, 35, 8, 1, 0, 0, 0, 0, 16>");
  CHECK(gemm_sm90_name_expression(Sm90GemmConfig::parse("in=f16,out=f16,bn=64,stages=20,arows=16,splits=2,reduce=fixup")) ==
        "swz::tpl::gemm_sm90_kernel<0, 0, 64, 20, 8, 1, 0, 0, 0, 1, 16>");
  CHECK(gemm_sm90_name_expression(Sm90GemmConfig::parse("in=f16,out=f16,bn=128,stages=10,arows=32,splits=4,reduce=cluster")) ==
        "swz::tpl::gemm_sm90_splitk4_kernel<0, 0, 128, 10, 8, 1, 0, 0, 0, 32>");
  // A stage of 16 rows of A and 32 of B: 6 KiB; the ring is followed by the 10 KiB the consumers' 128-row
  // reads of the last stage reach past it.
  CHECK(tpl::sm90_stage_bytes(32, 16) == 6144);
  CHECK(tpl::sm90_ring_bytes(32, 35, 16) == 35 * 6144 + 10240);
  CHECK(tpl::sm90_ring_bytes(256, 4) == 4 * tpl::sm90_stage_bytes(256));  // full stages: no slack
  CHECK(gemm_sm90_smem_bytes(c) == 1024 + 35 * 6144 + 10240 + 35 * 16);
  CHECK(gemm_sm90_max_stages(c) == 35);
  CHECK(gemm_sm90_max_stages(Sm90GemmConfig::parse("in=f16,out=f16,bn=32,stages=11")) == 11);
  CHECK(gemm_sm90_max_stages(Sm90GemmConfig::parse("in=f16,out=f16,bn=256,epilogue=tma")) == 4);
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("in=f16,out=f16,bn=32,stages=36,arows=16"); }),
                 "use stages <= 35"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("in=f16,out=f16,arows=48"); }),
                 "arows=48 must be 128, 64, 32 or 16"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("in=f16,out=f16,layout=TN,arows=32"); }),
                 "use arows=64"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("in=f16,out=f16,cluster=2,arows=32"); }),
                 "use cluster=1"));
  CHECK(gemm_sm90_short_arows(1, false) == 16);
  CHECK(gemm_sm90_short_arows(17, false) == 32);
  CHECK(gemm_sm90_short_arows(33, false) == 64);
  CHECK(gemm_sm90_short_arows(16, true) == 64);
  CHECK(gemm_sm90_short_arows(65, false) == 128);
  // M must fit (in the kernel's frame: a column-major C swaps M and N): Unsupported otherwise, naming both.
  CHECK_NOTHROW(gemm_sm90_frame(c, nt_problem(DType::F16, DType::F16, 16, 4096, 4096), 0, 0));
  const std::string why =
      error_of(ErrorKind::Unsupported, [&] { gemm_sm90_frame(c, nt_problem(DType::F16, DType::F16, 17, 4096, 4096), 0, 0); });
  CHECK(contains(why, "arows=16"));
  CHECK(contains(why, "M is 17"));
  CHECK(contains(why, "use arows=32 or leave arows out"));
  GemmProblem t = nt_problem(DType::F16, DType::F16, 4096, 16, 4096);
  t.c_order = MatrixOrder::ColMajor;  // C^T: the kernel's M is 16
  CHECK_NOTHROW(gemm_sm90_frame(c, t, 0, 0));
  // The layout proof: the A boxes fill the first 16 rows of each stage, which is all the wgmma must find.
  CHECK_NOTHROW(gemm_sm90_compile_request(c));
  CHECK_NOTHROW(gemm_sm90_compile_request(Sm90GemmConfig::parse("in=bf16,out=bf16,layout=TN,bn=64,stages=12,arows=64,epilogue=tma")));
}

TEST_CASE("gemm_sm90: 64-row stages make 64-row tiles: any M, pairs of them, K whole; shapes, names and the proof") {
  const Sm90GemmConfig c = Sm90GemmConfig::parse("in=bf16,out=bf16,bn=64,stages=14,arows=64");
  const Sm90GemmConfig pair = Sm90GemmConfig::parse("in=bf16,out=bf16,bn=64,stages=14,arows=64,cluster=2");
  CHECK(gemm_sm90_tile_rows(c) == 64);
  CHECK(gemm_sm90_tile_rows(Sm90GemmConfig::parse("in=bf16,out=bf16,bn=32,stages=18,arows=32")) == 128);
  CHECK(gemm_sm90_tile_rows(Sm90GemmConfig::parse("in=bf16,out=bf16")) == 128);
  // The pair kernel takes FIXUP and A_ROWS too.
  CHECK(gemm_sm90_name_expression(pair) == "swz::tpl::gemm_sm90_cluster2_kernel<1, 1, 64, 14, 8, 1, 0, 0, 0, 0, 64>");
  CHECK(gemm_sm90_max_stages(c) == 14);
  // One consumer warpgroup runs a 64-row tile: 256 threads, and its wgmma read only the stage's 64 rows of A, so
  // the ring has no slack after it (a 128-row tile's short stages do: both consumers read 64 rows).
  CHECK(tpl::sm90_consumers(64) == 1);
  CHECK(tpl::sm90_threads(64) == 256);
  CHECK(tpl::sm90_threads(128) == 384);
  CHECK(tpl::sm90_threads(32) == 384);
  CHECK(gemm_sm90_launch_shape(c, 200, 4096, 4096, 132, 1).block[0] == 256);
  CHECK(gemm_sm90_launch_shape(pair, 200, 4096, 4096, 132, 1).block[0] == 256);
  CHECK(gemm_sm90_launch_shape(Sm90GemmConfig::parse("in=bf16,out=bf16,bn=32,stages=18,arows=32"), 32, 4096, 4096, 132, 1)
            .block[0] == 384);
  CHECK(tpl::sm90_ring_bytes(32, 18, 64) == 18 * tpl::sm90_stage_bytes(32, 64));
  CHECK(gemm_sm90_max_stages(Sm90GemmConfig::parse("in=f16,out=f32,bn=32,arows=64,epilogue=tma")) == 16);  // 15 with slack
  // The layout proof reads A as the kernel does: one consumer's 64 rows per k16 step and stage, and its C
  // chunks alone (4 of 32 f32 columns for bn 128).
  const Sm90GemmConfig one_c = Sm90GemmConfig::parse("in=f16,out=f32,layout=NN,bn=128,stages=7,arows=64,epilogue=tma");
  const Sm90LayoutPlan one_plan = plan_sm90_layouts(one_c);
  CHECK(one_plan.a.reads.size() == static_cast<std::size_t>(7 * 4));
  CHECK(one_plan.c.boxes.size() == 4);
  CHECK(plan_sm90_layouts(Sm90GemmConfig::parse("in=f16,out=f32,layout=NN,bn=128,stages=6,epilogue=tma")).c.boxes.size() == 8);
  // Tiles of 64 rows: M = 200 is 4 tile rows (2 pairs), 4096 / 64 tile columns.
  CHECK_NOTHROW(gemm_sm90_frame(c, nt_problem(DType::BF16, DType::BF16, 200, 4096, 4096), 0, 0));
  CHECK(gemm_sm90_launch_shape(c, 200, 4096, 4096, 1000, 1).grid[0] == 4 * 64);
  CHECK(gemm_sm90_launch_shape(pair, 200, 4096, 4096, 1000, 1).grid[0] == 4 * 64);
  CHECK(gemm_sm90_launch_shape(pair, 130, 4096, 4096, 1000, 1).grid[0] == 4 * 64);  // 3 tile rows: 2 pairs
  CHECK(gemm_sm90_launch_shape(c, 200, 4096, 4096, 132, 1).grid[0] == 128);          // persistent, 2 waves
  CHECK(gemm_sm90_slice_rows(pair, 130) == 256);
  // K slices and the tail assume 128-row tiles: refused past one 64-row tile, naming what to use.
  const std::string why = error_of(ErrorKind::Unsupported, [&] {
    gemm_sm90_frame(Sm90GemmConfig::parse("in=bf16,out=bf16,bn=64,stages=14,arows=64,splits=2,reduce=fixup"),
                    nt_problem(DType::BF16, DType::BF16, 65, 4096, 4096), 0, 0);
  });
  CHECK(contains(why, "64-row tiles (arows=64) over M = 65"));
  CHECK(contains(why, "use splits=1 or reduce=cluster"));
  // Slices summed in a cluster take 64-row tiles over any M: 4096 / 64 tile rows x 2 slices.
  const Sm90GemmConfig paired = Sm90GemmConfig::parse("in=bf16,out=bf16,bn=64,stages=14,arows=64,splits=2,reduce=cluster");
  CHECK_NOTHROW(gemm_sm90_frame(paired, nt_problem(DType::BF16, DType::BF16, 4096, 64, 4096), 0, 0));
  CHECK(gemm_sm90_launch_shape(paired, 4096, 64, 4096, 132, 1).grid[0] == 128);
  CHECK(gemm_sm90_name_expression(paired) == "swz::tpl::gemm_sm90_splitk2_kernel<1, 1, 64, 14, 8, 1, 0, 0, 0, 64>");
  CHECK_NOTHROW(gemm_sm90_compile_request(paired));
  CHECK_NOTHROW(gemm_sm90_frame(Sm90GemmConfig::parse("in=bf16,out=bf16,bn=64,stages=14,arows=64,splits=2,reduce=fixup"),
                                nt_problem(DType::BF16, DType::BF16, 64, 4096, 4096), 0, 0));
  // Shorter stages still hold one tile row.
  CHECK(contains(error_of(ErrorKind::Unsupported, [] {
                   gemm_sm90_frame(Sm90GemmConfig::parse("in=bf16,out=bf16,bn=32,stages=18,arows=32"),
                                   nt_problem(DType::BF16, DType::BF16, 33, 4096, 4096), 0, 0);
                 }),
                 "use arows=64 or leave arows out"));
  // The layout proof for pairs of 64-row tiles sharing B, every layout they take.
  CHECK_NOTHROW(gemm_sm90_compile_request(pair));
  CHECK_NOTHROW(gemm_sm90_compile_request(Sm90GemmConfig::parse("in=f16,out=f16,layout=TT,bn=128,stages=8,arows=64,cluster=2")));
  CHECK_NOTHROW(gemm_sm90_compile_request(Sm90GemmConfig::parse("in=f16,out=f32,layout=NN,bn=128,stages=7,arows=64,epilogue=tma")));
}

TEST_CASE("gemm_sm90: A and B swapped (swap=1): text, rules, the swapped layout and frame, C transposed, workspace") {
  Sm90GemmConfig c = Sm90GemmConfig::parse("in=f16,out=f16,bn=32,stages=10,splits=4,reduce=cluster,swap=1");
  CHECK(c.swap_ab);
  CHECK(c.to_string() ==
        "in=f16,out=f16,layout=NT,bn=32,stages=10,raster=8,persistent=1,inflight=1,cluster=1,splits=4,reduce=cluster,swap=1");
  CHECK(Sm90GemmConfig::parse(c.to_string()) == c);
  CHECK(Sm90GemmConfig::parse("in=f16,out=f16,swap=0") == Sm90GemmConfig::parse("in=f16,out=f16"));
  // Its own kernel (C_TRANS: the transposed stores are compiled only into swapped kernels), the other template
  // arguments as without swap; the unswapped kernel's name keeps its defaults left out.
  Sm90GemmConfig plain = c;
  plain.swap_ab = false;
  CHECK(gemm_sm90_name_expression(plain) == "swz::tpl::gemm_sm90_splitk4_kernel<0, 0, 32, 10, 8, 1, 0, 0, 0>");
  CHECK(gemm_sm90_name_expression(c) == "swz::tpl::gemm_sm90_splitk4_kernel<0, 0, 32, 10, 8, 1, 0, 0, 0, 128, 1>");
  CHECK(gemm_sm90_name_expression(Sm90GemmConfig::parse("in=f16,out=f16,bn=64,stages=9,splits=2,reduce=fixup,swap=1")) ==
        "swz::tpl::gemm_sm90_kernel<0, 0, 64, 9, 8, 1, 0, 0, 0, 1, 128, 1>");
  CHECK(gemm_sm90_name_expression(Sm90GemmConfig::parse("in=bf16,out=bf16,bn=32,stages=11,swap=1")) ==
        "swz::tpl::gemm_sm90_kernel<1, 1, 32, 11, 8, 1, 0, 0, 0, 0, 128, 1>");
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("in=f16,out=f16,epilogue=tma,swap=1"); }),
                 "drop epilogue=tma"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("in=f16,out=f16,bn=128,stages=6,splits=2,swap=1"); }),
                 "reduce=cluster or reduce=fixup"));
  CHECK(contains(error_of(ErrorKind::InvalidArgument, [] { Sm90GemmConfig::parse("in=f16,out=f16,swap=2"); }), "swap"));
  CHECK_NOTHROW(Sm90GemmConfig::parse("in=f16,out=f16,bn=64,stages=9,splits=2,reduce=fixup,swap=1"));

  // Every layout and both orders of C: the roles swap once more than without swap=1.
  const DevicePtr p16 = 0x10000;
  const MatrixOrder R = MatrixOrder::RowMajor, C = MatrixOrder::ColMajor;
  struct Case {
    MatrixOrder a, b, c;
    const char* layout;  // the swapped kernel frame's
  };
  const Case cases[] = {{R, C, R, "NT"}, {R, R, R, "TT"}, {C, C, R, "NN"}, {C, R, R, "TN"},
                        {R, C, C, "NT"}, {R, R, C, "NN"}, {C, C, C, "TT"}, {C, R, C, "TN"}};
  for (const Case& k : cases) {
    GemmProblem p = nt_problem(DType::F16, DType::F16, 16, 200, 4096);
    p.a_order = k.a, p.b_order = k.b, p.c_order = k.c;
    CAPTURE(p.a_order == R);
    CAPTURE(p.b_order == R);
    CAPTURE(p.c_order == R);
    CHECK(gemm_sm90_layout(p, true) == k.layout);
    Sm90GemmConfig s = Sm90GemmConfig::parse(std::string("in=f16,out=f16,bn=64,stages=9,swap=1,layout=") + k.layout);
    const GemmProblem r = p.resolved();
    const Sm90Frame f = gemm_sm90_frame(s, p, p16, p16);
    CHECK(f.c_trans);
    CHECK(f.swapped == (k.c == R));
    CHECK(f.m == (k.c == R ? 200 : 16));
    CHECK(f.n == (k.c == R ? 16 : 200));
    CHECK(f.lda == (k.c == R ? r.ldb : r.lda));
    CHECK(f.ldb == (k.c == R ? r.lda : r.ldb));
    CHECK(f.ldc == r.ldc);
    // The unswapped layout is refused, naming the one to use.
    s.swap_ab = false;
    if (gemm_sm90_layout(p) != k.layout)
      CHECK(contains(error_of(ErrorKind::InvalidArgument, [&] { gemm_sm90_frame(s, p, p16, p16); }), "use layout="));
    s.swap_ab = true;
    s.layout = gemm_sm90_layout(p);
    if (s.layout != k.layout)
      CHECK(contains(error_of(ErrorKind::InvalidArgument, [&] { gemm_sm90_frame(s, p, p16, p16); }),
                     std::string("A and B swapped) but the config's is ") + s.layout + "; use layout=" + k.layout));
  }
  // The frame's M (the problem's N) is what short A stages must hold, and what the launch and workspace count.
  const GemmProblem skinny = nt_problem(DType::F16, DType::F16, 16, 4096, 4096);
  CHECK(contains(error_of(ErrorKind::Unsupported, [&] {
                   gemm_sm90_frame(Sm90GemmConfig::parse("in=f16,out=f16,bn=32,stages=20,arows=16,swap=1"), skinny, 0, 0);
                 }),
                 "M is 4096"));
  // 128 x 32 tiles of C^T: 32 tiles, 4 K slices each in a cluster: 128 CTAs, no workspace.
  CHECK(gemm_sm90_launch_shape(c, 4096, 16, 4096, 132, 1).grid[0] == 128);
  CHECK(gemm_sm90_workspace_bytes(c, skinny) == 0);
  // Summed in the kernel: slices of the 4096 frame rows (one tile row each 128), 16 columns padded to 32 (the
  // workspace pitch), then a flag per tile.
  const Sm90GemmConfig fx = Sm90GemmConfig::parse("in=f16,out=f16,bn=32,stages=10,splits=4,reduce=fixup,swap=1");
  CHECK(gemm_sm90_workspace_bytes(fx, skinny) ==
        static_cast<std::size_t>((4LL * 4096 * gemm_splitk_workspace_ld(16) * 4 + 255) / 256 * 256 + (32 * 8 + 255) / 256 * 256));
  CHECK_NOTHROW(gemm_sm90_compile_request(c));
}
