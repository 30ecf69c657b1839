// tests/generator/families/gemm_sm90 (CPU suite): the layout proof of the Hopper GEMM -- every valid config
// (bn 128/256, every stage count, clusters, f16/bf16) proves A and B; the kernel's plan altered as a bug
// would alter it (a 64B TMA swizzle, SBO 512, a +16-byte k step, a wrong cluster offset) fails, naming the
// operand and the k step; the public text entry point and the epilogue candidates.
#include <doctest/doctest.h>

#include <string>

#include "generator/families/gemm_sm90/gemm_sm90_analysis.hpp"
#include "swzjit/analysis/sm90_layouts.hpp"
#include "swzjit/error.hpp"

using namespace swz;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The descriptor `raw` with its stride byte offset replaced by `sbo` bytes.
unsigned long long with_sbo(unsigned long long raw, long long sbo) {
  const WgmmaDescriptor d = WgmmaDescriptor::decode(raw);
  return WgmmaDescriptor::encode(d.start, d.lbo, sbo, d.swizzle, d.base_offset);
}

}  // namespace

TEST_CASE("every valid sm_90a gemm config proves: A and B as the TMA writes them are what wgmma reads") {
  int configs = 0;
  for (DType in : {DType::F16, DType::BF16}) {
    for (int bn : {32, 64, 128, 256}) {
      for (int cluster : {1, 2}) {
        for (int stages = 2; stages <= 7; ++stages) {
          Sm90GemmConfig cfg = default_sm90_gemm_config(in, DType::F32);
          cfg.bn = bn;
          cfg.cluster = cluster;
          cfg.stages = stages;
          if (tpl::sm90_smem_bytes(bn, stages) > tpl::kSm90MaxSmem) continue;
          CAPTURE(cfg.to_string());
          const Sm90LayoutReport r = analyze_sm90_layouts(cfg);
          REQUIRE(r.operands.size() == 2u);
          CHECK_MESSAGE(r.operands[0].ok, r.operands[0].error);
          CHECK_MESSAGE(r.operands[1].ok, r.operands[1].error);
          CHECK(r.ok());
          CHECK(r.operands[0].operand == "A");
          CHECK(r.operands[1].operand == "B");
          // every element of every wgmma: A 2 consumers x 4 k steps x 64 x 16, B 4 k steps x bn x 16, per stage
          CHECK(r.operands[0].elements_checked == stages * 2 * 4 * 64 * 16);
          CHECK(r.operands[1].elements_checked == stages * 4 * bn * 16);
          CHECK(r.operands[1].plan.fills.size() == static_cast<std::size_t>(stages * cluster));
          CHECK_NOTHROW(check_sm90_layouts(cfg));
          ++configs;
        }
      }
    }
  }
  CHECK(configs == 2 * 2 * (6 + 6 + 6 + 3));  // bn 32, 64 and 128: 2..7 stages fit, bn 256: 2..4
  // The widths between (one CTA a tile): every layout they take, 16-bit and f32 C, both epilogues where C is
  // whole chunks (16-bit C always: chunks of 64, 32 or 16 columns; f32 C in chunks of 32), the deepest ring
  // and a shallow one; the TMA epilogue's stores of 16-bit C free of bank conflicts at every chunk width.
  int between = 0, between_c = 0;
  for (int bn = 48; bn < 256; bn += 16) {
    if (bn == 64 || bn == 128) continue;
    for (const char* layout : {"NT", "NN", "TN", "TT"})
      for (const DType out : {DType::F16, DType::F32})
        for (const bool tma : {false, true})
          for (const bool deep : {true, false}) {
            Sm90GemmConfig cfg = default_sm90_gemm_config(DType::BF16, out);
            cfg.layout = layout;
            cfg.bn = bn;
            cfg.tma_epilogue = tma;
            cfg.stages = deep ? gemm_sm90_max_stages(cfg) : 2;
            try {
              cfg.validate();
            } catch (const Error&) {
              // only an N-contiguous B past whole 64-wide boxes, or C past whole chunks, is refused
              CHECK((cfg.b_mn_major() || (tma && out == DType::F32 && bn % 32 != 0)));
              continue;
            }
            CAPTURE(cfg.to_string());
            const Sm90LayoutReport r = analyze_sm90_layouts(cfg);
            CHECK(r.ok());
            CHECK(r.operands[1].elements_checked == cfg.stages * 4LL * bn * 16);
            CHECK(r.has_c_store == tma);
            if (tma) {
              CHECK_MESSAGE(r.c_store.ok, r.c_store.error);
              CHECK(r.c_store.elements_checked == 128LL * bn);
              if (out == DType::F32) {
                // st.shared.v2.f32 pairs: 2-way in the 128-byte chunks (as for the powers of two)
                CHECK(r.c_store.cost.max_way == 2);
                CHECK(r.c_store.cost.excess_wavefronts == 2 * r.c_store.cost.instructions);
              } else {
                // stmatrix.x4 into rows of 128, 64 or 32 bytes: 8 rows on 8 different 16-byte slots
                CHECK(r.c_store.cost.instruction == "stmatrix.x4");
                CHECK(r.c_store.cost.instructions == 2 * 4 * bn / 16);
                CHECK(r.c_store.cost.excess_wavefronts == 0);
                CHECK(r.c_store.cost.max_way == 1);
              }
              ++between_c;
            }
            ++between;
          }
  }
  // From registers: 11 widths in NT and TT, 192 alone in NN and TN, x 2 C types x 2 rings = 96. Through TMA:
  // 16-bit C at all 11 widths and f32 C at 96, 160, 192, 224 in NT and TT (15 each), 192 alone in NN and TN (2
  // each), x 2 rings = 68.
  CHECK(between == 96 + 68);
  CHECK(between_c == 68);
  // the default and the shape-chosen configs
  CHECK_NOTHROW(check_sm90_layouts(default_sm90_gemm_config(DType::F16, DType::F16)));
  CHECK(analyze_sm90_gemm_layouts("").ok());
  CHECK(analyze_sm90_gemm_layouts("in=bf16,out=f32,bn=128,stages=6,cluster=2").ok());
}

TEST_CASE("the plan is the kernel's: boxes, stage offsets and descriptors") {
  Sm90GemmConfig cfg = default_sm90_gemm_config(DType::F16, DType::F16);
  cfg.bn = 256;
  cfg.stages = 3;
  cfg.cluster = 2;
  const Sm90LayoutPlan p = plan_sm90_layouts(cfg);
  const long long stage = tpl::sm90_stage_bytes(256);
  REQUIRE(p.a.fills.size() == 3u);
  CHECK(p.a.fills[2].box.dst == kSm90AnalysisBase + 2 * stage);
  CHECK(p.a.fills[2].box.inner == 64);
  CHECK(p.a.fills[2].box.outer == 128);
  CHECK(p.a.fills[2].box.swizzle == TmaSwizzle::B128);
  REQUIRE(p.b.fills.size() == 6u);
  CHECK(p.b.fills[1].box.outer == 128);  // half of bn per CTA of the cluster
  CHECK(p.b.fills[1].box.dst == kSm90AnalysisBase + tpl::sm90_a_stage_bytes() + 128 * 128);
  CHECK(p.b.fills[1].mn0 == 128);
  REQUIRE(p.a.reads.size() == 3u * 8u);
  // stage 0, k step 1, consumer 1: 64 rows of 128 bytes on, +32 bytes
  CHECK(p.a.reads[3].desc == tpl::sm90_desc(static_cast<unsigned>(kSm90AnalysisBase + 64 * 128 + 32)));
  CHECK(p.a.reads[3].where == "stage 0, consumer 1");
  CHECK(p.a.reads[3].mn0 == 64);
  CHECK(p.a.reads[3].k0 == 16);
  CHECK(p.b.tile.mn == 256);
  const WgmmaDescriptor d = WgmmaDescriptor::decode(p.b.reads[0].desc);
  CHECK(d.sbo == 1024);
  CHECK(d.swizzle == TmaSwizzle::B128);
}

TEST_CASE("deliberate mismatches in the kernel's plan are caught and name the operand") {
  Sm90GemmConfig cfg = default_sm90_gemm_config(DType::F16, DType::F16);
  SUBCASE("a 64B TMA swizzle against the 128B descriptors (A loaded as two 32-wide boxes)") {
    Sm90LayoutPlan p = plan_sm90_layouts(cfg);
    OperandPlan& a = p.a;
    std::vector<TmaFill> fills;
    for (const TmaFill& f : a.fills) {
      for (int i = 0; i < 2; ++i) {
        TmaFill g = f;
        g.box.inner = 32;
        g.box.swizzle = TmaSwizzle::B64;
        g.box.dst = f.box.dst + i * 128 * 64;
        g.k0 = 32 * i;
        fills.push_back(g);
      }
    }
    a.fills = fills;
    const Sm90LayoutReport r = analyze_sm90_layouts(cfg, p);
    CHECK_FALSE(r.ok());
    CHECK_FALSE(r.operands[0].ok);
    CHECK(r.operands[1].ok);
    CHECK(contains(r.operands[0].error, "operand A, k step 0 (stage 0, consumer 0"));
    CHECK(r.operands[0].expected_address != r.operands[0].actual_address);
  }
  SUBCASE("an SBO of 512 instead of 1024 (B)") {
    Sm90LayoutPlan p = plan_sm90_layouts(cfg);
    for (WgmmaRead& r : p.b.reads) r.desc = with_sbo(r.desc, 512);
    const OperandProof proof = prove_operand(p.b);
    CHECK_FALSE(proof.ok);
    CHECK(contains(proof.error, "operand B, k step 0 (stage 0"));
    CHECK(proof.mn == 8);
    CHECK(proof.k == 0);
    CHECK(proof.expected_address == kSm90AnalysisBase + tpl::sm90_a_stage_bytes() + 1024);
  }
  SUBCASE("a k step of +16 bytes instead of +32 (A)") {
    Sm90LayoutPlan p = plan_sm90_layouts(cfg);
    for (WgmmaRead& r : p.a.reads) {
      const WgmmaDescriptor d = WgmmaDescriptor::decode(r.desc);
      r.desc = tpl::sm90_desc(static_cast<unsigned>(d.start - 16 * r.k_step));
    }
    const OperandProof proof = prove_operand(p.a);
    CHECK_FALSE(proof.ok);
    CHECK(proof.k_step == 1);
    CHECK(contains(proof.error, "operand A, k step 1"));
    CHECK(proof.k == 16);
    CHECK(proof.actual_address + 16 == proof.expected_address);
  }
  SUBCASE("the second CTA's half of B at the wrong offset (cluster of two)") {
    cfg.cluster = 2;
    Sm90LayoutPlan p = plan_sm90_layouts(cfg);
    for (TmaFill& f : p.b.fills)
      if (f.mn0 != 0) f.box.dst -= 1024;  // overlaps the first half's last 8 rows
    const OperandProof proof = prove_operand(p.b);
    CHECK_FALSE(proof.ok);
    CHECK(contains(proof.error, "operand B: TMA box"));
  }
  SUBCASE("check_sm90_layouts throws Internal, naming the operand, for a broken kernel") {
    // the kernel's own configs prove, so the throwing path is exercised through the report's error text
    Sm90LayoutPlan p = plan_sm90_layouts(cfg);
    p.a.reads[5].desc = with_sbo(p.a.reads[5].desc, 2048);
    const Sm90LayoutReport r = analyze_sm90_layouts(cfg, p);
    CHECK(contains(r.operands[0].error, "operand A, k step " + std::to_string(p.a.reads[5].k_step)));
    CHECK_THROWS_AS(analyze_sm90_gemm_layouts("bn=100"), Error);
  }
}

TEST_CASE("the epilogue candidates of a config are costed") {
  Sm90GemmConfig cfg = default_sm90_gemm_config(DType::F16, DType::F16);
  cfg.bn = 128;
  const Sm90LayoutReport r = analyze_sm90_layouts(cfg);
  REQUIRE(r.epilogue.size() == 6u);  // 3 layouts x (pair, stmatrix)
  for (const Sm90EpilogueOption& o : r.epilogue) {
    CAPTURE(o.layout.to_string());
    CHECK(o.cost.instructions > 0);
    if (o.layout.swizzle == TmaSwizzle::B128 || o.layout.pitch_bytes != 0)
      CHECK(o.cost.excess_wavefronts == 0);
    else
      CHECK(o.cost.max_way == 8);
  }
  cfg.out = DType::F32;
  CHECK(analyze_sm90_layouts(cfg).epilogue.size() == 3u);  // no stmatrix for f32
}
