// generator (internal): the Hopper GEMM as a variant of the GEMM tuner (runtime/tune/autotune_gemm.cpp)
// and of the engine's choice (runtime/engine/engine_gemm.cpp): when the variant applies, its search
// space, and the candidate text that tells its configs apart from the mma.sync family's in the tuner,
// the worker and the tuning cache ("sm90:" + Sm90GemmConfig text).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "generator/families/gemm_sm90/gemm_sm90.hpp"

namespace swz {

/// "sm90:" + cfg.to_string(): a tuning candidate / stored winner of the Hopper variant.
std::string sm90_candidate_text(const Sm90GemmConfig& cfg);
/// True for a text sm90_candidate_text() made (mma.sync configs start with "sgemm," or "hgemm,").
bool is_sm90_candidate(const std::string& text);
/// @throws Error(InvalidArgument) when `text` is not a valid Hopper candidate.
Sm90GemmConfig parse_sm90_candidate(const std::string& text);

/// The Hopper variant's default for a problem on an sm_90 device with `sm_count` SMs and `dram_gbps` of peak
/// DRAM bandwidth (0: not known; choose_sm90_gemm_config), or nullopt where
/// the mma.sync family runs instead: a problem the kernel does not take (gemm_sm90_frame says why: f32,
/// TMA's 16-byte alignment of `a`, `b`, their pitches and batch strides), K = 0, or a shape where the mma.sync
/// family's split-K configs do better (gemm_sm90_preferred). The caller checks the device's arch.
std::optional<Sm90GemmConfig> sm90_default_choice(const GemmProblem& problem, DevicePtr a, DevicePtr b, int sm_count,
                                                  int dram_gbps = 0);
/// As above for a problem known only by its alignment class (the tuner's view): `max_vec_bytes` is
/// GemmProblem::max_vec_bytes of the call (16 when the pointers and pitches allow TMA).
std::optional<Sm90GemmConfig> sm90_default_choice(const GemmProblem& problem, int max_vec_bytes, int sm_count,
                                                  int dram_gbps = 0);

/// The variant's search space around `base` (a problem's default: its dtypes and operand layout are kept):
/// bn 128 or 256 with the stage counts that fit each, rasterization groups of 8, 16 or 4 tile-rows,
/// clusters of 1 or 2 (at most 24; those that do not fit the base's shared memory are left out), and bn 256 /
/// 128 with clusters of 1 or 2 and the last partial wave in K slices (tail=4); for a
/// skinny base (one that splits K into S slices, or runs 32- or 64-wide tiles), instead: 128- and 256-wide
/// tiles in S, S / 2 and 2 S slices summed by the reduction kernel or in the kernel (reduce=fixup), 2 or 4
/// slices summed in a cluster (reduce=cluster), and 32- and 64-wide tiles with K unsplit or in 2 or 4
/// slices (at most 16). Every
/// config compiles for sm_90a without spills (a CPU test checks it).
std::vector<Sm90GemmConfig> sm90_gemm_space(const Sm90GemmConfig& base);
/// A tune's space for `problem` on a device of `sm_count` SMs and `dram_gbps` of DRAM bandwidth: that
/// device's default first, the space around its choice without swapped roles, the swapped configs
/// (sm90_swap_space), the widths of one wave (sm90_wave_space), and the default for an unknown bandwidth (the H100's rules) where that differs, so a
/// tune can still come back to it.
std::vector<Sm90GemmConfig> sm90_device_space(const GemmProblem& problem, int sm_count, int dram_gbps);
/// Configs with A and B swapped (swap=1) for a tune of `problem` whose M in the kernel's frame is at most 64
/// (one tile row, mostly empty), K > 0: 32-wide tiles where the problem's A is K-contiguous (the kernel's B),
/// and 64-wide ones, each with K whole, in 2 or 4 slices summed in a cluster or 2 summed in the kernel, and
/// as 64-row tiles with K whole (alone or in pairs sharing the kernel's B) or in 2 slices in a cluster; every
/// one with its deepest ring. None elsewhere.
std::vector<Sm90GemmConfig> sm90_swap_space(const GemmProblem& problem);
/// Tiles as wide as one wave of `sm_count` SMs needs, for a `problem` of more than 64 rows with fewer
/// 128 x 256 tiles than SMs and more 128 x 128 ones than half of them, all with the TMA epilogue: the narrowest
/// width of the layout's step (gemm_sm90_wave_step) that fits one wave (the H200's default where 128-wide tiles
/// spill past one wave or fill at most 80% of it, choose_sm90_gemm_config) at its deepest ring and one stage
/// shallower, the next two wider widths of that step, the narrowest multiple of 64 that fits, and 128 and 256;
/// the others at their deepest. Every one is one CTA a tile, K whole. None elsewhere.
std::vector<Sm90GemmConfig> sm90_wave_space(const GemmProblem& problem, int sm_count);

}  // namespace swz
