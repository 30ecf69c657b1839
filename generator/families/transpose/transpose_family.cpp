// generator/families/transpose: the built-in family "transpose" on the family contract
// (include/swzjit/family.hpp): templates/transpose.cuh described declaratively — params, the
// requirements TransposeConfig::validate() enforces, the alignment class, defaults, the launch — plus
// the two C++ hooks only the engine's process needs: the space the static analysis picks swizzles
// and pads for (transpose_search_space) and the bank analysis (analyze_transpose's instructions).
#include "generator/families/transpose/transpose_family.hpp"

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "swzjit/cache.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit_space_hashes.hpp"  // generated: SWZJIT_TRANSPOSE_SPACE_HASH
#include "templates/testing.cuh"
#include "templates/transpose.cuh"

namespace swz {
namespace detail {
namespace {

// Each param's value range covers every config TransposeConfig::validate() accepts (with what the
// requirements below rule out), so any typed config converts; the tuned space is the space function's.
std::string definition_text() {
  std::string threads;
  for (int t = 32; t <= 1024; t += 32) threads += " " + std::to_string(t);
  return R"(family = transpose
about = out[b][c][r] = in[b][r][c]: tiled through shared memory laid out plain, padded or XOR-swizzled
dims = dtype:type rows cols ld_in ld_out batch stride_in stride_out
align align_in = in
align align_out = out
let eb = elem_bytes(dtype)
# the widest global access every pointer, pitch and (batched) stride allows, as the typed API computes it
let vec_bytes = max(eb, min(min(align_in, align_out), min(min(pow2_align(ld_in * eb), pow2_align(ld_out * eb)), min(pow2_align(stride_in * eb * (batch > 1)), pow2_align(stride_out * eb * (batch > 1))))))
# defaults: the shapes that won on the H100 (default_transpose_config); the swizzles are the ones
# transpose_choose_swizzle picks for them (checked by tests/generator/families/transpose_family_test.cpp)
param TILE_R = 1 2 4 8 16 32 64 128 256 ; default 32 + 32 * (eb == 4)
param TILE_C = 1 2 4 8 16 32 64 128 256 ; default 128 - 64 * (eb == 4)
param THREADS =)" + threads + R"( ; default 256 - 128 * (eb == 4)
param VEC = 1 2 4 8 16 ; default max(1, min(8 - 4 * (eb == 2), vec_bytes) / eb)
param PAIR = 0 1 ; default (eb == 2) * (VEC % 2 == 0)
param LAYOUT = 0 1 2 ; default 2         # 0 plain, 1 padded rows, 2 XOR swizzle
param PAD = 0..32 ; default 0
param SW_B = 0..16 ; default 5 - (VEC == 2) * (1 + 3 * (eb == 4))
param SW_M = 0..40 ; default eb == 2
param SW_S = -40..40 ; default 6 - (eb == 4) * (VEC == 2)
param SW2_B = 0..16 ; default 5 * (eb == 4) * (VEC == 2)
param SW2_M = 0..40 ; default 0
param SW2_S = -40..40 ; default 7 * (eb == 4) * (VEC == 2)
param RASTER = 0 1 ; default eb == 2
param HINT = 0 1 ; default 0              # 1: streaming (.cs) global loads and stores
require = ld_in >= cols && ld_out >= rows
require = batch <= 1 || (stride_in >= rows * ld_in && stride_out >= cols * ld_out)
require = VEC * eb <= 16
require = VEC * eb <= vec_bytes
require = TILE_R % VEC == 0 && TILE_C % VEC == 0
require = TILE_R * TILE_C % (VEC * THREADS) == 0
require = TILE_R * TILE_C / THREADS <= 64
require = (LAYOUT == 1) == (PAD > 0)
require = !PAIR || (eb == 2 && VEC % 2 == 0 && TILE_R % 2 == 0)
require = !PAIR || TILE_R / 2 * TILE_C % (VEC * THREADS) == 0
require = LAYOUT == 2 || SW_B + SW_M + abs(SW_S) + SW2_B + SW2_M + abs(SW2_S) == 0
require = abs(SW_S) >= SW_B && SW_B + SW_M + abs(SW_S) <= 40 && abs(SW2_S) >= SW2_B && SW2_B + SW2_M + abs(SW2_S) <= 40
require = SW_B == 0 || SW_B + SW_M + abs(SW_S) <= log2(TILE_R / (1 + PAIR) * TILE_C)
require = SW2_B == 0 || SW2_B + SW2_M + abs(SW2_S) <= log2(TILE_R / (1 + PAIR) * TILE_C)
require = TILE_R / (1 + PAIR) * (TILE_C + (LAYOUT == 1) * PAD) * (eb + 2 * PAIR) <= 49152
buffer in = dtype [(batch > 0) * ((batch - 1) * stride_in + rows * ld_in)] input
buffer out = dtype [(batch > 0) * ((batch - 1) * stride_out + cols * ld_out)] output
kernel = swz::tpl::transpose_kernel<elem_bytes(dtype), TILE_R, TILE_C, THREADS, VEC, LAYOUT, PAD, SW_B, SW_M, SW_S, SW2_B, SW2_M, SW2_S, RASTER, HINT, PAIR>({in, out, rows, cols, ld_in, ld_out, batch, stride_in, stride_out})
grid = max(1, min((1 - RASTER) * ceil_div(cols, TILE_C) + RASTER * ceil_div(rows, TILE_R), 2147483647)), max(1, min(RASTER * ceil_div(cols, TILE_C) + (1 - RASTER) * ceil_div(rows, TILE_R), 65535)), max(1, min(batch, 65535))
block = THREADS
smem = 0
reference = swz::tpl::transpose_reference_kernel<elem_bytes(dtype)>({in, out, rows, cols, ld_in, ld_out, batch, stride_in, stride_out})
reference.grid = max(1, min(ceil_div(batch * rows * cols, 256), 65535))
reference.block = 256
tolerance = 1e-12                          # a transpose moves bits: any candidate error is far above this
min_arch = 80
source_name = transpose.cu
--- source
#include "transpose.cuh"
#include "transpose_reference.cuh"
)";
}

int as_int(const FamilyValues& v, const char* name) {
  const auto it = v.find(name);
  if (it == v.end()) throw_invalid(std::string("transpose config: parameter ") + name + " missing");
  return static_cast<int>(it->second);
}

DType dtype_of(const FamilyValues& problem) {
  const auto it = problem.find("dtype");
  if (it == problem.end()) throw_invalid("transpose problem: dtype missing");
  return static_cast<DType>(it->second);
}

int vec_bytes_of(const FamilyValues& p) {
  const long long eb = dtype_bytes(dtype_of(p));
  const auto pa = [](long long v) {
    long long a = 16;
    while (a > 1 && v % a != 0) a /= 2;
    return a;
  };
  const bool batched = p.at("batch") > 1;
  long long a = std::min(p.at("align_in"), p.at("align_out"));
  a = std::min({a, pa(p.at("ld_in") * eb), pa(p.at("ld_out") * eb), pa(batched ? p.at("stride_in") * eb : 0),
                pa(batched ? p.at("stride_out") * eb : 0)});
  return static_cast<int>(std::max(a, eb));
}

// The typed search space for the problem's dtype and alignment class, memoized (its pads and swizzles
// come from the static analysis, which is not free).
std::vector<FamilyValues> space_of(const FamilyValues& problem) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, std::vector<FamilyValues>> memo;
  const DType dtype = dtype_of(problem);
  const std::pair<int, int> key(static_cast<int>(dtype), vec_bytes_of(problem));
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto it = memo.find(key);
    if (it != memo.end()) return it->second;
  }
  std::vector<FamilyValues> out;
  for (const TransposeConfig& c : transpose_search_space(dtype, key.second)) out.push_back(transpose_family_config(c));
  std::lock_guard<std::mutex> lock(mutex);
  return memo.emplace(key, std::move(out)).first->second;
}

// Every warp-wide shared-memory instruction of one tile, as analyze_transpose() evaluates them.
std::vector<SmemInstruction> accesses_of(const FamilyValues& values) {
  const TransposeConfig c = transpose_config_of(values, dtype_of(values));
  c.validate();
  const int eb = dtype_bytes(c.dtype);
  const tpl::TransposeGeom g = tpl::transpose_kernel_geom(
      eb, c.tile_rows, c.tile_cols, c.threads, c.vec, static_cast<int>(values.at("LAYOUT")), c.pad, c.swizzle.b,
      c.swizzle.m, c.swizzle.s, c.swizzle2.b, c.swizzle2.m, c.swizzle2.s, c.raster, c.streaming ? 1 : 0, c.pair ? 1 : 0);
  std::vector<SmemInstruction> out;
  for (int phase = 0; phase < 2; ++phase) {
    const bool store = phase == 0;
    const int iters = store ? tpl::transpose_load_iters(g) : tpl::transpose_store_iters(g);
    const int step = store ? tpl::transpose_store_width(g) : 1;
    for (int k = 0; k < (store ? g.vec : g.vec_out); k += step)
      for (int it = 0; it < iters; ++it)
        for (int w = 0; w < c.threads / 32; ++w) {
          SmemInstruction ins;
          ins.op = store ? SmemOp::Sts : SmemOp::Lds;
          ins.width = g.elem_bytes * step;
          for (int lane = 0; lane < 32; ++lane)
            ins.addresses.push_back(store ? tpl::transpose_smem_store_addr(g, w * 32 + lane, it, k)
                                          : tpl::transpose_smem_load_addr(g, w * 32 + lane, it, k));
          out.push_back(std::move(ins));
        }
  }
  return out;
}

// The space code hash of the last version whose typed API tuned transposes itself (its
// SWZJIT_TRANSPOSE_SPACE_HASH): the winners it stored are read through legacy_winner_of.
constexpr const char* kTypedSpaceHash = "4b669fbe58c5cac68ada8d1e0d25add2";

TransposeProblem typed_problem(const FamilyValues& p) {
  TransposeProblem t;
  t.dtype = dtype_of(p);
  t.rows = p.at("rows");
  t.cols = p.at("cols");
  t.ld_in = p.at("ld_in");
  t.ld_out = p.at("ld_out");
  t.batch = p.at("batch");
  t.stride_in = p.at("stride_in");
  t.stride_out = p.at("stride_out");
  return t;
}

// Where the typed API stored a winner for the problem: operation "transpose", TransposeProblem::key of the
// alignment class, and the id of its default (conflict-free, no extra configs) space.
std::optional<FamilyLegacyWinner> legacy_winner_of(const FamilyValues& problem) {
  const DType dtype = dtype_of(problem);
  const int align = vec_bytes_of(problem);
  FamilyLegacyWinner w;
  w.operation = "transpose";
  try {
    w.problem = typed_problem(problem).key(align);
  } catch (const Error&) {
    return std::nullopt;  // not a problem the typed API could have tuned
  }
  w.space_id = search_space_hash({std::string("transpose-space/") + kTypedSpaceHash, to_string(dtype),
                                  "align=" + std::to_string(align), "conflict-free"});
  w.parse = [dtype](const std::string& text) -> std::optional<FamilyValues> {
    try {
      const TransposeConfig c = TransposeConfig::parse(text);
      if (c.dtype == dtype) return transpose_family_config(c);
    } catch (const Error&) {
    }
    return std::nullopt;
  };
  return w;
}

// TEST-ONLY stand-ins (templates/testing.cuh): the same one-struct signature as transpose_kernel.
FamilyStandIn stand_in_of(const std::string& mode, const FamilyValues& problem) {
  const int kind = mode == "fault" ? tpl::kMisbehaveFault
                   : mode == "hang"  ? tpl::kMisbehaveHang
                   : mode == "wrong" ? tpl::kMisbehaveWrong
                   : mode == "oob"   ? tpl::kMisbehaveOutOfBounds
                                     : -1;
  if (kind < 0) throw_invalid("transpose: no stand-in for inject mode '" + mode + "' (fault, hang, wrong, oob)");
  return {"#include \"testing.cuh\"\n", "swz::tpl::misbehaving_transpose_kernel<" +
                                             std::to_string(dtype_bytes(dtype_of(problem))) + ", " +
                                             std::to_string(kind) + ">"};
}

}  // namespace

FamilyValues transpose_family_config(const TransposeConfig& c) {
  const bool sw = c.smem == SmemLayout::Swizzle;
  return {{"TILE_R", c.tile_rows},
          {"TILE_C", c.tile_cols},
          {"THREADS", c.threads},
          {"VEC", c.vec},
          {"PAIR", c.pair ? 1 : 0},
          {"LAYOUT", c.smem == SmemLayout::Plain ? tpl::kSmemPlain : c.smem == SmemLayout::Pad ? tpl::kSmemPad : tpl::kSmemSwizzle},
          {"PAD", c.smem == SmemLayout::Pad ? c.pad : 0},
          {"SW_B", sw ? c.swizzle.b : 0},
          {"SW_M", sw ? c.swizzle.m : 0},
          {"SW_S", sw ? c.swizzle.s : 0},
          {"SW2_B", sw ? c.swizzle2.b : 0},
          {"SW2_M", sw ? c.swizzle2.m : 0},
          {"SW2_S", sw ? c.swizzle2.s : 0},
          {"RASTER", c.raster},
          {"HINT", c.streaming ? 1 : 0}};
}

TransposeConfig transpose_config_of(const FamilyValues& v, DType dtype) {
  TransposeConfig c;
  c.dtype = dtype;
  c.tile_rows = as_int(v, "TILE_R");
  c.tile_cols = as_int(v, "TILE_C");
  c.threads = as_int(v, "THREADS");
  c.vec = as_int(v, "VEC");
  c.pair = as_int(v, "PAIR") != 0;
  const int layout = as_int(v, "LAYOUT");
  c.smem = layout == tpl::kSmemPlain ? SmemLayout::Plain : layout == tpl::kSmemPad ? SmemLayout::Pad : SmemLayout::Swizzle;
  c.pad = as_int(v, "PAD");
  c.swizzle = SwizzleSpec{as_int(v, "SW_B"), as_int(v, "SW_M"), as_int(v, "SW_S")};
  c.swizzle2 = SwizzleSpec{as_int(v, "SW2_B"), as_int(v, "SW2_M"), as_int(v, "SW2_S")};
  c.raster = as_int(v, "RASTER");
  c.streaming = as_int(v, "HINT") != 0;
  return c;
}

FamilyValues transpose_family_problem(DType dtype, long long rows, long long cols, long long ld_in, long long ld_out,
                                      long long batch, long long stride_in, long long stride_out, int align_in,
                                      int align_out) {
  return {{"dtype", static_cast<long long>(dtype)},
          {"rows", rows},
          {"cols", cols},
          {"ld_in", ld_in},
          {"ld_out", ld_out},
          {"batch", batch},
          {"stride_in", stride_in},
          {"stride_out", stride_out},
          {"align_in", align_in},
          {"align_out", align_out}};
}

FamilyDef transpose_family() {
  FamilyDef d = FamilyDef::parse(definition_text());
  d.space_fn = space_of;
  // The space function's code: transpose_search_space and what it calls (CMakeLists.txt hashes them).
  d.space_version = std::string("transpose-space/") + SWZJIT_TRANSPOSE_SPACE_HASH;
  d.legacy_winner = legacy_winner_of;
  d.stand_in = stand_in_of;
  d.smem_accesses = accesses_of;
  return d;
}

}  // namespace detail
}  // namespace swz
