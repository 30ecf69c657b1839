// generator: the Hopper GEMM's search space and its candidate text (gemm_sm90_space.hpp), the rule that
// decides where the variant runs by default, and the public request for tools (swzjit/gemm.hpp).
#include "generator/families/gemm_sm90/gemm_sm90_space.hpp"

#include <algorithm>

#include "swzjit/error.hpp"
#include "swzjit/gemm.hpp"

namespace swz {
namespace {

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

std::optional<Sm90GemmConfig> sm90_default_choice(const GemmProblem& problem, DevicePtr a, DevicePtr b, int sm_count) {
  const GemmProblem p = problem.resolved();
  if (p.dtype == DType::F32 || p.k == 0) return std::nullopt;
  try {
    const Sm90GemmConfig cfg = choose_sm90_gemm_config(p, sm_count);
    if (gemm_sm90_preferred(cfg, gemm_sm90_frame(cfg, p, a, b), sm_count)) return cfg;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Unsupported) throw;
  }
  return std::nullopt;
}

std::optional<Sm90GemmConfig> sm90_default_choice(const GemmProblem& problem, int max_vec_bytes, int sm_count) {
  // Stand-in pointers with the call's alignment class: 256-byte aligned ones when it allows TMA's 16
  // bytes, else ones off by the class (the frame refuses them, as it would the real ones).
  const DevicePtr base = DevicePtr{1} << 20;
  const DevicePtr p = max_vec_bytes >= 16 ? base : base + static_cast<DevicePtr>(max_vec_bytes);
  return sm90_default_choice(problem, p, p, sm_count);
}

std::vector<Sm90GemmConfig> sm90_gemm_space(const Sm90GemmConfig& base) {
  std::vector<Sm90GemmConfig> space;
  struct TileStages {
    int bn, stages;
  };
  // A split base has few tiles: tile order and clusters (whose second CTA would have no tile row) do not
  // matter there, the number of K slices does.
  std::vector<int> clusters = {1, 2}, rasters = {8, 16, 4}, splits = {base.splits};
  if (base.splits > 1) {
    clusters = {1};
    rasters = {base.raster};
    splits = {base.splits, std::max(2, base.splits / 2), std::min(32, base.splits * 2)};
    if (splits[1] == splits[0]) splits.erase(splits.begin() + 1);
  }
  // Stage counts: the deepest ring that fits 227 KiB and one step shallower (less smem, same speed when
  // the loads keep up).
  for (const TileStages ts : {TileStages{256, 4}, TileStages{256, 3}, TileStages{128, 6}, TileStages{128, 4}})
    for (const int cluster : clusters)
      for (const int raster : rasters)
        for (const int split : splits) {
          Sm90GemmConfig c = base;
          c.bn = ts.bn;
          c.stages = ts.stages;
          c.cluster = cluster;
          c.raster = raster;
          c.splits = split;
          try {
            c.validate();  // e.g. a deeper ring beside a shared-memory epilogue may not fit
          } catch (const Error&) {
            continue;
          }
          space.push_back(c);
        }
  // A split base also tries summing 2 or 4 slices inside the kernel, in a cluster (no workspace).
  if (base.splits > 1)
    for (const TileStages ts : {TileStages{128, 6}, TileStages{256, 4}})
      for (const int split : {2, 4}) {
        Sm90GemmConfig c = base;
        c.bn = ts.bn;
        c.stages = ts.stages;
        c.cluster = 1;
        c.splits = split;
        c.reduce_cluster = true;
        c.tma_epilogue = false;
        if (std::find(space.begin(), space.end(), c) == space.end()) space.push_back(c);
      }
  return space;
}

}  // namespace swz
