// generator: the Hopper (sm_90a) GEMM's config (text round trip, validation), generated source, shared
// memory, launch shape and problem checks (gemm_sm90.hpp). The driver side is gemm_sm90_launch.cpp.
#include "generator/families/gemm_sm90/gemm_sm90.hpp"

#include <algorithm>
#include <mutex>
#include <set>
#include <sstream>

#include "generator/core/checked_arith.hpp"
#include "generator/core/config_text.hpp"
#include "generator/families/gemm/gemm_splitk.hpp"
#include "generator/families/gemm_sm90/gemm_sm90_analysis.hpp"
#include "swzjit/error.hpp"

namespace swz {

namespace {

const char* const kForm =
    " (form: in=f16|bf16,out=f16|bf16|f32,layout=NT|NN|TN|TT,bn=32..256 (a multiple of 16),stages=N,raster=N,persistent=0|1,inflight=0|1,cluster=1|2,epilogue=regs|tma,splits=1..32,reduce=workspace|cluster|fixup,tail=1|2|4,arows=16|32|64|128,swap=0|1)";

// Slices shorter than this many k-blocks (of 64) fill the pipeline more than they run it.
constexpr long long kMinSliceBlocks = 4;
constexpr int kMaxSplits = 32;
// 128 x 64 / 128 x 32 tiles by default only where the tile rows are mostly full (rows of C per tile row),
// with their deepest stage rings (9 x 24 KiB, 11 x 20 KiB).
constexpr long long kThinTileMinRows = 96;
constexpr int kThinTileStages = 11;
constexpr int kWideThinStages = 9;  // 64-wide: 9 x 24 KiB
// Split defaults sum their slices in the kernel (reduce=fixup) up to this many rows of C per tile row.
constexpr long long kFixupMaxRows = 32;
// Narrow tiles for one short tile row (M < 128) up to this many k-blocks (K = 8192): measured winning at
// 64 k-blocks and losing at 224 (choose_sm90_gemm_config).
constexpr long long kThinShortRowMaxBlocks = 128;
// Short A stages (Sm90GemmConfig::arows) for M up to this many rows.
constexpr long long kShortAMaxRows = 64;
// Peak DRAM GB/s per SM from which one tile row splits K in a cluster pair (choose_sm90_gemm_config): H200
// 36.5, H100 SXM 25.4 -- from at least this many k-blocks (K = 4096; at 2048 the slices lost, 0.78 of cuBLAS
// against 0.83-0.85 with K whole).
constexpr int kRichDramPerSm = 30;
constexpr long long kRichPairMinBlocks = 64;
// A and B swapped (swap=1) by default for one tile row of at most this many rows of C (16 and 32 measured
// winning on the H200, 64 losing).
constexpr long long kSwapMaxRows = 32;
// Tiles as wide as one wave needs by default for at most this many rows of C (three tile rows).
constexpr long long kWaveWidthMaxRows = 384;

int elem_kind(DType t) { return t == DType::F16 ? tpl::kGemmF16 : t == DType::BF16 ? tpl::kGemmBF16 : tpl::kGemmF32; }

// The shared memory of the TMA-store epilogue's C buffers for `cfg` (0 without it): chunks of its width's swizzle
// rows (tpl::sm90_c_buffer_bytes: 32 KiB for 128-byte rows, 16 or 8 KiB for 64- or 32-byte ones).
int c_buffer_bytes(const Sm90GemmConfig& cfg) {
  return cfg.tma_epilogue ? tpl::sm90_c_buffer_bytes(cfg.bn, static_cast<int>(dtype_bytes(cfg.kernel_out()))) : 0;
}

// Proves the layouts of `cfg` (check_sm90_layouts) the first time this process compiles it: a config whose
// TMA boxes, descriptors or C buffers disagree never reaches NVRTC. A failed proof is not remembered (it
// throws again, the same way).
void check_layouts_once(const Sm90GemmConfig& cfg) {
  static std::mutex mu;
  static std::set<std::string> proved;
  const std::string key = cfg.to_string();
  {
    const std::lock_guard<std::mutex> lock(mu);
    if (proved.count(key) != 0) return;
  }
  check_sm90_layouts(cfg);  // outside the lock: two threads may both prove a new config, harmlessly
  const std::lock_guard<std::mutex> lock(mu);
  proved.insert(key);
}

[[noreturn]] void unsupported(const std::string& why) {
  throw Error(ErrorKind::Unsupported,
              "sm_90a gemm: " + why + "; run this problem on the mma.sync GEMM family (Engine::gemm) instead");
}

}  // namespace

std::string Sm90GemmConfig::to_string() const {
  std::ostringstream os;
  os << "in=" << swz::to_string(in) << ",out=" << swz::to_string(out) << ",layout=" << layout << ",bn=" << bn
     << ",stages=" << stages << ",raster=" << raster << ",persistent=" << (persistent ? 1 : 0)
     << ",inflight=" << inflight << ",cluster=" << cluster;
  if (tma_epilogue) os << ",epilogue=tma";  // left out when off: texts stored before the field still match
  if (splits > 1) os << ",splits=" << splits;  // likewise
  if (reduce_cluster) os << ",reduce=cluster";
  if (reduce_fixup) os << ",reduce=fixup";
  if (tail > 1) os << ",tail=" << tail;
  if (arows < tpl::kSm90Bm) os << ",arows=" << arows;
  if (swap_ab) os << ",swap=1";
  return os.str();
}

Sm90GemmConfig Sm90GemmConfig::parse(const std::string& text) {
  Sm90GemmConfig c;
  for (const auto& kv : detail::parse_key_values(text, "sm_90a gemm config")) {
    const std::string& k = kv.first;
    const std::string& v = kv.second;
    if (k == "in") {
      c.in = parse_dtype(v);
    } else if (k == "out") {
      c.out = parse_dtype(v);
    } else if (k == "layout") {
      c.layout = v;
    } else if (k == "bn") {
      c.bn = static_cast<int>(parse_integer("sm_90a gemm config bn", v, 1, 4096));
    } else if (k == "stages") {
      c.stages = static_cast<int>(parse_integer("sm_90a gemm config stages", v, 1, 64));
    } else if (k == "raster") {
      c.raster = static_cast<int>(parse_integer("sm_90a gemm config raster", v, 1, 1 << 20));
    } else if (k == "persistent") {
      c.persistent = parse_integer("sm_90a gemm config persistent", v, 0, 1) == 1;
    } else if (k == "inflight") {
      c.inflight = static_cast<int>(parse_integer("sm_90a gemm config inflight", v, 0, 1));
    } else if (k == "cluster") {
      c.cluster = static_cast<int>(parse_integer("sm_90a gemm config cluster", v, 1, 2));
    } else if (k == "epilogue") {
      if (v != "regs" && v != "tma") throw_invalid("sm_90a gemm config: epilogue=" + v + " must be regs or tma" + kForm);
      c.tma_epilogue = v == "tma";
    } else if (k == "reduce") {
      if (v != "workspace" && v != "cluster" && v != "fixup")
        throw_invalid("sm_90a gemm config: reduce=" + v + " must be workspace, cluster or fixup" + kForm);
      c.reduce_cluster = v == "cluster";
      c.reduce_fixup = v == "fixup";
    } else if (k == "arows") {
      c.arows = static_cast<int>(parse_integer("sm_90a gemm config arows", v, 1, tpl::kSm90Bm));
    } else if (k == "tail") {
      c.tail = static_cast<int>(parse_integer("sm_90a gemm config tail", v, 1, 4));
    } else if (k == "splits") {
      c.splits = static_cast<int>(parse_integer("sm_90a gemm config splits", v, 1, kMaxSplits));
    } else if (k == "swap") {
      c.swap_ab = parse_integer("sm_90a gemm config swap", v, 0, 1) == 1;
    } else {
      throw_invalid("sm_90a gemm config: unknown field '" + k + "'" + kForm);
    }
  }
  c.validate();
  return c;
}

void Sm90GemmConfig::validate() const {
  if (in != DType::F16 && in != DType::BF16)
    throw_invalid("sm_90a gemm config: in=" + swz::to_string(in) + " is not supported; in must be f16 or bf16");
  if (layout != "NT" && layout != "NN" && layout != "TN" && layout != "TT")
    throw_invalid("sm_90a gemm config: layout=" + layout +
                  " must be NT, NN, TN or TT (A: N row-major / T column-major; B: T column-major / N row-major)");
  if (bn < 32 || bn > 256 || bn % 16 != 0)
    throw_invalid("sm_90a gemm config: bn=" + std::to_string(bn) + " must be a multiple of 16 in 32..256");
  // Widths between the powers of two (96, 112, 176, ...) size tiles to fill a wave of SMs: one CTA a tile,
  // K whole, no swap (the K-slice sums and the tail's slots are laid out for 32, 64, 128 and 256).
  if (!bn_pow2()) {
    const std::string w = "sm_90a gemm config: bn=" + std::to_string(bn) + " (not 32, 64, 128 or 256) ";
    if (cluster != 1) throw_invalid(w + "takes cluster=1");
    if (splits != 1 || reduce_cluster || reduce_fixup) throw_invalid(w + "takes splits=1 and no reduce=");
    if (tail != 1) throw_invalid(w + "takes tail=1");
    if (swap_ab) throw_invalid(w + "takes swap=0");
  }
  if (stages < 2) throw_invalid("sm_90a gemm config: stages=" + std::to_string(stages) + " must be >= 2");
  if (arows != 128 && arows != 64 && arows != 32 && arows != 16)
    throw_invalid("sm_90a gemm config: arows=" + std::to_string(arows) + " must be 128, 64, 32 or 16");
  if (arows < tpl::kSm90MnBox && a_mn_major())
    throw_invalid("sm_90a gemm config: layout=" + layout + " reads an M-contiguous A in boxes of 64 rows, so arows=" +
                  std::to_string(arows) + " does not fit; use arows=64");
  if (arows < 64 && cluster != 1)
    throw_invalid("sm_90a gemm config: arows=" + std::to_string(arows) +
                  " holds one short tile row, and cluster=2 pairs tile rows; use cluster=1 (or arows=64: 64-row tiles)");
  const int smem = tpl::sm90_smem_bytes(bn, stages, c_buffer_bytes(*this), kernel_fixup(), arows);
  if (smem > tpl::kSm90MaxSmem) {
    const int most = (tpl::kSm90MaxSmem - tpl::kSm90SmemAlign - c_buffer_bytes(*this) - (kernel_fixup() ? 16 : 0) -
                      (tpl::sm90_ring_bytes(bn, 1, arows) - tpl::sm90_stage_bytes(bn, arows))) /
                     (tpl::sm90_stage_bytes(bn, arows) + 16);
    throw_invalid("sm_90a gemm config: stages=" + std::to_string(stages) + " with bn=" + std::to_string(bn) +
                  (arows < tpl::kSm90Bm ? " and arows=" + std::to_string(arows) : std::string()) +
                  (tma_epilogue ? " and epilogue=tma" : "") + " needs " +
                  std::to_string(smem) + " bytes of shared memory, over the " + std::to_string(tpl::kSm90MaxSmem) +
                  " an sm_90 block can have; use stages <= " + std::to_string(most));
  }
  if (raster < 1 || raster > 64) throw_invalid("sm_90a gemm config: raster=" + std::to_string(raster) + " must be in 1..64");
  if (inflight != 0 && inflight != 1)
    throw_invalid("sm_90a gemm config: inflight=" + std::to_string(inflight) + " must be 0 or 1");
  if (cluster != 1 && cluster != 2)
    throw_invalid("sm_90a gemm config: cluster=" + std::to_string(cluster) + " must be 1 or 2");
  // An MN-major B comes in boxes of 64 columns (one 128-byte swizzle row): each CTA's part must be whole boxes.
  if (b_mn_major() && tpl::sm90_b_part(bn, cluster) % tpl::kSm90MnBox != 0)
    throw_invalid("sm_90a gemm config: layout=" + layout + " reads an N-contiguous B in boxes of 64 columns, so bn=" +
                  std::to_string(bn) + " with cluster=" + std::to_string(cluster) + " (" +
                  std::to_string(tpl::sm90_b_part(bn, cluster)) + " columns per CTA) does not fit; use a bn that is a multiple of " +
                  std::to_string(tpl::kSm90MnBox * cluster));
  if (tma_epilogue) {
    // Chunks of one swizzle row of C: 64, 32 or 16 columns of 16-bit C, 32 of f32 (sm90_c_swizzle_bytes).
    const int ob = static_cast<int>(dtype_bytes(kernel_out()));
    if (tpl::sm90_c_swizzle_bytes(bn, ob) == 0) {
      const int chunk = tpl::sm90_c_box_inner(ob);
      throw_invalid("sm_90a gemm config: epilogue=tma stores " + swz::to_string(kernel_out()) + " C in chunks of " +
                    std::to_string(chunk) + " columns, which bn=" + std::to_string(bn) +
                    " is not a multiple of; use epilogue=regs or a bn that is a multiple of " + std::to_string(chunk));
    }
  }
  if (splits < 1 || splits > kMaxSplits)
    throw_invalid("sm_90a gemm config: splits=" + std::to_string(splits) + " must be in 1.." + std::to_string(kMaxSplits));
  if (reduce_fixup) {
    if (reduce_cluster) throw_invalid("sm_90a gemm config: reduce is cluster or fixup, not both");
    if (splits < 2)
      throw_invalid("sm_90a gemm config: reduce=fixup sums K slices in the kernel; it needs splits >= 2 (splits=" +
                    std::to_string(splits) + ")");
    // bn 256 holds 128 accumulators per thread: the summing loop beside them spills.
    if (bn > 128)
      throw_invalid("sm_90a gemm config: reduce=fixup takes bn <= 128 (bn=" + std::to_string(bn) +
                    " spills); use reduce=workspace");
  }
  if (tail != 1 && tail != 2 && tail != 4)
    throw_invalid("sm_90a gemm config: tail=" + std::to_string(tail) + " must be 1 (off), 2 or 4");
  if (tail > 1 && (splits > 1 || reduce_cluster || reduce_fixup))
    throw_invalid("sm_90a gemm config: tail=" + std::to_string(tail) +
                  " cuts only the last wave's tiles into K slices; it takes splits=1 and no reduce= (splits=" +
                  std::to_string(splits) + ")");
  if (swap_ab && tma_epilogue)
    throw_invalid("sm_90a gemm config: swap=1 stores C transposed from registers; drop epilogue=tma");
  if (swap_ab && uses_reduce_kernel())
    throw_invalid("sm_90a gemm config: swap=1 stores C transposed, which the split-K reduction kernel does not; "
                  "sum the splits=" + std::to_string(splits) + " slices with reduce=cluster or reduce=fixup");
  if (reduce_cluster) {
    if (splits != 2 && splits != 4)
      throw_invalid("sm_90a gemm config: reduce=cluster sums splits=2 or 4 slices in a cluster (splits=" +
                    std::to_string(splits) + "); use reduce=workspace for other counts");
    if (cluster != 1) throw_invalid("sm_90a gemm config: reduce=cluster takes cluster=1 (its cluster is the K slices)");
    if (tma_epilogue) throw_invalid("sm_90a gemm config: reduce=cluster stores C from registers; drop epilogue=tma");
    // The receive slots (the other slices' columns of this CTA) overlay the stage ring.
    const int recv = (splits - 1) * (bn / 2 / splits) * 2 * 128 * 4;
    if (recv > stages * tpl::sm90_stage_bytes(bn, arows))
      throw_invalid("sm_90a gemm config: reduce=cluster needs " + std::to_string(recv) +
                    " bytes of the stage ring for the other slices' columns; stages=" + std::to_string(stages) +
                    " with bn=" + std::to_string(bn) + " has " + std::to_string(stages * tpl::sm90_stage_bytes(bn, arows)) +
                    "; use more stages");
  }
}

Sm90GemmConfig default_sm90_gemm_config(DType in, DType out) {
  Sm90GemmConfig c;
  c.in = in;
  c.out = out;
  c.validate();
  return c;
}

std::string gemm_sm90_layout(const GemmProblem& problem, bool swap_ab) {
  const bool a_row = problem.a_order == MatrixOrder::RowMajor, b_row = problem.b_order == MatrixOrder::RowMajor;
  // Kernel-frame A is K-major ('N') when the problem's A is row-major, or, where the roles swap (a
  // column-major C or swap_ab, not both), when B is column-major (B^T row-major); kernel-frame B is K-major
  // ('T') when B is column-major, or, swapped, when A is row-major.
  const bool swaps = (problem.c_order != MatrixOrder::RowMajor) != swap_ab;
  const bool ka = swaps ? !b_row : a_row;
  const bool kb = swaps ? a_row : !b_row;
  return std::string(1, ka ? 'N' : 'T') + (kb ? 'T' : 'N');
}

Sm90GemmConfig choose_sm90_gemm_config(const GemmProblem& problem, int sm_count, int dram_gbps, bool allow_swap) {
  const GemmProblem p = problem.resolved();
  Sm90GemmConfig c = default_sm90_gemm_config(p.dtype, p.out_dtype);
  c.layout = gemm_sm90_layout(p);
  // The TMA-store epilogue measured 0.99x cuBLAS at 4096^3 where the register one ran 0.88x (H100, all four
  // layouts); its 32 KiB of C buffers leave bn 256 its 4 stages and bn 128 6.
  c.tma_epilogue = true;
  const long long m = p.c_order == MatrixOrder::RowMajor ? p.m : p.n, n = p.c_order == MatrixOrder::RowMajor ? p.n : p.m;
  const long long wide_tiles = ((m + tpl::kSm90Bm - 1) / tpl::kSm90Bm) * ((n + 255) / 256) * std::max(1LL, p.batch);
  // Measured on the H100 (bench/results_gemm_sm90_h100.log): M = 128 x N = 4096 (16 wide tiles) runs 1.5x
  // faster on 128-wide tiles; B shared by clusters of two gains 4% at 8192^3 (2048 tiles) and nothing at
  // 512 or 896 tiles.
  // The share of the SM-slots of the last wave that tiles fill, for `tiles` tiles.
  const auto wave_fill = [sm_count](long long tiles) {
    const long long slots = (tiles + sm_count - 1) / sm_count * sm_count;
    return static_cast<double>(tiles) / static_cast<double>(std::max(1LL, slots));
  };
  const long long narrow_tiles = wide_tiles / std::max(1LL, (n + 255) / 256) * ((n + 127) / 128);
  if (wide_tiles < sm_count) {
    c.bn = 128;
    c.stages = 6;  // the most that fit beside the C buffers
  } else if (wave_fill(narrow_tiles) > wave_fill(wide_tiles) + 0.05) {
    // 128-wide tiles waste less of the last wave: 2048 x 11008 has 688 wide tiles (5.2 waves of 132, 87%
    // of the slots busy) or 1376 narrow ones (95%): 721 against 699 TFLOP/s on the H100.
    c.bn = 128;
    c.stages = 6;
  } else if (wide_tiles >= 8LL * sm_count) {
    c.cluster = 2;
  }
  // 128 x 256 tiles whose last wave is at most half full: that wave's tiles in K slices (tail=4), every
  // other tile whole. H100 (bench/results_gemm_sm90_tail_h100.log): 2048 x 11008 x 4096 (5 waves + 28
  // tiles in 4 slices) f16 724 / bf16 746 TFLOP/s against 706 / 698 on 128-wide tiles; 8192 x 14336 x 4096
  // (pairs: 27 waves + 10 in 4 slices) 767 / 800 against 760 / 793.
  // With much DRAM bandwidth per SM (the H200) the same tail on 128 x 128 tiles, one CTA each, where their
  // last wave is at most half full too: H200 NT, 15 rounds against cuBLAS
  // (bench/results_gemm_sm90_tile64_h200_session25.log, f16 / bf16): 2048 x 11008 x 4096 0.884 / 0.884 ->
  // 0.997 / 1.003 (the tuner had picked it in three sessions), 8192 x 14336 x 4096 0.973 / 0.988 -> 0.993 /
  // 0.997; in pairs or without the tail 0.97-0.99. f16, 11 rounds: 1536 x 14336 x 4096 0.864 -> 0.963, 3072 x
  // 3072 x 4096 0.688 -> 0.864, 1024 x 5120 x 4096 0.578 -> 0.851, 4096 x 28672 x 4096 0.983 -> 1.002, and
  // 16384 x 16384 x 4096 1.022 -> 1.013 (its pairs of wide tiles, the one loss).
  const bool rich = dram_gbps >= kRichDramPerSm * sm_count;
  if (wide_tiles >= sm_count) {
    Sm90GemmConfig t = c;
    t.bn = 256;
    t.stages = 4;
    t.cluster = wide_tiles >= 8LL * sm_count ? 2 : 1;
    t.tail = 4;
    if (gemm_sm90_tail_plan(t, m, n, p.k, p.batch, sm_count).slices > 1) {
      Sm90GemmConfig narrow = t;
      narrow.bn = 128;
      narrow.stages = 6;
      narrow.cluster = 1;
      if (rich && gemm_sm90_tail_plan(narrow, m, n, p.k, p.batch, sm_count).slices > 1) return narrow;
      return t;
    }
  }
  // Much DRAM bandwidth per SM (the H200), one matrix of 65..384 rows (one to three tile rows, as measured:
  // not M <= 64, whose stages shrink to M's rows, nor batches or squarer shapes such as 1024 x 4096), fewer
  // 128 x 256 tiles than SMs, and more 128 x 128 ones than half a wave (but not more than 80% of one: 128 x
  // 14336's 112 tiles of 128 ran level with or ahead of its 128 tiles of 112): the narrowest tile width whose
  // tiles fit one wave, as many CTAs as one wave holds, with the TMA epilogue and the deepest ring (its C
  // buffers sized to its chunks: a stage more for 80, 96, 112, 144 and 208 than with 32 KiB, worth 2.7-8% at
  // 128 x 9216, 256 x 5120 and 256 x 9216). Widths are multiples of 16 (of 64 for an N-contiguous B's boxes, of 32 for f32 C's chunks: gemm_sm90_wave_step); the
  // epilogue stores the chunks of 64, 32 or 16 columns such a width is made of (sm90_c_swizzle_bytes).
  // H200 NT against cuBLAS, 9 rounds A/B, f16 / bf16 (bench/results_gemm_sm90_chunks_h200_session27.log):
  // where 128-wide tiles spill past the wave, 256 x 11008 x 4096 0.866 / 0.867 (192, the narrowest multiple of
  // 64) -> 0.923 / 0.914 (176), 256 x 14336 x 4096 0.989 / 0.927 (256) -> 1.034 / 0.972 (224), 256 x 9216 x 4096
  // 0.794 / 0.795 (192) -> 0.882 / 0.882 (144), 256 x 11008 x 14336 0.909 / 0.905 -> 0.951 / 0.949, TT 256 x 11008
  // 0.869 / 0.874 -> 0.915 / 0.916, 192 x 14336 0.873 / 0.875 -> 0.898 / 0.896; where they fill half to one
  // wave, 128 x 9216 x 4096 0.909 / 0.902 (128) -> 0.941 / 0.944 (80), 128 x 10240 0.933 / 0.940 -> 0.961 /
  // 0.964 (80), 256 x 5120 0.799 / 0.800 -> 0.876 / 0.872 (80), 128 x 11008 0.951 / 0.955 -> 0.961 / 0.957 (96),
  // 128 x 14336 0.984 / 0.970 -> 0.976 / 0.977 (112, level); with the C buffers sized to the chunks (section 5),
  // 128 x 9216 f16 0.896 (128) -> 0.956 (80, 8 stages), 256 x 5120 bf16 0.800 -> 0.921 (80, 8), 128 x 11008
  // 0.939 / 0.948 -> 0.958 / 0.962 (96, 7), and 128 x 14336 0.979 / 0.976 (128) against 0.972 / 0.968 (112, 7),
  // so not there; checked with the rule in place, 128 x 28672 1.033 / 1.024 (256) -> 1.043 / 1.035 (224), 384 x
  // 9216 1.007 / 0.926 (256) -> 1.062 / 0.967 (224). Before the
  // narrower chunks this rule took only 192 or 256 (256 x 11008 0.77 -> 0.88 against 128-wide tiles;
  // bench/results_gemm_sm90_width_h200_session26.log): the widths between stored C from registers, 2-7% slower
  // (this session's A/B).
  if (rich && p.batch <= 1 && m > kShortAMaxRows && m <= kWaveWidthMaxRows && wide_tiles < sm_count &&
      2 * narrow_tiles > sm_count && (narrow_tiles > sm_count || 5 * narrow_tiles <= 4 * sm_count)) {
    const int bn = gemm_sm90_wave_width((m + tpl::kSm90Bm - 1) / tpl::kSm90Bm, n, sm_count, gemm_sm90_wave_step(c));
    if (bn != 0) {
      c.bn = bn;
      c.cluster = 1;
      c.tma_epilogue = true;
      c.stages = gemm_sm90_max_stages(c);
      if (c.bn == 256) c.raster = 16;  // as every 128 x 256 tile of one CTA (below)
      return c;
    }
  }
  // 128 x 256 tiles one CTA each: groups of 16 tile rows. A wave of 132 such tiles reads the least of A and B
  // from L2 with about 16 tile rows a group (a tile row of A is half the bytes of a tile column of B); pairs
  // (66 a wave, B shared) keep 8 cluster rows. H100, 21 rounds in one process against raster 8: 4096^3 +0.3
  // to +0.5% in f16 and bf16, NT/NN/TT; 2048 x 14336 x 4096 0 to +0.3%; 8192 x 4096 x 4096 -0.2 to +0.6%
  // (bench/results_gemm_sm90_ab_h100_session17.log); 2048 x 4096 x 4096 +0.6 / +0.7% in bf16 / f16, 2048 x 4096
  // x 14336 +0.2 to +0.4%, 8192 x 4096 x 14336 a tie (bench/results_gemm_sm90_ab_h100_session18.log).
  if (c.bn == 256 && c.cluster == 1) c.raster = 16;  // bn stays 256 here only with a wave or more of wide tiles
  // Full tile rows but too few 128-wide tiles for the SMs: 128 x 64 or 128 x 32 tiles (the wider that
  // does) fill half to one wave of SMs without splitting K, with the deepest ring that fits (9 or 11
  // stages, C from registers). H100, f16 NT: M = 128, N = 4096, K 4096 / 14336 on 32-wide tiles 183 / 254
  // TFLOP/s against 155 / 245 for 128-wide tiles in 4 / 2 K slices (cuBLAS 194 / 248); 256 x 4096 x 4096
  // on 64-wide tiles 319 against 296 (cuBLAS 334). Also where all of M is one short tile row (M < 128,
  // which loads only M's rows of A: gemm_sm90_a_rows) and K is not long: 16 / 32 / 64 x 4096 x 4096 f16 on
  // 32-wide tiles 23.6 / 46.8 / 92.1 against 20.7 / 40.9 / 82.0 in K slices (cuBLAS 24.4 / 50.4 / 99.1);
  // but at K = 14336 the slices won (33.0 against 31.9 at M = 16). Not for mostly empty rows of several
  // tile rows (M = 180: 90 rows a tile row). An N-contiguous B comes in 64-wide boxes: not 32-wide tiles
  // there.
  const long long tiles_m = (m + tpl::kSm90Bm - 1) / tpl::kSm90Bm;
  const long long kblocks = (p.k + tpl::kSm90Bk - 1) / tpl::kSm90Bk;
  const bool short_row = tiles_m == 1 && kblocks <= kThinShortRowMaxBlocks;
  // Much DRAM bandwidth per SM (the H200) and one tile row (M <= 128) whose 128 x 64 tiles fill a quarter to
  // half a wave: those tiles in 2 K slices summed in a cluster pair, 9 stages (cuBLAS's structure there too).
  // H200 NT, A/B against cuBLAS (bench/results_gemm_sm90_skinny_h200_session21.log): M = 16..128 x 4096 x
  // 4096 0.84-0.89 -> 0.88-0.94, x 14336 0.77-0.84 -> 0.95-1.04; N = 2112..3072 0.52-0.76 -> 0.74-0.90;
  // NN, TN, TT level or better. The H100 keeps the rules below.
  // There, at most 32 rows of C (M = 16 or 32 against N = 2049..16896), A and B swap roles: the kernel
  // computes C^T in 128 x 32 tiles along N (a quarter of the tensor work of 128-row tiles over 16 rows, the
  // same bytes), K in 2 slices summed in a cluster pair where those tiles fill a quarter to half a wave of
  // pairs (N = 4096: 32 tiles, 64 CTAs), K whole where they fill half to one wave (N = 14336: 112). H200 NT,
  // A/B against cuBLAS (bench/results_gemm_sm90_swap_h200_session24.log), f16 / bf16: 16 x 4096 x 4096
  // 0.929 / 0.941 -> 0.996 / 0.977, 16 x 4096 x 14336 0.969 / 0.967 -> 0.988 / 0.986, 32 x 4096 x 4096
  // 0.965 / 0.966 -> 0.993 / 0.981, 32 x 4096 x 14336 0.983 / 0.970 -> 0.998 / 0.998, 16 x 14336 x 4096
  // 0.982 / 0.987 -> 0.996 / 1.012, 16 x 11008 x 4096 level to +2%; 64 x 4096 x 4096 lost (0.879 -> 0.838).
  // Only where both operands are K-contiguous (NT; the kernel's 32-wide B is the problem's A): with a
  // row-major B (NN, run as TT) it won at K = 4096 (16 / 32 x 4096 x 4096 +4.6 / +6.5%) and lost at K = 14336
  // (-3.6%) and at 16 x 11008 x 4096 (-4.3%), so there it is the tuner's to find (sm90_swap_space).
  // One matrix (batches are not measured): its N alone must fill the tiles.
  if (allow_swap && rich && p.batch <= 1 && wide_tiles < sm_count && m <= kSwapMaxRows && kblocks >= kRichPairMinBlocks) {
    Sm90GemmConfig s = c;
    s.swap_ab = true;
    s.layout = gemm_sm90_layout(p, true);
    s.bn = 32, s.cluster = 1, s.tma_epilogue = false, s.arows = tpl::kSm90Bm;
    const long long t = (n + tpl::kSm90Bm - 1) / tpl::kSm90Bm;  // tiles of C^T
    const bool k_major = !s.a_mn_major() && !s.b_mn_major();
    if (k_major && 8 * t >= sm_count && 4 * t <= sm_count) {
      s.splits = 2, s.reduce_cluster = true;
      s.stages = gemm_sm90_max_stages(s);
      return s;
    }
    if (k_major && 2 * t > sm_count && t <= sm_count) {
      s.stages = gemm_sm90_max_stages(s);
      return s;
    }
  }
  if (rich && wide_tiles < sm_count && tiles_m == 1 && kblocks >= kRichPairMinBlocks) {
    const long long pair_tiles = (n + 63) / 64 * std::max(1LL, p.batch);
    if (2 * pair_tiles <= sm_count && 4 * pair_tiles >= sm_count) {
      c.bn = 64, c.cluster = 1, c.splits = 2, c.reduce_cluster = true;
      c.tma_epilogue = false;  // the cluster's sum stores C from registers
      c.stages = gemm_sm90_max_stages(c);
      return c;
    }
  }
  // One tile row of 96 to 128 rows of C, or 65 to 128 with an M- or N-contiguous operand (where the H200 splits
  // K in pairs above, that instead): two 64-row tiles a tile row (arows=64), 64 wide, as many stages as fit (14), where
  // they fill half to one wave. Against 128 x 32 tiles as many CTAs run half the rows each over a B tile twice as
  // wide. H100, 15 rounds against cuBLAS in one process, f16 / bf16 (bench/results_gemm_sm90_rows64_h100_session30
  // .log): NT 128 x 4096 x 4096 0.880 / 0.884 -> 0.942 / 0.947, x 8192 0.923 / 0.927 -> 0.960 / 0.969, x 14336
  // 1.023 / 1.029 -> 1.077 / 1.078, 96 / 112 x 4096 x 4096 +3 / +6%; TT (128 x 32 tiles) 80 and 128 x 4096 x 4096
  // 0.77-0.83 -> 0.93-0.94, 128 x 4096 x 14336 0.83 -> 1.01-1.02; NN and TN (128-wide tiles in 4 K slices) 128 x
  // 4096 x 4096 0.81-0.85 -> 0.90-0.98, 80 x 4096 x 4096 NN +3%, TN level, 128 x 4096 x 14336 NN +2-3%, TN -1.1 /
  // +0.6%. Not NT under 96 rows, where 128 x 32 tiles load only M's rows of A (gemm_sm90_a_rows): 72 and 80 x
  // 4096 x 4096 0.91 -> 0.86-0.87, 80 x 4096 x 14336 0.96-0.99 -> 0.81-0.82.
  if (wide_tiles < sm_count && tiles_m == 1 && m > kShortAMaxRows &&
      (m >= kThinTileMinRows || c.a_mn_major() || c.b_mn_major())) {
    const long long t = 2 * ((n + 63) / 64) * std::max(1LL, p.batch);
    if (t <= sm_count && 2 * t >= sm_count) {
      c.bn = 64, c.arows = 64;
      c.tma_epilogue = false;  // as the 128 x 64 tiles below
      c.stages = gemm_sm90_max_stages(c);
      return c;
    }
  }
  if (wide_tiles < sm_count && (m >= tiles_m * kThinTileMinRows || short_row)) {
    for (const int bn : {64, 32}) {
      const long long thin_tiles = tiles_m * ((n + bn - 1) / bn) * std::max(1LL, p.batch);
      if (bn == 32 && c.b_mn_major()) continue;
      if (thin_tiles <= sm_count && 2 * thin_tiles >= sm_count) {
        c.bn = bn;
        c.stages = bn == 64 ? kWideThinStages : kThinTileStages;
        c.tma_epilogue = false;  // a 32-wide tile is half a chunk of 16-bit C; 64-wide ran as fast without
        // M of at most 64 rows: short A stages, as many as fit (bn 32 at M = 16: 35 stages of 6 KiB against
        // 11 of 20). H100 NT, one process: 16 x 4096 x 4096 bf16 / f16 23.0 / 22.9 -> 24.8 / 24.9 TFLOP/s
        // (cuBLAS 24.4 / 24.4); 64 x 4096 x 4096 90.8 -> 97.4 / 97.7 (cuBLAS 101.7 / 101.8);
        // bench/results_gemm_sm90_short_a_h100.log.
        if (m <= kShortAMaxRows) {
          c.arows = gemm_sm90_short_arows(m, c.a_mn_major());
          c.stages = gemm_sm90_max_stages(c);
        }
        return c;
      }
    }
  }
  // One short tile row of at most 64 rows with K past that (M = 16 against K = 14336): 32-wide tiles with
  // short A stages and K unsplit, where they fill half to one wave of SMs. H100 NT, 16 x 4096 x 14336 bf16
  // / f16: 32.9 / 33.7 TFLOP/s against 32.8 / 32.4 for the rule below (cuBLAS 33.6 / 33.6), 64 x 4096 x 14336
  // bf16 129.6 against 127.8 on 128-wide tiles in 4 slices (cuBLAS 132.3).
  if (wide_tiles < sm_count && tiles_m == 1 && m <= kShortAMaxRows && !short_row && !c.b_mn_major()) {
    const long long thin_tiles = (n + 31) / 32 * std::max(1LL, p.batch);
    if (thin_tiles <= sm_count && 2 * thin_tiles >= sm_count) {
      c.bn = 32;
      c.tma_epilogue = false;
      c.arows = gemm_sm90_short_arows(m, c.a_mn_major());
      c.stages = gemm_sm90_max_stages(c);
      return c;
    }
  }
  // One short tile row of at most 32 rows with K past that (M = 16 against K = 14336) and an N-contiguous B
  // (no 32-wide tiles): 64-wide tiles in 2 K slices summed in the kernel, when those fill half to one wave
  // of SMs. H100, 16 x 4096 x 14336 NT: the tuner's winner in f16 and bf16 (32.3 / 32.4 TFLOP/s against
  // 30.9 / 31.0 on 128-wide tiles in 4 slices, cuBLAS 33.8 / 33.9; bench/results_gemm_tuned_llm_h100_*.log,
  // eighth session).
  if (wide_tiles < sm_count && tiles_m == 1 && m <= kFixupMaxRows && !short_row && kblocks >= 2 * kMinSliceBlocks) {
    const long long thin_tiles = (n + 63) / 64 * std::max(1LL, p.batch);
    if (2 * thin_tiles <= sm_count && 4 * thin_tiles >= sm_count) {
      c.bn = 64;
      c.stages = kWideThinStages;
      c.splits = 2;
      c.reduce_fixup = true;
      c.tma_epilogue = false;
      return c;
    }
  }
  // At most half the SMs busy with whole tiles: cut K into as many slices as fill the GPU, none shorter
  // than kMinSliceBlocks k-blocks.
  const long long tiles = ((m + tpl::kSm90Bm - 1) / tpl::kSm90Bm) * ((n + c.bn - 1) / c.bn) * std::max(1LL, p.batch);
  if (2 * tiles <= sm_count) {
    const long long by_sms = sm_count / std::max(1LL, tiles);
    const long long by_k = ((p.k + tpl::kSm90Bk - 1) / tpl::kSm90Bk) / kMinSliceBlocks;
    c.splits = static_cast<int>(std::max(1LL, std::min({by_sms, by_k, 16LL})));
    // Where a tile row holds few rows of C (M = 16), the CTA that finishes a tile's last slice sums the
    // slices itself (little to sum): 21.4 against 20.6 TFLOP/s through the reduction kernel at 16 x 4096 x
    // 4096 f16 on the H100 (and 31.7 / 31.2 at K = 14336); with 64 rows it ran slower (74 against 82).
    if (c.splits > 1 && m <= tiles_m * kFixupMaxRows) c.reduce_fixup = true;
  }
  return c;
}

int gemm_sm90_k_splits(const Sm90GemmConfig& cfg, long long k) {
  if (cfg.reduce_cluster) return cfg.splits;  // every CTA of the cluster, a slice of K or none
  // K = 0: the reduction kernel alone writes beta * C; the fixup's kernel runs unsplit and does.
  if (k <= 0) return cfg.splits > 1 && !cfg.reduce_fixup ? 0 : 1;
  if (cfg.splits <= 1) return 1;
  const long long kblocks = (k + tpl::kSm90Bk - 1) / tpl::kSm90Bk;
  const long long per = (kblocks + cfg.splits - 1) / cfg.splits;  // k-blocks per slice
  return static_cast<int>((kblocks + per - 1) / per);
}

Sm90TailPlan gemm_sm90_tail_plan(const Sm90GemmConfig& cfg, long long m, long long n, long long k, long long batch,
                                 int sm_count) {
  cfg.validate();
  Sm90TailPlan plan;
  const long long rows = (m + gemm_sm90_tile_rows(cfg) - 1) / gemm_sm90_tile_rows(cfg);
  const long long tiles = (rows + cfg.cluster - 1) / cfg.cluster * ((n + cfg.bn - 1) / cfg.bn) * std::max(1LL, batch);
  const long long kblocks = (std::max(0LL, k) + tpl::kSm90Bk - 1) / tpl::kSm90Bk;
  plan.dp_tiles = tiles;
  plan.kb_per_slice = static_cast<int>(std::min<long long>(kblocks, 2147483647LL));
  if (!cfg.uses_tail() || sm_count < 1) return plan;
  const long long wave = std::max(1, sm_count / cfg.cluster);
  const long long rest = tiles % wave;
  if (tiles < wave || rest == 0) return plan;
  int slices = cfg.tail;
  while (slices > 1 && (rest * slices > wave || kblocks < kMinSliceBlocks * slices)) slices /= 2;
  if (slices < 2) return plan;
  plan.dp_tiles = tiles - rest;
  plan.tail_tiles = rest;
  plan.slices = slices;
  plan.kb_per_slice = static_cast<int>((kblocks + slices - 1) / slices);
  return plan;
}

std::size_t gemm_sm90_workspace_bytes(const Sm90GemmConfig& cfg, const GemmProblem& problem, int sm_count) {
  cfg.validate();
  const GemmProblem p = problem.resolved();
  if (cfg.uses_tail()) {
    if (sm_count < 1)
      throw_invalid("sm_90a gemm: the workspace of config " + cfg.to_string() +
                    " depends on the device's SM count; pass it (sm_count >= 1)");
    const bool sw = gemm_sm90_swaps(cfg, p);
    const long long m = sw ? p.n : p.m, n = sw ? p.m : p.n;
    const Sm90TailPlan plan = gemm_sm90_tail_plan(cfg, m, n, p.k, p.batch, sm_count);
    if (plan.slices < 2 || m == 0 || n == 0) return 0;
    const long long slots = plan.tail_tiles * plan.slices * cfg.cluster;
    const long long bytes = detail::checked_mul(slots, static_cast<long long>(tpl::kSm90Bm) * cfg.bn * 4, "sm_90a tail workspace");
    return static_cast<std::size_t>((bytes + 255) / 256 * 256 + (plan.tail_tiles * cfg.cluster * 8 + 255) / 256 * 256);
  }
  const int splits = gemm_sm90_k_splits(cfg, p.k);
  if (!cfg.uses_workspace() || splits == 0 || p.m == 0 || p.n == 0) return 0;
  if (cfg.reduce_fixup && splits < 2) return 0;  // too short a K to split: the kernel runs unsplit
  const bool sw = gemm_sm90_swaps(cfg, p);
  const long long m = sw ? p.n : p.m, n = sw ? p.m : p.n;
  const long long bytes = detail::checked_mul(
      detail::checked_mul(static_cast<long long>(splits) * p.batch, gemm_sm90_slice_rows(cfg, m), "sm_90a split-K workspace"),
      gemm_splitk_workspace_ld(n) * 4, "sm_90a split-K workspace bytes");
  long long total = (bytes + 255) / 256 * 256;
  if (cfg.reduce_fixup) total += (gemm_sm90_fixup_flags(cfg, m, n, p.batch) * 8 + 255) / 256 * 256;
  return static_cast<std::size_t>(total);
}

long long gemm_sm90_fixup_flags(const Sm90GemmConfig& cfg, long long m, long long n, long long batch) {
  // One per tile of every cluster tile (the kernel indexes (matrix, cluster tile) x cluster rank).
  return gemm_sm90_slice_rows(cfg, m) / gemm_sm90_tile_rows(cfg) * ((n + cfg.bn - 1) / cfg.bn) * std::max(1LL, batch);
}

int gemm_sm90_short_arows(long long m, bool a_mn) {
  if (m > 64) return tpl::kSm90Bm;
  if (a_mn || m > 32) return 64;
  return m > 16 ? 32 : 16;
}

int gemm_sm90_max_stages(const Sm90GemmConfig& cfg) {
  const int fixed = tpl::sm90_smem_bytes(cfg.bn, 0, c_buffer_bytes(cfg), cfg.kernel_fixup(), cfg.arows);
  const int per = tpl::sm90_stage_bytes(cfg.bn, cfg.arows) + 16;  // a stage and its two barriers
  return std::max(2, (tpl::kSm90MaxSmem - fixed) / per);
}

int gemm_sm90_wave_step(const Sm90GemmConfig& cfg) {
  if (cfg.b_mn_major()) return tpl::kSm90MnBox;
  return tpl::sm90_c_swizzle_bytes(16, static_cast<int>(dtype_bytes(cfg.kernel_out()))) != 0 ? 16 : 32;
}

int gemm_sm90_wave_width(long long tile_rows, long long n, int sm_count, int step) {
  for (int bn = std::max(32, step); bn <= 256; bn += step)
    if (tile_rows * ((n + bn - 1) / bn) <= sm_count) return bn;
  return 0;
}

int gemm_sm90_smem_bytes(const Sm90GemmConfig& cfg) {
  cfg.validate();
  return tpl::sm90_smem_bytes(cfg.bn, cfg.stages, c_buffer_bytes(cfg), cfg.kernel_fixup(), cfg.arows);
}

std::string gemm_sm90_name_expression(const Sm90GemmConfig& cfg) {
  cfg.validate();
  std::ostringstream os;
  const char* kernel = cfg.reduce_cluster ? (cfg.splits == 2 ? "swz::tpl::gemm_sm90_splitk2_kernel<"
                                                              : "swz::tpl::gemm_sm90_splitk4_kernel<")
                       : cfg.cluster == 2 ? "swz::tpl::gemm_sm90_cluster2_kernel<"
                                          : "swz::tpl::gemm_sm90_kernel<";
  os << kernel << elem_kind(cfg.in)
     << ", " << elem_kind(cfg.kernel_out()) << ", " << cfg.bn << ", " << cfg.stages << ", " << cfg.raster << ", " << cfg.inflight
     << ", " << (cfg.a_mn_major() ? 1 : 0) << ", " << (cfg.b_mn_major() ? 1 : 0) << ", " << (cfg.tma_epilogue ? 1 : 0);
  // FIXUP (1 K slices, 2 the tail; the cluster reduction's kernels have none), A_ROWS, then C_TRANS (C stored
  // transposed: swap=1): each left out when it is the default and nothing follows, so the names of other
  // kernels stay as they were.
  const bool short_a = cfg.arows < tpl::kSm90Bm;
  const bool trans = cfg.swap_ab;
  if (!cfg.reduce_cluster && (cfg.kernel_fixup() || short_a || trans))
    os << ", " << (cfg.uses_tail() ? 2 : cfg.kernel_fixup() ? 1 : 0);
  if (short_a || trans) os << ", " << cfg.arows;
  if (trans) os << ", 1";
  os << ">";
  return os.str();
}

std::string gemm_sm90_source(const Sm90GemmConfig& cfg) {
  return "// generated by libswzjit: sm_90a gemm " + cfg.to_string() + "\n#include \"gemm_sm90.cuh\"\n" +
         "template __global__ void " + gemm_sm90_name_expression(cfg) +
         "(const __grid_constant__ swz::tpl::Sm90TmaMap, const __grid_constant__ swz::tpl::Sm90TmaMap, "
         "const __grid_constant__ swz::tpl::Sm90TmaMap, const __grid_constant__ swz::tpl::Sm90GemmParams);\n";
}

std::string gemm_sm90_source_name(const Sm90GemmConfig& cfg) {
  // A short stable name for diagnostics: the config text with its separators flattened.
  std::string name = "swz_gemm_sm90_" + cfg.to_string();
  for (char& ch : name)
    if (ch == '=' || ch == ',') ch = '_';
  return name + ".cu";
}

CompileRequest gemm_sm90_compile_request(const Sm90GemmConfig& cfg) {
  check_layouts_once(cfg);
  CompileRequest r;
  r.source = gemm_sm90_source(cfg);
  r.source_name = gemm_sm90_source_name(cfg);
  r.name_expression = gemm_sm90_name_expression(cfg);
  r.arch = "sm_90a";
  return r;
}

Sm90Frame gemm_sm90_frame(const Sm90GemmConfig& cfg, const GemmProblem& problem, DevicePtr a, DevicePtr b) {
  cfg.validate();
  const GemmProblem p = problem.resolved();
  if (p.dtype != cfg.in || p.out_dtype != cfg.out)
    throw_invalid("sm_90a gemm: the problem is " + to_string(p.dtype) + ">" + to_string(p.out_dtype) +
                  " but the config is " + to_string(cfg.in) + ">" + to_string(cfg.out));
  const std::string layout = gemm_sm90_layout(p, cfg.swap_ab);
  if (layout != cfg.layout)
    throw_invalid("sm_90a gemm: the problem's layout in the kernel's frame is " + layout + " (A " +
                  (p.a_order == MatrixOrder::RowMajor ? "row" : "col") + ", B " +
                  (p.b_order == MatrixOrder::RowMajor ? "row" : "col") + ", C " +
                  (p.c_order == MatrixOrder::RowMajor ? "row" : "col") + "-major" + (cfg.swap_ab ? ", A and B swapped" : "") +
                  ") but the config's is " + cfg.layout + "; use layout=" + layout);
  const long long eb = dtype_bytes(p.dtype);
  if (a % 16 != 0 || b % 16 != 0) unsupported("TMA needs A and B 16-byte aligned (the pointers are not)");
  if (p.batch > 1 && p.k > 0 && ((p.stride_a * eb) % 16 != 0 || (p.stride_b * eb) % 16 != 0))
    unsupported("TMA needs batch strides that are multiples of 16 bytes (stride_a " + std::to_string(p.stride_a) +
                ", stride_b " + std::to_string(p.stride_b) + " elements of " + std::to_string(eb) + " bytes)");
  if (p.batch > 2147483647LL) unsupported("batch " + std::to_string(p.batch) + " exceeds 2^31 - 1");
  const bool swaps = gemm_sm90_swaps(cfg, p);
  const long long frame_m = swaps ? p.n : p.m;
  // 64-row stages make 64-row tiles: any M, with K whole or in slices summed in a cluster (the workspace's
  // sums and the tail assume 128-row tiles).
  if (cfg.arows == 64 && frame_m > 64 && ((cfg.splits > 1 && !cfg.reduce_cluster) || cfg.uses_tail()))
    throw Error(ErrorKind::Unsupported,
                "sm_90a gemm: config " + cfg.to_string() + " runs 64-row tiles (arows=64) over M = " +
                    std::to_string(frame_m) + " rows (in the kernel's frame), which take K whole or in a cluster; use "
                    "splits=1 or reduce=cluster, and no tail, or leave arows out");
  if (cfg.arows < 64 && frame_m > cfg.arows)
    throw Error(ErrorKind::Unsupported,
                "sm_90a gemm: config " + cfg.to_string() + " has room for " + std::to_string(cfg.arows) +
                    " rows of A per stage (arows=" + std::to_string(cfg.arows) + ") and M is " + std::to_string(frame_m) +
                    " (in the kernel's frame); use arows=" + std::to_string(gemm_sm90_short_arows(frame_m, cfg.a_mn_major())) +
                    " or leave arows out");
  // K = 0 loads nothing (C = beta * C), so its pitches do not matter.
  if (p.k > 0 && ((p.lda * eb) % 16 != 0 || (p.ldb * eb) % 16 != 0))
    unsupported("TMA needs row pitches that are multiples of 16 bytes (lda " + std::to_string(p.lda) + ", ldb " +
                std::to_string(p.ldb) + " elements of " + std::to_string(eb) + " bytes)");
  Sm90Frame f;
  f.k = p.k;
  f.ldc = p.ldc;
  f.batch = p.batch;
  f.stride_c = p.stride_c;
  f.a_mn = cfg.a_mn_major();
  f.b_mn = cfg.b_mn_major();
  if (!swaps) {
    f.m = p.m, f.n = p.n, f.lda = p.lda, f.ldb = p.ldb, f.stride_a = p.stride_a, f.stride_b = p.stride_b;
  } else {  // C^T (n x m) = B^T A^T: the pitches go with the operands
    f.m = p.n, f.n = p.m, f.lda = p.ldb, f.ldb = p.lda, f.stride_a = p.stride_b, f.stride_b = p.stride_a;
    f.swapped = true;
  }
  // swap_ab: the kernel's C is C^T of a row-major C, or a column-major C itself; either way its (row, col)
  // is at col * ldc + row.
  f.c_trans = cfg.swap_ab;
  return f;
}

bool gemm_sm90_preferred(const Sm90GemmConfig& cfg, const Sm90Frame& frame, int sm_count) {
  // Work units: the config's tiles (128 x 128 or wider; narrower ones and 64-row ones as they are), times its K
  // slices.
  const long long rows = gemm_sm90_tile_rows(cfg);
  const long long tiles = ((frame.m + rows - 1) / rows) * ((frame.n + std::min(cfg.bn, 128) - 1) / std::min(cfg.bn, 128)) *
                          std::max(1, gemm_sm90_k_splits(cfg, frame.k)) * std::max(1LL, frame.batch);
  if (2 * tiles >= sm_count) return true;
  // Fewer tiles: the mma.sync family's split-K configs fill the GPU, which wins where most of each tile's
  // 128 rows are empty (M 16 or 64), not where they are full.
  return frame.m >= tpl::kSm90Bm && 5 * tiles >= sm_count;
}

LaunchShape gemm_sm90_launch_shape(const Sm90GemmConfig& cfg, long long m, long long n, long long k, int sm_count,
                                   long long batch) {
  cfg.validate();
  if (m < 0 || n < 0) throw_invalid("sm_90a gemm launch shape: m " + std::to_string(m) + " and n " + std::to_string(n) + " must be >= 0");
  if (sm_count < 1) throw_invalid("sm_90a gemm launch shape: sm_count " + std::to_string(sm_count) + " must be >= 1");
  // A cluster tile is `cluster` vertically adjacent tiles; one cluster of CTAs computes it.
  const long long rows = (m + gemm_sm90_tile_rows(cfg) - 1) / gemm_sm90_tile_rows(cfg);
  if (batch < 1) throw_invalid("sm_90a gemm launch shape: batch " + std::to_string(batch) + " must be >= 1");
  long long tiles = (rows + cfg.cluster - 1) / cfg.cluster * ((n + cfg.bn - 1) / cfg.bn) *
                    std::max(1, gemm_sm90_k_splits(cfg, k)) * batch;
  bool tail = false;
  if (cfg.uses_tail()) {  // the whole tiles, then the last wave's tiles in K slices
    const Sm90TailPlan plan = gemm_sm90_tail_plan(cfg, m, n, k, batch, sm_count);
    tiles = plan.dp_tiles + plan.tail_tiles * plan.slices;
    tail = plan.slices > 1;
  }
  // The kernel counts its work units in int. A cluster reduction runs one cluster of `splits` CTAs per
  // (tile, matrix): its slices are in the cluster, not in the units.
  if (tiles * cfg.cluster > 2147483647LL)
    throw_invalid("sm_90a gemm: " + std::to_string(tiles) + " work units (tiles x K slices x matrices) exceed 2^31 - 1");
  const long long ctas_per_cluster = cfg.reduce_cluster ? cfg.splits : cfg.cluster;
  long long clusters = cfg.reduce_cluster ? tiles / cfg.splits : std::max(1LL, tiles);
  if (cfg.persistent && !cfg.reduce_cluster) {
    // As many clusters as the SMs hold, then as few as still finish in the same number of waves: every
    // cluster runs the same number of units (512 tiles at 4096^2: 128 CTAs of 4, not 132 with 16 of them
    // idle in the last wave). Fewer tiles in flight at once read less of A and B from DRAM (bench/l2_model.py:
    // 149 -> 134 MB at 4096^3) and a wave is then whole raster groups. H200, 15-21 rounds in one process
    // against 132 CTAs (bench/results_gemm_sm90_ab_h200_session20.log): 4096^3 +0.3 to +1.4% in all four
    // layouts, f16 and bf16, three runs in either order; 8192 x 4096 x 4096 +1.1 / +1.9% bf16 / f16; 2048 x
    // 4096 x 4096 +0.6%; 2048 x 14336 x 4096 +1.0 / +0.3%; K = 14336 +0.3 to +0.6%; pairs (8192^3 in 4
    // layouts, 4096 x 14336 x 4096) -0.5 to +1.6%, +0.3% on average. A tail in K slices keeps its whole
    // wave: its slices are planned for that many clusters.
    const long long slots = std::max(1, sm_count / cfg.cluster);
    clusters = std::min(clusters, slots);
    if (!tail && tiles > slots) {
      const long long waves = (tiles + slots - 1) / slots;
      clusters = (tiles + waves - 1) / waves;
    }
  }
  LaunchShape s{};
  s.grid[0] = static_cast<unsigned>(std::max(1LL, clusters) * ctas_per_cluster);
  s.grid[1] = s.grid[2] = 1;
  s.block[0] = static_cast<unsigned>(tpl::sm90_threads(cfg.arows));
  s.block[1] = s.block[2] = 1;
  return s;
}

}  // namespace swz
