// tests/generator/families/gemm_sm90 (CPU suite): the layout proof of the Hopper GEMM beyond K-major A and B
// -- every config the tuner can use (each layout, dtype pair and epilogue, sm90_gemm_space around
// choose_sm90_gemm_config) proves A, B and the TMA-store epilogue's C; mutations of MN-major descriptors and
// boxes and of the C buffers' swizzle are caught naming the operand; the proof runs once per config before
// NVRTC (gemm_sm90_compile_request), also from several threads.
#include <doctest/doctest.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "generator/families/gemm_sm90/gemm_sm90_analysis.hpp"
#include "generator/families/gemm_sm90/gemm_sm90_space.hpp"
#include "swzjit/analysis/sm90_layouts.hpp"
#include "swzjit/error.hpp"

using namespace swz;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A problem of `m` x `n` x `k` whose kernel-frame layout is `layout` (C row-major: A 'N' is row-major A,
// B 'T' column-major B).
GemmProblem problem(const std::string& layout, DType in, DType out, long long m, long long n, long long k) {
  GemmProblem p;
  p.dtype = in;
  p.out_dtype = out;
  p.m = m, p.n = n, p.k = k;
  p.a_order = layout[0] == 'N' ? MatrixOrder::RowMajor : MatrixOrder::ColMajor;
  p.b_order = layout[1] == 'T' ? MatrixOrder::ColMajor : MatrixOrder::RowMajor;
  p.c_order = MatrixOrder::RowMajor;
  return p.resolved();
}

// What of a config enters its layouts: dtypes, layout, tile width, stages, cluster and epilogue.
std::string layout_key(const Sm90GemmConfig& c) {
  return to_string(c.in) + to_string(c.out) + c.layout + std::to_string(c.bn) + "/" + std::to_string(c.stages) + "/" +
         std::to_string(c.cluster) + (c.tma_epilogue ? "tma" : "regs");
}

// The Internal error check_sm90_layouts throws for `plan`, or "" when it throws nothing.
std::string check_error(const Sm90GemmConfig& cfg, const Sm90LayoutPlan& plan) {
  try {
    check_sm90_layouts(cfg, plan);
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Internal);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("every config the tuner can use proves: all layouts, dtype pairs and both epilogues") {
  const std::pair<DType, DType> dtypes[] = {{DType::F16, DType::F16}, {DType::F16, DType::F32}, {DType::BF16, DType::BF16},
                                            {DType::BF16, DType::F32}, {DType::F16, DType::BF16}};
  int proved = 0, with_c = 0;
  std::set<std::string> plans;
  for (const char* layout : {"NT", "NN", "TN", "TT"}) {
    for (const auto& dt : dtypes) {
      // 4096^3 (bn 256), M = 128 (bn 32 or, B N-contiguous, 128 in K slices), 8192^3 (clusters of two).
      for (const long long size : {4096LL, 128LL, 8192LL}) {
        const GemmProblem p = problem(layout, dt.first, dt.second, size, size == 128 ? 4096 : size, size == 128 ? 4096 : size);
        Sm90GemmConfig base = choose_sm90_gemm_config(p, 132);
        REQUIRE(base.layout == layout);
        for (const bool tma : {true, false}) {
          base.tma_epilogue = tma;
          for (const Sm90GemmConfig& cfg : sm90_gemm_space(base)) {
            // raster, persistent and inflight change no layout: each plan is proved once.
            if (!plans.insert(layout_key(cfg)).second) continue;
            CAPTURE(cfg.to_string());
            const Sm90LayoutReport r = analyze_sm90_layouts(cfg);
            REQUIRE(r.operands.size() == 2u);
            CHECK_MESSAGE(r.operands[0].ok, r.operands[0].error);
            CHECK_MESSAGE(r.operands[1].ok, r.operands[1].error);
            CHECK(r.operands[0].plan.tile.major == (cfg.a_mn_major() ? WgmmaMajor::MN : WgmmaMajor::K));
            CHECK(r.operands[1].plan.tile.major == (cfg.b_mn_major() ? WgmmaMajor::MN : WgmmaMajor::K));
            CHECK(r.operands[1].elements_checked == cfg.stages * 4LL * cfg.bn * 16);
            CHECK(r.has_c_store == cfg.tma_epilogue);
            if (cfg.tma_epilogue) {
              CHECK_MESSAGE(r.c_store.ok, r.c_store.error);
              CHECK(r.c_store.elements_checked == 128LL * cfg.bn);  // both consumers' 64 x bn, once each
              if (cfg.out != DType::F32) {
                // stmatrix.x4 of two column groups per warp (2 consumers x 4 warps): each matrix's 8 rows
                // are 8 different swizzled 16-byte units: conflict-free, 4 wavefronts each.
                CHECK(r.c_store.cost.instruction == "stmatrix.x4");
                CHECK(r.c_store.cost.instructions == 2 * 4 * cfg.bn / 16);
                CHECK(r.c_store.cost.wavefronts == 4 * r.c_store.cost.instructions);
                CHECK(r.c_store.cost.excess_wavefronts == 0);
                CHECK(r.c_store.cost.max_way == 1);
              } else {
                CHECK(r.c_store.cost.instruction == "st.shared.v2.f32");
                CHECK(r.c_store.cost.instructions == 2 * 4 * 2 * cfg.bn / 8);
                // st.shared.v2.f32: a half-warp writes rows r..r+3 at units {2jj, 2jj+1} ^ (r % 8), and rows
                // 2i and 2i+1 XOR onto the same two units: 2-way, one extra wavefront per half-warp.
                CHECK(r.c_store.cost.max_way == 2);
                CHECK(r.c_store.cost.excess_wavefronts == 2 * r.c_store.cost.instructions);
              }
              ++with_c;
            }
            CHECK(r.ok());
            ++proved;
          }
        }
      }
    }
  }
  MESSAGE(proved << " distinct layouts proved, " << with_c << " with the TMA-store epilogue");
  CHECK(proved >= 4 * 5 * 2 * 6);  // per layout, dtype pair and epilogue: bn 128 and 256, several stage counts
  // Every plan of a wide space comes with and without the TMA-store epilogue; a skinny space adds plans of
  // 32- and 64-wide tiles with C from registers only.
  CHECK(with_c >= 4 * 5 * 6);
  CHECK(with_c * 2 < proved);
}

TEST_CASE("the MN-major plan is the kernel's: 64 x 64 boxes, sm90_desc_mn with the next box as LBO") {
  Sm90GemmConfig cfg = Sm90GemmConfig::parse("in=f16,out=f16,layout=TN,bn=256,stages=3,cluster=2");
  const Sm90LayoutPlan p = plan_sm90_layouts(cfg);
  CHECK(p.a.tile.major == WgmmaMajor::MN);
  CHECK(p.b.tile.major == WgmmaMajor::MN);
  REQUIRE(p.a.fills.size() == 3u * 2u);  // per stage, 128 rows of A as two boxes of 64
  CHECK(p.a.fills[1].box.inner == tpl::kSm90MnBox);
  CHECK(p.a.fills[1].box.outer == tpl::kSm90Bk);
  CHECK(p.a.fills[1].box.dst == kSm90AnalysisBase + tpl::kSm90MnBoxBytes);
  CHECK(p.a.fills[1].mn0 == 64);
  REQUIRE(p.b.fills.size() == 3u * 4u);  // per stage: 2 CTAs x 128 rows of B as boxes of 64
  CHECK(p.b.fills[2].box.dst == kSm90AnalysisBase + tpl::sm90_a_stage_bytes() + 128 * 128);
  CHECK(p.b.fills[2].mn0 == 128);
  // consumer 1's A, k step 2: its own box, 32 rows of K on
  const WgmmaRead& rd = p.a.reads[2 * 2 + 1];
  CHECK(rd.where == "stage 0, consumer 1");
  const WgmmaDescriptor d = WgmmaDescriptor::decode(rd.desc);
  CHECK(d.start == kSm90AnalysisBase + tpl::kSm90MnBoxBytes + 2 * 2048);
  CHECK(d.lbo == tpl::kSm90MnBoxBytes);
  CHECK(d.sbo == 1024);
  CHECK(analyze_sm90_layouts(cfg, p).ok());
  // The C plan: every chunk of both consumers, in the buffers after the stages.
  cfg.tma_epilogue = true;
  cfg.out = DType::F32;
  const Sm90LayoutPlan pc = plan_sm90_layouts(cfg);
  REQUIRE(pc.has_c);
  REQUIRE(pc.c.boxes.size() == 2u * 8u);  // f32: 32 columns per 128-byte chunk
  CHECK(pc.c.boxes[9].box.dst == kSm90AnalysisBase + 3 * tpl::sm90_stage_bytes(256) + 2 * tpl::kSm90CChunkBytes +
                                     tpl::kSm90CChunkBytes);
  CHECK(pc.c.boxes[9].box.inner == 32);
  CHECK(pc.c.boxes[9].box.outer == 64);
  CHECK(pc.c.boxes[9].box.swizzle == TmaSwizzle::B128);
  CHECK(pc.c.boxes[9].row0 == 64);
  CHECK(pc.c.boxes[9].col0 == 32);
  CHECK(pc.c.writes.size() == 2u * 64u * 256u / 2u);  // both consumers' 64 x 256, in pairs
}

TEST_CASE("mutations of MN-major operands and of the C buffers are caught and name the operand") {
  SUBCASE("an MN-major descriptor with a wrong leading byte offset (B, the next 64 columns)") {
    const Sm90GemmConfig cfg = Sm90GemmConfig::parse("in=f16,out=f16,layout=NN,bn=256");
    Sm90LayoutPlan p = plan_sm90_layouts(cfg);
    for (WgmmaRead& r : p.b.reads) {
      const WgmmaDescriptor d = WgmmaDescriptor::decode(r.desc);
      r.desc = tpl::sm90_desc_mn(static_cast<unsigned>(d.start), tpl::kSm90MnBoxBytes / 2);
    }
    const Sm90LayoutReport r = analyze_sm90_layouts(cfg, p);
    CHECK(r.operands[0].ok);
    REQUIRE_FALSE(r.operands[1].ok);
    CHECK_FALSE(r.ok());
    CHECK(contains(r.operands[1].error, "operand B, k step 0 (stage 0"));
    CHECK(r.operands[1].mn == 64);  // the first element past the first box
    CHECK(r.operands[1].expected_address == kSm90AnalysisBase + tpl::sm90_a_stage_bytes() + tpl::kSm90MnBoxBytes);
    const std::string e = check_error(cfg, p);
    CHECK(contains(e, "operand B"));
    CHECK(contains(e, "not compiled"));
  }
  SUBCASE("an MN box of the wrong width (A loaded 32 wide)") {
    const Sm90GemmConfig cfg = Sm90GemmConfig::parse("in=bf16,out=f32,layout=TT,bn=128,stages=6");
    Sm90LayoutPlan p = plan_sm90_layouts(cfg);
    for (TmaFill& f : p.a.fills) f.box.inner = 32;
    const Sm90LayoutReport r = analyze_sm90_layouts(cfg, p);
    CHECK(r.operands[1].ok);
    REQUIRE_FALSE(r.operands[0].ok);
    // A box of 64-byte rows under the 128-byte swizzle is refused before any element is compared (the
    // hardware does not pack such rows).
    CAPTURE(r.operands[0].error);
    CHECK(contains(r.operands[0].error, "operand A"));
    CHECK(contains(r.operands[0].error, "narrower than the 128B"));
    CHECK(contains(check_error(cfg, p), "operand A"));
  }
  SUBCASE("C buffers written with a 64B swizzle while the C map reads 128B") {
    for (const char* text : {"in=f16,out=f16,layout=TN,epilogue=tma", "in=bf16,out=f32,bn=128,stages=6,epilogue=tma"}) {
      const Sm90GemmConfig cfg = Sm90GemmConfig::parse(text);
      CAPTURE(text);
      Sm90LayoutPlan p = plan_sm90_layouts(cfg);
      REQUIRE(p.has_c);
      // The buffers are 1024-byte aligned, so the 128B swizzle undoes itself; then swizzle as 64B.
      for (CStoreWrite& w : p.c.writes)
        w.address = tma_swizzle_address(TmaSwizzle::B64, tma_swizzle_address(TmaSwizzle::B128, w.address));
      const Sm90LayoutReport r = analyze_sm90_layouts(cfg, p);
      CHECK(r.operands[0].ok);
      CHECK(r.operands[1].ok);
      REQUIRE_FALSE(r.c_store.ok);
      CHECK_FALSE(r.ok());
      CHECK(contains(r.c_store.error, "operand C: chunk 0"));
      CHECK(r.c_store.row >= 0);
      CHECK(r.c_store.expected_address != r.c_store.actual_address);
      const std::string e = check_error(cfg, p);
      CHECK(contains(e, "operand C"));
      CHECK(contains(e, "the epilogue's C writes and the C map's TMA store disagree"));
    }
  }
  SUBCASE("stmatrix's registers in another order: the matrices of rows 8-15 and of the next column group swapped") {
    const Sm90GemmConfig cfg = Sm90GemmConfig::parse("in=bf16,out=bf16,layout=NT,epilogue=tma");
    Sm90LayoutPlan p = plan_sm90_layouts(cfg);
    REQUIRE(p.has_c);
    REQUIRE(p.c.writes.front().elems == 8);  // 16-bit C: rows of stmatrix matrices
    CHECK(prove_c_store(p.c).ok);
    // Registers {0, 2, 1, 3}: matrix 1 (lanes 8-15) would hold the next column group's rows 0-7, matrix 2
    // (lanes 16-23) this group's rows 8-15.
    for (CStoreWrite& w : p.c.writes) {
      const int m = w.lane / 8;
      if (m == 1) w.row -= 8, w.col += 8;
      if (m == 2) w.row += 8, w.col -= 8;
    }
    const CStoreProof proof = prove_c_store(p.c);
    REQUIRE_FALSE(proof.ok);
    CHECK(contains(proof.error, "operand C: chunk 0 (instruction 0, lane 8)"));
    CHECK(proof.expected_address != proof.actual_address);
  }
  SUBCASE("the second consumer's buffers on the first's, and a chunk no write fills") {
    const Sm90GemmConfig cfg = Sm90GemmConfig::parse("in=f16,out=f16,epilogue=tma");
    Sm90LayoutPlan p = plan_sm90_layouts(cfg);
    const long long shift = 2 * tpl::kSm90CChunkBytes;
    for (TmaStoreBox& b : p.c.boxes)
      if (b.row0 != 0) b.box.dst -= shift;
    for (CStoreWrite& w : p.c.writes)
      if (w.row >= 64) w.address -= shift;
    CHECK(contains(check_error(cfg, p), "operand C: the buffers of chunks"));
    p = plan_sm90_layouts(cfg);
    p.c.writes.resize(p.c.writes.size() - 32);  // the last warp-wide store is missing
    const CStoreProof proof = prove_c_store(p.c);
    CHECK_FALSE(proof.ok);
    CHECK(contains(proof.error, "which no write filled"));
  }
}

TEST_CASE("gemm_sm90_compile_request proves the layouts once per config, from any thread") {
  // One proof, measured: the largest plan (4 stages of bn 256, the TMA-store epilogue).
  const Sm90GemmConfig big = Sm90GemmConfig::parse("in=f16,out=f32,layout=TN,bn=256,stages=4,epilogue=tma");
  const auto t0 = std::chrono::steady_clock::now();
  check_sm90_layouts(big);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("one layout proof (" << big.to_string() << "): " << ms << " ms");
  CHECK(ms < 2000.0);
  // Every config of a space, from 4 threads at once: every request is built, with the same source.
  const std::vector<Sm90GemmConfig> space = sm90_gemm_space(
      choose_sm90_gemm_config(problem("TT", DType::BF16, DType::BF16, 4096, 4096, 4096), 132));
  std::vector<std::vector<std::string>> sources(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      for (const Sm90GemmConfig& c : space) sources[i].push_back(gemm_sm90_compile_request(c).source);
    });
  for (std::thread& t : threads) t.join();
  for (int i = 1; i < 4; ++i) CHECK(sources[i] == sources[0]);
  REQUIRE(sources[0].size() == space.size());
  CHECK(contains(sources[0][0], "layout=TT"));
  // Memoized: the second request of a config costs no proof.
  const auto t1 = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) (void)gemm_sm90_compile_request(space[0]);
  const double again = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count() / 100;
  MESSAGE("a memoized request: " << again << " ms");
  Sm90GemmConfig bad;
  bad.bn = 100;  // not a multiple of 16
  CHECK_THROWS_AS(gemm_sm90_compile_request(bad), Error);
}
