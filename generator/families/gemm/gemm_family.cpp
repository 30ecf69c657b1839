// generator/families/gemm: the GEMM on the family contract (gemm_family.hpp). The frame problem every GEMM
// family shares, and the mma.sync kernels as the built-in families "sgemm" (f32 on CUDA cores) and "hgemm"
// (f16/bf16 on tensor cores). Problem, params, buffers, scalars and the f64 reference are declarative; the
// launches are a program over gemm.cpp and gemm_splitk.cpp: one launch per 65535 matrices and, for a
// split config, the K slices into the run's f32 scratch followed by the reduction that applies alpha and
// beta. The static bank analysis is analyze_gemm's, the default default_gemm_config's, the space
// gemm_search_space's, of which a tune skips the split configs that cannot pay off on the problem.
#include "generator/families/gemm/gemm_family.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <string>
#include <vector>

#include "generator/core/checked_arith.hpp"
#include "generator/families/gemm/gemm_splitk.hpp"
#include "runtime/jit/jit_cache.hpp"  // access_alignment: the rule GemmProblem::max_vec_bytes uses
#include "swzjit/error.hpp"
#include "swzjit_space_hashes.hpp"  // generated: SWZJIT_GEMM_SPACE_HASH (this file's hash among others)
#include "templates/gemm_common.cuh"
#include "templates/gemm_splitk.cuh"

namespace swz {
namespace detail {
namespace {

// Indexes in the definitions below (buffers a, b, c; scalars alpha, beta).
constexpr std::size_t kBufA = 0, kBufB = 1, kBufC = 2;
constexpr std::size_t kAlpha = 0, kBeta = 1;
// A split run's f32 workspace stays under this (a huge batch goes in more launches), unless one matrix
// alone needs more.
constexpr long long kMaxSplitWorkspaceBytes = 256LL << 20;
// Split-K pays off only where the unsplit grid leaves most of the GPU idle and K is long: one wave of a
// large GPU (H100: 132 SMs) is the bar, and slices keep 4 k-tiles of 32.
constexpr long long kSplitMaxTiles = 132;
constexpr long long kSplitMinSlice = 128;

long long value(const FamilyValues& v, const char* name) {
  const auto it = v.find(name);
  if (it == v.end()) throw_invalid(std::string("gemm: no value for ") + name);
  return it->second;
}

using SplitNeed = GemmSplitNeed;
SplitNeed split_need(const GemmConfig& cfg, const GemmProblem& f) {
  const int splits = gemm_k_splits(cfg);
  if (splits <= 1 || f.k == 0) return {};
  // NOTE: checked, so an enormous M x N is an InvalidArgument, not a wrapped (tiny) workspace size.
  const long long matrix_bytes =
      checked_mul(checked_mul(splits, gemm_splitk_workspace_stride(f.m, f.n), "gemm split-K workspace"),
                  static_cast<long long>(sizeof(float)), "gemm split-K workspace bytes");
  return {matrix_bytes, std::min(f.batch, std::min(gemm_max_batch_per_launch(cfg),
                                                   std::max(1LL, kMaxSplitWorkspaceBytes / matrix_bytes)))};
}

// Matrices per launch: the split workspace's share, else the grid's 65535.
long long per_launch(const GemmConfig& cfg, const GemmProblem& f) {
  if (gemm_k_splits(cfg) <= 1) return 65535;
  const SplitNeed need = split_need(cfg, f);
  return need.per_launch > 0 ? need.per_launch : gemm_max_batch_per_launch(cfg);
}

FamilyLaunchShape shape_of(const std::string& name, const LaunchShape& s, long long dynamic_smem) {
  FamilyLaunchShape out;
  out.name_expression = name;
  for (int d = 0; d < 3; ++d) {
    out.grid[d] = s.grid[d];
    out.block[d] = s.block[d];
  }
  out.threads = static_cast<int>(s.block[0] * s.block[1] * s.block[2]);
  out.dynamic_smem = dynamic_smem;
  return out;
}

// The config for the problem, validated, and its loads checked against the problem's alignment class.
GemmConfig checked_config(const FamilyValues& config, const FamilyValues& problem) {
  const GemmConfig cfg = gemm_mma_config_of(config, problem);
  cfg.validate();
  const int align = gemm_family_access_align(problem);
  if (cfg.vec_bytes() > align)
    throw_invalid("loads " + std::to_string(cfg.vec_bytes()) + " bytes at a time; the problem's pointers, pitches" +
                  " and strides allow " + std::to_string(align) + " (VEC=" +
                  std::to_string(align / dtype_bytes(cfg.in_dtype())) + ")");
  return cfg;
}

FamilyPlan plan_of(const FamilyValues& config, const FamilyValues& problem, int) {
  const GemmConfig cfg = checked_config(config, problem);
  const GemmProblem f = gemm_family_frame(problem);
  const bool split = gemm_k_splits(cfg) > 1;
  const std::string name = gemm_name_expression(cfg), reduce = split ? gemm_splitk_reduce_name_expression(f.out_dtype) : "";
  const long long step = per_launch(cfg, f);
  FamilyPlan plan;
  for (long long b0 = 0; b0 < f.batch; b0 += step) {
    const long long nb = std::min(step, f.batch - b0);
    if (!split || f.k > 0) {
      FamilyPlannedLaunch l;
      l.shape = shape_of(name, gemm_launch_shape(cfg, f.m, f.n, nb), cfg.dynamic_smem_bytes());
      plan.launches.push_back(l);
    }
    if (split) {
      FamilyPlannedLaunch l;
      l.shape = shape_of(reduce, gemm_splitk_reduce_launch_shape(f.m, f.n, nb), 0);
      plan.launches.push_back(l);
    }
  }
  const SplitNeed need = split_need(cfg, f);
  plan.scratch_bytes = static_cast<std::size_t>(need.matrix_bytes * need.per_launch);
  return plan;
}

std::vector<FamilyLaunchParams> bind_of(const FamilyValues& config, const FamilyValues& problem,
                                        const FamilyRunBinding& run) {
  const GemmConfig cfg = gemm_mma_config_of(config, problem);
  const GemmProblem f = gemm_family_frame(problem);
  const int splits = gemm_k_splits(cfg);
  const bool split = splits > 1;
  const float alpha = static_cast<float>(run.scalars.at(kAlpha)), beta = static_cast<float>(run.scalars.at(kBeta));
  const unsigned long long a = run.buffers.at(kBufA), b = run.buffers.at(kBufB), c = run.buffers.at(kBufC);
  const long long eb_in = dtype_bytes(f.dtype), eb_out = dtype_bytes(f.out_dtype);
  const long long ldw = gemm_splitk_workspace_ld(f.n), stride_w = gemm_splitk_workspace_stride(f.m, f.n);
  const long long step = per_launch(cfg, f);
  std::vector<FamilyLaunchParams> out;
  for (long long b0 = 0; b0 < f.batch; b0 += step) {
    const long long nb = std::min(step, f.batch - b0);
    const unsigned long long cb = c + static_cast<unsigned long long>(b0 * f.stride_c * eb_out);
    if (!split || f.k > 0) {
      // Split: each slice's f32 partials into the scratch (alpha 1, beta 0), reused by every launch in stream order.
      tpl::GemmParams p{reinterpret_cast<const void*>(a + static_cast<unsigned long long>(b0 * f.stride_a * eb_in)),
                        reinterpret_cast<const void*>(b + static_cast<unsigned long long>(b0 * f.stride_b * eb_in)),
                        reinterpret_cast<void*>(split ? run.scratch : cb), static_cast<int>(f.m), static_cast<int>(f.n),
                        static_cast<int>(f.k), f.lda, f.ldb, split ? ldw : f.ldc, nb, f.stride_a, f.stride_b,
                        split ? stride_w : f.stride_c, split ? 1.0f : alpha, split ? 0.0f : beta, split ? splits : 0,
                        split ? gemm_k_slice(cfg, f.k) : 0};
      out.emplace_back();
      out.back().add(p);
    }
    if (split) {
      // K = 0 needs no products: the reduction alone writes beta * C.
      const bool empty_k = f.k == 0;
      tpl::GemmSplitKParams r{empty_k ? nullptr : reinterpret_cast<const float*>(run.scratch), reinterpret_cast<void*>(cb),
                              static_cast<int>(f.m), static_cast<int>(f.n), ldw, stride_w, f.ldc, f.stride_c, nb,
                              empty_k ? 0 : splits, alpha, beta};
      out.emplace_back();
      out.back().add(r);
    }
  }
  return out;
}

FamilyBankReport analyze_uncached(const GemmConfig& cfg) {
  const GemmAnalysis a = analyze_gemm(cfg);
  FamilyBankReport r;
  r.analysed = true;
  for (const SmemInstrStats& s : a.instrs) {
    BankReport b;
    b.wavefronts = static_cast<int>(s.wavefronts);
    b.ideal_wavefronts = static_cast<int>(s.ideal_wavefronts);
    b.excess_wavefronts = static_cast<int>(s.excess_wavefronts);
    b.max_way = s.max_way;
    r.per_instruction.push_back(b);
    ++r.instructions;
  }
  r.wavefronts = static_cast<int>(a.store_wavefronts + a.load_wavefronts);
  r.ideal_wavefronts = static_cast<int>(a.store_ideal + a.load_ideal);
  r.excess_wavefronts = static_cast<int>(a.excess());
  return r;
}

// The analysis depends on the config alone (its tiles, swizzles, dtypes and layout): once per process per
// config, as every tune of a problem class walks the same space.
FamilyBankReport analyze_of(const FamilyValues& config, const FamilyValues& problem) {
  const GemmConfig cfg = gemm_mma_config_of(config, problem);
  const std::string key = cfg.to_string();
  static std::mutex mutex;
  static std::map<std::string, FamilyBankReport> memo;
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto it = memo.find(key);
    if (it != memo.end()) return it->second;
  }
  FamilyBankReport r = analyze_uncached(cfg);
  std::lock_guard<std::mutex> lock(mutex);
  return memo.emplace(key, std::move(r)).first->second;  // a racing thread's is the same
}

// gemm_search_space (its swizzle choice takes a while) once per process per dtype pair, layout and
// alignment class, as family configs.
const std::vector<FamilyValues>& space_of(const GemmProblem& f, GemmLayout layout, int align) {
  using Key = std::tuple<int, int, int, int>;
  static std::mutex mutex;
  static std::map<Key, std::shared_ptr<const std::vector<FamilyValues>>> memo;
  const Key key{static_cast<int>(f.dtype), static_cast<int>(f.out_dtype), static_cast<int>(layout), align};
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto it = memo.find(key);
    if (it != memo.end()) return *it->second;
  }
  auto out = std::make_shared<std::vector<FamilyValues>>();
  for (const GemmConfig& c : gemm_search_space(f.dtype, f.out_dtype, layout, align)) out->push_back(gemm_mma_family_config(c));
  std::lock_guard<std::mutex> lock(mutex);
  return *memo.emplace(key, std::move(out)).first->second;
}

GemmLayout layout_of(const FamilyValues& problem) {
  const bool a_t = value(problem, "a_mn") != 0, b_n = value(problem, "b_mn") != 0;
  return a_t ? (b_n ? GemmLayout::TN : GemmLayout::TT) : (b_n ? GemmLayout::NN : GemmLayout::NT);
}

std::string program_text(bool sgemm, const std::string& program_id) {
  std::string t = std::string("family = ") + (sgemm ? "sgemm" : "hgemm") + "\n";
  t += sgemm ? "about = C = alpha * A * B + beta * C in f32 on CUDA cores (FMA, the mma.sync kernels' f32 sibling): warp-tiled, A and B "
               "tiles swizzled in shared memory; C row-major (the kernel's frame), A K- or M-contiguous (a_mn), B K- "
               "or N-contiguous (b_mn); split-K through an f32 scratch\n"
             : "about = C = alpha * A * B + beta * C on tensor cores (mma.sync, ldmatrix from swizzled tiles, cp.async "
               "stages); f16/bf16 in, f16/bf16/f32 out; C row-major (the kernel's frame), A K- or M-contiguous "
               "(a_mn), B K- or N-contiguous (b_mn); split-K through an f32 scratch\n";
  // The typed config's fields (include/swzjit/gemm.hpp); the program's default and space pick from them per
  // problem, and its plan refuses what the kernel cannot run (validate(), the alignment class).
  t += "param BM = 8..256 ; default " + std::string(sgemm ? "128" : "128") + "\n";
  t += "param BN = 8..256 ; default " + std::string(sgemm ? "128" : "256") + "\n";
  t += "param BK = 4..64 ; default " + std::string(sgemm ? "8" : "32") + "\n";
  t += "param WM = 4..256 ; default 64\n";
  t += "param WN = 4..256 ; default " + std::string(sgemm ? "32" : "64") + "\n";
  if (sgemm) {
    t += "param WNITER = 1..16 ; default 2\n";
    t += "param TM = 1..16 ; default 4\n";
    t += "param TN = 1..16 ; default 4\n";
  }
  t += "param STAGES = 1..8 ; default " + std::string(sgemm ? "2" : "4") + "\n";
  t += "param VEC = 1 2 4 8 ; default " + std::string(sgemm ? "4" : "8") + "   # elements per global load\n";
  t += "param RASTER = 1..64 ; default 8\n";
  t += "param SPLIT = 1..64 ; default 1\n";
  t += "param SWA_B = 0..8 ; default 0   # A tile's Swizzle<B,M,S>\n";
  t += "param SWA_M = 0..8 ; default 0\n";
  t += "param SWA_S = 0..8 ; default 0\n";
  t += "param SWB_B = 0..8 ; default 0   # B tile's\n";
  t += "param SWB_M = 0..8 ; default 0\n";
  t += "param SWB_S = 0..8 ; default 0\n";
  t += sgemm ? "require = in == 0 && out == 0\n" : "require = in != 0\n";
  t += "require = m >= 1 && n >= 1 && batch >= 1\n";
  t += "program = " + program_id + "\n";
  t += gemm_family_frame_lines();
  t += sgemm ? "tolerance = 1e-5\n" : "tolerance = 1e-2\n";
  t += std::string("source_name = ") + (sgemm ? "sgemm" : "hgemm") + ".cu\n--- source\n";
  t += sgemm ? "#include \"sgemm.cuh\"\n" : "#include \"hgemm.cuh\"\n";
  t += "#include \"gemm_splitk.cuh\"\n#include \"gemm_reference.cuh\"\n";
  return t;
}

FamilyDef mma_family(bool sgemm) {
  auto program = std::make_shared<FamilyProgram>();
  // The code behind the launches, default and space: any edit of it retires the stored winners.
  program->id = std::string(sgemm ? "sgemm/" : "hgemm/") + SWZJIT_GEMM_SPACE_HASH;
  program->plan = plan_of;
  program->bind = bind_of;
  program->analyze = analyze_of;
  program->default_config = [](const FamilyValues& problem, int) {
    return gemm_mma_family_config(default_gemm_config(gemm_family_frame(problem), gemm_family_access_align(problem)));
  };
  program->space = [](const FamilyValues& problem, int) {
    return space_of(gemm_family_frame(problem), layout_of(problem), gemm_family_access_align(problem));
  };
  // Split-K only where it can pay off on the problem (a tune lists the others with the reason).
  program->skip = [](const FamilyValues& config, const FamilyValues& problem) {
    return gemm_split_mismatch(gemm_mma_config_of(config, problem), gemm_family_frame(problem), false);
  };
  FamilyDef d = FamilyDef::parse(program_text(sgemm, program->id));
  d.program = std::move(program);
  return d;
}

}  // namespace

std::string gemm_family_frame_lines() {
  return R"(dims = in:type out:type a_mn b_mn m n k lda ldb ldc batch stride_a stride_b stride_c
align align_a = a
align align_b = b
require = a_mn <= 1 && b_mn <= 1
# matrices of a batch: each its own (0 is not "packed" here: Engine::gemm passes resolved strides, which are 0
# only for an operand with no elements, K = 0), C's apart
require = batch <= 1 || ((k == 0 || (stride_a > 0 && stride_b > 0)) && stride_c >= max(0, m - 1) * ldc + n)
require = ldc >= n && lda >= a_mn * m + (1 - a_mn) * k && ldb >= b_mn * n + (1 - b_mn) * k
buffer a = in [(max(1, batch) - 1) * stride_a + a_mn * (max(0, k - 1) * lda + m) + (1 - a_mn) * (max(0, m - 1) * lda + k)] input
buffer b = in [(max(1, batch) - 1) * stride_b + b_mn * (max(0, k - 1) * ldb + n) + (1 - b_mn) * (max(0, n - 1) * ldb + k)] input
# C is read where beta is not 0, yet an output here: tuning runs at the scalars' defaults (beta 0, where the
# Hopper kernel's TMA-store epilogue applies), so the worker poisons C and checks every element the reference writes
buffer c = out [(max(1, batch) - 1) * stride_c + max(0, m - 1) * ldc + n] output
scalar alpha = 1
scalar beta = 0
reference = swz::tpl::gemm_reference_kernel<(in == 2) + 2 * (in == 0), (out == 2) + 2 * (out == 0), 1 - a_mn, 1 - b_mn, 1>({a, b, c, int:m, int:n, int:k, lda, ldb, ldc, batch, stride_a, stride_b, stride_c, float:alpha, float:beta, int:0, int:0})
reference.grid = max(1, ceil_div(n, 16)), max(1, min(ceil_div(m, 16), 65535)), max(1, min(batch, 65535))
reference.block = 16, 16
)";
}

bool gemm_family_swaps(const GemmProblem& resolved) { return resolved.c_order == MatrixOrder::ColMajor; }

FamilyValues gemm_family_problem(const GemmProblem& p, int align) {
  const bool a_row = p.a_order == MatrixOrder::RowMajor, b_row = p.b_order == MatrixOrder::RowMajor;
  FamilyValues v;
  v["in"] = static_cast<long long>(p.dtype);
  v["out"] = static_cast<long long>(p.out_dtype);
  v["k"] = p.k;
  v["ldc"] = p.ldc;
  v["batch"] = p.batch;
  const bool batched = p.batch > 1;  // a single matrix's strides mean nothing: one key for every value given
  v["stride_c"] = batched ? p.stride_c : 0;
  if (!gemm_family_swaps(p)) {
    v["a_mn"] = a_row ? 0 : 1, v["b_mn"] = b_row ? 1 : 0;
    v["m"] = p.m, v["n"] = p.n, v["lda"] = p.lda, v["ldb"] = p.ldb;
    v["stride_a"] = batched ? p.stride_a : 0, v["stride_b"] = batched ? p.stride_b : 0;
  } else {
    // C^T (n x m, row-major with pitch ldc) = B^T A^T: the frame's A is B^T (M-contiguous where B is
    // row-major), its B is A^T (K-contiguous where A is row-major).
    v["a_mn"] = b_row ? 1 : 0, v["b_mn"] = a_row ? 0 : 1;
    v["m"] = p.n, v["n"] = p.m, v["lda"] = p.ldb, v["ldb"] = p.lda;
    v["stride_a"] = batched ? p.stride_b : 0, v["stride_b"] = batched ? p.stride_a : 0;
  }
  v["align_a"] = v["align_b"] = std::min(16, std::max(1, align));
  return v;
}

GemmProblem gemm_family_frame(const FamilyValues& v) {
  GemmProblem p;
  p.dtype = static_cast<DType>(value(v, "in"));
  p.out_dtype = static_cast<DType>(value(v, "out"));
  p.m = value(v, "m"), p.n = value(v, "n"), p.k = value(v, "k");
  p.a_order = value(v, "a_mn") ? MatrixOrder::ColMajor : MatrixOrder::RowMajor;
  p.b_order = value(v, "b_mn") ? MatrixOrder::RowMajor : MatrixOrder::ColMajor;
  p.c_order = MatrixOrder::RowMajor;
  p.lda = value(v, "lda"), p.ldb = value(v, "ldb"), p.ldc = value(v, "ldc");
  p.batch = value(v, "batch");
  p.stride_a = value(v, "stride_a"), p.stride_b = value(v, "stride_b"), p.stride_c = value(v, "stride_c");
  return p;
}

int gemm_family_access_align(const FamilyValues& v) {
  // GemmProblem::max_vec_bytes's rule, with the aligns standing in for the pointers.
  const int eb = dtype_bytes(static_cast<DType>(value(v, "in")));
  const auto a = static_cast<unsigned long long>(value(v, "align_a")), b = static_cast<unsigned long long>(value(v, "align_b"));
  const long long lda = value(v, "lda"), ldb = value(v, "ldb");
  return value(v, "batch") > 1 ? access_alignment({a, b}, {lda, ldb, value(v, "stride_a"), value(v, "stride_b")}, eb)
                               : access_alignment({a, b}, {lda, ldb}, eb);
}

FamilyDef sgemm_family() { return mma_family(true); }
FamilyDef hgemm_family() { return mma_family(false); }

std::shared_ptr<const Family> gemm_mma_builtin(DType in) {
  static const std::shared_ptr<const Family> s = get_family("sgemm"), h = get_family("hgemm");
  return in == DType::F32 ? s : h;
}

FamilyValues gemm_mma_family_config(const GemmConfig& c) {
  const auto common = [](auto& t, FamilyValues& v) {
    v["BM"] = t.bm, v["BN"] = t.bn, v["BK"] = t.bk, v["WM"] = t.wm, v["WN"] = t.wn;
    v["STAGES"] = t.stages, v["VEC"] = t.vec, v["RASTER"] = t.raster, v["SPLIT"] = std::max(1, t.split);
    v["SWA_B"] = t.swizzle_a.b, v["SWA_M"] = t.swizzle_a.m, v["SWA_S"] = t.swizzle_a.s;
    v["SWB_B"] = t.swizzle_b.b, v["SWB_M"] = t.swizzle_b.m, v["SWB_S"] = t.swizzle_b.s;
  };
  FamilyValues v;
  if (c.kind == GemmKernelKind::Sgemm) {
    common(c.sgemm, v);
    v["WNITER"] = c.sgemm.wniter, v["TM"] = c.sgemm.tm, v["TN"] = c.sgemm.tn;
  } else {
    common(c.hgemm, v);
  }
  return v;
}

GemmConfig gemm_mma_config_of(const FamilyValues& config, const FamilyValues& problem) {
  const auto common = [&](auto& t) {
    t.layout = layout_of(problem);
    t.bm = static_cast<int>(value(config, "BM")), t.bn = static_cast<int>(value(config, "BN"));
    t.bk = static_cast<int>(value(config, "BK"));
    t.wm = static_cast<int>(value(config, "WM")), t.wn = static_cast<int>(value(config, "WN"));
    t.stages = static_cast<int>(value(config, "STAGES")), t.vec = static_cast<int>(value(config, "VEC"));
    t.raster = static_cast<int>(value(config, "RASTER")), t.split = static_cast<int>(value(config, "SPLIT"));
    t.swizzle_a = SwizzleSpec{static_cast<int>(value(config, "SWA_B")), static_cast<int>(value(config, "SWA_M")),
                              static_cast<int>(value(config, "SWA_S"))};
    t.swizzle_b = SwizzleSpec{static_cast<int>(value(config, "SWB_B")), static_cast<int>(value(config, "SWB_M")),
                              static_cast<int>(value(config, "SWB_S"))};
  };
  const DType in = static_cast<DType>(value(problem, "in"));
  if (in == DType::F32) {
    SgemmConfig s;
    common(s);
    s.wniter = static_cast<int>(value(config, "WNITER"));
    s.tm = static_cast<int>(value(config, "TM")), s.tn = static_cast<int>(value(config, "TN"));
    // The block's threads follow from the tiles (SgemmConfig keeps them as a checked field).
    s.threads = s.wm > 0 && s.wn > 0 ? (s.bm / s.wm) * (s.bn / s.wn) * 32 : 0;
    return GemmConfig::of(s);
  }
  HgemmConfig h;
  common(h);
  h.in = in;
  h.out = static_cast<DType>(value(problem, "out"));
  return GemmConfig::of(h);
}

GemmSplitNeed gemm_mma_split_need(const GemmConfig& cfg, const GemmProblem& frame) { return split_need(cfg, frame); }

long long gemm_mma_launch_count(const GemmConfig& cfg, const GemmProblem& f) {
  if (f.m == 0 || f.n == 0 || f.batch == 0) return 0;
  const long long step = per_launch(cfg, f), launches = (f.batch + step - 1) / step;
  return gemm_k_splits(cfg) > 1 ? launches * (f.k > 0 ? 2 : 1) : launches;
}

std::string gemm_split_mismatch(const GemmConfig& cfg, const GemmProblem& p, bool requested) {
  const long long splits = gemm_k_splits(cfg);
  if (splits <= 1) return "";
  if (p.batch * splits > 65535)
    return "split-K: batch x splits = " + std::to_string(p.batch * splits) +
           " exceeds one launch's 65535 (the batch would take several launches)";
  if (requested) return "";
  const bool swap = p.c_order == MatrixOrder::ColMajor;  // the frame's M x N is C^T's
  const long long fm = swap ? p.n : p.m, fn = swap ? p.m : p.n;
  const GemmTileShape t = cfg.tile();
  const long long tiles = ((fm + t.bm - 1) / t.bm) * ((fn + t.bn - 1) / t.bn) * p.batch;
  if (tiles >= kSplitMaxTiles)
    return "split-K: " + std::to_string(tiles) + " block tiles already fill the GPU without splitting K";
  if (p.k < splits * kSplitMinSlice)
    return "split-K: K = " + std::to_string(p.k) + " in " + std::to_string(splits) + " slices is under " +
           std::to_string(kSplitMinSlice) + " per slice";
  return "";
}

}  // namespace detail
}  // namespace swz
