// generator/families/gemm_sm90: the Hopper GEMM (templates/gemm_sm90.cuh) as the built-in family
// "gemm_sm90" on the family contract. The problem, params, buffers, scalars, requirements and the f64
// reference are declarative; the launches are a program (FamilyProgram) over the kernel's host code
// (gemm_sm90.cpp, gemm_sm90_launch.cpp, gemm_sm90_space.cpp): their tensor maps follow the config, their
// parameters the pointers' alignment, beta and the SM count, and a split config adds the split-K reduction.
// The engine, the tuner, the worker and `swz` serve it through the code every family goes through; the
// typed Engine::gemm runs it where the variant applies (runtime/engine/engine_gemm.cpp).
#include "generator/families/gemm_sm90/gemm_sm90_family.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "generator/families/gemm/gemm_family.hpp"
#include "generator/families/gemm/gemm_splitk.hpp"
#include "generator/families/gemm_sm90/gemm_sm90_space.hpp"
#include "swzjit/error.hpp"
#include "swzjit_space_hashes.hpp"  // generated: SWZJIT_GEMM_SPACE_HASH (this file's hash among others)

namespace swz {
namespace detail {
namespace {

// Indexes in the definition below (buffers a, b, c; scalars alpha, beta).
constexpr std::size_t kBufA = 0, kBufB = 1, kBufC = 2;
constexpr std::size_t kAlpha = 0, kBeta = 1;

long long value(const FamilyValues& v, const char* name) {
  const auto it = v.find(name);
  if (it == v.end()) throw_invalid(std::string("gemm_sm90: no value for ") + name);
  return it->second;
}

// Stand-in operand pointers of TMA's 16-byte alignment (the requirements hold the real ones to it).
constexpr DevicePtr kAligned = DevicePtr{1} << 20;

// The launches of one run: the kernel, and for K slices through the workspace the split-K reduction as a
// programmatic dependent (it waits for the kernel's partials at griddepcontrol.wait).
FamilyPlan plan_of(const FamilyValues& config, const FamilyValues& problem, int sm_count) {
  const Sm90GemmConfig cfg = gemm_sm90_config_of(config, problem);
  const GemmProblem p = gemm_family_frame(problem);
  const Sm90Frame f = gemm_sm90_frame(cfg, p, kAligned, kAligned);  // throws for a config that cannot run p
  FamilyPlan plan;
  FamilyPlannedLaunch main;
  main.shape.name_expression = gemm_sm90_name_expression(cfg);
  const LaunchShape s = gemm_sm90_launch_shape(cfg, f.m, f.n, f.k, sm_count, f.batch);
  for (int d = 0; d < 3; ++d) {
    main.shape.grid[d] = s.grid[d];
    main.shape.block[d] = s.block[d];
  }
  main.shape.threads = static_cast<int>(s.block[0] * s.block[1] * s.block[2]);
  main.shape.dynamic_smem = gemm_sm90_smem_bytes(cfg);
  plan.launches.push_back(main);
  if (cfg.uses_reduce_kernel()) {
    FamilyPlannedLaunch reduce;
    reduce.shape.name_expression = gemm_splitk_reduce_name_expression(p.out_dtype);
    const LaunchShape r = gemm_splitk_reduce_launch_shape(f.m, f.n, f.batch);
    for (int d = 0; d < 3; ++d) {
      reduce.shape.grid[d] = r.grid[d];
      reduce.shape.block[d] = r.block[d];
    }
    reduce.shape.threads = static_cast<int>(r.block[0] * r.block[1] * r.block[2]);
    reduce.dependent = true;
    plan.launches.push_back(reduce);
  }
  plan.scratch_bytes = gemm_sm90_workspace_bytes(cfg, p, sm_count);
  return plan;
}

std::vector<FamilyLaunchParams> bind_of(const FamilyValues& config, const FamilyValues& problem,
                                        const FamilyRunBinding& run) {
  const Sm90GemmConfig cfg = gemm_sm90_config_of(config, problem);
  const Sm90GemmLaunch l =
      gemm_sm90_prepare(cfg, gemm_family_frame(problem), run.buffers.at(kBufA), run.buffers.at(kBufB),
                        run.buffers.at(kBufC), static_cast<float>(run.scalars.at(kAlpha)),
                        static_cast<float>(run.scalars.at(kBeta)), run.sm_count, run.device, run.scratch);
  std::vector<FamilyLaunchParams> out(1);
  out[0].add(l.map_a);
  out[0].add(l.map_b);
  out[0].add(l.map_c);
  out[0].add(l.params);
  if (l.split) {
    out.emplace_back();
    out[1].add(l.reduce);
  }
  return out;
}

// A bound run repeated (the worker's timing): reduce=fixup and the tail count slices in tile flags that
// must see a new launch id each launch.
void renew_of(std::vector<FamilyLaunchParams>& bound) {
  if (bound.empty() || bound[0].params.size() != 4 || bound[0].params[3].size() != sizeof(tpl::Sm90GemmParams)) return;
  tpl::Sm90GemmParams p;
  std::memcpy(&p, bound[0].params[3].data(), sizeof p);
  gemm_sm90_renew(p);
  std::memcpy(bound[0].params[3].data(), &p, sizeof p);
}

// The SM count a default or a space is sized for: the device's, else an H100's (what a compile-only tune
// of a machine without a GPU warms).
int sms_or_h100(int sm_count) { return sm_count > 0 ? sm_count : 132; }

// The device's peak DRAM bandwidth the caller gave (kFamilyDramGBps), else 0: not known (an H100's rules).
int dram_of(const FamilyValues& problem) {
  const auto it = problem.find(kFamilyDramGBps);
  return it == problem.end() || it->second < 0 ? 0 : static_cast<int>(std::min<long long>(it->second, 1 << 30));
}

std::string definition_text(const std::string& program_id) {
  return R"(family = gemm_sm90
about = C = alpha * A * B + beta * C on sm_90a: TMA loads with the 128-byte swizzle, wgmma, warp-specialized, persistent; f16/bf16 in, f16/bf16/f32 out; C row-major (the kernel's frame), A K- or M-contiguous (a_mn), B K- or N-contiguous (b_mn); C is read only where beta is not 0
# Sm90GemmConfig's fields (generator/families/gemm_sm90/gemm_sm90.hpp); the program's default and space
# pick from them per problem and device, and its plan refuses what the kernel cannot run
param BN = 32 48 64 80 96 112 128 144 160 176 192 208 224 240 256 ; default 256
param STAGES = 2..64 ; default 4
param RASTER = 1..64 ; default 8
param PERSISTENT = 0 1 ; default 1
param INFLIGHT = 0 1 ; default 1
param CLUSTER = 1 2 ; default 1
param SPLITS = 1..32 ; default 1
param REDUCE = 0 1 2 ; default 0          # K slices summed by: 0 the reduction kernel, 1 the kernel (fixup), 2 a cluster
param EPILOGUE = 0 1 ; default 0        # 1: C through shared memory and TMA stores (where beta is 0)
param TAIL = 1 2 4 ; default 1          # the last partial wave of tiles in up to TAIL K slices
param AROWS = 16 32 64 128 ; default 128  # rows of A a stage holds (16..64: one short tile row, or 64-row tiles)
param SWAP = 0 1 ; default 0            # 1: A and B swap roles, C^T = B^T A^T stored transposed (small M)
require = in != 0 && m >= 1 && n >= 1 && k >= 1 && batch >= 1
require = align_a >= 16 && align_b >= 16
require = lda * elem_bytes(in) % 16 == 0 && ldb * elem_bytes(in) % 16 == 0
require = batch <= 1 || (stride_a * elem_bytes(in) % 16 == 0 && stride_b * elem_bytes(in) % 16 == 0)
program = )" + program_id + "\n" + gemm_family_frame_lines() + R"(tolerance = 1e-2
min_arch = 90
max_arch = 90
arch_specific = 1
source_name = gemm_sm90.cu
--- source
#include "gemm_sm90.cuh"
#include "gemm_splitk.cuh"
#include "gemm_reference.cuh"
)";
}

}  // namespace

FamilyValues gemm_sm90_family_config(const Sm90GemmConfig& c) {
  return {{"BN", c.bn},
          {"STAGES", c.stages},
          {"RASTER", c.raster},
          {"PERSISTENT", c.persistent ? 1 : 0},
          {"INFLIGHT", c.inflight},
          {"CLUSTER", c.cluster},
          {"SPLITS", c.splits},
          {"REDUCE", c.reduce_fixup ? 1 : c.reduce_cluster ? 2 : 0},
          {"EPILOGUE", c.tma_epilogue ? 1 : 0},
          {"TAIL", c.tail},
          {"AROWS", c.arows},
          {"SWAP", c.swap_ab ? 1 : 0}};
}

Sm90GemmConfig gemm_sm90_config_of(const FamilyValues& config, const FamilyValues& problem) {
  Sm90GemmConfig c;
  c.in = static_cast<DType>(value(problem, "in"));
  c.out = static_cast<DType>(value(problem, "out"));
  // A config stored before SWAP existed has no value for it: the roles as they are.
  const auto swap = config.find("SWAP");
  c.swap_ab = swap != config.end() && swap->second != 0;
  c.layout = gemm_sm90_layout(gemm_family_frame(problem), c.swap_ab);
  c.bn = static_cast<int>(value(config, "BN"));
  c.stages = static_cast<int>(value(config, "STAGES"));
  c.raster = static_cast<int>(value(config, "RASTER"));
  c.persistent = value(config, "PERSISTENT") != 0;
  c.inflight = static_cast<int>(value(config, "INFLIGHT"));
  c.cluster = static_cast<int>(value(config, "CLUSTER"));
  c.splits = static_cast<int>(value(config, "SPLITS"));
  c.reduce_fixup = value(config, "REDUCE") == 1;
  c.reduce_cluster = value(config, "REDUCE") == 2;
  c.tma_epilogue = value(config, "EPILOGUE") != 0;
  c.tail = static_cast<int>(value(config, "TAIL"));
  c.arows = static_cast<int>(value(config, "AROWS"));
  return c;
}

FamilyDef gemm_sm90_family() {
  auto program = std::make_shared<FamilyProgram>();
  // The code behind the launches, default and space: any edit of it retires the stored winners.
  program->id = std::string("gemm_sm90/") + SWZJIT_GEMM_SPACE_HASH;
  program->plan = plan_of;
  program->bind = bind_of;
  program->renew = renew_of;
  program->default_config = [](const FamilyValues& problem, int sm_count) {
    return gemm_sm90_family_config(
        choose_sm90_gemm_config(gemm_family_frame(problem), sms_or_h100(sm_count), dram_of(problem)));
  };
  program->space = [](const FamilyValues& problem, int sm_count) {
    std::vector<FamilyValues> out;
    for (const Sm90GemmConfig& c : sm90_device_space(gemm_family_frame(problem), sms_or_h100(sm_count), dram_of(problem)))
      out.push_back(gemm_sm90_family_config(c));
    return out;
  };
  // The layout proof (gemm_sm90_compile_request proves a config once per process before it compiles).
  program->before_compile = [](const FamilyValues& config, const FamilyValues& problem) {
    gemm_sm90_compile_request(gemm_sm90_config_of(config, problem));
  };
  FamilyDef d = FamilyDef::parse(definition_text(program->id));
  d.program = std::move(program);
  return d;
}

std::shared_ptr<const Family> gemm_sm90_builtin() {
  static const std::shared_ptr<const Family> f = get_family("gemm_sm90");
  return f;
}

}  // namespace detail
}  // namespace swz
