// runtime: the Engine's GEMM half (include/swzjit/engine.hpp, "GEMM" sections): problem resolution and
// the mapping of every public layout onto the kernels' frame, default configurations, staging of narrow
// operands, the reference kernel, and the choice of a config: the sgemm/hgemm family's (Engine::family_config:
// its tuned winner, a TuneOnMiss tune, else the default). The launches are the built-in families': the mma.sync
// kernels' (sgemm, hgemm: generator/families/gemm/gemm_family.cpp) through run_family with the chosen
// config, and on sm_90 the Hopper variant's (gemm_sm90), whose problems run through run_family as well.
#include <algorithm>
#include <cmath>
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include "swzjit/engine.hpp"

#include "generator/core/checked_arith.hpp"
#include "runtime/engine/engine_impl.hpp"
#include "runtime/tune/autotune_internal.hpp"
#include "runtime/driver/driver_api.hpp"
#include "runtime/engine/stream_scratch.hpp"
#include "runtime/jit/jit_cache.hpp"
#include "swzjit/error.hpp"
#include "generator/families/gemm/gemm_family.hpp"
#include "generator/families/gemm/gemm_pack.hpp"
#include "generator/families/gemm_sm90/gemm_sm90_family.hpp"
#include "generator/families/gemm_sm90/gemm_sm90_space.hpp"
#include "generator/families/gemm/gemm_splitk.hpp"
#include "templates/gemm_common.cuh"
#include "templates/gemm_pack.cuh"
#include "templates/gemm_splitk.cuh"

namespace swz {

namespace detail {

struct GemmState {
  std::mutex mutex;
  std::atomic<bool> arch_supported{false};  // the engine's device is one the GEMM kernels support
  std::map<std::string, Kernel> kernels;   // support kernels (pack, reference) by name expression
  std::map<std::string, GemmConfig> defaults;  // gemm_config's answers for problems nothing tunes, by problem key
  std::set<std::string> validated;            // configs passed to gemm() that validated (10-20 us each)
  std::atomic<std::uint64_t> launches{0};
  // gemm()'s Hopper variant per problem key: the gemm_sm90 family's problem, or nullopt where the mma.sync
  // family runs.
  std::map<std::string, std::optional<FamilyValues>> sm90_problems;
  // The staged copies' memory pool (created on first use): the engine's own, so it can keep its
  // memory across synchronizations (release threshold: unlimited) without changing the device's
  // default pool, which the application owns.
  CUmemoryPool pool = nullptr;
  int pool_device = -1;
  ~GemmState() {
    if (!pool) return;
    // Returns at once; memory still in use by enqueued frees is released when they complete.
    detail::ContextGuard guard(pool_device, std::nothrow);
    if (guard.ok()) detail::loaded_driver_api()->cuMemPoolDestroy(pool);
  }
};

}  // namespace detail

namespace {

// SMs of the GPU the defaults are sized for (H100 SXM; A100 has 108): default_gemm_config takes no
// device, so its wave arithmetic uses this.
constexpr long long kDefaultSmCount = 132;
// What a GEMM caller lends instead of the engine's scratch (the errors of the families' scratch pool say it).
constexpr const char* kGemmScratchAdvice = "a GemmWorkspace to Engine::gemm (Engine::gemm_workspace_size)";

const char* order_name(MatrixOrder o) { return o == MatrixOrder::RowMajor ? "row" : "col"; }

// The problem in the kernels' frame (C row-major): pointers, pitches and strides of the frame's A and B.
struct Frame {
  GemmLayout layout;
  long long m, n;
  DevicePtr a, b;
  long long lda, ldb, stride_a, stride_b;
};

Frame to_frame(const GemmProblem& p, DevicePtr a, DevicePtr b) {
  const bool a_row = p.a_order == MatrixOrder::RowMajor, b_row = p.b_order == MatrixOrder::RowMajor;
  if (p.c_order == MatrixOrder::RowMajor) {
    // A row-major = K-contiguous ("N"); B column-major = K-contiguous ("T").
    const GemmLayout l = a_row ? (b_row ? GemmLayout::NN : GemmLayout::NT) : (b_row ? GemmLayout::TN : GemmLayout::TT);
    return Frame{l, p.m, p.n, a, b, p.lda, p.ldb, p.stride_a, p.stride_b};
  }
  // C column-major: C^T (N x M, row-major) = B^T A^T. The frame's A is B^T (K-contiguous when B is
  // column-major), the frame's B is A^T (K-contiguous when A is row-major).
  const bool fa_k = !b_row, fb_k = a_row;
  const GemmLayout l = fa_k ? (fb_k ? GemmLayout::NT : GemmLayout::NN) : (fb_k ? GemmLayout::TT : GemmLayout::TN);
  return Frame{l, p.n, p.m, b, a, p.ldb, p.lda, p.stride_b, p.stride_a};
}

// A or B as stored: its number of lines (rows of a row-major matrix, columns of a column-major one) and
// the elements of a line (contiguous in memory).
struct OperandLines {
  long long rows, line;
};
OperandLines operand_lines(const GemmProblem& p, bool a) {
  if (a) return p.a_order == MatrixOrder::RowMajor ? OperandLines{p.m, p.k} : OperandLines{p.k, p.m};
  return p.b_order == MatrixOrder::RowMajor ? OperandLines{p.k, p.n} : OperandLines{p.n, p.k};
}

std::string supported_archs_text() {
  std::string s;
  for (const auto& a : known_archs()) s += (s.empty() ? "" : ", ") + a;
  return s;
}

}  // namespace

GemmProblem GemmProblem::resolved() const {
  GemmProblem p = *this;
  check_gemm_dtypes(p.dtype, p.out_dtype);
  auto bad = [](const std::string& m) { throw_invalid("gemm problem: " + m); };
  const long long kMax = 2147483647LL;
  if (p.m < 0 || p.m > kMax) bad("m " + std::to_string(p.m) + " must be in [0, 2^31 - 1]");
  if (p.n < 0 || p.n > kMax) bad("n " + std::to_string(p.n) + " must be in [0, 2^31 - 1]");
  if (p.k < 0 || p.k > kMax) bad("k " + std::to_string(p.k) + " must be in [0, 2^31 - 1]");
  if (p.batch < 0) bad("batch " + std::to_string(p.batch) + " must be >= 0");
  const bool c_row = p.c_order == MatrixOrder::RowMajor;
  const OperandLines la = operand_lines(p, true), lb = operand_lines(p, false);
  const long long a_rows = la.rows, a_line = la.line, b_rows = lb.rows, b_line = lb.line;
  const long long c_rows = c_row ? p.m : p.n, c_line = c_row ? p.n : p.m;
  if (p.lda == 0) p.lda = std::max(1LL, a_line);
  if (p.ldb == 0) p.ldb = std::max(1LL, b_line);
  if (p.ldc == 0) p.ldc = std::max(1LL, c_line);
  if (p.lda < a_line) bad("lda " + std::to_string(p.lda) + " is smaller than a line of A (" + std::to_string(a_line) + ")");
  if (p.ldb < b_line) bad("ldb " + std::to_string(p.ldb) + " is smaller than a line of B (" + std::to_string(b_line) + ")");
  if (p.ldc < c_line) bad("ldc " + std::to_string(p.ldc) + " is smaller than a line of C (" + std::to_string(c_line) + ")");
  // NOTE: checked, so a huge pitch is an InvalidArgument, not a wrapped (negative) stride (issue 10).
  const long long a_matrix = detail::checked_mul(a_rows, p.lda, "gemm A matrix (lines * lda)");
  const long long b_matrix = detail::checked_mul(b_rows, p.ldb, "gemm B matrix (lines * ldb)");
  const long long c_matrix = detail::checked_mul(c_rows, p.ldc, "gemm C matrix (lines * ldc)");
  if (p.stride_a == 0) p.stride_a = a_matrix;
  if (p.stride_b == 0) p.stride_b = b_matrix;
  if (p.stride_c == 0) p.stride_c = c_matrix;
  if (p.batch > 1 && p.stride_c < c_matrix)
    bad("stride_c " + std::to_string(p.stride_c) + " would make the C matrices overlap (need >= " +
        std::to_string(c_matrix) + ")");
  if (p.stride_a < 0 || p.stride_b < 0) bad("batch strides must be >= 0 (0 = packed)");
  // The 2^62 limit on elements and bytes of each operand, so byte offsets computed from them fit.
  detail::checked_extent(p.batch, p.stride_a, a_rows, p.lda, a_line, dtype_bytes(p.dtype), "gemm A");
  detail::checked_extent(p.batch, p.stride_b, b_rows, p.ldb, b_line, dtype_bytes(p.dtype), "gemm B");
  detail::checked_extent(p.batch, p.stride_c, c_rows, p.ldc, c_line, dtype_bytes(p.out_dtype), "gemm C");
  return p;
}

GemmLayout GemmProblem::kernel_layout() const { return to_frame(*this, 0, 0).layout; }

int GemmProblem::max_vec_bytes(DevicePtr a, DevicePtr b) const {
  const GemmProblem p = resolved();
  const int eb = dtype_bytes(p.dtype);
  return p.batch > 1 ? detail::access_alignment({a, b}, {p.lda, p.ldb, p.stride_a, p.stride_b}, eb)
                     : detail::access_alignment({a, b}, {p.lda, p.ldb}, eb);
}

GemmProblem GemmProblem::staged(DevicePtr a, DevicePtr b, bool* stage_a, bool* stage_b) const {
  GemmProblem p = resolved();
  bool sa = false, sb = false;
  if (p.m > 0 && p.n > 0 && p.k > 0 && p.batch > 0) {
    const int eb = dtype_bytes(p.dtype);
    constexpr long long kMaxStagedBytes = 1LL << 30;  // beyond: the narrow kernels, not a huge scratch
    // Stages one operand: true when narrow and small enough; then its pitch and stride are the copy's.
    const auto stage = [&](DevicePtr ptr, long long& ld, long long& stride, const OperandLines& l) {
      const int align = p.batch > 1 ? detail::access_alignment({ptr}, {ld, stride}, eb) : detail::access_alignment({ptr}, {ld}, eb);
      if (align >= 8) return false;
      const long long packed = gemm_pack_ld(l.line, p.dtype);
      // NOTE: each factor is below 2^31 (K, M, N; 16-byte pitches), but their product is not: divide, not multiply.
      if (l.rows > kMaxStagedBytes / packed / eb || p.batch > kMaxStagedBytes / (l.rows * packed * eb)) return false;
      ld = packed;
      stride = l.rows * packed;
      return true;
    };
    sa = stage(a, p.lda, p.stride_a, operand_lines(p, true));
    sb = stage(b, p.ldb, p.stride_b, operand_lines(p, false));
  }
  if (stage_a) *stage_a = sa;
  if (stage_b) *stage_b = sb;
  return p;
}

std::string GemmProblem::key(int max_vec_bytes) const {
  const GemmProblem p = resolved();
  std::ostringstream os;
  os << to_string(p.dtype) << ">" << to_string(p.out_dtype) << " " << p.m << "x" << p.n << "x" << p.k
     << " A=" << order_name(p.a_order) << " B=" << order_name(p.b_order) << " C=" << order_name(p.c_order)
     << " ld=" << p.lda << "," << p.ldb << "," << p.ldc << " batch=" << p.batch;
  if (p.batch > 1) os << " stride=" << p.stride_a << "," << p.stride_b << "," << p.stride_c;
  os << " align=" << max_vec_bytes;
  return os.str();
}

GemmConfig default_gemm_config(const GemmProblem& problem, int max_vec_bytes, const std::string& arch) {
  const GemmProblem p = problem.resolved();
  (void)arch;  // every default fits the smallest target's shared memory (99 KiB on sm_86 / sm_89)
  const Frame f = to_frame(p, 0, 0);
  const std::vector<GemmConfig> space = gemm_search_space(p.dtype, p.out_dtype, f.layout, max_vec_bytes);
  if (space.empty())
    throw Error(ErrorKind::Internal, "gemm: the search space for " + p.key(max_vec_bytes) + " is empty");
  // Tiles for the problem's size: big tiles once they fill the GPU about twice, smaller ones before.
  const double tiles_128 = static_cast<double>((f.m + 127) / 128) * static_cast<double>((f.n + 127) / 128) *
                           static_cast<double>(std::max(1LL, p.batch));
  int want_m, want_n, want_k, want_wm, want_wn, want_stages;
  if (p.dtype == DType::F32) {
    want_k = 8, want_stages = 2;
    if (tiles_128 >= 264) {
      want_m = 128, want_n = 128, want_wm = 64, want_wn = 32;
    } else if (tiles_128 >= 66) {
      want_m = 64, want_n = 128, want_wm = 32, want_wn = 64, want_k = 16;
    } else {
      want_m = 64, want_n = 64, want_wm = 32, want_wn = 32, want_k = 16;
    }
  } else {
    want_k = 32, want_stages = 4;
    if (tiles_128 >= 528) {
      want_m = 128, want_n = 256, want_wm = 64, want_wn = 64;
    } else if (tiles_128 >= 132) {
      want_m = 128, want_n = 128, want_wm = 64, want_wn = 32;
    } else {
      want_m = 64, want_n = 64, want_wm = 32, want_wn = 32;
    }
  }
  // Split-K (both families): fewer 64x64 tiles than half the SMs and a long K leave most of the GPU idle
  // while each block walks all of K. Cut K into the most slices (32, 16, 8 or 4) that keep tiles x splits
  // within two waves and every slice at least 128 deep (the benchmark's 127x129x4100: 6 x 32 blocks).
  int want_split = 1;
  if (p.k >= 1024) {
    const long long tiles_64 = ((f.m + 63) / 64) * ((f.n + 63) / 64) * std::max(1LL, p.batch);
    if (tiles_64 < kDefaultSmCount / 2)
      for (int split : {32, 16, 8, 4})
        if (tiles_64 * split <= 2 * kDefaultSmCount && p.k / split >= 128) {
          want_split = split;
          break;
        }
  }
  const auto find = [&](const GemmTileShape& want) -> const GemmConfig* {
    for (const GemmConfig& c : space) {
      const GemmTileShape t = c.tile();
      if (t.bm == want.bm && t.bn == want.bn && t.bk == want.bk && t.wm == want.wm && t.wn == want.wn &&
          t.stages == want.stages && t.split == want.split)
        return &c;
    }
    return nullptr;
  };
  // The split variants: 64x64 tiles of 32x32 warps, k-tile 8 (f32) or 32 (generator/families/gemm/sgemm.cpp,
  // hgemm.cpp). A space without them (narrow vectors) falls back to the unsplit choice.
  if (want_split > 1)
    if (const GemmConfig* c = find({64, 64, p.dtype == DType::F32 ? 8 : 32, 32, 32, want_stages, want_split})) return *c;
  if (const GemmConfig* c = find({want_m, want_n, want_k, want_wm, want_wn, want_stages, 1})) return *c;
  return space.front();
}

detail::GemmState& Engine::gemm_state() {
  std::shared_ptr<detail::GemmState> s = std::atomic_load(&gemm_);
  if (!s) {
    auto fresh = std::make_shared<detail::GemmState>();
    if (std::atomic_compare_exchange_strong(&gemm_, &s, fresh)) s = fresh;
  }
  return *s;  // the Engine keeps it alive
}

std::uint64_t Engine::gemm_launches() const {
  const std::shared_ptr<detail::GemmState> s = std::atomic_load(&gemm_);
  return s ? s->launches.load() : 0;
}

namespace {

// The engine's device arch (Engine::Impl detects it once), refused when the GEMM kernels do not support it;
// every GEMM call asks, so after the first the check is one flag.
const std::string& engine_arch(Engine& engine) {
  detail::GemmState& st = detail::EngineAccess::gemm_state(engine);
  const std::string& arch = detail::EngineAccess::impl(engine).arch();
  if (st.arch_supported.load(std::memory_order_acquire)) return arch;
  if (!is_known_arch(arch))
    throw Error(ErrorKind::Unsupported, "gemm: device " + std::to_string(engine.options().device) + " is " + arch +
                                            "; libswzjit's GEMM kernels need one of " + supported_archs_text() +
                                            " (tensor-core HGEMM needs sm_80 or later)");
  st.arch_supported.store(true, std::memory_order_release);
  return arch;
}

KernelEntry build_entry(Engine& engine, const std::string& source, const std::string& source_name,
                        const std::string& expression, const std::string& arch, int threads, int dynamic_smem) {
  CompileRequest req;
  req.source = source;
  req.source_name = source_name;
  req.name_expression = expression;
  req.arch = arch;
  return detail::compile_through_cache(engine.cache(), req, threads, dynamic_smem, [&engine] { ++detail::EngineAccess::impl(engine).compiles; });
}

Kernel load_entry(Engine& engine, detail::GemmState& st, const KernelEntry& e, const std::string& arch,
                  const std::string& expression, int device, int dynamic_smem) {
  Module m(detail::to_compiled(e, arch, expression), device);
  Kernel k = m.kernel();
  if (dynamic_smem > 48 * 1024) k.set_max_dynamic_smem(dynamic_smem);
  std::lock_guard<std::mutex> lock(st.mutex);
  const auto placed = st.kernels.emplace(expression, k);
  // Counted when kept: two threads that load one kernel at once keep the first (the other copy unloads).
  if (placed.second) ++detail::EngineAccess::impl(engine).loads;
  return placed.first->second;
}

// A helper kernel (the reference, the split-K reduction): compiled through the cache and loaded once per
// engine, like the configs' kernels.
Kernel support_kernel(Engine& engine, detail::GemmState& st, const std::string& expression, int threads,
                      const std::function<std::pair<std::string, std::string>()>& source_and_name) {
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    auto it = st.kernels.find(expression);
    if (it != st.kernels.end()) return it->second;
  }
  const int device = engine.options().device;
  const std::string& arch = engine_arch(engine);
  const auto src = source_and_name();  // generated only on the first call of the engine
  const KernelEntry e = build_entry(engine, src.first, src.second, expression, arch, threads, 0);
  return load_entry(engine, st, e, arch, expression, device, 0);
}

CUmemoryPool workspace_pool(detail::GemmState& st, int device) {
  std::lock_guard<std::mutex> lock(st.mutex);
  if (st.pool) return st.pool;
  CUmemoryPool pool = detail::create_keeping_pool(device, "split-K workspace", "");
  st.pool = pool;
  st.pool_device = device;
  return pool;
}

using detail::StreamScratch;

std::string bytes_text(long long n) { return std::to_string(n) + " bytes"; }

// The split-K workspace of `cfg` on the resolved `p` (0, 0 when unsplit or K = 0).
detail::GemmSplitNeed split_need(const GemmConfig& cfg, const GemmProblem& p) {
  if (p.m == 0 || p.n == 0 || p.batch == 0) return {};
  return detail::gemm_mma_split_need(cfg, detail::gemm_family_frame(detail::gemm_family_problem(p, 16)));
}

// The Hopper variant (the built-in family gemm_sm90, generator/families/gemm_sm90/gemm_sm90_family.cpp) for
// a call on an sm_90 device: the family's problem where the variant applies (sm90_default_choice: what the
// kernel takes, and a shape where it beats the mma.sync family), else nullopt. Remembered per problem key,
// whose alignment class covers TMA's 16-byte rule. The family's own path then chooses the config (its
// stored winner, a tune under TuneOnMiss, else its default), loads and launches it.
// The values live in the memo (its entries are never erased), so a call copies none of them.
const FamilyValues* hopper_problem(Engine& engine, detail::GemmState& st, const GemmProblem& p, DevicePtr a, DevicePtr b) {
  if (!engine.options().hopper_gemm || p.dtype == DType::F32 || p.k == 0 || p.m == 0 || p.n == 0 || p.batch == 0)
    return nullptr;  // nothing to launch (gemm() returns first; gemm_workspace_size says 0), or beta * C only
  if (engine_arch(engine) != "sm_90") return nullptr;
  const int align = p.max_vec_bytes(a, b);
  const std::string key = p.key(align);
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    const auto it = st.sm90_problems.find(key);
    if (it != st.sm90_problems.end()) return it->second ? &*it->second : nullptr;
  }
  std::optional<FamilyValues> v;
  Engine::Impl& impl = detail::EngineAccess::impl(engine);
  if (sm90_default_choice(p, a, b, impl.sm_count(), impl.dram_gbps())) v = detail::gemm_family_problem(p, align);
  std::lock_guard<std::mutex> lock(st.mutex);
  const auto placed = st.sm90_problems.emplace(key, std::move(v)).first;
  return placed->second ? &*placed->second : nullptr;
}

// The caller's A and B as the family's (a column-major C swaps them: C^T = B^T A^T), and C.
std::map<std::string, DevicePtr> hopper_buffers(const GemmProblem& p, DevicePtr a, DevicePtr b, DevicePtr c) {
  const bool swap = detail::gemm_family_swaps(p);
  return {{"a", swap ? b : a}, {"b", swap ? a : b}, {"c", c}};
}

}  // namespace

KernelEntry Engine::compile_gemm(const GemmConfig& cfg, const std::string& arch_in) {
  cfg.validate();
  const std::string arch = arch_in.empty() ? engine_arch(*this) : arch_in;
  if (!is_known_arch(arch))
    throw Error(ErrorKind::Unsupported, "gemm: arch '" + arch + "' is not supported (supported: " + supported_archs_text() + ")");
  return build_entry(*this, gemm_source(cfg), gemm_source_name(cfg), gemm_name_expression(cfg), arch, cfg.threads(),
                     cfg.dynamic_smem_bytes());
}

Kernel Engine::gemm_kernel(const GemmConfig& cfg) {
  cfg.validate();
  engine_arch(*this);  // says which GPUs the kernels need
  // The kernel of the mma.sync family's run (the same module run_family launches).
  Kernel k = detail::family_kernel(*impl_, *detail::gemm_mma_builtin(cfg.in_dtype()), gemm_name_expression(cfg));
  if (cfg.dynamic_smem_bytes() > 48 * 1024) k.set_max_dynamic_smem(cfg.dynamic_smem_bytes());
  return k;
}

GemmConfig Engine::gemm_config(const GemmProblem& problem, DevicePtr a, DevicePtr b) {
  // The problem gemm() runs: narrow operands staged (their copies are aligned: judged by pitch alone).
  bool sa = false, sb = false;
  const GemmProblem p = options().stage_narrow_operands ? problem.staged(a, b, &sa, &sb) : problem.resolved();
  const int align = p.max_vec_bytes(sa ? 0 : a, sb ? 0 : b);
  engine_arch(*this);  // says which GPUs the kernels need, before any tune
  // Problems the autotuner takes: the built-in family's choice (its stored winner, a TuneOnMiss tune, or its
  // default: Engine::family_config). Empty ones, K = 0 and huge batches run the default.
  if (p.m > 0 && p.n > 0 && p.k > 0 && p.batch > 0 && p.batch <= 65535) {
    const FamilyValues fp = detail::gemm_family_problem(p, align);
    return detail::gemm_mma_config_of(family_config(*detail::gemm_mma_builtin(p.dtype), fp), fp);
  }
  const std::string pkey = p.key(align);
  detail::GemmState& st = gemm_state();
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    const auto it = st.defaults.find(pkey);
    if (it != st.defaults.end()) return it->second;
  }
  const GemmConfig chosen = default_gemm_config(p, align);
  std::lock_guard<std::mutex> lock(st.mutex);
  return st.defaults.emplace(pkey, chosen).first->second;
}

TuningProblemKey Engine::gemm_tuning_key(const GemmProblem& problem, int max_vec_bytes) {
  const GemmProblem p = problem.resolved();
  // The class autotune_gemm stores under: what the pitches and strides leave of the one given.
  const int align = std::min(max_vec_bytes, p.max_vec_bytes(0, 0));
  return family_tuning_key(*detail::gemm_mma_builtin(p.dtype), detail::gemm_family_problem(p, align));
}

void Engine::launch_gemm(const GemmConfig& cfg, const GemmProblem& problem, DevicePtr a, DevicePtr b, DevicePtr c,
                         float alpha, float beta, CUstream stream, const GemmWorkspace& workspace) {
  const GemmProblem p = problem.resolved();
  if (p.m == 0 || p.n == 0 || p.batch == 0) return;
  if (cfg.in_dtype() != p.dtype || cfg.out_dtype() != p.out_dtype)
    throw_invalid("gemm: config " + cfg.to_string() + " is for " + to_string(cfg.in_dtype()) + ">" +
                  to_string(cfg.out_dtype()) + ", the problem is " + to_string(p.dtype) + ">" + to_string(p.out_dtype));
  const Frame f = to_frame(p, a, b);
  if (cfg.layout() != f.layout)
    throw_invalid("gemm: config layout " + to_string(cfg.layout()) + " does not match the problem's kernel layout " +
                  to_string(f.layout) + " (A " + order_name(p.a_order) + ", B " + order_name(p.b_order) + ", C " +
                  order_name(p.c_order) + "-major)");
  engine_arch(*this);  // says which GPUs the kernels need
  // The built-in family sgemm or hgemm runs it (generator/families/gemm/gemm_family.cpp): the call in the
  // kernels' frame, A and B swapped for a column-major C.
  const FamilyValues fp = detail::gemm_family_problem(p, p.max_vec_bytes(a, b));
  const GemmProblem frame = detail::gemm_family_frame(fp);
  const std::shared_ptr<const Family> family = detail::gemm_mma_builtin(p.dtype);
  const FamilyValues fc = detail::gemm_mma_family_config(cfg);
  const bool swap = detail::gemm_family_swaps(p);
  DevicePtr fa = swap ? b : a, fb = swap ? a : b;
  // K = 0 reads neither A nor B (C = beta * C), so an empty operand may come without memory (a framework's
  // empty tensor has a null pointer); the family wants an address for every buffer: C's, never read as one.
  if (p.k == 0) {
    if (fa == 0) fa = c;
    if (fb == 0) fb = c;
  }
  const FamilyScalars scalars{{"alpha", alpha}, {"beta", beta}};
  // A lent workspace holds the split-K partials of as many matrices as fit (at least one must): the batch
  // then runs in pieces of that many.
  long long step = p.batch;
  const detail::GemmSplitNeed need = detail::gemm_mma_split_need(cfg, frame);
  if (workspace.ptr != 0 && need.matrix_bytes > 0) {
    const long long fit = static_cast<long long>(workspace.bytes / static_cast<std::size_t>(need.matrix_bytes));
    if (fit < 1)
      throw_invalid("gemm: the workspace of " + bytes_text(static_cast<long long>(workspace.bytes)) + " is too small for " +
                    "config " + cfg.to_string() + ", which needs at least " + bytes_text(need.matrix_bytes) +
                    " (Engine::gemm_workspace_size gives the size for the call)");
    step = std::min(step, std::min(fit, need.per_launch));
  }
  const long long eb_in = dtype_bytes(p.dtype), eb_out = dtype_bytes(p.out_dtype);
  for (long long b0 = 0; b0 < p.batch; b0 += step) {
    const long long nb = std::min(step, p.batch - b0);
    FamilyValues piece = fp;
    GemmProblem piece_frame = frame;
    if (nb != p.batch) {
      piece["batch"] = piece_frame.batch = nb;
      if (nb == 1) piece["stride_a"] = piece["stride_b"] = piece["stride_c"] = 0;  // as gemm_family_problem writes one matrix
    }
    const std::map<std::string, DevicePtr> bufs = {
        {"a", fa + static_cast<DevicePtr>(b0 * frame.stride_a * eb_in)},
        {"b", fb + static_cast<DevicePtr>(b0 * frame.stride_b * eb_in)},
        {"c", c + static_cast<DevicePtr>(b0 * frame.stride_c * eb_out)}};
    const detail::ScratchAdvice advice(kGemmScratchAdvice);
    run_family(*family, piece, bufs, scalars, stream, &fc, FamilyWorkspace{workspace.ptr, workspace.bytes});
    gemm_state().launches += static_cast<std::uint64_t>(detail::gemm_mma_launch_count(cfg, piece_frame));
  }
}

namespace {

// What one gemm() call runs: the problem as run (narrow operands staged), the config, and the device
// scratch it needs (staged copies, then the split-K workspace) — shared by gemm() and gemm_workspace_size().
struct GemmCallPlan {
  GemmProblem p, ps;  // resolved; as run (staged operands' packed pitches)
  bool sa = false, sb = false;
  GemmConfig cfg;
  long long a_bytes = 0, b_bytes = 0;  // staged copies, each rounded up to 256 bytes
  long long split_matrix_bytes = 0, split_per_launch = 0;
  long long bytes() const { return a_bytes + b_bytes + split_matrix_bytes * split_per_launch; }
  long long min_bytes() const { return a_bytes + b_bytes + split_matrix_bytes; }
};

GemmCallPlan plan_gemm(Engine& engine, const GemmProblem& problem, DevicePtr a, DevicePtr b, const GemmConfig* config) {
  GemmCallPlan plan;
  plan.p = problem.resolved();
  plan.ps = plan.p;
  const GemmProblem& p = plan.p;
  if (p.m == 0 || p.n == 0 || p.batch == 0) return plan;
  if (config) {
    // An explicit config runs as given when the call's own alignment fits it; else on staged operands
    // when staging makes it fit; else it is refused with the widest vec that would run.
    const std::string text = config->to_string();
    detail::GemmState& st = detail::EngineAccess::gemm_state(engine);
    bool known;
    {
      std::lock_guard<std::mutex> lock(st.mutex);
      known = st.validated.count(text) > 0;
    }
    if (!known) {
      config->validate();
      std::lock_guard<std::mutex> lock(st.mutex);
      st.validated.insert(text);
    }
    plan.cfg = *config;
    int align = p.max_vec_bytes(a, b);
    if (config->vec_bytes() > align) {
      if (engine.options().stage_narrow_operands) {
        plan.ps = p.staged(a, b, &plan.sa, &plan.sb);
        align = std::max(align, plan.ps.max_vec_bytes(plan.sa ? 0 : a, plan.sb ? 0 : b));
      }
      if (config->vec_bytes() > align || (!plan.sa && !plan.sb)) {
        const int eb = dtype_bytes(p.dtype);
        throw_invalid("gemm: config " + text + " loads " + std::to_string(config->vec_bytes()) +
                      " bytes at a time; this call's pointers, leading dimensions and strides allow " +
                      std::to_string(align) + " bytes (use vec=" + std::to_string(align / eb) + ")");
      }
    }
  } else {
    if (engine.options().stage_narrow_operands) plan.ps = p.staged(a, b, &plan.sa, &plan.sb);
    plan.cfg = engine.gemm_config(p, a, b);  // stages the same way
  }
  const long long eb = dtype_bytes(p.dtype);
  const auto round256 = [](long long x) { return (x + 255) / 256 * 256; };
  plan.a_bytes = plan.sa ? round256(p.batch * plan.ps.stride_a * eb) : 0;
  plan.b_bytes = plan.sb ? round256(p.batch * plan.ps.stride_b * eb) : 0;
  const detail::GemmSplitNeed need = split_need(plan.cfg, plan.ps);
  plan.split_matrix_bytes = need.matrix_bytes;
  plan.split_per_launch = need.per_launch;
  return plan;
}

}  // namespace

std::size_t Engine::gemm_workspace_size(const GemmProblem& problem, DevicePtr a, DevicePtr b,
                                        const GemmConfig* config) {
  if (!config) {
    const GemmProblem p = problem.resolved();
    if (const FamilyValues* v = hopper_problem(*this, gemm_state(), p, a, b))
      return family_workspace_size(*detail::gemm_sm90_builtin(), *v, hopper_buffers(p, a, b, 0));
  }
  return static_cast<std::size_t>(plan_gemm(*this, problem, a, b, config).bytes());
}

void Engine::gemm(const GemmProblem& problem, DevicePtr a, DevicePtr b, DevicePtr c, float alpha, float beta,
                  CUstream stream, const GemmConfig* config) {
  gemm(problem, a, b, c, alpha, beta, stream, config, GemmWorkspace{});
}

void Engine::gemm(const GemmProblem& problem, DevicePtr a, DevicePtr b, DevicePtr c, float alpha, float beta,
                  CUstream stream, const GemmConfig* config, const GemmWorkspace& workspace) {
  // Refused on every device and path alike (a NaN or infinite factor would make all of C NaN anyway).
  if (!std::isfinite(alpha) || !std::isfinite(beta)) throw_invalid("gemm: alpha and beta must be finite numbers");
  {
    const GemmProblem p = problem.resolved();
    if (p.m == 0 || p.n == 0 || p.batch == 0) return;
    if (!c || (p.k > 0 && (!a || !b))) throw_invalid("gemm: null device pointer");
  }
  if (workspace.ptr != 0 && workspace.ptr % 256 != 0)
    throw_invalid("gemm: the workspace pointer must be 256-byte aligned (cuMemAlloc's pointers are)");
  if (!config && options().hopper_gemm) {
    detail::GemmState& st = gemm_state();
    const GemmProblem p = problem.resolved();
    if (const FamilyValues* v = hopper_problem(*this, st, p, a, b)) {
      const std::map<std::string, DevicePtr> bufs = hopper_buffers(p, a, b, c);
      if (workspace.ptr != 0) {  // said in the GEMM's terms (run_family would name the family's)
        const std::size_t need = family_workspace_size(*detail::gemm_sm90_builtin(), *v, bufs);
        if (workspace.bytes < need)
          throw_invalid("gemm: the workspace of " + bytes_text(static_cast<long long>(workspace.bytes)) +
                        " is too small: this call needs " + bytes_text(static_cast<long long>(need)) +
                        " (Engine::gemm_workspace_size gives it)");
      }
      const detail::ScratchAdvice advice(kGemmScratchAdvice);
      run_family(*detail::gemm_sm90_builtin(), *v, bufs, FamilyScalars{{"alpha", alpha}, {"beta", beta}}, stream, nullptr,
                 FamilyWorkspace{workspace.ptr, workspace.bytes});
      ++st.launches;  // the Hopper kernel (with its split-K reduction, where it has one)
      return;
    }
  }
  const GemmCallPlan plan = plan_gemm(*this, problem, a, b, config);
  const GemmProblem& p = plan.p;
  const bool given = workspace.ptr != 0;
  if (given && static_cast<long long>(workspace.bytes) < plan.min_bytes())
    throw_invalid("gemm: the workspace of " + bytes_text(static_cast<long long>(workspace.bytes)) +
                  " is too small: this call needs at least " + bytes_text(plan.min_bytes()) + " (" +
                  bytes_text(plan.bytes()) + " preferred; Engine::gemm_workspace_size gives it)");
  // The split-K workspace follows the staged copies in the caller's workspace.
  const long long staged_bytes = plan.a_bytes + plan.b_bytes;
  const GemmWorkspace split_ws =
      given ? GemmWorkspace{workspace.ptr + static_cast<DevicePtr>(staged_bytes),
                            workspace.bytes - static_cast<std::size_t>(staged_bytes)}
            : GemmWorkspace{};
  if (!plan.sa && !plan.sb) {
    launch_gemm(plan.cfg, plan.ps, a, b, c, alpha, beta, stream, split_ws);
    return;
  }
  // Staging: one scratch for both copies: the caller's, or stream-ordered (freed in stream order after the GEMM).
  detail::GemmState& st = gemm_state();
  const Kernel pack = support_kernel(*this, st, gemm_pack_name_expression(p.dtype), tpl::kGemmPackBlock, [&] {
    return std::make_pair(gemm_pack_source(p.dtype), gemm_pack_source_name(p.dtype));
  });
  std::optional<StreamScratch> own;
  if (!given)
    own.emplace(static_cast<std::size_t>(staged_bytes), options().device, stream, workspace_pool(st, options().device),
                "the staged copy of a narrow operand (free device memory, pass a workspace, or set "
                "EngineOptions::stage_narrow_operands = false to run narrow-copy kernels on it)");
  const DevicePtr base = given ? workspace.ptr : own->ptr();
  const GemmProblem& ps = plan.ps;
  const auto copy = [&](DevicePtr src, long long ld_src, long long stride_src, DevicePtr dst, long long ld_dst,
                        long long stride_dst, bool is_a) {
    const OperandLines l = operand_lines(p, is_a);
    tpl::GemmPackParams pp{reinterpret_cast<const void*>(src), reinterpret_cast<void*>(dst), l.rows, l.line, ld_src,
                           stride_src, ld_dst, stride_dst, p.batch};
    void* args[] = {&pp};
    const LaunchShape s = gemm_pack_launch_shape(l.rows, ld_dst, p.batch, p.dtype);
    pack.launch(Dim3{s.grid[0], 1, 1}, Dim3{s.block[0], 1, 1}, 0, stream, args);
  };
  const DevicePtr a2 = plan.sa ? base : a, b2 = plan.sb ? base + static_cast<DevicePtr>(plan.a_bytes) : b;
  if (plan.sa) copy(a, p.lda, p.stride_a, a2, ps.lda, ps.stride_a, true);
  if (plan.sb) copy(b, p.ldb, p.stride_b, b2, ps.ldb, ps.stride_b, false);
  launch_gemm(plan.cfg, ps, a2, b2, c, alpha, beta, stream, split_ws);
}

void Engine::gemm_reference(const GemmProblem& problem, DevicePtr a, DevicePtr b, DevicePtr c, float alpha, float beta,
                            CUstream stream, bool f64_accumulate) {
  const GemmProblem p = problem.resolved();
  if (p.m == 0 || p.n == 0 || p.batch == 0) return;
  const Frame f = to_frame(p, a, b);
  GemmReferenceSpec spec;
  spec.in = p.dtype;
  spec.out = p.out_dtype;
  spec.layout = f.layout;
  spec.f64_accumulate = f64_accumulate;
  detail::GemmState& st = gemm_state();
  const Kernel k = support_kernel(*this, st, gemm_reference_name_expression(spec), 256, [&] {
    return std::make_pair(gemm_reference_source(spec), gemm_reference_source_name(spec));
  });
  tpl::GemmParams params{reinterpret_cast<const void*>(f.a), reinterpret_cast<const void*>(f.b),
                         reinterpret_cast<void*>(c), static_cast<int>(f.m), static_cast<int>(f.n),
                         static_cast<int>(p.k), f.lda, f.ldb, p.ldc, p.batch, f.stride_a, f.stride_b, p.stride_c,
                         alpha, beta, 0, 0};
  void* args[] = {&params};
  const LaunchShape s = gemm_reference_launch_shape(f.m, f.n, p.batch);
  k.launch(Dim3{s.grid[0], s.grid[1], s.grid[2]}, Dim3{s.block[0], s.block[1], 1}, 0, stream, args);
  ++st.launches;
}

}  // namespace swz
