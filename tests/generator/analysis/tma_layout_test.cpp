// tests/generator/analysis: TMA swizzle modes against brute-force descriptions, TMA boxes, wgmma descriptor
// decoding (K-major and MN-major, every swizzle mode, hand-built descriptors proved against hand-built
// boxes), the errors of a failed proof, the epilogue's bank costs against the bank model, and an NVRTC
// compile of the GPU suite's wgmma probe.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "swzjit/analysis/tma.hpp"
#include "swzjit/error.hpp"
#include "swzjit/jit.hpp"
#include "templates/gemm_sm90.cuh"
#include "tests/generator/analysis/wgmma_probe.hpp"

using namespace swz;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string invalid_message(void (*f)()) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind() == ErrorKind::InvalidArgument ? e.what() : "";
  }
  return "";
}

// The pattern as the CUDA documentation draws it: a swizzle of R-byte rows permutes the 16-byte chunks of
// each row; chunk c of row `row` (row = address / R) goes to c ^ ((row / (128 / R)) % (R / 16)).
long long brute_swizzle(int row_bytes, long long a) {
  if (row_bytes == 16) return a;
  const long long row = a / row_bytes, chunk = (a % row_bytes) / 16;
  const long long to = chunk ^ ((row / (128 / row_bytes)) % (row_bytes / 16));
  return row * row_bytes + to * 16 + a % 16;
}

TmaBox make_box(long long dst, int inner, int outer, TmaSwizzle s, int eb = 2) {
  TmaBox b;
  b.dst = dst;
  b.inner = inner;
  b.outer = outer;
  b.elem_bytes = eb;
  b.swizzle = s;
  return b;
}

WgmmaTile make_tile(WgmmaOperand o, WgmmaMajor m, int mn, int eb = 2) {
  WgmmaTile t;
  t.operand = o;
  t.major = m;
  t.elem_bytes = eb;
  t.mn = mn;
  return t;
}

// A K-major tile of `rows` x 64 f16 in one 128B-swizzled box at `base`, read by 4 k16 steps (+32 bytes).
OperandPlan k_major_sw128(WgmmaOperand o, int rows, long long base, long long step_bytes, long long sbo) {
  OperandPlan p;
  p.tile = make_tile(o, WgmmaMajor::K, o == WgmmaOperand::A ? 64 : rows);
  p.fills.push_back(TmaFill{make_box(base, 64, rows, TmaSwizzle::B128), 0, 0, 0});
  for (int k = 0; k < 4; ++k)
    p.reads.push_back(WgmmaRead{WgmmaDescriptor::encode(base + step_bytes * k, 16, sbo, TmaSwizzle::B128), 0, 0,
                                16 * k, k, ""});
  return p;
}

}  // namespace

TEST_CASE("TMA swizzle modes are Swizzle<B,4,3> on byte addresses, as the documented chunk permutation") {
  const TmaSwizzle modes[] = {TmaSwizzle::None, TmaSwizzle::B32, TmaSwizzle::B64, TmaSwizzle::B128};
  for (int b = 0; b < 4; ++b) {
    const TmaSwizzle s = modes[b];
    CHECK(tma_swizzle_spec(s) == SwizzleSpec{b, 4, 3});
    CHECK(tma_swizzle_row_bytes(s) == 16 << b);
    CHECK(tma_swizzle_atom_bytes(s) == 128 << b);
    CHECK(parse_tma_swizzle(to_string(s)) == s);
    std::set<long long> image;
    for (long long a = 0; a < 4096; ++a) {
      REQUIRE(tma_swizzle_address(s, a) == brute_swizzle(16 << b, a));
      if (a < tma_swizzle_atom_bytes(s)) image.insert(tma_swizzle_address(s, a));
    }
    // a bijection of every atom onto itself
    CHECK(static_cast<int>(image.size()) == tma_swizzle_atom_bytes(s));
    CHECK(*image.rbegin() == tma_swizzle_atom_bytes(s) - 1);
  }
  CHECK(contains(invalid_message([] { parse_tma_swizzle("256B"); }), "none, 32B, 64B, 128B"));
}

TEST_CASE("a TMA box's element addresses, and what a box may not be") {
  const TmaBox b = make_box(2048, 64, 16, TmaSwizzle::B128);
  const std::vector<long long> addrs = tma_box_addresses(b);
  REQUIRE(addrs.size() == 64u * 16u);
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 64; ++c)
      REQUIRE(addrs[r * 64 + c] == 2048 + r * 128 + (((c / 8) ^ (r % 8)) * 16) + (c % 8) * 2);
  // 64B: 32 f16 per row; chunk c of row r goes to c ^ ((r / 2) % 4)
  const TmaBox b64 = make_box(0, 32, 8, TmaSwizzle::B64);
  CHECK(b64.address(2, 0) == 2 * 64 + 16);
  CHECK(b64.address(3, 9) == 3 * 64 + (1 ^ 1) * 16 + 2);
  CHECK(contains(invalid_message([] { make_box(0, 64, 8, TmaSwizzle::B64).validate(); }), "inner"));
  CHECK(contains(invalid_message([] { make_box(0, 64, 8, TmaSwizzle::B64).validate(); }), "wider than the 64B"));
  // Narrower rows than the swizzle's are not packed by the hardware (the H100 probe showed it): refused.
  CHECK(contains(invalid_message([] { make_box(0, 32, 8, TmaSwizzle::B128).validate(); }), "narrower than the 128B"));
  CHECK(contains(invalid_message([] { make_box(64, 64, 8, TmaSwizzle::B128).validate(); }), "128-byte aligned"));
  CHECK(contains(invalid_message([] { make_box(0, 4, 8, TmaSwizzle::None).validate(); }), "multiple of 16"));
  CHECK(contains(invalid_message([] { make_box(0, 64, 300, TmaSwizzle::None).validate(); }), "outer"));
}

TEST_CASE("descriptor fields: encode, decode, the kernel's sm90_desc, validation") {
  const unsigned long long raw = WgmmaDescriptor::encode(0x1420, 16, 1024, TmaSwizzle::B128);
  CHECK(raw == swz::tpl::sm90_desc(0x1420));  // the kernel's descriptor is the canonical K-major 128B one
  const WgmmaDescriptor d = WgmmaDescriptor::decode(raw);
  CHECK(d.start == 0x1420);
  CHECK(d.lbo == 16);
  CHECK(d.sbo == 1024);
  CHECK(d.base_offset == 0);
  CHECK(d.swizzle == TmaSwizzle::B128);
  CHECK(d.reserved == 0);
  for (TmaSwizzle s : {TmaSwizzle::None, TmaSwizzle::B32, TmaSwizzle::B64, TmaSwizzle::B128}) {
    const WgmmaDescriptor e = WgmmaDescriptor::decode(WgmmaDescriptor::encode(0x3FFF0, 0x20, 0x3FFF0, s, 5));
    CHECK(e.swizzle == s);
    CHECK(e.start == 0x3FFF0);
    CHECK(e.lbo == 0x20);
    CHECK(e.base_offset == 5);
  }
  CHECK(WgmmaDescriptor::decode(3ull << 62).swizzle == TmaSwizzle::B32);  // PTX numbers 32B as 3
  CHECK(contains(invalid_message([] { WgmmaDescriptor::encode(8, 16, 16, TmaSwizzle::None); }), "start"));
  CHECK(contains(invalid_message([] { WgmmaDescriptor::encode(0, 1 << 18, 16, TmaSwizzle::None); }), "lbo"));

  const WgmmaTile a = make_tile(WgmmaOperand::A, WgmmaMajor::K, 64);
  const auto msg = [&](unsigned long long r) {
    try {
      wgmma_validate(WgmmaDescriptor::decode(r), a);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(msg(raw).empty());
  CHECK(contains(msg(raw | (1ull << 14)), "reserved bits"));
  CHECK(contains(msg(raw | (1ull << 55)), "reserved bits"));
  CHECK(contains(msg(raw | (2ull << 49)), "base offset 2"));
  // +32 bytes per k step stays in the atom's first row; +128 is row 1 of the atom
  CHECK(msg(swz::tpl::sm90_desc(0x1400 + 96)).empty());
  CHECK(contains(msg(swz::tpl::sm90_desc(0x1400 + 128)), "128 bytes into a 1024-byte 128B swizzle atom"));
  CHECK(contains(msg(swz::tpl::sm90_desc(0x1400 + 112)), "must fit in the row"));
  CHECK(contains(msg(WgmmaDescriptor::encode(0x1400, 16, 0, TmaSwizzle::B128)), "stride byte offset is 0"));
  CHECK(contains(msg(WgmmaDescriptor::encode(0x1400, 0, 128, TmaSwizzle::None)), "leading byte offset is 0"));
  const WgmmaTile bad = make_tile(WgmmaOperand::B, WgmmaMajor::MN, 64, 4);
  CHECK(contains(invalid_message([] { make_tile(WgmmaOperand::B, WgmmaMajor::MN, 64, 4).validate(); }), "MN-major"));
  CHECK(contains(invalid_message([] { make_tile(WgmmaOperand::A, WgmmaMajor::K, 128).validate(); }), "64 rows"));
  CHECK(contains(invalid_message([] { make_tile(WgmmaOperand::B, WgmmaMajor::K, 12).validate(); }), "multiples of 8"));
  CHECK(bad.k() == 8);
}

TEST_CASE("K-major reads of every swizzle mode equal the canonical layout, and match their TMA boxes") {
  // One 128B atom: element (mn, k) of a K-major 64 x 16 f16 tile is row mn, bytes 2k of 128-byte rows.
  const WgmmaTile a = make_tile(WgmmaOperand::A, WgmmaMajor::K, 64);
  const WgmmaDescriptor d = WgmmaDescriptor::decode(WgmmaDescriptor::encode(4096, 16, 1024, TmaSwizzle::B128));
  const std::vector<long long> got = wgmma_read_addresses(d, a);
  for (int mn = 0; mn < 64; ++mn)
    for (int k = 0; k < 16; ++k)
      REQUIRE(got[mn * 16 + k] == 4096 + brute_swizzle(128, mn * 128 + k * 2));
  // Every mode, its own box width: rows of R bytes, (mn / 8) groups R * 8 bytes apart, k steps inside a row
  // while it lasts, then the next box (R / 32 k16 steps per box).
  for (TmaSwizzle s : {TmaSwizzle::B32, TmaSwizzle::B64, TmaSwizzle::B128}) {
    CAPTURE(to_string(s));
    const int row = tma_swizzle_row_bytes(s), boxes = 128 / row, box_bytes = 128 * row;
    OperandPlan p;
    p.tile = make_tile(WgmmaOperand::B, WgmmaMajor::K, 128);
    for (int i = 0; i < boxes; ++i)
      p.fills.push_back(TmaFill{make_box(8192 + i * box_bytes, row / 2, 128, s), 0, 0, i * row / 2});
    for (int k = 0; k < 4; ++k) {
      const long long start = 8192 + (k * 32 / row) * box_bytes + (k * 32) % row;
      p.reads.push_back(WgmmaRead{WgmmaDescriptor::encode(start, 16, 8 * row, s), 0, 0, 16 * k, k, ""});
    }
    const OperandProof proof = prove_operand(p);
    CHECK_MESSAGE(proof.ok, proof.error);
    CHECK(proof.elements_checked == 4 * 128 * 16);
  }
  // No swizzle: core matrices of 8 rows x 16 bytes, written as 8 x 8 boxes; SBO along MN, LBO along K.
  OperandPlan p;
  p.tile = make_tile(WgmmaOperand::A, WgmmaMajor::K, 64);
  for (int g = 0; g < 8; ++g)
    for (int kc = 0; kc < 2; ++kc)
      p.fills.push_back(TmaFill{make_box(g * 256 + kc * 128, 8, 8, TmaSwizzle::None), 0, 8 * g, 8 * kc});
  p.reads.push_back(WgmmaRead{WgmmaDescriptor::encode(0, 128, 256, TmaSwizzle::None), 0, 0, 0, 0, ""});
  OperandProof proof = prove_operand(p);
  CHECK_MESSAGE(proof.ok, proof.error);
  p.reads[0].desc = WgmmaDescriptor::encode(0, 256, 128, TmaSwizzle::None);  // LBO and SBO swapped
  proof = prove_operand(p);
  CHECK_FALSE(proof.ok);
  CHECK(contains(proof.error, "operand A, k step 0"));
  CHECK(proof.mn == 0);
  CHECK(proof.k == 8);
}

TEST_CASE("MN-major: hand-built descriptors against their TMA boxes") {
  // B, N = 128 x a k-block of 64, MN-major with the 128B swizzle: two boxes of 64 n (128 bytes) x 64 k rows,
  // the second 8192 bytes on (LBO: the next 64 n); k groups of 8 are 1024 bytes apart (SBO); k step +2048.
  OperandPlan p;
  p.tile = make_tile(WgmmaOperand::B, WgmmaMajor::MN, 128);
  const long long base = 16384;
  for (int i = 0; i < 2; ++i) p.fills.push_back(TmaFill{make_box(base + i * 8192, 64, 64, TmaSwizzle::B128), 0, 64 * i, 0});
  for (int k = 0; k < 4; ++k)
    p.reads.push_back(WgmmaRead{WgmmaDescriptor::encode(base + 2048 * k, 8192, 1024, TmaSwizzle::B128), 0, 0, 16 * k,
                                k, "hand-built"});
  OperandProof proof = prove_operand(p);
  CHECK_MESSAGE(proof.ok, proof.error);
  CHECK(proof.elements_checked == 4 * 128 * 16);
  // The element (n, k) read through the descriptor is exactly where the box put it.
  const WgmmaDescriptor d = WgmmaDescriptor::decode(p.reads[1].desc);
  CHECK(wgmma_read_address(d, p.tile, 70, 3) == p.fills[1].box.address(16 + 3, 6));
  // LBO and SBO swapped: caught, naming the operand and the step.
  for (auto& r : p.reads) r.desc = WgmmaDescriptor::encode(WgmmaDescriptor::decode(r.desc).start, 1024, 8192, TmaSwizzle::B128);
  proof = prove_operand(p);
  CHECK_FALSE(proof.ok);
  CHECK(contains(proof.error, "operand B, k step 0 (hand-built"));
  CHECK(proof.k_step == 0);
  CHECK(proof.mn == 0);
  CHECK(proof.k == 8);
  CHECK(proof.actual_address != proof.expected_address);
  CHECK(proof.expected_address == p.fills[0].box.address(8, 0));

  // 64B swizzle, A (64 m) MN-major: two boxes of 32 m (64 bytes) x 64 k; LBO = the second box.
  OperandPlan q;
  q.tile = make_tile(WgmmaOperand::A, WgmmaMajor::MN, 64);
  for (int i = 0; i < 2; ++i) q.fills.push_back(TmaFill{make_box(i * 4096, 32, 64, TmaSwizzle::B64), 0, 32 * i, 0});
  for (int k = 0; k < 4; ++k)
    q.reads.push_back(WgmmaRead{WgmmaDescriptor::encode(1024 * k, 4096, 512, TmaSwizzle::B64), 0, 0, 16 * k, k, ""});
  proof = prove_operand(q);
  CHECK_MESSAGE(proof.ok, proof.error);
  // No swizzle, MN-major: core matrices of 8 k rows x 16 bytes (8 m); SBO along MN, LBO along K.
  OperandPlan u;
  u.tile = make_tile(WgmmaOperand::B, WgmmaMajor::MN, 16);
  for (int c = 0; c < 2; ++c)
    for (int g = 0; g < 2; ++g) u.fills.push_back(TmaFill{make_box(c * 128 + g * 256, 8, 8, TmaSwizzle::None), 0, 8 * c, 8 * g});
  u.reads.push_back(WgmmaRead{WgmmaDescriptor::encode(0, 256, 128, TmaSwizzle::None), 0, 0, 0, 0, ""});
  proof = prove_operand(u);
  CHECK_MESSAGE(proof.ok, proof.error);
  // read with K-major decoding instead, the same descriptor and boxes disagree
  u.tile.major = WgmmaMajor::K;
  for (auto& f : u.fills) std::swap(f.mn0, f.k0);  // the boxes now hold the transposed element order
  CHECK_FALSE(prove_operand(u).ok);
}

TEST_CASE("failed proofs name the operand, the k step, the element and both addresses") {
  // The kernel's A (64 rows of one consumer) proves; a +16-byte k step reads k 8.. as k 16..
  OperandPlan p = k_major_sw128(WgmmaOperand::A, 64, 0, 32, 1024);
  OperandProof proof = prove_operand(p);
  REQUIRE_MESSAGE(proof.ok, proof.error);
  p = k_major_sw128(WgmmaOperand::A, 64, 0, 16, 1024);
  proof = prove_operand(p);
  CHECK_FALSE(proof.ok);
  CHECK(proof.k_step == 1);
  CHECK(proof.mn == 0);
  CHECK(proof.k == 16);
  CHECK(proof.actual_address == 16);
  CHECK(proof.expected_address == 32);
  CHECK(contains(proof.error, "operand A, k step 1"));
  CHECK(contains(proof.error, "the TMA wrote (mn 0, k 8)"));
  CHECK(contains(proof.error, "to byte 0x20"));
  CHECK(contains(invalid_message([] { prove_match(k_major_sw128(WgmmaOperand::A, 64, 0, 16, 1024)); }),
                 "operand A, k step 1"));
  // SBO 512: rows 8.. are read from the first 8-row group
  proof = prove_operand(k_major_sw128(WgmmaOperand::B, 128, 0, 32, 512));
  CHECK_FALSE(proof.ok);
  CHECK(contains(proof.error, "operand B, k step 0"));
  CHECK(proof.mn == 8);
  CHECK(proof.k == 0);
  CHECK(proof.expected_address == 1024);
  // a 64B TMA (two boxes of 32 k) read by 128B descriptors
  p = k_major_sw128(WgmmaOperand::A, 64, 0, 32, 1024);
  p.fills.clear();
  for (int i = 0; i < 2; ++i) p.fills.push_back(TmaFill{make_box(i * 4096, 32, 64, TmaSwizzle::B64), 0, 0, 32 * i});
  proof = prove_operand(p);
  CHECK_FALSE(proof.ok);
  CHECK(contains(proof.error, "operand A, k step 0"));
  // reading a stage the boxes did not fill, overlapping boxes, and a box of the wrong element size
  p = k_major_sw128(WgmmaOperand::A, 64, 0, 32, 1024);
  for (auto& r : p.reads) r.stage = 1;
  CHECK(contains(prove_operand(p).error, "no TMA box wrote that element"));
  p = k_major_sw128(WgmmaOperand::A, 64, 0, 32, 1024);
  p.fills.push_back(TmaFill{make_box(1024, 64, 8, TmaSwizzle::B128), 0, 64, 0});
  CHECK(contains(prove_operand(p).error, "that an earlier box wrote too"));
  p = k_major_sw128(WgmmaOperand::A, 64, 0, 32, 1024);
  p.fills[0].box.elem_bytes = 4;
  p.fills[0].box.inner = 32;
  CHECK(contains(prove_operand(p).error, "4-byte elements"));
  // an invalid descriptor is reported with its step
  p = k_major_sw128(WgmmaOperand::A, 64, 0, 32, 1024);
  p.reads[2].desc |= 1ull << 60;
  proof = prove_operand(p);
  CHECK(proof.k_step == 2);
  CHECK(contains(proof.error, "operand A, k step 2"));
  CHECK(contains(proof.error, "reserved bits"));
}

TEST_CASE("epilogue bank costs are the bank model's on the accumulator fragment's addresses") {
  CTileLayout c;
  c.rows = 64;
  c.cols = 128;
  c.elem_bytes = 2;
  // the lanes' addresses: warp 1, instruction 3 = column block 1, rows + 8
  const SmemInstruction in = epilogue_instruction(c, 128, EpilogueStore::Pair, 1, 3);
  REQUIRE(in.addresses.size() == 32u);
  CHECK(in.width == 4);
  for (int l = 0; l < 32; ++l) CHECK(in.addresses[l] == (16 + l / 4 + 8) * 256 + (8 + 2 * (l % 4)) * 2);
  const SmemInstruction sm = epilogue_instruction(c, 128, EpilogueStore::Stmatrix, 2, 1);
  CHECK(sm.op == SmemOp::LdmatrixX4);
  for (int l = 0; l < 32; ++l)
    CHECK(sm.addresses[l] == (32 + l % 8 + 8 * ((l / 8) % 2)) * 256 + (16 + 8 * (l / 16)) * 2);

  // f16 pairs into a plain 256-byte pitch: the 8 rows of a store share 4 banks (8-way)
  EpilogueCost plain = epilogue_bank_cost(c, 128, EpilogueStore::Pair);
  CHECK(plain.instruction == "st.shared.b32");
  CHECK(plain.instructions == 4 * 32);
  CHECK(plain.max_way == 8);
  CHECK(plain.wavefronts == 8 * plain.instructions);
  CHECK(plain.excess_wavefronts == plain.wavefronts - plain.ideal_wavefronts);
  EpilogueCost st = epilogue_bank_cost(c, 128, EpilogueStore::Stmatrix);
  CHECK(st.instructions == 4 * 8);
  CHECK(st.max_way == 8);
  // padded by 16 bytes, or 128B-swizzled as a TMA store reads it: conflict-free
  c.pitch_bytes = 272;
  CHECK(epilogue_bank_cost(c, 128, EpilogueStore::Pair).excess_wavefronts == 0);
  CHECK(epilogue_bank_cost(c, 128, EpilogueStore::Stmatrix).excess_wavefronts == 0);
  c.pitch_bytes = 0;
  c.swizzle = TmaSwizzle::B128;
  CHECK(c.address(9, 70) == 8192 + 9 * 128 + ((0 ^ 1) * 16) + 6 * 2);
  const EpilogueCost sw = epilogue_bank_cost(c, 128, EpilogueStore::Pair);
  CHECK(sw.excess_wavefronts == 0);
  CHECK(sw.max_way == 1);
  CHECK(sw.wavefronts == sw.instructions);
  CHECK(epilogue_bank_cost(c, 128, EpilogueStore::Stmatrix).excess_wavefronts == 0);
  // f32 pairs (v2, two phases of 16 lanes: rows 0-3, bytes 0-31): row-major 512-byte pitch is 4-way; the
  // 128B swizzle only pairs rows up (chunks {0,1} of row 0 are {1,0} in row 1): 2-way
  c.elem_bytes = 4;
  c.swizzle = TmaSwizzle::None;
  const EpilogueCost f32 = epilogue_bank_cost(c, 128, EpilogueStore::Pair);
  CHECK(f32.instruction == "st.shared.v2.f32");
  CHECK(f32.max_way == 4);
  c.swizzle = TmaSwizzle::B128;
  CHECK(epilogue_bank_cost(c, 128, EpilogueStore::Pair).max_way == 2);
  CHECK(contains(invalid_message([] {
                   CTileLayout f;
                   f.elem_bytes = 4;
                   epilogue_bank_cost(f, 128, EpilogueStore::Stmatrix);
                 }),
                 "stmatrix stores 16-bit"));
  CHECK(contains(invalid_message([] {
                   CTileLayout f;
                   f.cols = 64;
                   epilogue_bank_cost(f, 128, EpilogueStore::Pair);
                 }),
                 "cannot hold"));
}

TEST_CASE("the wgmma and TMA probes of the GPU suite compile for sm_90a (NVRTC, no GPU)") {
  std::string why;
  if (!nvrtc_available(&why)) {
    MESSAGE("skipped: " << why);
    return;
  }
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      CompileRequest req;
      req.source = swz_test::kWgmmaProbeSource;
      req.source_name = "wgmma_layout_probe.cu";
      req.name_expression = swz_test::wgmma_probe_name(ta == 1, tb == 1);
      req.arch = "sm_90a";
      const CompiledKernel k = compile(req);
      CHECK(!k.image.empty());
      CHECK_FALSE(k.is_ptx);  // a cubin: ptxas accepted the wgmma
      CHECK(k.arch == "sm_90a");
    }
  }
  CompileRequest req;
  req.source = swz_test::kTmaProbeSource;
  req.source_name = "tma_box_probe.cu";
  req.name_expression = swz_test::kTmaProbeName;
  req.arch = "sm_90a";
  CHECK_FALSE(compile(req).is_ptx);
}
