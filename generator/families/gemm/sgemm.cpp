// generator: the SGEMM family on the host — config text and validation, template arguments, static
// bank analysis that evaluates templates/sgemm.cuh's own index maps lane by lane, swizzle choice and
// the default search space.
#include <sstream>

#include "generator/families/gemm/gemm_internal.hpp"
#include "swzjit/error.hpp"
#include "templates/sgemm.cuh"

namespace swz {

namespace {

constexpr int kMaxStaticSmem = 48 * 1024;

tpl::SgemmGeom geom(const SgemmConfig& c) {
  return tpl::SgemmGeom{c.bm, c.bn, c.bk, c.wm, c.wn, c.wniter, c.tm, c.tn, c.threads,
                        gemm_a_kmajor(c.layout) ? 1 : 0, gemm_b_kmajor(c.layout) ? 1 : 0, c.vec,
                        c.swizzle_a.b, c.swizzle_a.m, c.swizzle_a.s, c.swizzle_b.b, c.swizzle_b.m, c.swizzle_b.s};
}

bool pow2(long long v) { return tpl::is_pow2(v); }

// The kernel reads fragments through the decomposed map (sgemm_*_read_offset); it must equal the tile
// map every store uses, or the kernel would read what it never wrote.
bool reads_match_tile(const tpl::SgemmGeom& g, bool a) {
  const int iters = a ? tpl::sgemm_wmiter(g) : g.wniter, sub = a ? tpl::sgemm_wsubm(g) : tpl::sgemm_wsubn(g);
  const int t = a ? g.tm : g.tn;
  for (int tid = 0; tid < g.threads; ++tid)
    for (int k = 0; k < g.bk; ++k)
      for (int i = 0; i < iters; ++i)
        for (int q = 0; q < t / 4; ++q) {
          const int fast = a ? tpl::sgemm_a_read_offset(g, tpl::sgemm_read_m(g, tid, 0), k, i, q)
                             : tpl::sgemm_b_read_offset(g, tpl::sgemm_read_n(g, tid, 0), k, i, q);
          const int truth = a ? tpl::sgemm_a_offset(g, k, tpl::sgemm_read_m(g, tid, 0) + i * sub + 4 * q)
                              : tpl::sgemm_b_offset(g, k, tpl::sgemm_read_n(g, tid, 0) + i * sub + 4 * q);
          if (fast != truth) return false;
        }
  return true;
}

}  // namespace

int SgemmConfig::wmiter() const {
  // 0 (invalid) for fields out of the ranges validate() allows, rather than an overflow or a SIGFPE.
  if (tm < 1 || tn < 1 || wniter < 1 || tm > 64 || tn > 64 || wniter > 64 || wm < 0 || wn < 0 || wm > 4096 || wn > 4096)
    return 0;
  return (wm * wn) / (32 * tm * tn * wniter);
}
int SgemmConfig::smem_bytes() const { return detail::tile_smem_bytes("sgemm", stages, bm, bn, bk, 4); }

namespace detail {

std::string sgemm_to_string(const SgemmConfig& c) {
  std::ostringstream os;
  os << "sgemm," << to_string(c.layout) << ",tile=" << c.bm << "x" << c.bn << "x" << c.bk << ",warp=" << c.wm << "x"
     << c.wn << ",wniter=" << c.wniter << ",thread=" << c.tm << "x" << c.tn << ",threads=" << c.threads
     << ",stages=" << c.stages << ",vec=" << c.vec << ",raster=" << c.raster << ",swa=" << swizzle_text(c.swizzle_a)
     << ",swb=" << swizzle_text(c.swizzle_b);
  if (c.split > 1) os << ",split=" << c.split;  // only split configs name it: unsplit texts and keys stay as they were
  return os.str();
}

SgemmConfig sgemm_parse(const ConfigFields& f, const std::string& form) {
  SgemmConfig c;
  if (f.positional.size() != 2) throw_invalid("config: sgemm takes one layout item (NN|NT|TN|TT)" + form);
  c.layout = parse_gemm_layout(f.positional[1]);
  for (const auto& kv : f.kv) {
    const std::string& k = kv.first;
    const std::string& v = kv.second;
    if (parse_common_gemm_field(c, k, v, form)) continue;
    if (k == "thread") {
      const auto d = config_dims("thread", v, 2, form);
      c.tm = d[0], c.tn = d[1];
    } else if (k == "wniter") {
      c.wniter = config_int(k, v, form);
    } else if (k == "threads") {
      c.threads = config_int(k, v, form);
    } else {
      throw_invalid("config: unknown field '" + k + "'" + form);
    }
  }
  return c;
}

void sgemm_validate(const SgemmConfig& c) {
  auto bad = [](const std::string& m) { throw_invalid("sgemm config: " + m); };
  auto s = [](int v) { return std::to_string(v); };
  if (!pow2(c.bm) || c.bm < 16 || c.bm > 256) bad("tile bm " + s(c.bm) + " must be a power of two in [16, 256]");
  if (!pow2(c.bn) || c.bn < 16 || c.bn > 256) bad("tile bn " + s(c.bn) + " must be a power of two in [16, 256]");
  if (!pow2(c.bk) || c.bk < 4 || c.bk > 64) bad("tile bk " + s(c.bk) + " must be a power of two in [4, 64]");
  if (!pow2(c.wm) || c.wm > c.bm) bad("warp wm " + s(c.wm) + " must be a power of two dividing bm " + s(c.bm));
  if (!pow2(c.wn) || c.wn > c.bn) bad("warp wn " + s(c.wn) + " must be a power of two dividing bn " + s(c.bn));
  if (c.tm != 4 && c.tm != 8) bad("thread tm " + s(c.tm) + " must be 4 or 8 (float4 fragment reads)");
  if (c.tn != 4 && c.tn != 8) bad("thread tn " + s(c.tn) + " must be 4 or 8 (float4 fragment reads)");
  if (!pow2(c.wniter) || c.wniter > c.wn / c.tn)
    bad("wniter " + s(c.wniter) + " must be a power of two with wn / wniter >= tn");
  const int expect_threads = (c.bm / c.wm) * (c.bn / c.wn) * 32;
  if (c.threads != expect_threads)
    bad("threads " + s(c.threads) + " must be one warp per warp tile: (bm/wm) * (bn/wn) * 32 = " + s(expect_threads));
  if (c.threads > 1024) bad("threads " + s(c.threads) + " exceeds 1024");
  const int wmiter = c.wmiter();
  if (wmiter < 1 || wmiter * 32 * c.tm * c.tn * c.wniter != c.wm * c.wn || c.wm % wmiter != 0)
    bad("warp tile " + s(c.wm) + "x" + s(c.wn) + " does not split into 32 threads x thread " + s(c.tm) + "x" + s(c.tn) +
        " x wniter " + s(c.wniter) + " (wmiter = wm*wn / (32*tm*tn*wniter) must be a whole power of two)");
  const int wsubm = c.wm / wmiter, wsubn = c.wn / c.wniter;
  if (wsubn % c.tn != 0 || wsubm % c.tm != 0 || (wsubn / c.tn) * (wsubm / c.tm) != 32)
    bad("warp sub-tile " + s(wsubm) + "x" + s(wsubn) + " must hold exactly 32 thread tiles of " + s(c.tm) + "x" + s(c.tn));
  if ((c.bm * c.bn) / c.threads > 128)
    bad("thread tile: " + s((c.bm * c.bn) / c.threads) + " accumulators per thread exceed 128 (register pressure)");
  if (c.stages != 1 && c.stages != 2) bad("stages " + s(c.stages) + " must be 1 (single buffer) or 2 (double buffer)");
  if (c.split < 1 || c.split > kMaxSplit)
    bad("split " + s(c.split) + " must be in [1, " + s(kMaxSplit) + "] (K slices; 1 = no split-K)");
  if (c.vec != 1 && c.vec != 2 && c.vec != 4) bad("vec " + s(c.vec) + " must be 1, 2 or 4 floats per global load");
  const bool ak = gemm_a_kmajor(c.layout), bk = gemm_b_kmajor(c.layout);
  if ((ak ? c.bk : c.bm) % c.vec != 0 || (bk ? c.bk : c.bn) % c.vec != 0 || (c.bm * c.bk) % (c.vec * c.threads) != 0 ||
      (c.bn * c.bk) % (c.vec * c.threads) != 0)
    bad("vec " + s(c.vec) + ": the " + s(c.bm) + "x" + s(c.bk) + " and " + s(c.bn) + "x" + s(c.bk) +
        " tiles must split into whole vec-wide chunks, a whole number per thread (" + s(c.threads) + " threads)");
  if (c.raster < 1 || c.raster > 64) bad("raster " + s(c.raster) + " must be in [1, 64]");
  if (c.smem_bytes() > kMaxStaticSmem)
    bad("shared memory " + s(c.smem_bytes()) + " bytes exceeds the 48 KiB static limit; use a smaller tile or stages=1");
  const tpl::SgemmGeom g = geom(c);
  validate_gemm_swizzles(c, 2, "float4 reads and vector stores", bad, [&](bool a) { return reads_match_tile(g, a); },
                         "is not compatible with the thread tiling: the fragment reads compute it as a per-row XOR "
                         "of the thread's base (its YYY bits must lie in the k part of the [bk][bm|bn] tile offset)");
}

std::string sgemm_template_args(const SgemmConfig& c) {
  const tpl::SgemmGeom g = geom(c);
  std::ostringstream os;
  os << c.bm << ", " << c.bn << ", " << c.bk << ", " << c.wm << ", " << c.wn << ", " << c.wniter << ", " << c.tm << ", "
     << c.tn << ", " << c.threads << ", " << c.stages << ", " << g.a_kmajor << ", " << g.b_kmajor << ", " << c.vec
     << ", " << g.swa_b << ", " << g.swa_m << ", " << g.swa_s << ", " << g.swb_b << ", " << g.swb_m << ", " << g.swb_s
     << ", " << c.raster;
  if (c.split > 1) os << ", 1";  // SPLIT: k-slices from the launch (unsplit configs keep K a parameter constant)
  return os.str();
}

GemmAnalysis sgemm_analyze(const SgemmConfig& c) {
  const tpl::SgemmGeom g = geom(c);
  const int warps = c.threads / 32;
  GemmAnalysis a;
  std::vector<long long> addr(32);
  for (int op = 0; op < 2; ++op) {
    const bool is_a = op == 0;
    const bool kmajor = is_a ? g.a_kmajor : g.b_kmajor;
    const std::string tag = is_a ? "A " : "B ";
    const int iters = is_a ? tpl::sgemm_a_iters(g) : tpl::sgemm_b_iters(g);
    // Global -> shared: k-major operands transpose (one 4-byte store per element), others store vectors.
    for (int j = 0; j < (kmajor ? c.vec : 1); ++j) {
      SmemInstrStats row;
      row.is_store = true;
      row.width = kmajor ? 4 : 4 * c.vec;
      row.name = tag + "sts." + std::to_string(8 * row.width) + (kmajor ? " transposing store j=" + std::to_string(j)
                                                                          : std::string(" tile store"));
      for (int it = 0; it < iters; ++it)
        for (int w = 0; w < warps; ++w) {
          for (int l = 0; l < 32; ++l)
            addr[l] = is_a ? tpl::sgemm_a_store_addr(g, w * 32 + l, it, j) : tpl::sgemm_b_store_addr(g, w * 32 + l, it, j);
          add_instruction(row, addr, row.width, false);
        }
      add_row(a, row);
    }
    // Shared -> registers: lds.128 per k, sub-tile and float4 of the thread tile.
    const int sub_iters = is_a ? tpl::sgemm_wmiter(g) : g.wniter, quads = (is_a ? c.tm : c.tn) / 4;
    for (int q = 0; q < quads; ++q) {
      SmemInstrStats row;
      row.width = 16;
      row.name = tag + "lds.128 fragment read q=" + std::to_string(q);
      for (int k = 0; k < c.bk; ++k)
        for (int i = 0; i < sub_iters; ++i)
          for (int w = 0; w < warps; ++w) {
            for (int l = 0; l < 32; ++l)
              addr[l] = is_a ? tpl::sgemm_a_read_addr(g, w * 32 + l, k, i, q) : tpl::sgemm_b_read_addr(g, w * 32 + l, k, i, q);
            add_instruction(row, addr, 16, false);
          }
      add_row(a, row);
    }
  }
  return a;
}

bool sgemm_choose_swizzles(SgemmConfig& c) {
  return choose_gemm_swizzles(c, 2, [](const SgemmConfig& x) { sgemm_validate(x); },
                              [](const SgemmConfig& x) { return sgemm_analyze(x); });
}

std::vector<SgemmConfig> sgemm_space(GemmLayout layout, int max_vec_bytes) {
  // bm, bn, bk, wm, wn, wniter, tm, tn, stages: shapes known to suit CUDA-core GEMMs (64-128
  // accumulators per thread, 128-256 threads), plus small tiles for small or skinny problems.
  const int shapes[][9] = {
      {128, 128, 8, 64, 32, 2, 4, 4, 2},  {128, 128, 8, 64, 32, 2, 4, 4, 1},  {128, 128, 16, 64, 32, 2, 4, 4, 2},
      {128, 128, 8, 32, 64, 2, 8, 4, 2},  {128, 128, 8, 64, 64, 4, 8, 4, 2},  {128, 128, 8, 64, 64, 2, 8, 8, 2},
      {128, 256, 8, 64, 64, 2, 8, 8, 2},  {256, 128, 8, 64, 64, 2, 8, 8, 2},  {128, 256, 16, 64, 64, 2, 8, 8, 2},
      {64, 128, 16, 32, 64, 2, 8, 4, 2},  {128, 64, 16, 64, 32, 1, 8, 4, 2},  {64, 64, 16, 32, 32, 2, 4, 4, 2},
      {64, 64, 8, 32, 32, 2, 4, 4, 2},    {32, 64, 16, 32, 32, 2, 4, 4, 2},
  };
  int vec = 4;
  while (vec > 1 && vec * 4 > max_vec_bytes) vec /= 2;
  std::vector<SgemmConfig> out;
  for (const auto& s : shapes) {
    SgemmConfig c;
    c.layout = layout;
    c.bm = s[0], c.bn = s[1], c.bk = s[2], c.wm = s[3], c.wn = s[4], c.wniter = s[5], c.tm = s[6], c.tn = s[7];
    c.stages = s[8];
    c.threads = (c.bm / c.wm) * (c.bn / c.wn) * 32;
    c.vec = vec;
    c.raster = c.bm * c.bn >= 128 * 128 ? 8 : 4;
    try {
      sgemm_validate(c);
    } catch (const Error&) {
      continue;
    }
    if (sgemm_choose_swizzles(c)) out.push_back(c);
  }
  // Split-K variants for small M x N with long K (few block tiles, each looping over all of K); the tuner keeps
  // them only where they can help (runtime/tune/autotune_gemm.cpp), the engine's default picks one for such shapes.
  SgemmConfig sk;
  sk.layout = layout;
  sk.bm = 64, sk.bn = 64, sk.bk = 8, sk.wm = 32, sk.wn = 32, sk.wniter = 2, sk.tm = 4, sk.tn = 4, sk.stages = 2;
  sk.threads = 128, sk.vec = vec, sk.raster = 4;
  if (sgemm_choose_swizzles(sk))
    for (int split : {4, 8, 16, 32}) {
      sk.split = split;
      out.push_back(sk);
    }
  return out;
}

}  // namespace detail
}  // namespace swz
