// generator: the HGEMM family on the host — config text and validation, template arguments, static
// bank analysis of cp.async stores and ldmatrix.x4 phases evaluated with templates/hgemm.cuh's own
// index maps, swizzle choice and the default search space.
#include <sstream>

#include "generator/families/gemm/gemm_internal.hpp"
#include "swzjit/error.hpp"
#include "templates/hgemm.cuh"

namespace swz {

namespace {

// The largest opt-in shared memory per block of any target (sm_90: 227 KiB). Configs above a device's own
// limit (sm_80: 163 KiB, sm_86 / sm_89: 99 KiB) are valid but not launchable there: the tuner skips them
// (gemm_fits_device) and the engine's defaults stay within 99 KiB.
constexpr int kMaxDynamicSmem = 227 * 1024;

tpl::HgemmGeom geom(const HgemmConfig& c) {
  return tpl::HgemmGeom{c.bm, c.bn, c.bk, c.wm, c.wn, c.threads(), gemm_a_kmajor(c.layout) ? 1 : 0,
                        gemm_b_kmajor(c.layout) ? 1 : 0, c.vec, c.swizzle_a.b, c.swizzle_a.m, c.swizzle_a.s,
                        c.swizzle_b.b, c.swizzle_b.m, c.swizzle_b.s};
}

bool pow2(long long v) { return tpl::is_pow2(v); }

int elem_kind(DType t) { return t == DType::F16 ? tpl::kGemmF16 : t == DType::BF16 ? tpl::kGemmBF16 : tpl::kGemmF32; }

// The kernel computes cp.async destinations and ldmatrix rows through XOR decompositions
// (hgemm_*_store_offset, hgemm_*_ldsm_offset); they must equal the tile map for every lane.
bool maps_agree(const tpl::HgemmGeom& g, bool a) {
  const int iters = a ? tpl::hgemm_a_iters(g) : tpl::hgemm_b_iters(g);
  for (int tid = 0; tid < g.threads; ++tid)
    for (int it = 0; it < iters; ++it) {
      const int fast = a ? tpl::hgemm_a_store_offset(g, tid, it) : tpl::hgemm_b_store_offset(g, tid, it);
      const int truth = a ? tpl::hgemm_a_offset(g, tpl::hgemm_a_load_mn(g, tid, it), tpl::hgemm_a_load_k(g, tid, it))
                          : tpl::hgemm_b_offset(g, tpl::hgemm_b_load_mn(g, tid, it), tpl::hgemm_b_load_k(g, tid, it));
      if (fast != truth) return false;
    }
  const int tiles = a ? g.wm / 16 : g.wn / 16;
  for (int tid = 0; tid < g.threads; ++tid)
    for (int kk = 0; kk < g.bk / 16; ++kk)
      for (int t = 0; t < tiles; ++t) {
        const int fast = a ? tpl::hgemm_a_ldsm_offset(g, tid, kk, t) : tpl::hgemm_b_ldsm_offset(g, tid, kk, t);
        const int truth = a ? tpl::hgemm_a_offset(g, tpl::hgemm_a_lane_m(g, tid) + 16 * t, tpl::hgemm_a_lane_k(g, tid) + 16 * kk)
                            : tpl::hgemm_b_offset(g, tpl::hgemm_b_lane_n(g, tid) + 16 * t, tpl::hgemm_b_lane_k(g, tid) + 16 * kk);
        if (fast != truth) return false;
      }
  return true;
}

}  // namespace

int HgemmConfig::smem_bytes() const { return detail::tile_smem_bytes("hgemm", stages, bm, bn, bk, 2); }

int HgemmConfig::threads() const {
  // NOTE: public and called on unvalidated configs; a zero warp tile must not be a SIGFPE.
  if (wm < 1 || wn < 1 || wm > bm || wn > bn)
    throw_invalid("hgemm config: threads need a warp tile " + std::to_string(wm) + "x" + std::to_string(wn) +
                  " with 1 <= wm <= bm " + std::to_string(bm) + " and 1 <= wn <= bn " + std::to_string(bn));
  return (bm / wm) * (bn / wn) * 32;
}

namespace detail {

std::string hgemm_to_string(const HgemmConfig& c) {
  std::ostringstream os;
  os << "hgemm," << to_string(c.in) << ">" << to_string(c.out) << "," << to_string(c.layout) << ",tile=" << c.bm << "x"
     << c.bn << "x" << c.bk << ",warp=" << c.wm << "x" << c.wn << ",stages=" << c.stages << ",vec=" << c.vec
     << ",raster=" << c.raster << ",swa=" << swizzle_text(c.swizzle_a) << ",swb=" << swizzle_text(c.swizzle_b);
  // Only split configs name the field, so the texts (and cache keys) of unsplit configs stay as they were.
  if (c.split > 1) os << ",split=" << c.split;
  return os.str();
}

HgemmConfig hgemm_parse(const ConfigFields& f, const std::string& form) {
  HgemmConfig c;
  if (f.positional.size() != 3) throw_invalid("config: hgemm takes a dtype item IN>OUT and a layout item" + form);
  const std::string& d = f.positional[1];
  const auto gt = d.find('>');
  if (gt == std::string::npos) throw_invalid("config: dtypes '" + d + "' are not IN>OUT (e.g. f16>f32)" + form);
  c.in = parse_dtype(d.substr(0, gt));
  c.out = parse_dtype(d.substr(gt + 1));
  c.layout = parse_gemm_layout(f.positional[2]);
  for (const auto& kv : f.kv) {
    const std::string& k = kv.first;
    const std::string& v = kv.second;
    if (!parse_common_gemm_field(c, k, v, form)) throw_invalid("config: unknown field '" + k + "'" + form);
  }
  return c;
}

void hgemm_validate(const HgemmConfig& c) {
  auto bad = [](const std::string& m) { throw_invalid("hgemm config: " + m); };
  auto s = [](int v) { return std::to_string(v); };
  if (c.in == DType::F32)
    throw Error(ErrorKind::Unsupported, "hgemm config: input dtype f32 is not supported on tensor cores here "
                                        "(supported: f16 or bf16 inputs; use sgemm for f32)");
  if (!pow2(c.bm) || c.bm < 32 || c.bm > 256) bad("tile bm " + s(c.bm) + " must be a power of two in [32, 256]");
  if (!pow2(c.bn) || c.bn < 32 || c.bn > 256) bad("tile bn " + s(c.bn) + " must be a power of two in [32, 256]");
  if (c.bk != 32 && c.bk != 64) bad("tile bk " + s(c.bk) + " must be 32 or 64 (the fragment pipeline alternates two k-steps)");
  if (!pow2(c.wm) || c.wm < 16 || c.wm > c.bm) bad("warp wm " + s(c.wm) + " must be a power of two in [16, bm]");
  if (!pow2(c.wn) || c.wn < 16 || c.wn > c.bn) bad("warp wn " + s(c.wn) + " must be a power of two in [16, bn]");
  if (c.threads() > 512) bad("warp tile " + s(c.wm) + "x" + s(c.wn) + " gives " + s(c.threads()) + " threads (> 512)");
  if (c.wm * c.wn / 32 > 128)
    bad("warp tile " + s(c.wm) + "x" + s(c.wn) + ": " + s(c.wm * c.wn / 32) +
        " accumulators per thread exceed 128 (register pressure)");
  if (c.stages < 2 || c.stages > 8) bad("stages " + s(c.stages) + " must be in [2, 8]");
  if (c.vec != 1 && c.vec != 2 && c.vec != 4 && c.vec != 8)
    bad("vec " + s(c.vec) + " must be 8, 4, 2 or 1 elements per copy (16, 8, 4 or 2 bytes)");
  const bool ak = gemm_a_kmajor(c.layout), bk = gemm_b_kmajor(c.layout);
  if ((ak ? c.bk : c.bm) % c.vec != 0 || (bk ? c.bk : c.bn) % c.vec != 0 || (c.bm * c.bk) % (c.vec * c.threads()) != 0 ||
      (c.bn * c.bk) % (c.vec * c.threads()) != 0)
    bad("vec " + s(c.vec) + ": the A and B tiles must split into whole vec-wide chunks, a whole number per thread (" +
        s(c.threads()) + " threads)");
  if ((c.bm + c.bn) * c.bk / (c.vec * c.threads()) > 32)
    bad("vec " + s(c.vec) + ": " + s((c.bm + c.bn) * c.bk / (c.vec * c.threads())) +
        " copies per thread per k-tile exceed 32 (use a smaller tile with narrow vectors)");
  if (c.raster < 1 || c.raster > 64) bad("raster " + s(c.raster) + " must be in [1, 64]");
  if (c.split < 1 || c.split > kMaxSplit)
    bad("split " + s(c.split) + " must be in [1, " + s(kMaxSplit) + "] (K slices; 1 = no split-K)");
  if (c.smem_bytes() > kMaxDynamicSmem)
    bad("shared memory " + s(c.smem_bytes()) + " bytes (stages x (bm + bn) x bk x 2) exceeds 227 KiB (sm_90's limit); "
        "use fewer stages");
  const tpl::HgemmGeom g = geom(c);
  validate_gemm_swizzles(c, 3, "16-byte chunks (cp.async, ldmatrix rows)", bad, [&](bool a) { return maps_agree(g, a); },
                         "does not decompose into per-thread and compile-time parts (internal)");
}

std::string hgemm_template_args(const HgemmConfig& c) {
  const tpl::HgemmGeom g = geom(c);
  std::ostringstream os;
  // Split-K: the kernel writes each slice's f32 partial sums into the workspace; the reduction kernel
  // (templates/gemm_splitk.cuh) converts to C's dtype.
  const int out_kind = c.split > 1 ? tpl::kGemmF32 : elem_kind(c.out);
  os << elem_kind(c.in) << ", " << out_kind << ", " << c.bm << ", " << c.bn << ", " << c.bk << ", " << c.wm
     << ", " << c.wn << ", " << c.stages << ", " << g.a_kmajor << ", " << g.b_kmajor << ", " << c.vec << ", " << g.swa_b
     << ", " << g.swa_m << ", " << g.swa_s << ", " << g.swb_b << ", " << g.swb_m << ", " << g.swb_s << ", " << c.raster;
  return os.str();
}

GemmAnalysis hgemm_analyze(const HgemmConfig& c) {
  const tpl::HgemmGeom g = geom(c);
  const int warps = c.threads() / 32;
  GemmAnalysis a;
  std::vector<long long> addr(32);
  for (int op = 0; op < 2; ++op) {
    const bool is_a = op == 0;
    const bool kmajor = is_a ? g.a_kmajor : g.b_kmajor;
    const std::string tag = is_a ? "A " : "B ";
    // cp.async: one vec*2-byte store per lane and iteration (2-byte rows: plain sts.16).
    SmemInstrStats st;
    st.is_store = true;
    st.width = 2 * c.vec;
    st.name = tag + (c.vec >= 2 ? "cp.async." + std::to_string(st.width) : std::string("sts.16")) + " tile store";
    const int iters = is_a ? tpl::hgemm_a_iters(g) : tpl::hgemm_b_iters(g);
    for (int it = 0; it < iters; ++it)
      for (int w = 0; w < warps; ++w) {
        for (int l = 0; l < 32; ++l)
          addr[l] = 2LL * (is_a ? tpl::hgemm_a_store_offset(g, w * 32 + l, it) : tpl::hgemm_b_store_offset(g, w * 32 + l, it));
        add_instruction(st, addr, st.width, false);
      }
    add_row(a, st);
    // ldmatrix.x4 (.trans when the tile is MN-major): per k-step and 16-wide mma tile (pair).
    SmemInstrStats ld;
    ld.width = 16;
    ld.name = tag + std::string("ldmatrix.x4") + (kmajor ? "" : ".trans");
    const int tiles = (is_a ? c.wm : c.wn) / 16;
    for (int kk = 0; kk < c.bk / 16; ++kk)
      for (int t = 0; t < tiles; ++t)
        for (int w = 0; w < warps; ++w) {
          for (int l = 0; l < 32; ++l)
            addr[l] = 2LL * (is_a ? tpl::hgemm_a_ldsm_offset(g, w * 32 + l, kk, t) : tpl::hgemm_b_ldsm_offset(g, w * 32 + l, kk, t));
          add_instruction(ld, addr, 16, true);
        }
    add_row(a, ld);
  }
  return a;
}

bool hgemm_choose_swizzles(HgemmConfig& c) {
  return choose_gemm_swizzles(c, 3, [](const HgemmConfig& x) { hgemm_validate(x); },
                              [](const HgemmConfig& x) { return hgemm_analyze(x); });
}

std::vector<HgemmConfig> hgemm_space(DType in, DType out, GemmLayout layout, int max_vec_bytes) {
  // bm, bn, bk, wm, wn, stages, raster: large tiles (8 warps of 64x64 / 64x32) for big problems,
  // smaller ones for small or skinny problems and for narrow-vector (misaligned) calls.
  const int shapes[][7] = {
      {128, 256, 32, 64, 64, 4, 8}, {128, 256, 32, 64, 64, 3, 8}, {256, 128, 32, 64, 64, 4, 8},
      {256, 128, 32, 64, 64, 3, 8}, {128, 128, 32, 64, 32, 4, 8}, {128, 128, 32, 64, 32, 3, 8},
      {128, 128, 64, 64, 32, 3, 8}, {128, 128, 32, 32, 64, 4, 8}, {128, 128, 32, 64, 64, 4, 8},
      {64, 128, 32, 32, 64, 4, 4},  {128, 64, 32, 64, 32, 4, 4},  {64, 64, 32, 32, 32, 4, 4},
      {64, 64, 64, 32, 32, 3, 4},   {128, 256, 32, 64, 64, 4, 16},
  };
  int vec = 8;
  while (vec > 1 && vec * 2 > max_vec_bytes) vec /= 2;
  std::vector<HgemmConfig> result;
  for (const auto& s : shapes) {
    HgemmConfig c;
    c.in = in;
    c.out = out;
    c.layout = layout;
    c.bm = s[0], c.bn = s[1], c.bk = s[2], c.wm = s[3], c.wn = s[4], c.stages = s[5], c.raster = s[6];
    c.vec = vec;
    // Narrow copies (misaligned calls) multiply the address work per k-tile: keep the warp tiles small
    // for 4- and 2-byte copies so the kernel stays within its registers.
    if (vec <= 2 && (c.wm * c.wn > 64 * 32 || (vec == 2 && (c.bm + c.bn) * c.bk / (c.vec * c.threads()) > 16))) continue;
    try {
      hgemm_validate(c);
    } catch (const Error&) {
      continue;
    }
    if (hgemm_choose_swizzles(c)) result.push_back(c);
  }
  // Split-K variants for small M x N with long K (few block tiles, each looping over all of K): small
  // tiles, K cut into 4, 8 or 16 slices. The tuner keeps them only for shapes where they can help
  // (runtime/tune/autotune_gemm.cpp); the engine's default picks one for such shapes.
  HgemmConfig sk;
  sk.in = in;
  sk.out = out;
  sk.layout = layout;
  sk.bm = 64, sk.bn = 64, sk.bk = 32, sk.wm = 32, sk.wn = 32, sk.stages = 4, sk.raster = 4;
  sk.vec = vec;
  if (hgemm_choose_swizzles(sk))  // false when the tile is invalid at this vec
    for (int split : {4, 8, 16, 32}) {
      sk.split = split;
      result.push_back(sk);
    }
  return result;
}

}  // namespace detail
}  // namespace swz
