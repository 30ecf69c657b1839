// generator: the Hopper GEMM's search space and its candidate text (gemm_sm90_space.hpp), the rule that
// decides where the variant runs by default, and the public request for tools (swzjit/gemm.hpp).
#include "generator/families/gemm_sm90/gemm_sm90_space.hpp"

#include <algorithm>

#include "swzjit/error.hpp"
#include "swzjit/gemm.hpp"

namespace swz {
namespace {

// A stand-in operand address, 256-byte aligned: the frame judges a config with it where only the problem's
// shape and layout should decide.
constexpr DevicePtr kAlignedPtr = DevicePtr{1} << 20;

constexpr char kPrefix[] = "sm90:";
constexpr std::size_t kPrefixLength = sizeof kPrefix - 1;

}  // namespace

std::string sm90_candidate_text(const Sm90GemmConfig& cfg) { return kPrefix + cfg.to_string(); }

bool is_sm90_candidate(const std::string& text) { return text.compare(0, kPrefixLength, kPrefix) == 0; }

Sm90GemmConfig parse_sm90_candidate(const std::string& text) {
  if (!is_sm90_candidate(text))
    throw Error(ErrorKind::InvalidArgument,
                "'" + text + "' is not a Hopper GEMM candidate (it starts with \"" + kPrefix + "\")");
  return Sm90GemmConfig::parse(text.substr(kPrefixLength));
}

namespace {

Sm90GemmConfig config_of_text(const std::string& text) {
  if (text.empty()) return Sm90GemmConfig{};
  return is_sm90_candidate(text) ? parse_sm90_candidate(text) : Sm90GemmConfig::parse(text);
}

}  // namespace

CompileRequest gemm_sm90_request(const std::string& config_text) {
  return gemm_sm90_compile_request(config_of_text(config_text));
}

std::string gemm_sm90_config_text(const std::string& config_text) { return config_of_text(config_text).to_string(); }

std::optional<Sm90GemmConfig> sm90_default_choice(const GemmProblem& problem, DevicePtr a, DevicePtr b, int sm_count,
                                                  int dram_gbps) {
  const GemmProblem p = problem.resolved();
  if (p.dtype == DType::F32 || p.k == 0) return std::nullopt;
  try {
    const Sm90GemmConfig cfg = choose_sm90_gemm_config(p, sm_count, dram_gbps);
    if (gemm_sm90_preferred(cfg, gemm_sm90_frame(cfg, p, a, b), sm_count)) return cfg;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Unsupported) throw;
  }
  return std::nullopt;
}

std::optional<Sm90GemmConfig> sm90_default_choice(const GemmProblem& problem, int max_vec_bytes, int sm_count,
                                                  int dram_gbps) {
  // Stand-in pointers with the call's alignment class: 256-byte aligned ones when it allows TMA's 16
  // bytes, else ones off by the class (the frame refuses them, as it would the real ones).
  const DevicePtr p = max_vec_bytes >= 16 ? kAlignedPtr : kAlignedPtr + static_cast<DevicePtr>(max_vec_bytes);
  return sm90_default_choice(problem, p, p, sm_count, dram_gbps);
}

std::vector<Sm90GemmConfig> sm90_device_space(const GemmProblem& problem, int sm_count, int dram_gbps) {
  const Sm90GemmConfig chosen = choose_sm90_gemm_config(problem, sm_count, dram_gbps);
  std::vector<Sm90GemmConfig> space;
  const auto add = [&space](const Sm90GemmConfig& c) {
    if (std::find(space.begin(), space.end(), c) == space.end()) space.push_back(c);
  };
  add(chosen);  // the default first, swapped or not
  for (const Sm90GemmConfig& c : sm90_gemm_space(choose_sm90_gemm_config(problem, sm_count, dram_gbps, false))) add(c);
  for (const Sm90GemmConfig& c : sm90_swap_space(problem)) add(c);
  for (const Sm90GemmConfig& c : sm90_wave_space(problem, sm_count)) add(c);
  add(choose_sm90_gemm_config(problem, sm_count, 0));
  // Only configs that can run the problem (64-row tiles over M > 64 take K whole or slices summed in a cluster:
  // gemm_sm90_frame), judged with aligned operands: where the problem's alignment is what refuses them, every
  // config alike, the caller finds out.
  const auto runs = [&](const Sm90GemmConfig& c) {
    try {
      gemm_sm90_frame(c, problem, kAlignedPtr, kAlignedPtr);
      return true;
    } catch (const Error&) {
      return false;
    }
  };
  if (runs(chosen)) space.erase(std::remove_if(space.begin(), space.end(), [&](const Sm90GemmConfig& c) { return !runs(c); }),
                                space.end());
  return space;
}

std::vector<Sm90GemmConfig> sm90_swap_space(const GemmProblem& problem) {
  const GemmProblem p = problem.resolved();
  std::vector<Sm90GemmConfig> space;
  // The kernel frame's M without the swap (a column-major C is C^T already): the swapped kernel's bn side.
  const long long m = p.c_order == MatrixOrder::RowMajor ? p.m : p.n;
  if (p.dtype == DType::F32 || m > 64 || p.k <= 0) return space;
  Sm90GemmConfig base = default_sm90_gemm_config(p.dtype, p.out_dtype);
  base.swap_ab = true;
  base.layout = gemm_sm90_layout(p, true);
  struct Point {
    int bn, arows, splits, reduce, cluster;  // reduce: 0 none (K whole), 1 fixup, 2 cluster
  };
  // 64-row tiles in pairs sharing the problem's A (the kernel's B), K whole: cuBLAS's 64 x 64 2 x 1 clusters
  // in its column-major frame. H200, f16 NT, one consumer warpgroup: 16x11008x4096 1.003 against the
  // default's 0.967-0.979 of cuBLAS, but 0.78-0.92 at N = 4096 and 14336 (bench/results_gemm_sm90_tile64_h200_session25.log).
  const Point points[] = {{32, 128, 1, 0, 1}, {32, 128, 2, 2, 1}, {32, 128, 4, 2, 1}, {32, 128, 2, 1, 1},
                          {32, 64, 1, 0, 1},  {32, 64, 2, 2, 1},  {32, 64, 1, 0, 2},  {64, 128, 1, 0, 1},
                          {64, 128, 2, 2, 1}, {64, 128, 4, 2, 1}, {64, 128, 2, 1, 1}, {64, 64, 1, 0, 1},
                          {64, 64, 2, 2, 1},  {64, 64, 1, 0, 2}};
  for (const Point& pt : points) {
    Sm90GemmConfig c = base;
    c.bn = pt.bn;
    c.arows = pt.arows;
    c.cluster = pt.cluster;
    c.splits = pt.splits;
    c.reduce_fixup = pt.reduce == 1;
    c.reduce_cluster = pt.reduce == 2;
    c.stages = gemm_sm90_max_stages(c);
    try {
      c.validate();  // a 32-wide B part of an N-contiguous operand (the problem's M-contiguous A) does not fit
    } catch (const Error&) {
      continue;
    }
    space.push_back(c);
  }
  return space;
}

std::vector<Sm90GemmConfig> sm90_wave_space(const GemmProblem& problem, int sm_count) {
  const GemmProblem p = problem.resolved();
  std::vector<Sm90GemmConfig> space;
  if (p.dtype == DType::F32 || p.k <= 0 || sm_count <= 0) return space;
  // The kernel frame's M and N (a column-major C is C^T already).
  const long long m = p.c_order == MatrixOrder::RowMajor ? p.m : p.n, n = p.c_order == MatrixOrder::RowMajor ? p.n : p.m;
  const long long rows = (m + tpl::kSm90Bm - 1) / tpl::kSm90Bm * std::max(1LL, p.batch);
  const auto tiles = [&](int bn) { return rows * ((n + bn - 1) / bn); };
  // Not for M <= 64 (short A stages and swapped roles, with their own spaces, are the candidates there).
  if (m <= 64 || tiles(256) >= sm_count || 2 * tiles(128) <= sm_count) return space;
  Sm90GemmConfig base = default_sm90_gemm_config(p.dtype, p.out_dtype);
  base.layout = gemm_sm90_layout(p);
  base.tma_epilogue = true;
  const auto add = [&](int bn, int fewer) {
    if (bn < 32 || bn > 256) return;
    Sm90GemmConfig c = base;
    c.bn = bn;
    c.stages = gemm_sm90_max_stages(c) - fewer;
    try {
      c.validate();
    } catch (const Error&) {
      return;
    }
    if (std::find(space.begin(), space.end(), c) == space.end()) space.push_back(c);
  };
  // Through the TMA epilogue (2-7% ahead of registers at these widths): the narrowest width of the layout's
  // step that fits one wave (the H200's default), at its deepest ring and one stage less, the next two
  // wider ones (fewer, larger tiles), the narrowest multiple of 64, and 128 and 256.
  const int step = gemm_sm90_wave_step(base);
  const int narrowest = gemm_sm90_wave_width(rows, n, sm_count, step);
  add(narrowest, 0);
  add(narrowest, 1);
  add(narrowest + step, 0);
  add(narrowest + 2 * step, 0);
  add(gemm_sm90_wave_width(rows, n, sm_count, 64), 0);
  add(128, 0);
  add(256, 0);
  return space;
}

std::vector<Sm90GemmConfig> sm90_gemm_space(const Sm90GemmConfig& base) {
  std::vector<Sm90GemmConfig> space;
  const auto add = [&space](const Sm90GemmConfig& c) {
    try {
      c.validate();  // e.g. a deeper ring beside a shared-memory epilogue may not fit
    } catch (const Error&) {
      return;
    }
    if (std::find(space.begin(), space.end(), c) == space.end()) space.push_back(c);
  };
  // A skinny problem (few tiles): its default splits K or runs 32-wide tiles. Tile order and clusters
  // (whose second CTA would have no tile row) do not matter there; tile width, K slices and where they are
  // summed do.
  if (base.splits > 1 || base.bn <= 64) {
    const int s = std::max(2, base.splits);
    struct Point {
      int bn, stages, splits;
      bool reduce_cluster, reduce_fixup, tma_epilogue;
    };
    const int half = std::max(2, s / 2), twice = std::min(32, 2 * s);
    const Point points[] = {
        // 128- and 256-wide tiles in K slices summed by the reduction kernel (where tile rows are mostly
        // empty, M = 16..64), by the kernel itself (fixup), or in a cluster of 2 or 4 (no workspace)
        {128, 6, s, false, false, true}, {128, 6, half, false, false, true}, {128, 6, twice, false, false, true},
        {128, 7, s, false, false, false}, {256, 4, s, false, false, true},
        {128, 6, s, false, true, true}, {128, 6, twice, false, true, true},
        {128, 6, 2, true, false, false}, {128, 6, 4, true, false, false}, {64, 8, 2, true, false, false},
        // 64- and 32-wide tiles: as many tiles as SMs with fewer or no K slices
        {32, 11, 1, false, false, false}, {64, 9, 1, false, false, false}, {64, 9, 2, false, false, false},
        {64, 9, 2, false, true, false}, {64, 9, 4, false, true, false}};
    add(base);
    for (const Point& pt : points) {
      Sm90GemmConfig c = base;
      c.cluster = 1;
      c.arows = tpl::kSm90Bm;  // the points as measured with full A stages; short ones follow
      c.bn = pt.bn;
      c.stages = pt.stages;
      c.splits = pt.splits;
      c.reduce_cluster = pt.reduce_cluster;
      c.reduce_fixup = pt.reduce_fixup;
      c.tma_epilogue = pt.tma_epilogue;
      add(c);
    }
    // Short A stages where the default has them (all of M fits): 32- and 64-wide tiles with the deepest ring
    // and a shallower one, and 64-wide in 2 K slices.
    if (base.arows < tpl::kSm90Bm) {
      for (const int bn : {32, 64})
        for (const int deep : {1, 0}) {
          Sm90GemmConfig c = base;
          c.bn = bn;
          c.splits = 1;
          c.reduce_cluster = c.reduce_fixup = c.tma_epilogue = false;
          c.stages = gemm_sm90_max_stages(c);
          if (!deep) c.stages = c.stages * 2 / 3;
          add(c);
        }
      Sm90GemmConfig c = base;
      c.bn = 64;
      c.splits = 2;
      c.reduce_fixup = true;
      c.reduce_cluster = c.tma_epilogue = false;
      c.stages = gemm_sm90_max_stages(c);
      add(c);
    }
    if (base.arows >= 64) {
      // Tiles of 64 rows (64-row stages), K whole, the deepest ring: for M past one short tile row, twice the
      // tile rows of 128-row tiles (H100 bf16 NT: 100x4096x4096 145 against 140 TFLOP/s, 192x4096x4096 on
      // 64 x 128 tiles 218 against 206; 128x4096x4096 even). Beside a default of such tiles (arows=64 over
      // 65..128 rows) too, whose short-stage points above include 2 K slices that the frame refuses past 64
      // rows (sm90_device_space leaves them out).
      for (const int bn : {64, 128}) {
        Sm90GemmConfig c = base;
        c.bn = bn;
        c.arows = 64;
        c.cluster = 1;
        c.splits = 1;
        c.tail = 1;
        c.reduce_cluster = c.reduce_fixup = c.tma_epilogue = false;
        c.stages = gemm_sm90_max_stages(c);
        add(c);
      }
    }
    return space;
  }
  // Stage counts: the deepest ring that fits 227 KiB and one step shallower (less smem, same speed when
  // the loads keep up).
  struct TileStages {
    int bn, stages;
  };
  for (const TileStages ts : {TileStages{256, 4}, TileStages{256, 3}, TileStages{128, 6}, TileStages{128, 4}})
    for (const int cluster : {1, 2})
      for (const int raster : {8, 16, 4}) {
        Sm90GemmConfig c = base;
        c.bn = ts.bn;
        c.stages = ts.stages;
        c.cluster = cluster;
        c.raster = raster;
        add(c);
      }
  // The last partial wave in K slices (tail=4: as many as fit, 4 or 2; where no wave is partial enough it
  // runs as the config without it).
  for (const TileStages ts : {TileStages{256, 4}, TileStages{128, 6}})
    for (const int cluster : {1, 2}) {
      Sm90GemmConfig c = base;
      c.bn = ts.bn;
      c.stages = ts.stages;
      c.cluster = cluster;
      c.raster = 8;
      c.splits = 1;
      c.reduce_fixup = c.reduce_cluster = false;
      c.tail = 4;
      add(c);
    }
  return space;
}

}  // namespace swz
