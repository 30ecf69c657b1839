// tests/generator: the bank model (generator/analysis/bank_model.cpp) against the cases seeds 001, 003 and
// 004 work out by hand, plus broadcasts, phase splits, sub-word widths, inactive lanes, validation.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "swzjit/analysis/bank.hpp"
#include "swzjit/error.hpp"
#include "templates/swizzle.cuh"

namespace {

using swz::analyze_bank;
using swz::BankReport;
using swz::SmemInstruction;
using swz::SmemOp;

SmemInstruction make(SmemOp op, int width, std::vector<long long> addrs) {
  SmemInstruction in;
  in.op = op;
  in.width = width;
  in.addresses = std::move(addrs);
  return in;
}

// Checks that analyze_bank rejects `in` with InvalidArgument and a message containing each of `parts`.
void check_invalid(const SmemInstruction& in, const std::vector<std::string>& parts) {
  bool thrown = false;
  try {
    analyze_bank(in);
  } catch (const swz::Error& e) {
    thrown = true;
    CHECK(e.kind() == swz::ErrorKind::InvalidArgument);
    const std::string msg = e.what();
    CHECK(msg.find('\n') == std::string::npos);
    for (const auto& p : parts) CHECK_MESSAGE(msg.find(p) != std::string::npos, "message: ", msg, " lacks: ", p);
  }
  CHECK_MESSAGE(thrown, "no error thrown");
}

// ldmatrix.x4 of the 16x16 fp16 block at the tile's origin, rows of `row_elems` elements, with
// Swizzle<b,m,s> on element offsets (b = 0: plain). Lane l: row l%16, column (l/16)*8 (seed 003).
SmemInstruction ldmatrix_block(int row_elems, int b, int m, int s) {
  std::vector<long long> addrs;
  for (int l = 0; l < 32; ++l) {
    const long long off = (l % 16) * row_elems + (l / 16) * 8;
    addrs.push_back(swz::tpl::swizzle_apply(off, b, m, s) * 2);
  }
  return make(SmemOp::LdmatrixX4, 16, addrs);
}

}  // namespace

TEST_CASE("bank: seed 001 transpose column read is 32-way; x ^ y makes it conflict-free") {
  for (int c : {0, 5, 31}) {
    std::vector<long long> plain, swizzled;
    for (int i = 0; i < 32; ++i) {
      plain.push_back((i * 32 + c) * 4LL);  // smem[i][c] of float smem[32][32]
      swizzled.push_back((i * 32 + (c ^ i)) * 4LL);  // smem[i][c ^ i]
      // Swizzle<5,0,5> on element offsets is exactly seed 001's col ^ row
      CHECK(swz::tpl::swizzle_apply(i * 32 + c, 5, 0, 5) == i * 32 + (c ^ i));
    }
    const BankReport before = analyze_bank(make(SmemOp::Lds, 4, plain));
    CHECK(before.wavefronts == 32);
    CHECK(before.ideal_wavefronts == 1);
    CHECK(before.excess_wavefronts == 31);
    CHECK(before.max_way == 32);
    REQUIRE(before.phases.size() == 1);
    CHECK(before.phases[0].worst_bank == c);
    CHECK(before.phases[0].active_lanes == 32);

    const BankReport after = analyze_bank(make(SmemOp::Lds, 4, swizzled));
    CHECK(after.wavefronts == 1);
    CHECK(after.excess_wavefronts == 0);
    CHECK(after.max_way == 1);
  }
  // the swizzled row store smem[ty][tx ^ ty] stays conflict-free
  for (int ty : {0, 7, 31}) {
    std::vector<long long> row;
    for (int tx = 0; tx < 32; ++tx) row.push_back((ty * 32 + (tx ^ ty)) * 4LL);
    CHECK(analyze_bank(make(SmemOp::Sts, 4, row)).wavefronts == 1);
  }
}

TEST_CASE("bank: seed 003 ldmatrix.x4 of a 16x16 fp16 block: 4 / 12 / 28 excess, 0 after the XOR swizzle") {
  struct Case {
    int row_bytes, excess, way, b;
  };
  // 32-byte rows: rows r and r+4 share banks (2-way); 64-byte: 4-way; 128-byte: 8-way. The swizzle
  // XORs the row bits that collide into the 16-byte chunk index: Swizzle<B,3,3> with B = 1, 2, 3.
  for (const Case& k : {Case{32, 4, 2, 1}, Case{64, 12, 4, 2}, Case{128, 28, 8, 3}}) {
    CAPTURE(k.row_bytes);
    const BankReport before = analyze_bank(ldmatrix_block(k.row_bytes / 2, 0, 0, 0));
    CHECK(before.excess_wavefronts == k.excess);
    CHECK(before.wavefronts == 4 + k.excess);
    CHECK(before.ideal_wavefronts == 4);
    CHECK(before.max_way == k.way);
    REQUIRE(before.phases.size() == 4);
    for (const auto& p : before.phases) {
      CHECK(p.lane_count == 8);
      CHECK(p.wavefronts == k.way);
    }
    const BankReport after = analyze_bank(ldmatrix_block(k.row_bytes / 2, k.b, 3, 3));
    CHECK(after.excess_wavefronts == 0);
    CHECK(after.wavefronts == 4);
    // one bit fewer is not enough
    CHECK(analyze_bank(ldmatrix_block(k.row_bytes / 2, k.b - 1, 3, 3)).excess_wavefronts > 0);
  }
  // The seed's hand-written index (16x64 fp16: sCol = (gCol / 8) ^ (gRow & 7)) is Swizzle<3,3,3>.
  for (int row = 0; row < 16; ++row)
    for (int col = 0; col < 64; col += 8)
      CHECK(swz::tpl::swizzle_apply(row * 64 + col, 3, 3, 3) == row * 64 + ((col / 8) ^ (row & 7)) * 8);
  // .x1/.x2 use one/two phases of the same addresses
  SmemInstruction x2 = ldmatrix_block(64, 0, 0, 0);
  x2.op = SmemOp::LdmatrixX2;
  const BankReport r2 = analyze_bank(x2);
  CHECK(r2.phases.size() == 2);
  CHECK(r2.wavefronts == 16);
  CHECK(r2.excess_wavefronts == 14);
}

TEST_CASE("bank: seed 004 SGEMM warp tiling: the transposed A store conflicts, the B reads do not") {
  constexpr int BM = 64, BN = 128, BK = 8, WN = 64, WNITER = 2, TN = 4, TM = 4, WM = 32, THREADS = 128;
  constexpr int WMITER = (WM * WN) / (32 * TM * TN * WNITER);  // 2
  constexpr int WSUBM = WM / WMITER, WSUBN = WN / WNITER;      // 16, 32

  // As[(innerColA*4 + k)*BM + innerRowA + offset] = tmp.{x,y,z,w}: one sts per k per warp.
  int instrs = 0, wavefronts = 0, excess = 0;
  for (int warp = 0; warp < THREADS / 32; ++warp) {
    for (int offset = 0; offset + (THREADS * 4) / BK <= BM; offset += (THREADS * 4) / BK) {
      for (int k = 0; k < 4; ++k) {
        std::vector<long long> a;
        for (int lane = 0; lane < 32; ++lane) {
          const int t = warp * 32 + lane;
          const int inner_row = t / (BK / 4), inner_col = t % (BK / 4);
          a.push_back(((inner_col * 4 + k) * BM + inner_row + offset) * 4LL);
        }
        const BankReport r = analyze_bank(make(SmemOp::Sts, 4, a));
        // lanes with innerColA 0 and 1 hit words w and w + 4*BM = w + 256: the same bank, 2-way
        CHECK(r.wavefronts == 2);
        CHECK(r.excess_wavefronts == 1);
        CHECK(r.max_way == 2);
        ++instrs;
        wavefronts += r.wavefronts;
        excess += r.excess_wavefronts;
      }
    }
  }
  CHECK(instrs == 16);  // per block and K step: 4 warps x 4 stores
  CHECK(wavefronts == 32);
  CHECK(excess == 16);

  // Bs[dotIdx*BN + warpCol*WN + wSubColIdx*WSUBN + threadColInWarp*TN + i] and the As reads.
  int reads = 0;
  for (int warp = 0; warp < THREADS / 32; ++warp) {
    const int warp_col = warp % (BN / WN), warp_row = warp / (BN / WN);
    for (int dot = 0; dot < BK; ++dot) {
      for (int sub = 0; sub < WNITER; ++sub) {
        for (int i = 0; i < TN; ++i) {
          std::vector<long long> b;
          for (int lane = 0; lane < 32; ++lane)
            b.push_back((dot * BN + warp_col * WN + sub * WSUBN + (lane % (WSUBN / TN)) * TN + i) * 4LL);
          const BankReport r = analyze_bank(make(SmemOp::Lds, 4, b));
          CHECK(r.wavefronts == 1);
          CHECK(r.excess_wavefronts == 0);
          ++reads;
        }
      }
      for (int sub = 0; sub < WMITER; ++sub) {
        for (int i = 0; i < TM; ++i) {
          std::vector<long long> a;
          for (int lane = 0; lane < 32; ++lane)
            a.push_back((dot * BM + warp_row * WM + sub * WSUBM + (lane / (WSUBN / TN)) * TM + i) * 4LL);
          CHECK(analyze_bank(make(SmemOp::Lds, 4, a)).excess_wavefronts == 0);
        }
      }
    }
  }
  CHECK(reads == 256);

  // The B tile's float4 store (Bs[(innerRowB + offset)*BN + innerColB*4]) is 4 clean phases.
  std::vector<long long> bstore;
  for (int t = 0; t < 32; ++t) bstore.push_back(((t / (BN / 4)) * BN + (t % (BN / 4)) * 4) * 4LL);
  const BankReport bs = analyze_bank(make(SmemOp::Sts, 16, bstore));
  CHECK(bs.wavefronts == 4);
  CHECK(bs.ideal_wavefronts == 4);

  // The article's earlier kernel: Bs[dotIdx*BN + threadCol*TN + i] with TN = 8, threadCol = t % 16:
  // threads 4 apart share a bank -> 4-way (the upper 16 lanes repeat the addresses: broadcast).
  std::vector<long long> old;
  for (int t = 0; t < 32; ++t) old.push_back(((t % 16) * 8) * 4LL);
  const BankReport o = analyze_bank(make(SmemOp::Lds, 4, old));
  CHECK(o.max_way == 4);
  CHECK(o.excess_wavefronts == 3);
}

TEST_CASE("bank: broadcasts and sub-word accesses") {
  CHECK(analyze_bank(make(SmemOp::Lds, 4, std::vector<long long>(32, 256))).wavefronts == 1);
  // one lane per byte of words 0..7: 8 words, 32 bytes
  std::vector<long long> bytes;
  for (int i = 0; i < 32; ++i) bytes.push_back(i);
  BankReport r = analyze_bank(make(SmemOp::Lds, 1, bytes));
  CHECK(r.wavefronts == 1);
  CHECK(r.ideal_wavefronts == 1);
  // two bytes of the same bank in different words (0 and 128): 2-way; in the same word: broadcast
  CHECK(analyze_bank(make(SmemOp::Lds, 1, {0, 128})).max_way == 2);
  CHECK(analyze_bank(make(SmemOp::Lds, 1, {0, 3})).max_way == 1);
  // 2-byte lanes 128 bytes apart: every lane in bank 0, distinct words: 32-way
  std::vector<long long> halves;
  for (int i = 0; i < 32; ++i) halves.push_back(i * 128LL + 2);
  r = analyze_bank(make(SmemOp::Sts, 2, halves));
  CHECK(r.wavefronts == 32);
  CHECK(r.excess_wavefronts == 31);
  CHECK(r.phases[0].worst_bank == 0);
  // 2-byte lanes packed two per word: 16 words, one wavefront
  halves.clear();
  for (int i = 0; i < 32; ++i) halves.push_back(i * 2LL);
  CHECK(analyze_bank(make(SmemOp::Lds, 2, halves)).wavefronts == 1);
  // 16-byte lanes all on the same address: 16 distinct bytes per phase, ideal 1, cost 1 per phase
  r = analyze_bank(make(SmemOp::Lds, 16, std::vector<long long>(32, 4096)));
  CHECK(r.wavefronts == 4);
  CHECK(r.ideal_wavefronts == 4);
}

TEST_CASE("bank: 8-byte accesses are two phases of 16 lanes, 16-byte accesses four of 8") {
  std::vector<long long> a8, a8s, a16, a16s;
  for (int i = 0; i < 32; ++i) {
    a8.push_back(i * 8LL);
    a8s.push_back(i * 16LL);
    a16.push_back(i * 16LL);
    a16s.push_back(i * 32LL);
  }
  BankReport r = analyze_bank(make(SmemOp::Lds, 8, a8));
  REQUIRE(r.phases.size() == 2);
  CHECK(r.phases[0].first_lane == 0);
  CHECK(r.phases[1].first_lane == 16);
  CHECK(r.phases[1].lane_count == 16);
  CHECK(r.wavefronts == 2);
  CHECK(r.excess_wavefronts == 0);
  // stride 16 bytes: lanes i and i+8 of a phase share banks (4i, 4i+1) mod 32: 2-way per phase
  r = analyze_bank(make(SmemOp::Lds, 8, a8s));
  CHECK(r.wavefronts == 4);
  CHECK(r.ideal_wavefronts == 2);
  CHECK(r.excess_wavefronts == 2);
  CHECK(r.max_way == 2);
  r = analyze_bank(make(SmemOp::Sts, 16, a16));
  REQUIRE(r.phases.size() == 4);
  CHECK(r.phases[3].first_lane == 24);
  CHECK(r.wavefronts == 4);
  CHECK(r.excess_wavefronts == 0);
  // stride 32 bytes: lanes i and i+4 of a phase collide: 2 wavefronts per phase
  r = analyze_bank(make(SmemOp::Sts, 16, a16s));
  CHECK(r.wavefronts == 8);
  CHECK(r.excess_wavefronts == 4);
  // the same 32 addresses read as one-phase 4-byte accesses: banks 0, 8, 16, 24 only, 8-way
  CHECK(analyze_bank(make(SmemOp::Lds, 4, a16s)).max_way == 8);
}

TEST_CASE("bank: inactive lanes and phases that are not issued") {
  // 10 lanes of 8 bytes: phase 1 (lanes 16-31) has no active lane and costs nothing
  std::vector<long long> ten;
  for (int i = 0; i < 10; ++i) ten.push_back(i * 8LL);
  BankReport r = analyze_bank(make(SmemOp::Lds, 8, ten));
  REQUIRE(r.phases.size() == 2);
  CHECK(r.phases[0].active_lanes == 10);
  CHECK(r.phases[1].active_lanes == 0);
  CHECK(r.phases[1].wavefronts == 0);
  CHECK(r.phases[1].ideal_wavefronts == 0);
  CHECK(r.phases[1].worst_bank == -1);
  CHECK(r.wavefronts == 1);
  CHECK(r.ideal_wavefronts == 1);
  // no lane at all
  r = analyze_bank(make(SmemOp::Lds, 4, {}));
  CHECK(r.wavefronts == 0);
  CHECK(r.excess_wavefronts == 0);
  // ldmatrix.x4 with only matrix 0's lanes: one phase issued
  r = analyze_bank(make(SmemOp::LdmatrixX4, 16, {0, 16, 32, 48, 64, 80, 96, 112}));
  CHECK(r.wavefronts == 1);
  CHECK(r.phases.size() == 4);
  // ldmatrix.x1 ignores lanes 8-31 even when they would conflict
  std::vector<long long> x1 = {0, 16, 32, 48, 64, 80, 96, 112};
  for (int i = 8; i < 32; ++i) x1.push_back(i * 128LL);
  r = analyze_bank(make(SmemOp::LdmatrixX1, 16, x1));
  REQUIRE(r.phases.size() == 1);
  CHECK(r.phases[0].active_lanes == 8);
  CHECK(r.wavefronts == 1);
  CHECK(r.excess_wavefronts == 0);
}

TEST_CASE("bank: every validation error names the field and what is allowed") {
  check_invalid(make(SmemOp::Lds, 4, std::vector<long long>(33, 0)), {"addresses", "33", "at most 32"});
  check_invalid(make(SmemOp::Lds, 3, {0}), {"width", "3", "1, 2, 4, 8, 16"});
  check_invalid(make(SmemOp::Sts, 32, {0}), {"width", "32"});
  check_invalid(make(SmemOp::LdmatrixX4, 8, {0}), {"width", "ldmatrix.x4", "allowed: 16"});
  check_invalid(make(SmemOp::LdmatrixX2, 4, {0}), {"width", "allowed: 16"});
  check_invalid(make(SmemOp::Lds, 4, {0, -4}), {"addresses", "lane 1", "negative"});
  check_invalid(make(SmemOp::Lds, 4, {0, 4, 6}), {"addresses", "lane 2", "6", "aligned", "4"});
  check_invalid(make(SmemOp::Lds, 8, {4}), {"addresses", "aligned", "8"});
  check_invalid(make(SmemOp::LdmatrixX4, 16, {0, 8}), {"addresses", "lane 1", "16"});
  CHECK_NOTHROW(analyze_bank(make(SmemOp::Lds, 2, {2, 6})));
  CHECK_NOTHROW(analyze_bank(make(SmemOp::Lds, 4, std::vector<long long>(32, 0))));
}

TEST_CASE("bank: parse_smem_op") {
  bool trans = true;
  CHECK(swz::parse_smem_op("lds", &trans) == SmemOp::Lds);
  CHECK_FALSE(trans);
  CHECK(swz::parse_smem_op("sts") == SmemOp::Sts);
  CHECK(swz::parse_smem_op("ldmatrix.x1") == SmemOp::LdmatrixX1);
  CHECK(swz::parse_smem_op("ldmatrix.x2") == SmemOp::LdmatrixX2);
  CHECK(swz::parse_smem_op("ldmatrix.x4.trans", &trans) == SmemOp::LdmatrixX4);
  CHECK(trans);
  CHECK(swz::to_string(SmemOp::LdmatrixX2) == "ldmatrix.x2");
  CHECK(swz::default_width(SmemOp::Lds) == 4);
  CHECK(swz::default_width(SmemOp::LdmatrixX1) == 16);
  for (const char* bad : {"LDS", "ldmatrix.x3", "ldmatrix", "lds.trans", "", "ldmatrix.x4.trans.trans"}) {
    CAPTURE(bad);
    try {
      swz::parse_smem_op(bad);
      FAIL("accepted");
    } catch (const swz::Error& e) {
      CHECK(e.kind() == swz::ErrorKind::InvalidArgument);
      CHECK(std::string(e.what()).find("op:") == 0);
      CHECK(std::string(e.what()).find("ldmatrix.x4") != std::string::npos);
    }
  }
}

TEST_CASE("addresses near LLONG_MAX are refused, not overflowed (issue 10 item 6)") {
  // a + width - 1 overflowed for these; they pass the sign and alignment checks
  SmemInstruction in;
  in.op = SmemOp::Lds;
  in.width = 16;
  in.addresses = {0, 9223372036854775792LL};  // LLONG_MAX - 15, 16-byte aligned
  check_invalid(in, {"addresses", "lane 1", "2^40"});
  in.addresses = {1LL << 40};
  CHECK(analyze_bank(in).wavefronts == 1);  // the bound itself is fine
}
