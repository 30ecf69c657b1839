// generator: the GEMM families on the host — layouts, the GemmConfig wrapper (text, validation,
// generated translation unit, launch shape), the reference kernel's source, shared analysis helpers.
// Family specifics live in generator/families/gemm/sgemm.cpp and generator/families/gemm/hgemm.cpp.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "generator/core/checked_arith.hpp"
#include "generator/families/gemm/gemm_internal.hpp"
#include "swzjit/analysis/bank.hpp"
#include "swzjit/error.hpp"
#include "swzjit/gemm.hpp"
#include "generator/families/gemm/gemm_splitk.hpp"
#include "templates/gemm_reference.cuh"

namespace swz {

namespace detail {

ConfigFields split_config(const std::string& text, const std::string& form) {
  ConfigFields f;
  // NOTE: getline drops a trailing empty field, so "…,split=2," would read as if the comma were not there.
  if (!text.empty() && text.back() == ',') throw_invalid("config: '" + text + "' ends in ','" + form);
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      if (!f.kv.empty()) throw_invalid("config: unexpected item '" + item + "' after key=value fields" + form);
      f.positional.push_back(item);
      continue;
    }
    const std::string key = item.substr(0, eq);
    if (f.kv.count(key)) throw_invalid("config: field '" + key + "' given twice" + form);
    f.kv[key] = item.substr(eq + 1);
  }
  return f;
}

int config_int(const std::string& field, const std::string& v, const std::string& form) {
  try {
    return static_cast<int>(parse_integer(field, v, -1000000, 1000000));
  } catch (const Error&) {
    throw_invalid("config: " + field + "='" + v + "' is not an integer in [-1000000, 1000000]" + form);
  }
}

std::vector<int> config_dims(const std::string& field, const std::string& v, std::size_t parts, const std::string& form) {
  std::vector<int> out;
  std::stringstream ss(v);
  std::string p;
  while (std::getline(ss, p, 'x')) out.push_back(config_int(field, p, form));
  if (!v.empty() && v.back() == 'x') out.push_back(config_int(field, "", form));
  if (out.size() != parts)
    throw_invalid("config: " + field + "='" + v + "' is not " + (parts == 2 ? "AxB" : "AxBxC") + form);
  return out;
}

SwizzleSpec config_swizzle(const std::string& field, const std::string& v, const std::string& form) {
  std::vector<int> out;
  std::stringstream ss(v);
  std::string p;
  while (std::getline(ss, p, ':')) out.push_back(config_int(field, p, form));
  if (!v.empty() && v.back() == ':') out.push_back(config_int(field, "", form));
  if (out.size() != 3) throw_invalid("config: " + field + "='" + v + "' is not B:M:S (0:0:0 = none)" + form);
  return SwizzleSpec{out[0], out[1], out[2]};
}

std::string swizzle_text(const SwizzleSpec& s) {
  return std::to_string(s.b) + ":" + std::to_string(s.m) + ":" + std::to_string(s.s);
}

int tile_smem_bytes(const char* family, long long stages, long long bm, long long bn, long long bk, long long elem_bytes) {
  // NOTE: public smem_bytes() is called on unvalidated configs (parse output, user structs): no int overflow.
  const long long bytes = checked_mul(checked_mul(checked_mul(stages, checked_add(bm, bn, "shared memory bytes"),
                                                              "shared memory bytes"),
                                                  bk, "shared memory bytes"),
                                      elem_bytes, "shared memory bytes");
  if (stages < 0 || bm < 0 || bn < 0 || bk < 0 || bytes > 2147483647LL)
    throw_invalid(std::string(family) + " config: shared memory of stages " + std::to_string(stages) + " x (bm " +
                  std::to_string(bm) + " + bn " + std::to_string(bn) + ") x bk " + std::to_string(bk) +
                  " is negative or past 2^31 - 1 bytes; use a valid tile");
  return static_cast<int>(bytes);
}

int log2_exact(long long v) {
  if (v <= 0 || (v & (v - 1)) != 0) return -1;
  int n = 0;
  while ((1LL << n) < v) ++n;
  return n;
}

std::string hex_name(const std::string& prefix, const std::string& text) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a: only names generated files (cache keys use xxHash)
  for (unsigned char ch : text) h = (h ^ ch) * 1099511628211ULL;
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s_%016llx.cu", prefix.c_str(), static_cast<unsigned long long>(h));
  return buf;
}

LaunchShape grid_stride_launch_shape(long long items, int block) {
  const long long blocks = ceil_div_ll(std::max(1LL, items), block);
  LaunchShape s{};
  s.grid[0] = static_cast<unsigned>(std::max(1LL, std::min(blocks, 1LL << 20)));
  s.grid[1] = s.grid[2] = 1;
  s.block[0] = static_cast<unsigned>(block);
  s.block[1] = s.block[2] = 1;
  return s;
}

void add_instruction(SmemInstrStats& row, const std::vector<long long>& addresses, int width, bool ldmatrix) {
  SmemInstruction ins;
  ins.op = ldmatrix ? SmemOp::LdmatrixX4 : (row.is_store ? SmemOp::Sts : SmemOp::Lds);
  ins.width = ldmatrix ? 16 : width;
  ins.addresses = addresses;
  add_instruction_cost(row, analyze_bank(ins));
}

void add_row(GemmAnalysis& a, const SmemInstrStats& row) {
  (row.is_store ? a.store_wavefronts : a.load_wavefronts) += row.wavefronts;
  (row.is_store ? a.store_ideal : a.load_ideal) += row.ideal_wavefronts;
  (row.is_store ? a.store_instructions : a.load_instructions) += row.instructions;
  a.instrs.push_back(row);
}

bool choose_operand_swizzle(int min_m, int tile_bits, const std::function<void(const SwizzleSpec&)>& set,
                            const std::function<bool()>& ok) {
  set(SwizzleSpec{});
  if (ok()) return true;
  for (int b = 1; b <= 4; ++b)
    for (int m = min_m; m <= min_m + 2; ++m)
      for (int s = b; b + m + s <= tile_bits; ++s) {
        set(SwizzleSpec{b, m, s});
        if (ok()) return true;
      }
  set(SwizzleSpec{});
  return false;
}

}  // namespace detail

std::string to_string(GemmLayout l) {
  switch (l) {
    case GemmLayout::NN: return "NN";
    case GemmLayout::NT: return "NT";
    case GemmLayout::TN: return "TN";
    case GemmLayout::TT: return "TT";
  }
  return "?";
}

GemmLayout parse_gemm_layout(const std::string& text) {
  if (text == "NN") return GemmLayout::NN;
  if (text == "NT") return GemmLayout::NT;
  if (text == "TN") return GemmLayout::TN;
  if (text == "TT") return GemmLayout::TT;
  throw_invalid("layout: '" + text + "' is not supported (allowed: NN|NT|TN|TT)");
}

bool gemm_a_kmajor(GemmLayout l) { return l == GemmLayout::NN || l == GemmLayout::NT; }
bool gemm_b_kmajor(GemmLayout l) { return l == GemmLayout::NT || l == GemmLayout::TT; }

void check_gemm_dtypes(DType in, DType out) {
  const bool ok = in == DType::F32 ? out == DType::F32 : true;
  if (!ok)
    throw Error(ErrorKind::Unsupported, "gemm: inputs " + to_string(in) + " with output " + to_string(out) +
                                            " are not supported (supported: f32 -> f32 on CUDA cores; f16 or bf16 -> "
                                            "f16, bf16 or f32 on tensor cores, sm_80 and later)");
}

long long GemmAnalysis::excess_of(char operand) const {
  long long e = 0;
  for (const auto& r : instrs)
    if (!r.name.empty() && r.name[0] == operand) e += r.excess_wavefronts;
  return e;
}

GemmConfig GemmConfig::of(const SgemmConfig& c) {
  GemmConfig g;
  g.kind = GemmKernelKind::Sgemm;
  g.sgemm = c;
  return g;
}

GemmConfig GemmConfig::of(const HgemmConfig& c) {
  GemmConfig g;
  g.kind = GemmKernelKind::Hgemm;
  g.hgemm = c;
  return g;
}

DType GemmConfig::in_dtype() const { return kind == GemmKernelKind::Sgemm ? DType::F32 : hgemm.in; }
DType GemmConfig::out_dtype() const { return kind == GemmKernelKind::Sgemm ? DType::F32 : hgemm.out; }
GemmLayout GemmConfig::layout() const { return kind == GemmKernelKind::Sgemm ? sgemm.layout : hgemm.layout; }
int GemmConfig::threads() const { return kind == GemmKernelKind::Sgemm ? sgemm.threads : hgemm.threads(); }
int GemmConfig::vec_bytes() const { return kind == GemmKernelKind::Sgemm ? 4 * sgemm.vec : 2 * hgemm.vec; }
int GemmConfig::dynamic_smem_bytes() const { return kind == GemmKernelKind::Sgemm ? 0 : hgemm.smem_bytes(); }
int GemmConfig::smem_bytes() const { return kind == GemmKernelKind::Sgemm ? sgemm.smem_bytes() : hgemm.smem_bytes(); }
GemmTileShape GemmConfig::tile() const {
  if (kind == GemmKernelKind::Sgemm)
    return GemmTileShape{sgemm.bm, sgemm.bn, sgemm.bk, sgemm.wm, sgemm.wn, sgemm.stages, std::max(1, sgemm.split)};
  return GemmTileShape{hgemm.bm, hgemm.bn, hgemm.bk, hgemm.wm, hgemm.wn, hgemm.stages, std::max(1, hgemm.split)};
}
SwizzleSpec& GemmConfig::swizzle_a() { return kind == GemmKernelKind::Sgemm ? sgemm.swizzle_a : hgemm.swizzle_a; }
SwizzleSpec& GemmConfig::swizzle_b() { return kind == GemmKernelKind::Sgemm ? sgemm.swizzle_b : hgemm.swizzle_b; }

std::string GemmConfig::to_string() const {
  return kind == GemmKernelKind::Sgemm ? detail::sgemm_to_string(sgemm) : detail::hgemm_to_string(hgemm);
}

GemmConfig GemmConfig::parse(const std::string& text) {
  const std::string form =
      " (forms: sgemm,LAYOUT,tile=BMxBNxBK,warp=WMxWN,wniter=I,thread=TMxTN,threads=N,stages=S,vec=V,raster=R,"
      "swa=B:M:S,swb=B:M:S[,split=N] | hgemm,IN>OUT,LAYOUT,tile=BMxBNxBK,warp=WMxWN,stages=S,vec=V,raster=R,swa=B:M:S,"
      "swb=B:M:S[,split=N]; LAYOUT NN|NT|TN|TT)";
  const detail::ConfigFields f = detail::split_config(text, form);
  if (f.positional.empty()) throw_invalid("config: '" + text + "' names no family (sgemm or hgemm)" + form);
  GemmConfig c;
  if (f.positional[0] == "sgemm") {
    c = of(detail::sgemm_parse(f, form));
  } else if (f.positional[0] == "hgemm") {
    c = of(detail::hgemm_parse(f, form));
  } else {
    throw_invalid("config: family '" + f.positional[0] + "' is not sgemm or hgemm" + form);
  }
  // An omitted swa / swb takes the swizzle the bank analysis picks (as the search spaces do); an explicit
  // one, 0:0:0 included, is kept.
  bool has_swa = false, has_swb = false;
  for (const auto& kv : f.kv) {
    has_swa = has_swa || kv.first == "swa";
    has_swb = has_swb || kv.first == "swb";
  }
  if (!has_swa || !has_swb) {
    GemmConfig chosen = c;
    if (gemm_choose_swizzles(chosen)) {
      if (!has_swa) c.swizzle_a() = chosen.swizzle_a();
      if (!has_swb) c.swizzle_b() = chosen.swizzle_b();
    }
  }
  c.validate();
  return c;
}

void GemmConfig::validate() const {
  if (kind == GemmKernelKind::Sgemm) {
    detail::sgemm_validate(sgemm);
  } else {
    detail::hgemm_validate(hgemm);
  }
}

std::string gemm_name_expression(const GemmConfig& cfg) {
  return cfg.kind == GemmKernelKind::Sgemm ? "swz::tpl::sgemm_kernel<" + detail::sgemm_template_args(cfg.sgemm) + ">"
                                           : "swz::tpl::hgemm_kernel<" + detail::hgemm_template_args(cfg.hgemm) + ">";
}

std::string gemm_source(const GemmConfig& cfg) {
  cfg.validate();
  const char* header = cfg.kind == GemmKernelKind::Sgemm ? "sgemm.cuh" : "hgemm.cuh";
  return "// generated by libswzjit: " + cfg.to_string() + "\n#include \"" + header +
         "\"\ntemplate __global__ void " + gemm_name_expression(cfg) + "(const __grid_constant__ swz::tpl::GemmParams);\n";
}

std::string gemm_source_name(const GemmConfig& cfg) {
  return detail::hex_name(cfg.kind == GemmKernelKind::Sgemm ? "swz_sgemm" : "swz_hgemm", cfg.to_string());
}

LaunchShape gemm_launch_shape(const GemmConfig& cfg, long long m, long long n, long long batch) {
  const GemmTileShape t = cfg.tile();
  // NOTE: a full validate() costs 10-20 us; check what the arithmetic below divides by.
  if (t.bm < 1 || t.bn < 1 || t.bk < 1 || t.split > detail::kMaxSplit || cfg.threads() < 1 || cfg.threads() > 1024)
    cfg.validate();  // throws, naming the field
  if (m < 0 || n < 0 || batch < 0)
    throw_invalid("gemm launch shape: m " + std::to_string(m) + ", n " + std::to_string(n) + ", batch " +
                  std::to_string(batch) + " must be >= 0");
  const int bm = t.bm, bn = t.bn;
  const long long tiles = detail::checked_mul(detail::ceil_div_ll(m, bm), detail::ceil_div_ll(n, bn), "gemm block tiles");
  if (tiles > 2147483647LL) throw_invalid("gemm: " + std::to_string(tiles) + " block tiles exceed the grid limit");
  LaunchShape s{};
  s.grid[0] = static_cast<unsigned>(std::max(1LL, tiles));
  s.grid[1] = 1;
  // Split-K: z = matrix * splits + slice, so a launch covers at most 65535 / splits matrices.
  const long long splits = gemm_k_splits(cfg);
  s.grid[2] = static_cast<unsigned>(std::max(1LL, std::min(batch, gemm_max_batch_per_launch(cfg))) * splits);
  s.block[0] = static_cast<unsigned>(cfg.threads());
  s.block[1] = s.block[2] = 1;
  return s;
}

namespace {
int elem_kind(DType t) {
  return t == DType::F16 ? tpl::kGemmF16 : t == DType::BF16 ? tpl::kGemmBF16 : tpl::kGemmF32;
}
}  // namespace

std::string GemmReferenceSpec::to_string() const {
  return "gemm_reference," + swz::to_string(in) + ">" + swz::to_string(out) + "," + swz::to_string(layout) +
         ",acc=" + (f64_accumulate ? "f64" : "f32");
}

std::string gemm_reference_name_expression(const GemmReferenceSpec& spec) {
  check_gemm_dtypes(spec.in, spec.out);
  return "swz::tpl::gemm_reference_kernel<" + std::to_string(elem_kind(spec.in)) + ", " +
         std::to_string(elem_kind(spec.out)) + ", " + std::to_string(gemm_a_kmajor(spec.layout) ? 1 : 0) + ", " +
         std::to_string(gemm_b_kmajor(spec.layout) ? 1 : 0) + ", " + std::to_string(spec.f64_accumulate ? 1 : 0) + ">";
}

std::string gemm_reference_source(const GemmReferenceSpec& spec) {
  return "// generated by libswzjit: " + spec.to_string() + "\n#include \"gemm_reference.cuh\"\ntemplate __global__ void " +
         gemm_reference_name_expression(spec) + "(const __grid_constant__ swz::tpl::GemmParams);\n";
}

std::string gemm_reference_source_name(const GemmReferenceSpec& spec) {
  return detail::hex_name("swz_gemm_reference", spec.to_string());
}

LaunchShape gemm_reference_launch_shape(long long m, long long n, long long batch) {
  const long long b = tpl::kGemmReferenceBlock;
  LaunchShape s{};
  if (m < 0 || n < 0 || batch < 0)
    throw_invalid("gemm reference launch shape: m " + std::to_string(m) + ", n " + std::to_string(n) + ", batch " +
                  std::to_string(batch) + " must be >= 0");
  s.grid[0] = static_cast<unsigned>(std::max(1LL, std::min(detail::ceil_div_ll(n, b), 2147483647LL)));
  s.grid[1] = static_cast<unsigned>(std::max(1LL, std::min(detail::ceil_div_ll(m, b), 65535LL)));
  s.grid[2] = static_cast<unsigned>(std::max(1LL, std::min(batch, 65535LL)));
  s.block[0] = s.block[1] = static_cast<unsigned>(b);
  s.block[2] = 1;
  return s;
}

GemmAnalysis analyze_gemm(const GemmConfig& cfg) {
  cfg.validate();
  return cfg.kind == GemmKernelKind::Sgemm ? detail::sgemm_analyze(cfg.sgemm) : detail::hgemm_analyze(cfg.hgemm);
}

bool gemm_choose_swizzles(GemmConfig& cfg) {
  return cfg.kind == GemmKernelKind::Sgemm ? detail::sgemm_choose_swizzles(cfg.sgemm)
                                           : detail::hgemm_choose_swizzles(cfg.hgemm);
}

std::vector<GemmConfig> gemm_search_space(DType in, DType out, GemmLayout layout, int max_vec_bytes) {
  check_gemm_dtypes(in, out);
  std::vector<GemmConfig> space;
  if (in == DType::F32) {
    for (const auto& c : detail::sgemm_space(layout, max_vec_bytes)) space.push_back(GemmConfig::of(c));
  } else {
    for (const auto& c : detail::hgemm_space(in, out, layout, max_vec_bytes)) space.push_back(GemmConfig::of(c));
  }
  return space;
}

}  // namespace swz
