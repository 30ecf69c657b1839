// swzjit public API: the transpose kernel family — typed configs, validation, generated source,
// search space and static shared-memory bank analysis (generator/families/transpose/transpose.cpp).
#pragma once

#include <string>
#include <vector>

#include "swzjit/analysis/layout.hpp"
#include "swzjit/types.hpp"

namespace swz {

/// How the shared-memory tile is laid out.
enum class SmemLayout { Plain, Pad, Swizzle };
std::string to_string(SmemLayout l);

/// One transpose kernel configuration (the template arguments of templates/transpose.cuh).
struct TransposeConfig {
  DType dtype = DType::F32;
  int tile_rows = 32;   ///< input rows per block tile
  int tile_cols = 32;   ///< input cols per block tile
  int threads = 256;    ///< threads per block (multiple of 32)
  int vec = 4;          ///< elements per global vector access (vec * elem bytes <= 16)
  SmemLayout smem = SmemLayout::Swizzle;
  int pad = 0;          ///< elements appended to each shared row (SmemLayout::Pad)
  SwizzleSpec swizzle;  ///< XOR swizzle on element offsets (SmemLayout::Swizzle)
  SwizzleSpec swizzle2; ///< optional second swizzle applied after the first (B = 0: none)
  int raster = 0;       ///< 0: consecutive blocks walk column tiles (along input rows); 1: row tiles
  bool streaming = false;  ///< global loads/stores with the streaming (.cs, evict-first) cache operator
  /// 2-byte types only: shared memory holds 4-byte words of two input rows (transposed 2x2 in
  /// registers), so every shared access is a full word and there are half as many of them.
  bool pair = false;

  /// Elements each thread moves: tile_rows * tile_cols / threads. Throws InvalidArgument unless the
  /// tile sides are in [1, 256] and threads in [1, 1024].
  int elems_per_thread() const;
  int smem_bytes() const;
  /// Canonical text, e.g. "f32,tile=32x32,threads=256,vec=4,smem=swizzle:5:0:5" (parse() reads it back);
  /// a composed swizzle reads "swizzle:2:0:5+4:1:7"; ",raster=1", ",cache=cs", ",pair=1" appear when set.
  std::string to_string() const;
  static TransposeConfig parse(const std::string& text);
  /// Throws InvalidArgument naming the offending field and the rule it breaks.
  void validate() const;
  bool operator==(const TransposeConfig& o) const { return to_string() == o.to_string(); }
};

/// The generated translation unit: one #include and one explicit instantiation.
std::string transpose_source(const TransposeConfig& cfg);
/// The name expression handed to NVRTC (resolved to the lowered name after compilation).
std::string transpose_name_expression(const TransposeConfig& cfg);
/// A stable file name for the generated source, e.g. "swz_transpose_<hash>.cu".
std::string transpose_source_name(const TransposeConfig& cfg);

/// Measurement only: the config's shared-memory phases with no global traffic (templates/smem_probe.cuh),
/// for comparing Nsight Compute's shared-memory counters with analyze_transpose() in isolation.
/// Kernel arguments: (int iterations, unsigned* sink); launch `threads` threads per block.
std::string transpose_probe_source(const TransposeConfig& cfg);
std::string transpose_probe_name_expression(const TransposeConfig& cfg);

/// Grid for a problem: x = column tiles, y = row tiles, z = batch (each clamped to the hardware limits;
/// the kernel loops over what does not fit). Throws InvalidArgument for an invalid config or negative sizes.
struct LaunchShape {
  unsigned grid[3];
  unsigned block[3];
};
LaunchShape transpose_launch_shape(const TransposeConfig& cfg, long long rows, long long cols, long long batch);

/// Pick a conflict-free layout parameter for a config shape: the cheapest single swizzle (fewest
/// bits), else the cheapest composition of two, or the smallest pad, whose static analysis shows zero
/// excess wavefronts. Returns false (and leaves cfg unchanged) if none is found.
bool transpose_choose_swizzle(TransposeConfig& cfg);
bool transpose_choose_pad(TransposeConfig& cfg);

/// Default search space for a dtype: tiles x threads x vector widths x {plain, pad, swizzle}, with
/// invalid combinations removed and conflict-free pad/swizzle parameters chosen by static analysis.
/// `max_vec_bytes` caps the vector width (alignment of the problem's pointers and pitches).
/// 2-byte types get both raster orders (raster=1 won by 3-4% on the H100); `explore` adds raster=1
/// for 4-byte types too (for benchmarks).
std::vector<TransposeConfig> transpose_search_space(DType dtype, int max_vec_bytes = 16, bool include_plain = true,
                                                    bool explore = false);

/// Static bank analysis of one full tile: every warp-wide shared-memory instruction the block issues,
/// evaluated with the template's own index maps and the docs/ARCHITECTURE.md bank model.
struct SmemInstrStats {
  std::string name;              ///< e.g. "sts.32 load-phase k=0"
  bool is_store = false;
  int width = 4;                 ///< bytes per lane
  long long instructions = 0;    ///< warp-wide instructions of this kind per block tile
  long long wavefronts = 0;
  long long ideal_wavefronts = 0;
  long long excess_wavefronts = 0;
  int max_way = 0;
};
struct TransposeAnalysis {
  std::vector<SmemInstrStats> instrs;
  long long store_wavefronts = 0, store_ideal = 0, store_instructions = 0;
  long long load_wavefronts = 0, load_ideal = 0, load_instructions = 0;
  long long excess() const { return store_wavefronts - store_ideal + load_wavefronts - load_ideal; }
};
TransposeAnalysis analyze_transpose(const TransposeConfig& cfg);

}  // namespace swz
