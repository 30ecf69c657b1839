// generator: helpers shared by the GEMM generator files (gemm.cpp, sgemm.cpp, hgemm.cpp): config text
// fields, validation messages and the per-family entry points gemm.cpp dispatches to. Not public.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "swzjit/error.hpp"
#include "swzjit/gemm.hpp"
#include "swzjit/transpose.hpp"  // LaunchShape

namespace swz {
namespace detail {

/// Split-K slices (both families): more would only multiply the workspace traffic of the reduction.
constexpr int kMaxSplit = 64;

/// "key=value" fields of a config text after its leading positional items.
struct ConfigFields {
  std::vector<std::string> positional;      ///< items without '=' in order
  std::map<std::string, std::string> kv;    ///< key -> value
};
/// Split "a,b,k=v,..." (duplicate keys are an error). `form` is appended to every message.
ConfigFields split_config(const std::string& text, const std::string& form);
/// Integer field (whole decimal); the message names `field`.
int config_int(const std::string& field, const std::string& v, const std::string& form);
/// "AxB" or "AxBxC" into `out` (size = number of parts expected).
std::vector<int> config_dims(const std::string& field, const std::string& v, std::size_t parts, const std::string& form);
/// "B:M:S".
SwizzleSpec config_swizzle(const std::string& field, const std::string& v, const std::string& form);
std::string swizzle_text(const SwizzleSpec& s);  ///< "B:M:S"

/// The config fields both families spell alike (tile, warp, stages, vec, raster, swa, swb, split) into `c`;
/// false when `k` is none of them (the family's own fields, or an unknown one).
template <class Config>
bool parse_common_gemm_field(Config& c, const std::string& k, const std::string& v, const std::string& form) {
  if (k == "tile") {
    const auto d = config_dims("tile", v, 3, form);
    c.bm = d[0], c.bn = d[1], c.bk = d[2];
  } else if (k == "warp") {
    const auto d = config_dims("warp", v, 2, form);
    c.wm = d[0], c.wn = d[1];
  } else if (k == "stages") {
    c.stages = config_int(k, v, form);
  } else if (k == "vec") {
    c.vec = config_int(k, v, form);
  } else if (k == "raster") {
    c.raster = config_int(k, v, form);
  } else if (k == "swa") {
    c.swizzle_a = config_swizzle(k, v, form);
  } else if (k == "swb") {
    c.swizzle_b = config_swizzle(k, v, form);
  } else if (k == "split") {
    c.split = config_int(k, v, form);
  } else {
    return false;
  }
  return true;
}
/// stages * (bm + bn) * bk * elem_bytes, for any field values: InvalidArgument (naming `family`) past 2^31 - 1.
int tile_smem_bytes(const char* family, long long stages, long long bm, long long bn, long long bk, long long elem_bytes);
int log2_exact(long long v);                    ///< log2 of a power of two (-1 otherwise)
std::string hex_name(const std::string& prefix, const std::string& text);  ///< "prefix_<fnv64>.cu"
/// A 1-D launch of `block` threads for a grid-stride kernel over `items` work items: enough blocks to
/// cover them, at most 2^20 (the kernel loops for the rest).
LaunchShape grid_stride_launch_shape(long long items, int block);

/// Accumulates one warp-wide instruction into an SmemInstrStats row (through analyze_bank).
void add_instruction(SmemInstrStats& row, const std::vector<long long>& addresses, int width, bool ldmatrix);
/// Appends `row` to `a`, adding its totals.
void add_row(GemmAnalysis& a, const SmemInstrStats& row);

/// Tries swizzles for one operand, cheapest first (fewest bits, then smallest base and shift), with
/// the base at least `min_m` and the whole pattern within `tile_bits`; `set` installs a candidate
/// (B = 0 for none) and `ok` says whether the config validates and shows zero excess on that operand.
bool choose_operand_swizzle(int min_m, int tile_bits, const std::function<void(const SwizzleSpec&)>& set,
                            const std::function<bool()>& ok);

/// choose_operand_swizzle for A (over bm x bk) then B (bn x bk) of an SGEMM or HGEMM config: `validate`
/// throws for an invalid config, `analyze` gives its GemmAnalysis. False when an operand found none.
template <class Config, class Validate, class Analyze>
bool choose_gemm_swizzles(Config& c, int min_m, Validate validate, Analyze analyze) {
  bool ok = true;
  for (int op = 0; op < 2; ++op) {
    SwizzleSpec& sw = op == 0 ? c.swizzle_a : c.swizzle_b;
    const int tile_bits = log2_exact(static_cast<long long>(op == 0 ? c.bm : c.bn) * c.bk);
    ok = choose_operand_swizzle(
             min_m, tile_bits, [&](const SwizzleSpec& s) { sw = s; },
             [&] {
               try {
                 validate(c);
               } catch (const Error&) {
                 return false;
               }
               return analyze(c).excess_of(op == 0 ? 'A' : 'B') == 0;
             }) &&
         ok;
  }
  return ok;
}

/// The checks every operand swizzle of an SGEMM or HGEMM config passes (A over bm x bk, B over bn x bk):
/// a valid spec, 0:0:0 for none, S > 0, M >= `min_m` (`m_why` says what that keeps whole), the pattern
/// within the tile, and `fits(a)`, the variant's own condition for operand A (true) or B (`fits_why` when
/// it fails). `bad` throws with the variant's prefix.
template <class Config, class Bad, class Fits>
void validate_gemm_swizzles(const Config& c, int min_m, const std::string& m_why, Bad bad, Fits fits,
                            const std::string& fits_why) {
  for (int op = 0; op < 2; ++op) {
    const SwizzleSpec& sw = op == 0 ? c.swizzle_a : c.swizzle_b;
    const std::string name = (op == 0 ? "swa " : "swb ") + swizzle_text(sw);
    const int tile_bits = log2_exact(static_cast<long long>(op == 0 ? c.bm : c.bn) * c.bk);
    try {
      sw.validate();
    } catch (const Error& e) {
      bad((op == 0 ? "swa " : "swb ") + std::string(e.what()));
    }
    if (sw.b == 0) {
      if (sw.m != 0 || sw.s != 0) bad(name + ": with B = 0 write 0:0:0 (no swizzle)");
      continue;
    }
    if (sw.s < 0) bad(name + ": S must be positive (YYY bits above the ZZZ bits)");
    if (sw.m < min_m) bad(name + ": M must be >= " + std::to_string(min_m) + " so " + m_why + " stay whole");
    if (sw.b + sw.m + sw.s > tile_bits)
      bad(name + " spans 2^" + std::to_string(sw.b + sw.m + sw.s) + " elements, more than the tile (2^" +
          std::to_string(tile_bits) + "); it would move elements out of the tile");
    if (!fits(op == 0)) bad(name + " " + fits_why);
  }
}

// SGEMM (generator/families/gemm/sgemm.cpp)
std::string sgemm_to_string(const SgemmConfig& c);
SgemmConfig sgemm_parse(const ConfigFields& f, const std::string& form);
void sgemm_validate(const SgemmConfig& c);
std::string sgemm_template_args(const SgemmConfig& c);
GemmAnalysis sgemm_analyze(const SgemmConfig& c);
std::vector<SgemmConfig> sgemm_space(GemmLayout layout, int max_vec_bytes);
bool sgemm_choose_swizzles(SgemmConfig& c);

// HGEMM (generator/families/gemm/hgemm.cpp)
std::string hgemm_to_string(const HgemmConfig& c);
HgemmConfig hgemm_parse(const ConfigFields& f, const std::string& form);
void hgemm_validate(const HgemmConfig& c);
std::string hgemm_template_args(const HgemmConfig& c);
GemmAnalysis hgemm_analyze(const HgemmConfig& c);
std::vector<HgemmConfig> hgemm_space(DType in, DType out, GemmLayout layout, int max_vec_bytes);
bool hgemm_choose_swizzles(HgemmConfig& c);

}  // namespace detail
}  // namespace swz
