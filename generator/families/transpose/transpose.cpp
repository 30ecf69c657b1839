// generator: the transpose family on the host — config validation, the tiny generated translation
// unit, launch shapes, the search space, and static bank analysis that evaluates the index maps of
// templates/transpose.cuh lane by lane through the bank model (include/swzjit/analysis/bank.hpp).
#include "swzjit/transpose.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <set>
#include <sstream>

#include "generator/core/checked_arith.hpp"
#include "swzjit/analysis/bank.hpp"
#include "swzjit/error.hpp"
#include "templates/transpose.cuh"

namespace swz {

namespace {

constexpr int kMaxStaticSmem = 48 * 1024;

bool pow2(long long v) { return tpl::is_pow2(v); }
int log2i(long long v) {
  int n = 0;
  while ((1LL << n) < v) ++n;
  return n;
}

tpl::TransposeGeom geom(const TransposeConfig& c) {
  const int kind = c.smem == SmemLayout::Plain ? tpl::kSmemPlain : c.smem == SmemLayout::Pad ? tpl::kSmemPad : tpl::kSmemSwizzle;
  const bool sw = c.smem == SmemLayout::Swizzle;
  return tpl::transpose_kernel_geom(dtype_bytes(c.dtype), c.tile_rows, c.tile_cols, c.threads, c.vec, kind,
                                    c.smem == SmemLayout::Pad ? c.pad : 0, sw ? c.swizzle.b : 0, sw ? c.swizzle.m : 0,
                                    sw ? c.swizzle.s : 0, sw ? c.swizzle2.b : 0, sw ? c.swizzle2.m : 0,
                                    sw ? c.swizzle2.s : 0, c.raster, c.streaming ? 1 : 0, c.pair ? 1 : 0);
}

// Stable 64-bit FNV-1a, only for naming generated sources (cache keys use xxHash elsewhere).
std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ULL;
  return h;
}

std::string template_args(const TransposeConfig& c) {
  const tpl::TransposeGeom g = geom(c);
  std::ostringstream os;
  // The kernel's own parameters (element units); pair mode's word geometry is derived inside it.
  os << dtype_bytes(c.dtype) << ", " << c.tile_rows << ", " << c.tile_cols << ", " << g.threads << ", " << g.vec << ", "
     << g.layout
     << ", " << g.pad << ", " << g.sw_b << ", " << g.sw_m << ", " << g.sw_s << ", " << g.sw2_b << ", " << g.sw2_m
     << ", " << g.sw2_s << ", " << g.raster << ", " << g.hint << ", " << (c.pair ? 1 : 0);
  return os.str();
}

}  // namespace

std::string to_string(SmemLayout l) {
  switch (l) {
    case SmemLayout::Plain: return "plain";
    case SmemLayout::Pad: return "pad";
    case SmemLayout::Swizzle: return "swizzle";
  }
  return "?";
}

int TransposeConfig::elems_per_thread() const {
  // NOTE: public and called before validate() by callers; a zero divisor must not be a SIGFPE.
  if (tile_rows < 1 || tile_rows > 256 || tile_cols < 1 || tile_cols > 256 || threads < 1 || threads > 1024)
    throw_invalid("transpose config: elements per thread need tile sides in [1, 256] and threads in [1, 1024] (got tile " +
                  std::to_string(tile_rows) + "x" + std::to_string(tile_cols) + ", threads " + std::to_string(threads) + ")");
  return tile_rows * tile_cols / threads;
}

int TransposeConfig::smem_bytes() const {
  const tpl::TransposeGeom g = geom(*this);
  return tpl::transpose_smem_elems(g) * g.elem_bytes;
}

std::string TransposeConfig::to_string() const {
  std::ostringstream os;
  os << swz::to_string(dtype) << ",tile=" << tile_rows << "x" << tile_cols << ",threads=" << threads << ",vec=" << vec
     << ",smem=" << swz::to_string(smem);
  if (smem == SmemLayout::Pad) os << ":" << pad;
  if (smem == SmemLayout::Swizzle) os << ":" << swizzle.b << ":" << swizzle.m << ":" << swizzle.s;
  if (smem == SmemLayout::Swizzle && swizzle2.b > 0) os << "+" << swizzle2.b << ":" << swizzle2.m << ":" << swizzle2.s;
  if (raster != 0) os << ",raster=" << raster;
  if (streaming) os << ",cache=cs";
  if (pair) os << ",pair=1";
  return os.str();
}

TransposeConfig TransposeConfig::parse(const std::string& text) {
  const std::string form =
      " (form: DTYPE,tile=RxC,threads=N,vec=V,smem=plain|pad:P|swizzle:B:M:S, e.g. "
      "f32,tile=32x32,threads=256,vec=4,smem=swizzle:5:0:5; optional: swizzle:B:M:S+B:M:S, raster=0|1, "
      "cache=default|cs)";
  TransposeConfig c;
  bool have_dtype = false;
  std::stringstream ss(text);
  std::string item;
  auto num = [&](const std::string& field, const std::string& v) -> int {
    try {
      return static_cast<int>(parse_integer(field, v, -1000000, 1000000));
    } catch (const Error&) {
      throw_invalid("config: " + field + "='" + v + "' is not an integer in [-1000000, 1000000]" + form);
    }
  };
  std::set<std::string> seen;
  // NOTE: getline drops a trailing empty field, so "…,raster=1," or "swizzle:5:0:5:" would read as valid.
  if (!text.empty() && text.back() == ',') throw_invalid("config: '" + text + "' ends in ','" + form);
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      if (have_dtype) throw_invalid("config: unexpected item '" + item + "'" + form);
      c.dtype = parse_dtype(item);
      have_dtype = true;
      continue;
    }
    const std::string key = item.substr(0, eq), val = item.substr(eq + 1);
    // NOTE: a repeated field would silently override the first (issue 10 item 7): refuse it.
    if (!seen.insert(key).second) throw_invalid("config: field '" + key + "' given twice" + form);
    if (key == "tile") {
      const auto x = val.find('x');
      if (x == std::string::npos) throw_invalid("config: tile='" + val + "' is not RxC" + form);
      c.tile_rows = num("tile", val.substr(0, x));
      c.tile_cols = num("tile", val.substr(x + 1));
    } else if (key == "threads") {
      c.threads = num("threads", val);
    } else if (key == "vec") {
      c.vec = num("vec", val);
    } else if (key == "pair") {
      const int v = num("pair", val);
      if (v != 0 && v != 1) throw_invalid("config: pair=" + val + " must be 0 or 1" + form);
      c.pair = v == 1;
    } else if (key == "raster") {
      c.raster = num("raster", val);
    } else if (key == "cache") {
      if (val != "cs" && val != "default") throw_invalid("config: cache='" + val + "' is not default or cs" + form);
      c.streaming = val == "cs";
    } else if (key == "smem") {
      std::string first = val, second;
      const auto plus = val.find('+');
      if (plus != std::string::npos) {
        first = val.substr(0, plus);
        second = val.substr(plus + 1);
        if (first.rfind("swizzle:", 0) != 0)
          throw_invalid("config: smem='" + val + "': '+' composes swizzles only (smem=swizzle:B:M:S+B:M:S)" + form);
        if (second.empty()) throw_invalid("config: smem='" + val + "' ends in '+' (expected swizzle:B:M:S+B:M:S)" + form);
      }
      if (!val.empty() && val.back() == ':') throw_invalid("config: smem='" + val + "' ends in ':'" + form);
      std::vector<std::string> parts;
      std::stringstream ps(first);
      std::string p;
      while (std::getline(ps, p, ':')) parts.push_back(p);
      if (parts.empty()) throw_invalid("config: smem is empty" + form);
      if (parts[0] == "plain" && parts.size() == 1) {
        c.smem = SmemLayout::Plain;
      } else if (parts[0] == "pad" && parts.size() == 2) {
        c.smem = SmemLayout::Pad;
        c.pad = num("smem pad", parts[1]);
      } else if (parts[0] == "swizzle" && parts.size() == 4) {
        c.smem = SmemLayout::Swizzle;
        c.swizzle = SwizzleSpec{num("smem swizzle B", parts[1]), num("smem swizzle M", parts[2]),
                                num("smem swizzle S", parts[3])};
        if (!second.empty()) {
          std::vector<std::string> q;
          std::stringstream qs(second);
          std::string x;
          while (std::getline(qs, x, ':')) q.push_back(x);
          if (q.size() != 3) throw_invalid("config: second swizzle '" + second + "' is not B:M:S" + form);
          c.swizzle2 = SwizzleSpec{num("smem swizzle2 B", q[0]), num("smem swizzle2 M", q[1]), num("smem swizzle2 S", q[2])};
        }
      } else if (!second.empty()) {
        throw_invalid("config: '+' composes swizzles only (smem=swizzle:B:M:S+B:M:S)" + form);
      } else {
        throw_invalid("config: smem='" + val + "' is not plain, pad:P or swizzle:B:M:S" + form);
      }
    } else {
      throw_invalid("config: unknown field '" + key + "'" + form);
    }
  }
  if (!have_dtype) throw_invalid("config: '" + text + "' names no dtype" + form);
  c.validate();
  return c;
}

void TransposeConfig::validate() const {
  const int eb = dtype_bytes(dtype);
  auto bad = [](const std::string& m) { throw_invalid("transpose config: " + m); };
  if (tile_rows < 1 || tile_rows > 256 || !pow2(tile_rows))
    bad("tile rows " + std::to_string(tile_rows) + " must be a power of two in [1, 256]");
  if (tile_cols < 1 || tile_cols > 256 || !pow2(tile_cols))
    bad("tile cols " + std::to_string(tile_cols) + " must be a power of two in [1, 256]");
  if (threads < 32 || threads > 1024 || threads % 32 != 0)
    bad("threads " + std::to_string(threads) + " must be a multiple of 32 in [32, 1024]");
  if (vec < 1 || !pow2(vec) || vec * eb > 16)
    bad("vec " + std::to_string(vec) + " must be a power of two with vec * " + std::to_string(eb) +
        " bytes <= 16 (one global access is at most 16 bytes)");
  if (tile_rows % vec != 0 || tile_cols % vec != 0)
    bad("vec " + std::to_string(vec) + " must divide both tile sides " + std::to_string(tile_rows) + "x" +
        std::to_string(tile_cols));
  if ((tile_rows * tile_cols) % (vec * threads) != 0)
    bad("tile " + std::to_string(tile_rows) + "x" + std::to_string(tile_cols) + " does not split into " +
        std::to_string(threads) + " threads x vec " + std::to_string(vec) + " (elements per thread must be whole)");
  if (elems_per_thread() > 64)
    bad("elements per thread " + std::to_string(elems_per_thread()) + " exceeds 64 (register pressure); use more threads");
  if (smem != SmemLayout::Pad && pad != 0) bad("pad " + std::to_string(pad) + " given without smem=pad");
  if (smem == SmemLayout::Pad && (pad < 1 || pad > 32)) bad("pad " + std::to_string(pad) + " must be in [1, 32]");
  if (raster != 0 && raster != 1) bad("raster " + std::to_string(raster) + " must be 0 or 1");
  if (pair && (eb != 2 || vec % 2 != 0 || tile_rows % 2 != 0))
    bad("pair mode needs a 2-byte dtype, an even vec and an even tile rows count (got " + swz::to_string(dtype) +
        ", vec " + std::to_string(vec) + ", tile rows " + std::to_string(tile_rows) + ")");
  if (pair && (tile_rows / 2 * tile_cols) % (vec * threads) != 0)
    bad("tile " + std::to_string(tile_rows) + "x" + std::to_string(tile_cols) + " does not split into " +
        std::to_string(threads) + " threads x vec " + std::to_string(vec) + " x 2 rows (pair mode)");
  if (smem == SmemLayout::Swizzle) {
    const tpl::TransposeGeom gg = geom(*this);
    const int tile_bits = log2i(static_cast<long long>(gg.tile_r) * gg.tile_c);  // cells: elements or words
    for (const SwizzleSpec* sw : {&swizzle, &swizzle2}) {
      try {
        sw->validate();
      } catch (const Error& e) {
        bad(std::string("smem ") + e.what());
      }
      const int span = sw->b + sw->m + tpl::iabs(sw->s);
      if (sw->b > 0 && span > tile_bits)
        bad("swizzle " + sw->to_string() + " has a period of 2^" + std::to_string(span) +
            " elements, larger than the tile (2^" + std::to_string(tile_bits) +
            "); it would move elements out of the tile");
    }
  } else if (swizzle != SwizzleSpec{} || swizzle2 != SwizzleSpec{}) {
    bad("swizzle " + swizzle.to_string() + " given without smem=swizzle");
  }
  if (smem_bytes() > kMaxStaticSmem)
    bad("shared memory " + std::to_string(smem_bytes()) + " bytes exceeds the 48 KiB static limit; use a smaller tile");
}

std::string transpose_name_expression(const TransposeConfig& cfg) {
  return "swz::tpl::transpose_kernel<" + template_args(cfg) + ">";
}

std::string transpose_source(const TransposeConfig& cfg) {
  cfg.validate();
  return "// generated by libswzjit: transpose " + cfg.to_string() +
         "\n#include \"transpose.cuh\"\n"
         "template __global__ void " +
         transpose_name_expression(cfg) + "(const __grid_constant__ swz::tpl::TransposeParams);\n";
}

std::string transpose_probe_name_expression(const TransposeConfig& cfg) {
  return "swz::tpl::transpose_smem_probe_kernel<" + template_args(cfg) + ">";
}

std::string transpose_probe_source(const TransposeConfig& cfg) {
  cfg.validate();
  return "// generated by libswzjit: shared-memory probe of transpose " + cfg.to_string() +
         "\n#include \"smem_probe.cuh\"\ntemplate __global__ void " + transpose_probe_name_expression(cfg) +
         "(int, unsigned int*);\n";
}

std::string transpose_source_name(const TransposeConfig& cfg) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "swz_transpose_%016llx.cu", static_cast<unsigned long long>(fnv1a(cfg.to_string())));
  return buf;
}

LaunchShape transpose_launch_shape(const TransposeConfig& cfg, long long rows, long long cols, long long batch) {
  // NOTE: a full validate() costs more than a launch should; check what the arithmetic below divides by.
  if (cfg.tile_rows < 1 || cfg.tile_cols < 1 || cfg.threads < 1 || cfg.threads > 1024 || (cfg.raster != 0 && cfg.raster != 1))
    cfg.validate();  // throws, naming the field
  if (rows < 0 || cols < 0 || batch < 0)
    throw_invalid("transpose launch shape: rows " + std::to_string(rows) + ", cols " + std::to_string(cols) +
                  ", batch " + std::to_string(batch) + " must be >= 0");
  long long tr = detail::ceil_div_ll(rows, cfg.tile_rows), tc = detail::ceil_div_ll(cols, cfg.tile_cols);
  if (cfg.raster == 1) std::swap(tr, tc);  // x walks row tiles
  LaunchShape s{};
  s.grid[0] = static_cast<unsigned>(std::max(1LL, std::min(tc, 2147483647LL)));
  s.grid[1] = static_cast<unsigned>(std::max(1LL, std::min(tr, 65535LL)));
  s.grid[2] = static_cast<unsigned>(std::max(1LL, std::min(batch, 65535LL)));
  s.block[0] = static_cast<unsigned>(cfg.threads);
  s.block[1] = s.block[2] = 1;
  return s;
}

TransposeAnalysis analyze_transpose(const TransposeConfig& cfg) {
  cfg.validate();
  const tpl::TransposeGeom g = geom(cfg);
  const int warps = cfg.threads / 32;
  TransposeAnalysis a;
  for (int phase = 0; phase < 2; ++phase) {
    const bool store = phase == 0;
    const int iters = store ? tpl::transpose_load_iters(g) : tpl::transpose_store_iters(g);
    const int step = store ? tpl::transpose_store_width(g) : 1;  // cells per instruction
    for (int k = 0; k < (store ? g.vec : g.vec_out); k += step) {
      SmemInstrStats st;
      st.is_store = store;
      st.width = g.elem_bytes * step;
      st.name = std::string(store ? "sts." : "lds.") + std::to_string(8 * st.width) +
                (store ? " tile store k=" : " tile load  k=") + std::to_string(k);
      for (int it = 0; it < iters; ++it) {
        for (int w = 0; w < warps; ++w) {
          SmemInstruction ins;
          ins.op = store ? SmemOp::Sts : SmemOp::Lds;
          ins.width = st.width;
          for (int lane = 0; lane < 32; ++lane) {
            const int tid = w * 32 + lane;
            ins.addresses.push_back(store ? tpl::transpose_smem_store_addr(g, tid, it, k)
                                          : tpl::transpose_smem_load_addr(g, tid, it, k));
          }
          add_instruction_cost(st, analyze_bank(ins));
        }
      }
      (store ? a.store_wavefronts : a.load_wavefronts) += st.wavefronts;
      (store ? a.store_ideal : a.load_ideal) += st.ideal_wavefronts;
      (store ? a.store_instructions : a.load_instructions) += st.instructions;
      a.instrs.push_back(st);
    }
  }
  return a;
}

bool transpose_choose_swizzle(TransposeConfig& cfg) {
  TransposeConfig c = cfg;
  c.smem = SmemLayout::Swizzle;
  c.pad = 0;
  c.swizzle2 = SwizzleSpec{};
  const tpl::TransposeGeom gg = geom(c);
  const int tile_bits = log2i(static_cast<long long>(gg.tile_r) * gg.tile_c);
  // Candidates cheapest first: fewest XOR bits, then the smallest base, then the smallest shift.
  std::vector<SwizzleSpec> singles;
  for (int b = 1; b <= 5; ++b)
    for (int m = 0; m <= 3; ++m)
      for (int s = b; b + m + s <= tile_bits; ++s) singles.push_back(SwizzleSpec{b, m, s});
  struct Scored {
    SwizzleSpec sw;
    long long store_excess, load_excess;
  };
  std::vector<Scored> scored;
  for (const SwizzleSpec& sw : singles) {
    c.swizzle = sw;
    const TransposeAnalysis a = analyze_transpose(c);
    const long long se = a.store_wavefronts - a.store_ideal, le = a.load_wavefronts - a.load_ideal;
    if (se == 0 && le == 0) {
      cfg = c;
      return true;
    }
    scored.push_back({sw, se, le});
  }
  // No single swizzle serves both phases: compose one that clears the stores with one that clears
  // the loads (either order), cheapest total first.
  std::vector<std::pair<SwizzleSpec, SwizzleSpec>> pairs;
  for (const Scored& a : scored)
    for (const Scored& b : scored)
      if ((a.store_excess == 0 || a.load_excess == 0) && (b.store_excess == 0 || b.load_excess == 0) &&
          !(a.sw == b.sw) && (a.store_excess == 0) != (b.store_excess == 0))
        pairs.emplace_back(a.sw, b.sw);
  std::stable_sort(pairs.begin(), pairs.end(), [](const auto& x, const auto& y) {
    return x.first.b + x.second.b < y.first.b + y.second.b;
  });
  for (const auto& pr : pairs) {
    c.swizzle = pr.first;
    c.swizzle2 = pr.second;
    if (analyze_transpose(c).excess() == 0) {
      cfg = c;
      return true;
    }
  }
  return false;
}

bool transpose_choose_pad(TransposeConfig& cfg) {
  TransposeConfig c = cfg;
  c.smem = SmemLayout::Pad;
  c.swizzle = c.swizzle2 = SwizzleSpec{};
  for (int p = 1; p <= 32; ++p) {
    c.pad = p;
    if (c.smem_bytes() > kMaxStaticSmem) break;
    if (analyze_transpose(c).excess() == 0) {
      cfg = c;
      return true;
    }
  }
  return false;
}

std::vector<TransposeConfig> transpose_search_space(DType dtype, int max_vec_bytes, bool include_plain, bool explore) {
  const int eb = dtype_bytes(dtype);
  std::vector<TransposeConfig> out;
  const int tiles[][2] = {{32, 32}, {32, 64}, {64, 32}, {64, 64}, {128, 32}, {32, 128}};
  for (const auto& t : tiles)
    for (int threads : {128, 256, 512})
      for (int vec = 16 / eb; vec >= 1; vec /= 2) {
        if (vec * eb > max_vec_bytes) continue;
        TransposeConfig c;
        c.dtype = dtype;
        c.tile_rows = t[0];
        c.tile_cols = t[1];
        c.threads = threads;
        c.vec = vec;
        c.smem = SmemLayout::Plain;
        try {
          c.validate();
        } catch (const Error&) {
          continue;
        }
        // Keep 4..32 elements per thread: fewer leaves too little in flight, more spills registers.
        if (c.elems_per_thread() < 4 || c.elems_per_thread() > 32) continue;
        // Sub-word vectors only where the problem's alignment forces them.
        if (vec * eb < std::min(4, max_vec_bytes)) continue;
        std::vector<TransposeConfig> base;
        for (int pr = 0; pr <= (eb == 2 && vec % 2 == 0 ? 1 : 0); ++pr) {
          TransposeConfig shape = c;
          shape.pair = pr == 1;
          try {
            shape.validate();
          } catch (const Error&) {
            continue;  // the pair split does not fit this shape
          }
          if (include_plain) base.push_back(shape);
          TransposeConfig p = shape;
          if (transpose_choose_pad(p)) base.push_back(p);
          TransposeConfig s = shape;
          if (transpose_choose_swizzle(s)) base.push_back(s);
        }
        for (const TransposeConfig& b : base) {
          out.push_back(b);
          if (!explore && eb != 2) continue;
          // Streaming cache operators measured slower everywhere on the H100 (BENCHMARKS.md), so only
          // the other raster order is explored; cache=cs stays available by hand.
          TransposeConfig v = b;
          v.raster = 1;
          out.push_back(v);
        }
      }
  return out;
}

}  // namespace swz
