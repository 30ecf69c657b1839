// tests/generator/families/gemm_sm90 (GPU suite): the Hopper GEMM end to end on an sm_90 device against an
// f64 host reference on fresh random data -- f16 and bf16 in, f16/bf16/f32 out, 4096^3 (sampled) and odd
// shapes (M, N, K off the tiles; skinny M), alpha/beta, beta = 0 over NaN-poisoned C, padded and odd C
// pitches, column-major C, many tiles per persistent block, clusters of two sharing B by multicast (odd tile
// rows leave the second CTA outside M), all four operand layouts (A column-major and B row-major through
// the MN-major path), the TMA-store epilogue (beta = 0; its register fallback otherwise), split-K into an
// NaN-poisoned f32 workspace and the reduction, batches with gaps between matrices; guard regions, pitch
// gaps and batch gaps must stay untouched.
// Skips visibly without a GPU or on another architecture.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "generator/families/gemm/gemm_splitk.hpp"
#include "generator/families/gemm_sm90/gemm_sm90.hpp"
#include "swzjit/device.hpp"
#include "swzjit/error.hpp"
#include "swzjit/jit.hpp"

using namespace swz;

namespace {

constexpr std::size_t kGuard = 512;          // bytes before and after C
constexpr std::uint8_t kGuardByte = 0x5A;    // guards and pitch gaps
constexpr std::uint8_t kPoisonByte = 0xFF;   // C's elements when beta = 0: NaN in f16, bf16 and f32

bool sm90_device(std::string* why) {
  if (!driver_available(why)) return false;
  const DeviceInfo d = device_info(0);
  if (d.cc_major != 9 || d.cc_minor != 0) {
    *why = "device 0 is " + d.name + " (" + d.arch() + "); the sm_90a GEMM needs an sm_90 GPU";
    return false;
  }
  return true;
}

#define SWZ_REQUIRE_SM90()                                 \
  do {                                                     \
    std::string why_;                                      \
    if (!sm90_device(&why_)) {                             \
      MESSAGE("skipped: " << why_);                        \
      return;                                              \
    }                                                      \
  } while (0)

// Each config is compiled and loaded once per run.
const Kernel& kernel_for(const Sm90GemmConfig& cfg) {
  static std::map<std::string, Kernel> kernels;
  auto it = kernels.find(cfg.to_string());
  if (it == kernels.end()) {
    const CompiledKernel k = compile(gemm_sm90_compile_request(cfg));
    it = kernels.emplace(cfg.to_string(), Module(k, 0).kernel()).first;
  }
  return it->second;
}

// The split-K reduction for C of `out` (split configs' second kernel), compiled once per run.
const Kernel& reduce_for(DType out) {
  static std::map<DType, Kernel> kernels;
  auto it = kernels.find(out);
  if (it == kernels.end()) {
    CompileRequest req;
    req.source = gemm_splitk_reduce_source(out);
    req.source_name = gemm_splitk_reduce_source_name(out);
    req.name_expression = gemm_splitk_reduce_name_expression(out);
    req.arch = device_info(0).arch();
    it = kernels.emplace(out, Module(compile(req), 0).kernel()).first;
  }
  return it->second;
}

struct Case {
  Sm90GemmConfig cfg;
  long long m = 0, n = 0, k = 0;
  long long lda_pad = 0, ldb_pad = 0, ldc_pad = 0;  // elements added to each packed pitch
  bool a_col_major = false, b_row_major = false;     // the problem's A and B (NT by default)
  bool c_col_major = false;
  int c_misalign = 0;  // elements C is moved off its aligned start
  long long batch = 1;
  long long ab_stride_pad = 0, c_stride_pad = 0;  // elements between matrices of A and B / of C (gaps untouched)
  float alpha = 1.0f, beta = 0.0f;
  int sm_count = 0;    // 0: the device's; smaller forces many tiles per persistent block
  int samples = 0;     // > 0: check this many random elements plus the last row and column, else all
  std::string label() const {
    return cfg.to_string() + " A " + (a_col_major ? "col" : "row") + " B " + (b_row_major ? "row" : "col") + " " +
           std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " pads " +
           std::to_string(lda_pad) + "," + std::to_string(ldb_pad) + "," + std::to_string(ldc_pad) + " C " +
           (c_col_major ? "col" : "row") + " c_misalign " + std::to_string(c_misalign) + " alpha " +
           std::to_string(alpha) + " beta " + std::to_string(beta) + " sms " + std::to_string(sm_count) + " batch " +
           std::to_string(batch) + " stride pads " + std::to_string(ab_stride_pad) + "," + std::to_string(c_stride_pad);
  }
};

struct Outcome {
  bool guards_ok = true;
  long long bad_guard_byte = -1;
  double rel_error = 0;
  long long non_finite = 0;
};

long long round_up8(long long v) { return (std::max(1LL, v) + 7) / 8 * 8; }

Outcome run_case(const Case& c, std::mt19937_64& rng) {
  const DType in = c.cfg.in, out = c.cfg.out;
  const std::size_t ei = static_cast<std::size_t>(dtype_bytes(in)), eo = static_cast<std::size_t>(dtype_bytes(out));
  GemmProblem p;
  p.dtype = in, p.out_dtype = out;
  p.m = c.m, p.n = c.n, p.k = c.k;
  p.a_order = c.a_col_major ? MatrixOrder::ColMajor : MatrixOrder::RowMajor;
  p.b_order = c.b_row_major ? MatrixOrder::RowMajor : MatrixOrder::ColMajor;
  p.c_order = c.c_col_major ? MatrixOrder::ColMajor : MatrixOrder::RowMajor;
  // K-contiguous pitches are K (tests use K multiples of 8); M/N-contiguous ones are padded to TMA's 16 bytes.
  p.lda = (c.a_col_major ? round_up8(c.m) : std::max(1LL, c.k)) + c.lda_pad;
  p.ldb = (c.b_row_major ? round_up8(c.n) : std::max(1LL, c.k)) + c.ldb_pad;
  p.ldc = std::max(1LL, c.c_col_major ? c.m : c.n) + c.ldc_pad;
  const long long a_lines = c.a_col_major ? c.k : c.m, b_lines = c.b_row_major ? c.k : c.n;
  const long long c_lines = c.c_col_major ? c.n : c.m;
  p.batch = c.batch;
  p.stride_a = a_lines * p.lda + c.ab_stride_pad;
  p.stride_b = b_lines * p.ldb + c.ab_stride_pad;
  p.stride_c = c_lines * p.ldc + c.c_stride_pad;
  Sm90GemmConfig cfg = c.cfg;
  cfg.layout = gemm_sm90_layout(p, cfg.swap_ab);  // the kernel-frame layout this problem needs
  auto a_at = [&](long long b, long long i, long long kk) {
    return static_cast<std::size_t>(b * p.stride_a + (c.a_col_major ? kk * p.lda + i : i * p.lda + kk));
  };
  auto b_at = [&](long long b, long long kk, long long j) {
    return static_cast<std::size_t>(b * p.stride_b + (c.b_row_major ? kk * p.ldb + j : j * p.ldb + kk));
  };

  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<std::uint8_t> ha(static_cast<std::size_t>(std::max(1LL, c.batch * p.stride_a)) * ei, 0);
  std::vector<std::uint8_t> hb(static_cast<std::size_t>(std::max(1LL, c.batch * p.stride_b)) * ei, 0);
  for (std::size_t i = 0; i < ha.size(); i += ei) store_element(in, &ha[i], u(rng));
  for (std::size_t i = 0; i < hb.size(); i += ei) store_element(in, &hb[i], u(rng));
  const std::size_t c_off = kGuard + static_cast<std::size_t>(c.c_misalign) * eo;
  std::vector<std::uint8_t> hc(c_off + static_cast<std::size_t>(c.batch * p.stride_c) * eo + kGuard, kGuardByte);
  auto c_index = [&](long long b, long long i, long long j) {
    return c_off + static_cast<std::size_t>(b * p.stride_c + (c.c_col_major ? j * p.ldc + i : i * p.ldc + j)) * eo;
  };
  for (long long b = 0; b < c.batch; ++b)
    for (long long i = 0; i < c.m; ++i)
      for (long long j = 0; j < c.n; ++j) {
        std::uint8_t* e = &hc[c_index(b, i, j)];
        if (c.beta != 0.0f) {
          store_element(out, e, u(rng));
        } else {
          for (std::size_t x = 0; x < eo; ++x) e[x] = kPoisonByte;
        }
      }

  DeviceBuffer da(ha.size()), db(hb.size()), dc(hc.size());
  da.copy_from_host(ha.data(), ha.size());
  db.copy_from_host(hb.data(), hb.size());
  dc.copy_from_host(hc.data(), hc.size());
  const int sms = c.sm_count > 0 ? c.sm_count : device_info(0).sm_count;
  // Split configs: the f32 workspace starts NaN-poisoned, so a partial the reduction sums but no slice
  // wrote shows up as a non-finite C.
  const std::size_t ws_bytes = gemm_sm90_workspace_bytes(cfg, p, sms);
  DeviceBuffer dw(std::max<std::size_t>(ws_bytes, 256));
  if (ws_bytes > 0) {
    const std::vector<std::uint8_t> poison(ws_bytes, kPoisonByte);
    dw.copy_from_host(poison.data(), poison.size());
  }
  const Sm90GemmLaunch launch = gemm_sm90_prepare(cfg, p, da.ptr(), db.ptr(), dc.ptr() + c_off, c.alpha, c.beta, sms,
                                                  0, ws_bytes > 0 ? dw.ptr() : 0);
  Stream stream;
  // reduce=fixup with beta = 0 runs twice over the same workspace: the second launch's tile flags start
  // from the first one's counts (a fresh launch id must make them stale) and must give the same C.
  const int launches = cfg.kernel_fixup() && c.beta == 0.0f ? 2 : 1;
  for (int i = 0; i < launches; ++i)
    gemm_sm90_launch(kernel_for(cfg), launch, stream.handle(), true, cfg.uses_reduce_kernel() ? &reduce_for(out) : nullptr);
  stream.synchronize();
  std::vector<std::uint8_t> got(hc.size());
  dc.copy_to_host(got.data(), got.size());

  Outcome o;
  std::vector<bool> is_elem(hc.size(), false);
  for (long long b = 0; b < c.batch; ++b)
    for (long long i = 0; i < c.m; ++i)
      for (long long j = 0; j < c.n; ++j)
        for (std::size_t x = 0; x < eo; ++x) is_elem[c_index(b, i, j) + x] = true;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!is_elem[i] && got[i] != hc[i]) {
      o.guards_ok = false;
      o.bad_guard_byte = static_cast<long long>(i);
      break;
    }
  double num = 0, den = 0;
  long long bb = 0;  // the matrix being checked
  auto check = [&](long long i, long long j) {
    double ref = 0;
    for (long long kk = 0; kk < c.k; ++kk)
      ref += static_cast<double>(load_element(in, &ha[a_at(bb, i, kk) * ei])) *
             static_cast<double>(load_element(in, &hb[b_at(bb, kk, j) * ei]));
    ref *= c.alpha;
    if (c.beta != 0.0f) ref += static_cast<double>(c.beta) * load_element(out, &hc[c_index(bb, i, j)]);
    const double v = load_element(out, &got[c_index(bb, i, j)]);
    if (!std::isfinite(v)) {
      ++o.non_finite;
      return;
    }
    num += (v - ref) * (v - ref);
    den += ref * ref;
  };
  for (bb = 0; bb < c.batch; ++bb) {
    if (c.samples > 0) {
      for (int s = 0; s < c.samples; ++s)
        check(static_cast<long long>(rng() % static_cast<std::uint64_t>(c.m)),
              static_cast<long long>(rng() % static_cast<std::uint64_t>(c.n)));
      for (long long j = 0; j < c.n; j += std::max(1LL, c.n / 97)) check(c.m - 1, j);
      for (long long i = 0; i < c.m; i += std::max(1LL, c.m / 97)) check(i, c.n - 1);
    } else {
      for (long long i = 0; i < c.m; ++i)
        for (long long j = 0; j < c.n; ++j) check(i, j);
    }
  }
  o.rel_error = den > 0 ? std::sqrt(num / den) : (num == 0 ? 0.0 : 1.0);
  return o;
}

void check_case(const Case& c, std::mt19937_64& rng) {
  const Outcome o = run_case(c, rng);
  const double tol = c.cfg.out == DType::F32 ? 1e-4 : 1e-2;
  CHECK_MESSAGE(o.guards_ok, c.label() << ": byte " << o.bad_guard_byte << " of a guard or pitch gap was written");
  CHECK_MESSAGE(o.non_finite == 0, c.label() << ": " << o.non_finite << " non-finite results (C read with beta = 0?)");
  CHECK_MESSAGE(o.rel_error < tol, c.label() << ": relative Frobenius error " << o.rel_error);
}

Sm90GemmConfig cfg_of(const char* text) { return Sm90GemmConfig::parse(text); }

// A case of config `cfg` in operand layout number `layout`: bit 0 A column-major, bit 1 B row-major (0: NT).
Case layout_case(const char* cfg, int layout) {
  Case c;
  c.cfg = cfg_of(cfg);
  c.a_col_major = (layout & 1) != 0;
  c.b_row_major = (layout & 2) != 0;
  return c;
}

// `c` at each of `shapes` (M, N, K) over NaN-poisoned C (beta 0); with `sample_wide`, an N of 1000 or more is
// sampled (Case::samples). `c` keeps the last shape, beta 0 and every element checked.
void check_shapes(Case& c, const std::vector<std::array<long long, 3>>& shapes, bool sample_wide, std::mt19937_64& rng) {
  for (const auto& sh : shapes) {
    c.m = sh[0], c.n = sh[1], c.k = sh[2];
    c.beta = 0.0f;
    c.samples = sample_wide && c.n >= 1000 ? 3000 : 0;
    check_case(c, rng);
  }
  c.samples = 0;
}

// `c` at m x n x k with alpha 0.5 and beta -1.5 (C read and scaled) over a C with an odd pitch (3 elements of
// padding) moved one element off its alignment. `c` keeps the shape, with alpha 1, beta 0 and C as before.
void check_beta_odd_c(Case& c, long long m, long long n, long long k, std::mt19937_64& rng) {
  c.m = m, c.n = n, c.k = k;
  c.alpha = 0.5f, c.beta = -1.5f;
  c.ldc_pad = 3;
  c.c_misalign = 1;
  check_case(c, rng);
  c.alpha = 1.0f, c.beta = 0.0f;
  c.ldc_pad = 0, c.c_misalign = 0;
}

// `cfg` (NT, C row-major) at m x n x k with beta 0, then as 2 matrices with alpha 0.5 and beta 1: a
// sanitizer-sized pair of runs.
void check_one_and_two(const char* cfg, long long m, long long n, long long k, std::mt19937_64& rng) {
  Case c;
  c.cfg = cfg_of(cfg);
  c.m = m, c.n = n, c.k = k;
  check_case(c, rng);
  c.batch = 2;
  c.alpha = 0.5f, c.beta = 1.0f;
  check_case(c, rng);
}

}  // namespace

TEST_CASE("gemm_sm90 gpu: 4096^3 f16 and bf16 NT match the f64 reference (sampled)") {
  SWZ_REQUIRE_SM90();
  std::mt19937_64 rng(std::random_device{}());
  for (const char* cfg : {"in=f16,out=f16", "in=bf16,out=bf16", "in=f16,out=f32,bn=128,stages=6"}) {
    Case c;
    c.cfg = cfg_of(cfg);
    c.m = c.n = c.k = 4096;
    c.samples = 3000;
    check_case(c, rng);
  }
}

TEST_CASE("gemm_sm90 gpu: small and odd shapes, tails, skinny M, alpha/beta, pitches (sanitizer-sized)") {
  SWZ_REQUIRE_SM90();
  std::mt19937_64 rng(std::random_device{}());
  const char* configs[] = {"in=f16,out=f16", "in=bf16,out=f32,bn=128,stages=5,raster=3,persistent=0,inflight=0",
                           "in=bf16,out=bf16,stages=3,raster=1", "in=f16,out=f16,bn=128,stages=2,inflight=1",
                           "in=f16,out=f16,cluster=2", "in=bf16,out=f32,bn=128,stages=5,persistent=0,cluster=2",
                           "in=f16,out=f16,epilogue=tma", "in=bf16,out=f32,bn=128,stages=5,cluster=2,epilogue=tma"};
  const long long shapes[][3] = {{127, 129, 520}, {127, 200, 264}, {1, 300, 1000}, {7, 129, 72},
                                 {16, 513, 200}, {129, 127, 8},  {128, 256, 64}, {300, 260, 520}};
  for (const char* cfg : configs)
    for (const auto& s : shapes) {
      Case c;
      c.cfg = cfg_of(cfg);
      c.m = s[0], c.n = s[1], c.k = s[2];
      check_case(c, rng);
    }
  for (const char* cfg : configs) {
    Case c;
    c.cfg = cfg_of(cfg);
    c.m = 131, c.n = 270, c.k = 136;
    c.alpha = 0.5f, c.beta = -1.5f;  // C read and scaled
    check_case(c, rng);
    c.ldc_pad = 3;  // odd pitch: single-element stores, gaps untouched
    c.beta = 0.0f;
    check_case(c, rng);
    c.ldc_pad = 8;  // padded pitch of 16-byte multiples: TMA stores (epilogue=tma) clip at N, gaps untouched
    check_case(c, rng);
    c.ldc_pad = 0;
    c.c_misalign = 1;  // C off its alignment: single-element stores
    c.beta = 2.0f;
    check_case(c, rng);
    c.c_misalign = 0;
    c.c_col_major = true;  // computed as C^T = B^T A^T
    c.lda_pad = 8, c.ldb_pad = 16;
    check_case(c, rng);
    c.c_col_major = false;
    c.k = 0;  // no k-block: C = beta * C
    c.beta = 0.25f;
    check_case(c, rng);
  }
}

TEST_CASE("gemm_sm90 gpu: long K with a tail, many tiles per persistent block") {
  SWZ_REQUIRE_SM90();
  std::mt19937_64 rng(std::random_device{}());
  for (const char* cfg : {"in=f16,out=f16", "in=bf16,out=f32,inflight=0", "in=f16,out=bf16,bn=128,stages=7",
                          "in=bf16,out=bf16,cluster=2", "in=f16,out=f32,bn=128,stages=6,raster=2,cluster=2",
                          "in=bf16,out=bf16,epilogue=tma", "in=f16,out=f32,bn=128,stages=6,cluster=2,epilogue=tma"}) {
    Case c;
    c.cfg = cfg_of(cfg);
    c.m = 127, c.n = 129, c.k = 4104;
    check_case(c, rng);
    c.n = 200;
    check_case(c, rng);
    c.m = 1000, c.n = 1000, c.k = 1000;
    c.sm_count = 3;  // 8 x 4 (or 8 x 8) tiles on 3 blocks (one cluster of 2): the stage ring wraps across tiles
    c.samples = 4000;
    c.beta = 1.0f;
    check_case(c, rng);
    c.m = 2048, c.n = 4096, c.k = 4096;
    c.sm_count = 0;
    c.beta = 0.0f;
    c.samples = 1500;
    check_case(c, rng);
  }
}

TEST_CASE("gemm_sm90 gpu: all four layouts (NT, NN, TN, TT) with C either order, odd shapes, beta, guards") {
  SWZ_REQUIRE_SM90();
  std::mt19937_64 rng(std::random_device{}());
  const char* configs[] = {"in=f16,out=f16", "in=bf16,out=bf16,cluster=2,epilogue=tma", "in=f16,out=f32,bn=128,stages=6",
                           "in=bf16,out=f32,bn=128,stages=6,persistent=0,cluster=2,inflight=0,epilogue=tma"};
  // M of 1, 40, 64 and 100 fit in one tile row: A comes in boxes of fewer rows (gemm_sm90_a_rows), and with
  // M <= 64 the second consumer warpgroup idles.
  const long long shapes[][3] = {{127, 200, 4104}, {1, 300, 1000}, {300, 260, 520}, {129, 127, 8},
                                 {64, 64, 64},     {40, 300, 200}, {100, 129, 136}};
  for (int layout = 0; layout < 4; ++layout)
    for (const char* cfg : configs) {
      Case c = layout_case(cfg, layout);
      for (const auto& s : shapes) {
        c.m = s[0], c.n = s[1], c.k = s[2];
        c.samples = c.k > 1000 ? 1500 : 0;  // long K: sampled, the last row and column in full
        check_case(c, rng);  // beta = 0 over NaN-poisoned C
      }
      c.samples = 0;
      c.m = 131, c.n = 270, c.k = 136;
      c.alpha = 0.5f, c.beta = -1.5f;
      c.lda_pad = 8, c.ldb_pad = 24;
      check_case(c, rng);
      c.c_col_major = true;  // the kernel runs the other layout (NN <-> TT) on C^T = B^T A^T
      c.beta = 0.0f;
      check_case(c, rng);
      c.c_col_major = false;
      c.lda_pad = c.ldb_pad = 0;
      c.m = 1000, c.n = 1000, c.k = 1000;
      c.sm_count = 3;  // many tiles per persistent block: the stage ring wraps across tiles
      c.samples = 3000;
      c.beta = 1.0f;
      check_case(c, rng);
      if (cfg == configs[0]) {  // one big problem per layout (the host reference is the slow part)
        c.sm_count = 0;
        c.m = c.n = c.k = 4096;
        c.beta = 0.0f;
        c.samples = 1500;
        check_case(c, rng);
      }
    }
}

// Widths between the powers of two (bn a multiple of 16: 48, 80, 96, 176, 192, 224; one CTA a tile, K whole):
// wgmma m64nBNk16 over B stages of BN rows, the last tile column partial, C from registers or through the
// TMA-store epilogue in chunks of 64 columns (192; 96 with f32 C), 32 (96, 224 of 16-bit C: the 64-byte
// swizzle) or 16 (48, 80, 176: the 32-byte one; an odd number of chunks a tile, so the two chunk buffers swap
// roles from tile to tile). Every layout a width takes (an N-contiguous B: multiples of 64), C either order,
// beta over a misaligned C with an odd pitch (from registers), many tiles per persistent block, batches.
// TMA stores C where its pitch is whole 16 bytes (N = 200, 392, 1000 here).
TEST_CASE("gemm_sm90 gpu: widths between the powers of two (wave-sized tiles): layouts, odd shapes, beta, batches") {
  SWZ_REQUIRE_SM90();
  std::mt19937_64 rng(std::random_device{}());
  const char* configs[] = {"in=f16,out=f16,bn=192,stages=4,epilogue=tma", "in=bf16,out=f32,bn=176,stages=5",
                           "in=f16,out=bf16,bn=96,stages=8,inflight=0", "in=bf16,out=bf16,bn=48,stages=10",
                           "in=f16,out=f16,bn=224,stages=5,raster=3", "in=bf16,out=f32,bn=96,stages=6,epilogue=tma",
                           "in=bf16,out=bf16,bn=96,stages=7,epilogue=tma", "in=f16,out=f16,bn=176,stages=5,epilogue=tma",
                           "in=f16,out=bf16,bn=80,stages=8,inflight=0,epilogue=tma",
                           "in=bf16,out=f16,bn=224,stages=4,raster=3,epilogue=tma", "in=f16,out=f16,bn=48,stages=8,epilogue=tma"};
  for (int layout = 0; layout < 4; ++layout)
    for (const char* cfg : configs) {
      Case c = layout_case(cfg, layout);
      c.cfg.layout = std::string(1, c.a_col_major ? 'T' : 'N') + (c.b_row_major ? 'N' : 'T');
      try {
        c.cfg.validate();
      } catch (const Error&) {
        CHECK(c.cfg.b_mn_major());  // the one refusal here: an N-contiguous B takes whole 64-wide boxes
        continue;
      }
      c.cfg.layout = "NT";  // the case sets the kernel's layout from the operands
      check_shapes(c, {{256, 1100, 520}, {1, 200, 72}, {129, 250, 8}, {64, 97, 136}, {131, 392, 136}}, true, rng);
      check_beta_odd_c(c, 131, 270, 200, rng);
      if (layout == 0 || c.cfg.bn % 64 == 0) {  // C^T's frame: NT stays NT, the others swap (NN <-> TT, TN)
        c.c_col_major = true;
        c.m = 250, c.n = 129, c.k = 136;
        check_case(c, rng);
        c.c_col_major = false;
      }
      c.m = 700, c.n = 1000, c.k = 264;
      c.sm_count = 3;  // many tiles per persistent block
      c.samples = 3000;
      check_case(c, rng);
      c.sm_count = 0, c.samples = 0;
      c.m = 70, c.n = 300, c.k = 200;
      c.batch = 2;
      check_case(c, rng);
      c.batch = 1;
    }
}

TEST_CASE("gemm_sm90 gpu: widths between the powers of two, sanitizer-sized") {
  SWZ_REQUIRE_SM90();
  std::mt19937_64 rng(std::random_device{}());
  for (const char* cfg : {"in=f16,out=f16,bn=192,stages=3,epilogue=tma", "in=bf16,out=f32,bn=176,stages=3",
                          "in=f16,out=bf16,bn=48,stages=4,inflight=0", "in=bf16,out=bf16,bn=96,stages=3,epilogue=tma",
                          "in=f16,out=f16,bn=80,stages=3,epilogue=tma"})
    check_one_and_two(cfg, 130, 200, 200, rng);
}

TEST_CASE("gemm_sm90 gpu: split-K: slices of K into a poisoned workspace, then the reduction, or summed in a cluster, every layout") {
  SWZ_REQUIRE_SM90();
  std::mt19937_64 rng(std::random_device{}());
  const char* configs[] = {"in=f16,out=f16,bn=128,stages=6,splits=4,epilogue=tma", "in=bf16,out=f32,splits=3",
                           "in=f16,out=bf16,bn=128,stages=6,splits=8,cluster=2,epilogue=tma",
                           "in=bf16,out=bf16,bn=128,splits=5,inflight=0,persistent=0",
                           "in=f16,out=f16,bn=128,stages=6,splits=4,reduce=cluster",  // summed in a cluster
                           "in=bf16,out=f32,splits=2,reduce=cluster",
                           "in=f16,out=f16,bn=128,stages=6,splits=4,epilogue=tma,reduce=fixup",  // summed by the last slice
                           "in=bf16,out=f32,bn=64,stages=9,splits=3,cluster=2,reduce=fixup"};
  // Shapes: K of 65 k-blocks and in fewer k-blocks than slices (fewer, non-empty slices), one k-block,
  // skinny and odd M and N.
  const long long shapes[][3] = {{127, 129, 4104}, {1, 300, 1000}, {128, 256, 200}, {300, 260, 520}, {129, 127, 8},
                                 {16, 513, 2056}};
  for (const char* cfg : configs) {
    Case c;
    c.cfg = cfg_of(cfg);
    for (const auto& s : shapes) {
      c.m = s[0], c.n = s[1], c.k = s[2];
      check_case(c, rng);  // beta = 0 over NaN-poisoned C
    }
    c.m = 131, c.n = 270, c.k = 1032;
    c.alpha = 0.5f, c.beta = -1.5f;  // the reduction reads and scales C
    check_case(c, rng);
    c.ldc_pad = 3;  // odd pitch
    c.c_misalign = 1;
    check_case(c, rng);
    c.ldc_pad = 0, c.c_misalign = 0;
    c.c_col_major = true;
    c.beta = 0.0f;
    check_case(c, rng);
    c.c_col_major = false;
    c.k = 0;  // no slice: the reduction alone writes beta * C
    c.beta = 0.25f;
    check_case(c, rng);
    c.m = 1000, c.n = 1000, c.k = 3000;
    c.sm_count = 3;  // many units per persistent block: slices of different tiles follow each other
    c.samples = 3000;
    c.beta = 1.0f;
    check_case(c, rng);
    c.sm_count = 0;
    c.m = 16, c.n = 4096, c.k = 4096;  // the decode shape split-K is for
    c.beta = 0.0f;
    c.samples = 2000;
    check_case(c, rng);
  }
  for (int layout = 1; layout < 4; ++layout)  // NT ran above
    for (const char* cfg : {configs[layout % 2 == 1 ? 0 : 1], configs[layout % 2 == 1 ? 4 : 5], configs[(layout & 2) != 0 ? 6 : 7]}) {
      Case c = layout_case(cfg, layout);
      c.m = 127, c.n = 200, c.k = 4104;
      c.samples = 1500;
      check_case(c, rng);
      c.m = 128, c.n = 4096, c.k = 4096;
      c.beta = 1.0f;
      check_case(c, rng);
    }
}

TEST_CASE("gemm_sm90 gpu: batches: strided matrices with gaps, every layout, split-K, TMA and register epilogues") {
  SWZ_REQUIRE_SM90();
  std::mt19937_64 rng(std::random_device{}());
  const char* configs[] = {"in=f16,out=f16,epilogue=tma", "in=bf16,out=f32,bn=128,stages=6,cluster=2,epilogue=tma",
                           "in=f16,out=bf16,bn=128,stages=6,splits=3,epilogue=tma",
                           "in=bf16,out=bf16,persistent=0,inflight=0", "in=f16,out=f32,bn=128,splits=4,reduce=cluster"};
  for (int layout = 0; layout < 4; ++layout)
    for (const char* cfg : configs) {
      Case c = layout_case(cfg, layout);
      c.batch = 3;
      c.m = 131, c.n = 200, c.k = 264;
      c.ab_stride_pad = 64;  // gaps between matrices (TMA needs strides of 16-byte multiples)
      c.c_stride_pad = 8;    // C's matrices 16-byte apart: the TMA-store epilogue runs
      check_case(c, rng);
      c.c_stride_pad = 3;  // odd C stride: the register epilogue
      c.alpha = 0.5f, c.beta = 1.25f;
      check_case(c, rng);
      c.c_col_major = true;
      c.beta = 0.0f;
      check_case(c, rng);
      c.c_col_major = false;
      c.batch = 7, c.m = 64, c.n = 129, c.k = 1000;
      c.c_stride_pad = 0, c.ab_stride_pad = 0;
      c.sm_count = 5;  // many units per persistent block, across matrices
      check_case(c, rng);
    }
}

// The tail: the tiles past the last full wave in 2 or 4 K slices summed by the slice that counts last
// (a small sm_count makes waves of a few tiles). Each shape notes its plan.
TEST_CASE("gemm_sm90 gpu: the last wave in K slices (tail): widths, clusters, batches, layouts, beta, odd shapes") {
  SWZ_REQUIRE_SM90();
  std::mt19937_64 rng(std::random_device{}());
  const char* configs[] = {"in=f16,out=f16,tail=4,epilogue=tma", "in=bf16,out=f32,bn=128,stages=6,tail=2",
                           "in=f16,out=f16,bn=128,stages=6,tail=4,epilogue=tma",  // the H200's default there
                           "in=f16,out=bf16,bn=128,stages=6,cluster=2,tail=4,epilogue=tma",
                           "in=bf16,out=bf16,bn=64,stages=9,tail=4,inflight=0"};
  for (const char* text : configs) {
    Case c;
    c.cfg = cfg_of(text);
    c.m = 300, c.n = 1000, c.k = 1000;  // 16 k-blocks
    c.samples = 4000;                    // and the last row and column
    for (const int sms : {10, 7, 3}) {   // bn 256: 12 tiles = 10 whole + 2 x 4 slices; 7 + 5 (no tail); 4 x 3
      c.sm_count = sms;
      check_case(c, rng);
    }
    c.alpha = 0.5f, c.beta = -1.5f;  // the finisher's sum goes through the register epilogue, reading C
    c.sm_count = 10;
    check_case(c, rng);
    c.ldc_pad = 3, c.c_misalign = 1;
    check_case(c, rng);
    c.ldc_pad = 0, c.c_misalign = 0, c.beta = 0.0f;
    c.c_col_major = true;
    check_case(c, rng);
    c.c_col_major = false;
    c.batch = 3, c.m = 131, c.n = 200, c.k = 520;  // 9 k-blocks: at most 2 slices
    c.ab_stride_pad = 64, c.c_stride_pad = 8;
    c.sm_count = 4;
    c.samples = 0;
    check_case(c, rng);
    c.batch = 1, c.ab_stride_pad = 0, c.c_stride_pad = 0;
    c.m = 1000, c.n = 1000, c.k = 3000;
    c.samples = 3000;
    c.beta = 1.0f;
    c.sm_count = 10;
    check_case(c, rng);
    if (c.cfg.bn == 256) {
      c.m = 2048, c.n = 11008, c.k = 4096;  // the whole device: 128 x 256 tiles, 5 waves + 28 tiles x 4 slices
      c.beta = 0.0f, c.sm_count = 0;
      c.samples = 2000;
      check_case(c, rng);
    }
  }
  for (int layout = 1; layout < 4; ++layout)
    for (const char* text : {configs[0], configs[2]}) {
      Case c = layout_case(text, layout);
      c.m = 300, c.n = 1000, c.k = 1000;
      c.sm_count = 10;
      c.samples = 4000;
      check_case(c, rng);
    }
}

TEST_CASE("gemm_sm90 gpu: the tail, sanitizer-sized") {
  SWZ_REQUIRE_SM90();
  std::mt19937_64 rng(std::random_device{}());
  for (const char* cfg : {"in=f16,out=f16,tail=4,epilogue=tma", "in=bf16,out=bf16,bn=128,stages=6,cluster=2,tail=2"}) {
    Case c;
    c.cfg = cfg_of(cfg);
    c.m = 300, c.n = 600, c.k = 520;  // bn 256: 9 tiles on 4 SMs = 8 whole + 1 x 2 slices
    c.sm_count = 4;
    check_case(c, rng);
    c.alpha = 0.5f, c.beta = 1.0f;
    check_case(c, rng);
  }
}

TEST_CASE("gemm_sm90 gpu: split-K (workspace and cluster) and batches, sanitizer-sized") {
  SWZ_REQUIRE_SM90();
  std::mt19937_64 rng(std::random_device{}());
  for (const char* cfg : {"in=f16,out=f16,bn=128,stages=4,splits=3,epilogue=tma", "in=bf16,out=f32,bn=128,splits=2,reduce=cluster",
                          "in=f16,out=bf16,bn=128,stages=3,splits=4,reduce=cluster"}) {
    Case c;
    c.cfg = cfg_of(cfg);
    c.m = 70, c.n = 130, c.k = 520;  // one tile row, two tile columns, 9 k-blocks in 2-4 slices
    check_case(c, rng);
    c.batch = 2;
    c.alpha = 0.5f, c.beta = 1.0f;
    check_case(c, rng);
  }
}

// Narrow tiles (128 x 64, 128 x 32: wgmma n64 / n32) for skinny shapes: as many tiles as SMs without
// splitting K. An N-contiguous B needs whole 64-wide boxes per CTA, so bn 32 runs the K-major-B layouts.
TEST_CASE("gemm_sm90 gpu: narrow tiles (bn 64 and 32): every layout they take, splits, clusters, odd shapes") {
  SWZ_REQUIRE_SM90();
  std::mt19937_64 rng(std::random_device{}());
  struct Narrow {
    const char* cfg;
    bool b_mn_ok;  // takes an N-contiguous B
  };
  const Narrow configs[] = {{"in=f16,out=f16,bn=64,stages=8", true},
                            {"in=bf16,out=f32,bn=32,stages=9,epilogue=tma", false},
                            {"in=f16,out=bf16,bn=64,stages=6,cluster=2,epilogue=tma", false},
                            {"in=bf16,out=bf16,bn=32,stages=8,cluster=2,raster=3", false},
                            {"in=f16,out=f16,bn=64,stages=8,splits=2,reduce=cluster", true},
                            {"in=bf16,out=bf16,bn=64,stages=9,splits=2,reduce=cluster", true},  // the H200's skinny default
                            {"in=bf16,out=f32,bn=32,stages=8,splits=4,reduce=cluster", false},
                            {"in=f16,out=f16,bn=64,stages=6,splits=3,epilogue=tma", true},
                            {"in=f16,out=f32,bn=32,stages=4,inflight=0,persistent=0", false}};
  const std::vector<std::array<long long, 3>> shapes = {{127, 129, 4104}, {1, 33, 1000}, {16, 4096, 1024}, {300, 95, 520}, {129, 31, 8}};
  for (const Narrow& n : configs)
    for (int layout = 0; layout < 4; ++layout) {
      if ((layout & 2) != 0 && !n.b_mn_ok) continue;
      Case c = layout_case(n.cfg, layout);
      check_shapes(c, shapes, false, rng);
      check_beta_odd_c(c, 131, 270, 1032, rng);
      c.m = 1000, c.n = 1000, c.k = 3000;
      c.sm_count = 3;  // many tiles per persistent block
      c.samples = 3000;
      check_case(c, rng);
      c.sm_count = 0;
      c.m = 128, c.n = 4096, c.k = 4096;  // the skinny shape narrow tiles are for
      c.samples = 2000;
      check_case(c, rng);
    }
}

TEST_CASE("gemm_sm90 gpu: narrow tiles (bn 64 and 32), sanitizer-sized") {
  SWZ_REQUIRE_SM90();
  std::mt19937_64 rng(std::random_device{}());
  for (const char* cfg : {"in=f16,out=f16,bn=64,stages=4,cluster=2,epilogue=tma", "in=bf16,out=f32,bn=32,stages=4,splits=2,reduce=cluster",
                          "in=f16,out=bf16,bn=32,stages=3,splits=3", "in=f16,out=bf16,bn=128,stages=3,splits=3,reduce=fixup",
                          "in=bf16,out=f32,bn=64,stages=4,splits=2,cluster=2,epilogue=tma,reduce=fixup"})
    check_one_and_two(cfg, 70, 130, 520, rng);
}

// A and B swapped (swap=1): the kernel computes C^T = B^T A^T and stores C transposed, element by element.
// Its tiles' 128 rows run along the problem's N and its bn columns along M (rows of C past M are never
// stored). Every layout a config takes (a 32-wide tile needs the problem's A K-contiguous: it is the
// kernel's B), K whole or in slices summed in a cluster or by the kernel, pairs sharing the kernel's B
// (the problem's A), 64-row tiles, column-major C (where the kernel's C is C itself, stored column by
// column), beta over a misaligned C with an odd pitch, batches with gaps, many tiles per persistent block.
TEST_CASE("gemm_sm90 gpu: A and B swapped (swap=1): layouts, K slices, pairs, C either order, odd shapes, beta") {
  SWZ_REQUIRE_SM90();
  std::mt19937_64 rng(std::random_device{}());
  struct Swapped {
    const char* cfg;
    bool a_mn_ok;  // bn >= 64: takes an M-contiguous A (the kernel's N-contiguous B)
  };
  const Swapped configs[] = {{"in=f16,out=f16,bn=32,stages=10,splits=4,reduce=cluster,swap=1", false},
                             {"in=bf16,out=f32,bn=64,stages=9,splits=2,reduce=cluster,swap=1", true},
                             {"in=f16,out=bf16,bn=32,stages=11,swap=1", false},
                             {"in=bf16,out=bf16,bn=64,stages=9,splits=2,reduce=fixup,swap=1", true},
                             {"in=f16,out=f16,bn=32,stages=14,arows=64,swap=1", false},
                             {"in=f16,out=f32,bn=32,stages=14,arows=64,splits=2,reduce=cluster,swap=1", false},
                             {"in=bf16,out=bf16,bn=32,stages=18,arows=64,cluster=2,swap=1", false},
                             {"in=bf16,out=bf16,bn=128,stages=6,cluster=2,swap=1", true}};
  for (const Swapped& sw : configs)
    for (int layout = 0; layout < 4; ++layout) {
      if ((layout & 1) != 0 && !sw.a_mn_ok) continue;
      Case c = layout_case(sw.cfg, layout);
      check_shapes(c, {{16, 4096, 4104}, {1, 33, 1000}, {5, 300, 520}, {33, 129, 8}, {64, 95, 4104}, {127, 129, 1032}}, true, rng);
      check_beta_odd_c(c, 29, 270, 1032, rng);
      // The kernel's C is then C itself, column-major, and the roles are the problem's: a row-major B is
      // the kernel's N-contiguous B (64-wide boxes).
      c.c_col_major = true;
      if (sw.a_mn_ok || (layout & 2) == 0) check_beta_odd_c(c, 29, 270, 1032, rng);
      c.c_col_major = false;
      c.batch = 3, c.m = 16, c.n = 200, c.k = 520;
      c.ab_stride_pad = 64, c.c_stride_pad = 8;
      check_case(c, rng);
      c.batch = 1, c.ab_stride_pad = 0, c.c_stride_pad = 0;
      c.m = 40, c.n = 1000, c.k = 3000;
      c.sm_count = 3;  // many tiles per persistent block
      c.samples = 3000;
      check_case(c, rng);
      c.sm_count = 0;
      c.samples = 0;
    }
}

TEST_CASE("gemm_sm90 gpu: A and B swapped (swap=1), sanitizer-sized") {
  SWZ_REQUIRE_SM90();
  std::mt19937_64 rng(std::random_device{}());
  for (const char* cfg : {"in=f16,out=f16,bn=32,stages=10,splits=4,reduce=cluster,swap=1",
                          "in=bf16,out=f32,bn=64,stages=9,splits=2,reduce=fixup,swap=1",
                          "in=f16,out=bf16,bn=64,stages=6,cluster=2,swap=1", "in=bf16,out=bf16,bn=128,stages=6,tail=4,swap=1",
                          "in=f16,out=f16,bn=32,stages=14,arows=64,splits=2,reduce=cluster,swap=1"}) {
    Case c;
    c.cfg = cfg_of(cfg);
    c.m = 13, c.n = 500, c.k = 520;
    // The tail config: the swapped frame is 500 x 13, 4 tiles of 128 x 128 on 3 SMs, the fourth in 2 K slices;
    // then with C column-major (the frame 13 x 500) 2 matrices of 4 tiles on 6 SMs, the last 2 in slices.
    c.sm_count = 3;
    if (c.cfg.uses_tail()) CHECK(gemm_sm90_tail_plan(c.cfg, 500, 13, 520, 1, 3).slices == 2);
    check_case(c, rng);
    c.batch = 2;
    c.alpha = 0.5f, c.beta = 1.0f;
    c.c_col_major = true;
    c.sm_count = 6;
    if (c.cfg.uses_tail()) CHECK(gemm_sm90_tail_plan(c.cfg, 13, 500, 520, 2, 6).slices == 2);
    check_case(c, rng);
  }
}

// Short A stages (arows 16, 32, 64): a stage has room for only M's rows of A; with 32 or 16 rows both consumers'
// wgmma read past them into the next bytes (rows past M, never stored), with 64 one consumer reads its stage. Every layout they take, K slices summed each way,
// M at and below the room, column-major C (the frame's M is then N), batches, pitches, beta.
TEST_CASE("gemm_sm90 gpu: short A stages (arows): layouts, K slices, M up to the room, odd shapes") {
  SWZ_REQUIRE_SM90();
  std::mt19937_64 rng(std::random_device{}());
  struct Short {
    const char* cfg;
    int arows;
    bool b_mn_ok;  // bn >= 64: takes an N-contiguous B
  };
  const Short configs[] = {{"in=f16,out=f16,bn=32,stages=35,arows=16", 16, false},
                           {"in=bf16,out=f32,bn=64,stages=15,arows=32,epilogue=tma", 32, true},
                           {"in=f16,out=bf16,bn=64,stages=20,arows=16,splits=2,reduce=fixup", 16, true},
                           {"in=bf16,out=bf16,bn=128,stages=10,arows=16,splits=4,reduce=cluster", 16, true},
                           {"in=f16,out=f16,bn=128,stages=9,arows=64,splits=3", 64, true},
                           {"in=bf16,out=bf16,bn=32,stages=18,arows=64,inflight=0,persistent=0", 64, false},
                           // one consumer warpgroup summing K slices itself (all 128 threads over the tile)
                           {"in=f16,out=f16,bn=64,stages=14,arows=64,splits=2,reduce=fixup", 64, true},
                           {"in=bf16,out=f32,bn=32,stages=18,arows=64,tail=4", 64, false}};
  for (const Short& s : configs)
    for (int layout = 0; layout < 4; ++layout) {
      if ((layout & 1) != 0 && s.arows < 64) continue;  // an M-contiguous A comes in 64-row boxes
      if ((layout & 2) != 0 && !s.b_mn_ok) continue;
      Case c = layout_case(s.cfg, layout);
      check_shapes(c, {{1, 33, 1000}, {s.arows / 2 + 1, 300, 520}, {s.arows, 95, 8}, {s.arows, 4096, 4104}}, true, rng);
      check_beta_odd_c(c, s.arows - 3, 270, 1032, rng);
      if (c.cfg.uses_tail()) {  // a tail that splits: 5 tiles on 2 SMs, the fifth in 2 K slices; 2 matrices on 3
        c.m = s.arows, c.n = 130, c.k = 520, c.sm_count = 2;
        CHECK(gemm_sm90_tail_plan(c.cfg, c.m, c.n, c.k, 1, 2).slices == 2);
        check_case(c, rng);
        c.batch = 2, c.sm_count = 3;
        CHECK(gemm_sm90_tail_plan(c.cfg, c.m, c.n, c.k, 2, 3).slices == 2);
        check_case(c, rng);
        c.batch = 1, c.sm_count = 0;
      }
      if (layout == 0) {  // NT stays NT with C column-major, where the kernel's M is the problem's N
        c.c_col_major = true;
        c.m = 300, c.n = s.arows, c.k = 520;
        check_case(c, rng);
        c.c_col_major = false;
      }
      c.batch = 3, c.m = s.arows, c.n = 200, c.k = 520;
      c.ab_stride_pad = 64, c.c_stride_pad = 8;
      check_case(c, rng);
      c.batch = 1, c.ab_stride_pad = 0, c.c_stride_pad = 0;
      c.m = s.arows, c.n = 1000, c.k = 3000;
      c.sm_count = 3;  // many tiles per persistent block
      c.samples = 3000;
      check_case(c, rng);
      c.sm_count = 0;
      if (layout == 0) {
        c.m = 16, c.n = 4096, c.k = 14336;  // a decode shape they are for
        c.samples = 2000;
        check_case(c, rng);
        c.samples = 0;
      }
    }
}

TEST_CASE("gemm_sm90 gpu: short A stages (arows), sanitizer-sized") {
  SWZ_REQUIRE_SM90();
  std::mt19937_64 rng(std::random_device{}());
  for (const char* cfg : {"in=f16,out=f16,bn=32,stages=35,arows=16", "in=bf16,out=f32,bn=64,stages=15,arows=32,epilogue=tma,splits=2,reduce=fixup",
                          "in=f16,out=bf16,bn=128,stages=9,arows=64,splits=3"}) {
    Case c;
    c.cfg = cfg_of(cfg);
    c.m = 13, c.n = 130, c.k = 520;
    check_case(c, rng);
    c.batch = 2;
    c.alpha = 0.5f, c.beta = 1.0f;
    c.sm_count = 2;
    check_case(c, rng);
  }
  // One consumer warpgroup (a 64-row tile) summing K slices itself: the fixup and the tail's slices.
  for (const char* cfg : {"in=f16,out=f16,bn=64,stages=14,arows=64,splits=2,reduce=fixup",
                          "in=bf16,out=bf16,bn=32,stages=18,arows=64,tail=4"}) {
    Case c;
    c.cfg = cfg_of(cfg);
    c.m = 13, c.n = 130, c.k = 520;
    c.sm_count = 2;  // the tail config: 5 tiles on 2 SMs, the fifth in 2 K slices
    if (c.cfg.uses_tail()) CHECK(gemm_sm90_tail_plan(c.cfg, 13, 130, 520, 1, 2).slices == 2);
    check_case(c, rng);
    c.alpha = 0.5f, c.beta = 1.0f;
    check_case(c, rng);
  }
  // 64-row tiles over several tile rows, alone and in pairs (the pair's second tile row past M).
  for (const char* cfg : {"in=bf16,out=bf16,bn=64,stages=14,arows=64", "in=f16,out=f32,bn=128,stages=7,arows=64,cluster=2,epilogue=tma"}) {
    Case c;
    c.cfg = cfg_of(cfg);
    c.m = 130, c.n = 130, c.k = 520;
    check_case(c, rng);
    c.batch = 2;
    c.alpha = 0.5f, c.beta = 1.0f;
    c.sm_count = 2;
    check_case(c, rng);
  }
}

// 64-row stages past one tile row (arows=64, M > 64): tiles of 64 rows, one consumer warpgroup, alone or in pairs sharing B (cluster=2, the pair's second tile row past M on odd row counts);
// every layout they take, both epilogues, column-major C, batches, beta, odd pitches, many tiles per
// persistent block.
TEST_CASE("gemm_sm90 gpu: 64-row tiles (arows=64 over several tile rows): pairs, layouts, odd M") {
  SWZ_REQUIRE_SM90();
  std::mt19937_64 rng(std::random_device{}());
  struct Tile64 {
    const char* cfg;
    bool b_mn_ok;  // the CTA's part of B is whole 64-wide boxes
  };
  const Tile64 configs[] = {{"in=bf16,out=bf16,bn=64,stages=14,arows=64", true},
                            {"in=f16,out=f16,bn=64,stages=14,arows=64,cluster=2", false},
                            {"in=bf16,out=f32,bn=128,stages=7,arows=64,cluster=2,epilogue=tma", true},
                            {"in=f16,out=bf16,bn=32,stages=18,arows=64,inflight=0,persistent=0", false},
                            {"in=bf16,out=bf16,bn=64,stages=14,arows=64,splits=2,reduce=cluster", true}};
  for (const Tile64& t : configs)
    for (int layout = 0; layout < 4; ++layout) {
      if ((layout & 2) != 0 && !t.b_mn_ok) continue;
      Case c = layout_case(t.cfg, layout);
      check_shapes(c, {{65, 33, 1000}, {128, 300, 520}, {191, 95, 8}, {257, 300, 1032}}, false, rng);
      check_beta_odd_c(c, 200, 270, 1032, rng);
      if (layout == 0) {  // the kernel's M is the problem's N
        c.c_col_major = true;
        c.m = 300, c.n = 130, c.k = 520;
        check_case(c, rng);
        c.c_col_major = false;
      }
      c.batch = 3, c.m = 130, c.n = 200, c.k = 520;
      c.ab_stride_pad = 64, c.c_stride_pad = 8;
      c.sm_count = 4;  // many tiles per persistent block
      check_case(c, rng);
      c.batch = 1, c.ab_stride_pad = 0, c.c_stride_pad = 0, c.sm_count = 0;
    }
  Case c;
  c.cfg = cfg_of("in=bf16,out=bf16,bn=64,stages=14,arows=64");
  c.m = 128, c.n = 4096, c.k = 4096;  // the LLM shape it was measured on
  c.samples = 3000;
  check_case(c, rng);
}
