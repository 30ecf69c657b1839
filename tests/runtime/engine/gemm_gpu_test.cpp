// tests/runtime (GPU suite): the GEMM families end to end — every layout (A, B, C row/column-major) and
// dtype pair against an f64 host reference on random data: odd shapes, M/N/K = 1, tile +- 1, K = 0,
// batches, padded and odd leading dimensions, misaligned pointers, alpha/beta (beta = 0 over NaN C),
// guard regions and pitch gaps that must stay untouched, every config of several default spaces, and
// split-K (long K on few tiles, uneven and empty slices, batches past one launch, misaligned C).
#include <doctest/doctest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "swzjit/device.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "generator/families/gemm/gemm_splitk.hpp"

using namespace swz;

namespace {

constexpr std::size_t kGuard = 256;  // bytes before and after every matrix

// One scratch cache for the whole file: each config compiles once per run.
std::string temp_cache_dir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/swz_gemm_gpu_XXXXXX";
    const char* d = mkdtemp(tmpl);
    return std::string(d ? d : "");
  }();
  REQUIRE(!dir.empty());
  return dir;
}

// --- host elements: the library's own conversions (round to nearest even) ---
float load(DType t, const std::uint8_t* p) { return load_element(t, p); }
void store(DType t, std::uint8_t* p, float f) { store_element(t, p, f); }

struct Case {
  DType in = DType::F32, out = DType::F32;
  long long m = 0, n = 0, k = 0;
  MatrixOrder ao = MatrixOrder::RowMajor, bo = MatrixOrder::RowMajor, co = MatrixOrder::RowMajor;
  long long pad = 0;      // added to every leading dimension
  long long ld_multiple = 1;  // then each leading dimension is rounded up to a multiple of this
  long long batch = 1;
  int misalign = 0;       // elements every pointer is moved off its 256-byte boundary
  int c_misalign = -1;    // elements C alone is moved off it (-1: as misalign)
  float alpha = 1.0f, beta = 0.0f;
  const GemmConfig* config = nullptr;
  int samples = 0;        // > 0: verify this many random elements (big shapes) instead of all
  // Caller workspace: 0 none (the engine allocates), 1 Engine::gemm_workspace_size bytes, 2 half of it
  // (still at least the minimum for a batch: fewer matrices per split-K launch). Poisoned with 0xFF.
  int workspace = 0;
  std::string label() const {
    return to_string(in) + ">" + to_string(out) + " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
           std::to_string(k) + " A" + (ao == MatrixOrder::RowMajor ? "r" : "c") + " B" +
           (bo == MatrixOrder::RowMajor ? "r" : "c") + " C" + (co == MatrixOrder::RowMajor ? "r" : "c") + " pad " +
           std::to_string(pad) + " batch " + std::to_string(batch) + " misalign " + std::to_string(misalign) + " c_misalign " + std::to_string(c_misalign) +
           " alpha " + std::to_string(alpha) + " beta " + std::to_string(beta) +
           (config ? " config " + config->to_string() : std::string(" (engine's choice)")) +
           (workspace ? " workspace " + std::to_string(workspace) : std::string());
  }
};

struct HostMatrix {
  std::vector<std::uint8_t> bytes;  // guard + misalign + data + guard
  std::size_t offset = 0;           // where element 0 lives
};

// Relative Frobenius error of C (sampled or full); -1 when guards, gaps or poison were disturbed.
double run_case(Engine& engine, const Case& c, std::mt19937_64& rng) {
  GemmProblem p;
  p.dtype = c.in;
  p.out_dtype = c.out;
  p.m = c.m, p.n = c.n, p.k = c.k;
  p.a_order = c.ao, p.b_order = c.bo, p.c_order = c.co;
  p.batch = c.batch;
  const bool ar = c.ao == MatrixOrder::RowMajor, br = c.bo == MatrixOrder::RowMajor, cr = c.co == MatrixOrder::RowMajor;
  auto round_up = [&](long long v) { return (v + c.ld_multiple - 1) / c.ld_multiple * c.ld_multiple; };
  p.lda = round_up(std::max(1LL, ar ? c.k : c.m) + c.pad);
  p.ldb = round_up(std::max(1LL, br ? c.n : c.k) + c.pad);
  p.ldc = round_up(std::max(1LL, cr ? c.n : c.m) + c.pad);
  const GemmProblem r = p.resolved();
  const std::size_t ei = static_cast<std::size_t>(dtype_bytes(c.in)), eo = static_cast<std::size_t>(dtype_bytes(c.out));
  auto make = [&](long long elems, std::size_t eb, bool random_fill, std::uint8_t fill, int misalign) {
    HostMatrix h;
    h.offset = kGuard + static_cast<std::size_t>(misalign) * eb;
    h.bytes.resize(h.offset + static_cast<std::size_t>(elems) * eb + kGuard, fill);
    if (random_fill) {
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      for (std::size_t i = 0; i + eb <= h.bytes.size(); i += eb) store(c.out, &h.bytes[i], u(rng));  // C only
    }
    return h;
  };
  const long long a_elems = (r.batch - 1) * r.stride_a + (ar ? r.m : r.k) * r.lda;
  const long long b_elems = (r.batch - 1) * r.stride_b + (br ? r.k : r.n) * r.ldb;
  const long long c_elems = (r.batch - 1) * r.stride_c + (cr ? r.m : r.n) * r.ldc;
  HostMatrix ha = make(a_elems, ei, false, 0, c.misalign), hb = make(b_elems, ei, false, 0, c.misalign);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (std::size_t i = ha.offset; i + ei <= ha.bytes.size() - kGuard; i += ei) store(c.in, &ha.bytes[i], u(rng));
  for (std::size_t i = hb.offset; i + ei <= hb.bytes.size() - kGuard; i += ei) store(c.in, &hb.bytes[i], u(rng));
  // beta = 0: C is all-ones bytes (NaN) and must never be read; else random values, guards included.
  HostMatrix hc = make(c_elems, eo, c.beta != 0.0f, 0xFF, c.c_misalign >= 0 ? c.c_misalign : c.misalign);
  DeviceBuffer da(ha.bytes.size()), db(hb.bytes.size()), dc(hc.bytes.size());
  da.copy_from_host(ha.bytes.data(), ha.bytes.size());
  db.copy_from_host(hb.bytes.data(), hb.bytes.size());
  dc.copy_from_host(hc.bytes.data(), hc.bytes.size());
  Stream stream;
  if (c.workspace == 0) {
    engine.gemm(p, da.ptr() + ha.offset, db.ptr() + hb.offset, dc.ptr() + hc.offset, c.alpha, c.beta, stream.handle(),
                c.config);
  } else {
    const std::size_t preferred = engine.gemm_workspace_size(p, da.ptr() + ha.offset, db.ptr() + hb.offset, c.config);
    std::size_t bytes = c.workspace == 2 ? preferred / 2 : preferred;
    DeviceBuffer ws(std::max<std::size_t>(preferred, 1));
    std::vector<std::uint8_t> poison(ws.size(), 0xFF);
    ws.copy_from_host(poison.data(), poison.size());
    const auto call = [&] {
      engine.gemm(p, da.ptr() + ha.offset, db.ptr() + hb.offset, dc.ptr() + hc.offset, c.alpha, c.beta, stream.handle(),
                  c.config, GemmWorkspace{ws.ptr(), bytes});
    };
    if (c.workspace == 1) {
      call();
    } else {
      // Half the preferred size: it runs with fewer split-K matrices per launch, unless half is below the
      // minimum (staged copies plus one matrix), which is refused naming it: then the minimum itself runs.
      try {
        call();
      } catch (const Error& e) {
        const std::string what = e.what();
        const std::size_t at = what.find("needs at least ");
        REQUIRE_MESSAGE(at != std::string::npos, what);
        const std::size_t minimum = std::stoull(what.substr(at + 15));
        CHECK(minimum > bytes);
        CHECK(minimum <= preferred);
        bytes = minimum;
        call();
      }
    }
  }
  stream.synchronize();
  std::vector<std::uint8_t> out(hc.bytes.size());
  dc.copy_to_host(out.data(), out.size());

  auto a_at = [&](long long b, long long i, long long k) {
    return static_cast<double>(load(c.in, &ha.bytes[ha.offset + static_cast<std::size_t>(b * r.stride_a + (ar ? i * r.lda + k : k * r.lda + i)) * ei]));
  };
  auto b_at = [&](long long b, long long k, long long j) {
    return static_cast<double>(load(c.in, &hb.bytes[hb.offset + static_cast<std::size_t>(b * r.stride_b + (br ? k * r.ldb + j : j * r.ldb + k)) * ei]));
  };
  auto c_index = [&](long long b, long long i, long long j) {
    return hc.offset + static_cast<std::size_t>(b * r.stride_c + (cr ? i * r.ldc + j : j * r.ldc + i)) * eo;
  };
  // Everything that is not an element of C must be unchanged (guards, pitch gaps, batch gaps).
  std::vector<bool> is_elem(out.size(), false);
  for (long long b = 0; b < r.batch; ++b)
    for (long long i = 0; i < r.m; ++i)
      for (long long j = 0; j < r.n; ++j)
        for (std::size_t e = 0; e < eo; ++e) is_elem[c_index(b, i, j) + e] = true;
  for (std::size_t i = 0; i < out.size(); ++i)
    if (!is_elem[i] && out[i] != hc.bytes[i]) return -1.0;
  double num = 0, den = 0;
  auto check = [&](long long b, long long i, long long j) {
    double ref = 0;
    for (long long k = 0; k < r.k; ++k) ref += a_at(b, i, k) * b_at(b, k, j);
    ref *= c.alpha;
    if (c.beta != 0.0f) ref += static_cast<double>(c.beta) * load(c.out, &hc.bytes[c_index(b, i, j)]);
    const double got = load(c.out, &out[c_index(b, i, j)]);
    if (!std::isfinite(got)) num += 1e30;
    num += (got - ref) * (got - ref);
    den += ref * ref;
  };
  if (c.samples > 0) {
    for (int s = 0; s < c.samples; ++s)
      check(static_cast<long long>(rng() % r.batch), static_cast<long long>(rng() % r.m), static_cast<long long>(rng() % r.n));
    for (long long j = 0; j < r.n; j += std::max(1LL, r.n / 64)) check(0, r.m - 1, j);  // last row
  } else {
    for (long long b = 0; b < r.batch; ++b)
      for (long long i = 0; i < r.m; ++i)
        for (long long j = 0; j < r.n; ++j) check(b, i, j);
  }
  if (den == 0) return num == 0 ? 0.0 : 1.0;  // all-zero reference (K = 0, beta = 0): exact zeros wanted
  return std::sqrt(num / den);
}

double tolerance(DType in) { return in == DType::F32 ? 1e-5 : 1e-2; }

struct Pair {
  DType in, out;
};
const Pair kPairs[] = {{DType::F32, DType::F32}, {DType::F16, DType::F16}, {DType::BF16, DType::BF16},
                       {DType::F16, DType::F32}, {DType::BF16, DType::F32}};
const MatrixOrder kOrders[] = {MatrixOrder::RowMajor, MatrixOrder::ColMajor};

void check_case(Engine& engine, const Case& c, std::mt19937_64& rng) {
  const double err = run_case(engine, c, rng);
  CHECK_MESSAGE(err >= 0, c.label() << ": a guard region, pitch gap or batch gap was written");
  CHECK_MESSAGE(err < tolerance(c.in), c.label() << ": relative Frobenius error " << err);
}

}  // namespace

TEST_CASE("gemm: every dtype and layout matches the f64 reference on odd shapes, tails and tiny sizes") {
  Engine engine(EngineOptions{0, TunePolicy::Default, temp_cache_dir(), true});
  std::mt19937_64 rng(std::random_device{}());
  const long long shapes[][3] = {{1, 1, 1}, {33, 65, 17}, {1, 200, 70}, {150, 1, 70}, {70, 90, 1},
                                 {127, 129, 300}, {129, 257, 65}, {127, 255, 63}, {256, 256, 256}};
  for (const Pair& pr : kPairs)
    for (MatrixOrder ao : kOrders)
      for (MatrixOrder bo : kOrders)
        for (MatrixOrder co : kOrders)
          for (const auto& s : shapes) {
            Case c;
            c.in = pr.in, c.out = pr.out, c.m = s[0], c.n = s[1], c.k = s[2], c.ao = ao, c.bo = bo, c.co = co;
            c.alpha = 1.0f;
            c.beta = 0.0f;
            check_case(engine, c, rng);
          }
  CHECK(engine.gemm_launches() > 0);
}

TEST_CASE("gemm: long K, big shapes (sampled), batches, pitches, misaligned pointers, alpha/beta, K = 0") {
  Engine engine(EngineOptions{0, TunePolicy::Default, temp_cache_dir(), true});
  std::mt19937_64 rng(std::random_device{}());
  for (const Pair& pr : kPairs)
    for (MatrixOrder ao : kOrders)
      for (MatrixOrder bo : kOrders) {
        Case c;
        c.in = pr.in, c.out = pr.out, c.ao = ao, c.bo = bo;
        c.m = 127, c.n = 129, c.k = pr.in == DType::F32 ? 4100 : 1100;  // f16 inputs: shorter K, same tails
        c.samples = 600;
        check_case(engine, c, rng);
        c = Case{};
        c.in = pr.in, c.out = pr.out, c.ao = ao, c.bo = bo, c.co = MatrixOrder::ColMajor;
        c.m = 70, c.n = 50, c.k = 40, c.batch = 3, c.pad = 5, c.alpha = 1.5f, c.beta = 0.5f;
        check_case(engine, c, rng);  // batched, odd pitches, alpha/beta
        c.batch = 1, c.misalign = 1, c.pad = 3, c.m = 65, c.n = 66, c.k = 67;
        check_case(engine, c, rng);  // misaligned pointers: a narrower-vector config, never a fault
        c.misalign = 0, c.pad = 1, c.beta = 0.0f, c.alpha = -2.0f;
        check_case(engine, c, rng);  // odd leading dimensions, beta = 0 over NaN
        c.pad = 0, c.k = 0, c.beta = 0.25f;
        check_case(engine, c, rng);  // K = 0: C = beta * C
        c.beta = 0.0f;
        check_case(engine, c, rng);  // K = 0, beta = 0: zeros over NaN
      }
  for (const Pair& pr : {Pair{DType::F32, DType::F32}, Pair{DType::F16, DType::F16}, Pair{DType::BF16, DType::F32}}) {
    Case c;
    c.in = pr.in, c.out = pr.out, c.m = 3000, c.n = 5000, c.k = 700, c.samples = 3000, c.beta = 1.0f;
    c.bo = pr.in == DType::F32 ? MatrixOrder::RowMajor : MatrixOrder::ColMajor;
    check_case(engine, c, rng);
  }
}

TEST_CASE("gemm: every config of several default spaces is correct on a tile-edge shape") {
  Engine engine(EngineOptions{0, TunePolicy::Default, temp_cache_dir(), true});
  std::mt19937_64 rng(std::random_device{}());
  struct Space {
    Pair pair;
    MatrixOrder ao, bo;
    int align;
  } spaces[] = {
      {{DType::F32, DType::F32}, MatrixOrder::RowMajor, MatrixOrder::RowMajor, 16},
      {{DType::F32, DType::F32}, MatrixOrder::RowMajor, MatrixOrder::ColMajor, 16},
      {{DType::F32, DType::F32}, MatrixOrder::ColMajor, MatrixOrder::ColMajor, 4},
      {{DType::F16, DType::F16}, MatrixOrder::RowMajor, MatrixOrder::ColMajor, 16},
      {{DType::BF16, DType::F32}, MatrixOrder::ColMajor, MatrixOrder::RowMajor, 16},
      {{DType::F16, DType::F32}, MatrixOrder::ColMajor, MatrixOrder::ColMajor, 4},
      {{DType::BF16, DType::BF16}, MatrixOrder::RowMajor, MatrixOrder::RowMajor, 2},
      {{DType::F16, DType::F16}, MatrixOrder::RowMajor, MatrixOrder::RowMajor, 8},  // 64x64 warp tiles, 8-byte copies
  };
  for (const Space& s : spaces) {
    GemmProblem probe;
    probe.dtype = s.pair.in, probe.out_dtype = s.pair.out, probe.a_order = s.ao, probe.b_order = s.bo;
    const std::vector<GemmConfig> space = gemm_search_space(s.pair.in, s.pair.out, probe.kernel_layout(), s.align);
    REQUIRE(!space.empty());
    // Compile in parallel first (the cache makes the launches below load only).
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < 8; ++t)
      pool.emplace_back([&, t] {
        for (std::size_t i = t; i < space.size(); i += 8) engine.compile_gemm(space[i]);
      });
    for (auto& th : pool) th.join();
    for (const GemmConfig& cfg : space) {
      Case c;
      c.in = s.pair.in, c.out = s.pair.out, c.ao = s.ao, c.bo = s.bo, c.config = &cfg;
      c.m = 257, c.n = 255, c.k = 97, c.alpha = 0.75f, c.beta = 0.5f;
      c.ld_multiple = 8;  // tails on every dimension, but pitches aligned so every config of the space can run
      check_case(engine, c, rng);
    }
  }
}

TEST_CASE("gemm staging: narrow operands are copied into 16-byte pitches and full-width kernels run on them") {
  Engine engine(EngineOptions{0, TunePolicy::Default, temp_cache_dir(), true});
  std::mt19937_64 rng(std::random_device{}());
  // The engine's choice for odd pitches is a full-width config (the staged problem's).
  {
    GemmProblem p;
    p.dtype = DType::F16, p.out_dtype = DType::F16, p.m = 127, p.n = 129, p.k = 4096;  // B's pitch (129) is odd
    DeviceBuffer a(1 << 21), b(1 << 21);
    CHECK(engine.gemm_config(p, a.ptr(), b.ptr()).vec_bytes() == 16);
    CHECK(engine.gemm_config(p, a.ptr() + 2, b.ptr()).vec_bytes() == 16);  // misaligned A: staged too
  }
  // Explicit 16-byte configs on odd pitches, misaligned pointers and batches with odd strides, every
  // order, three dtype pairs: staged, right, guards and gaps untouched.
  for (const Pair& pr : {Pair{DType::F32, DType::F32}, Pair{DType::F16, DType::F16}, Pair{DType::BF16, DType::F32}})
    for (MatrixOrder ao : kOrders)
      for (MatrixOrder bo : kOrders) {
        Case c;
        c.in = pr.in, c.out = pr.out, c.ao = ao, c.bo = bo, c.m = 77, c.n = 93, c.k = 301, c.batch = 3, c.pad = 2;
        c.alpha = 0.5f, c.beta = 0.25f;
        GemmProblem probe;
        probe.dtype = c.in, probe.out_dtype = c.out, probe.a_order = ao, probe.b_order = bo;
        const std::vector<GemmConfig> space = gemm_search_space(c.in, c.out, probe.kernel_layout(), 16);
        const GemmConfig cfg = space.back();  // a small-tile (split-K) config
        const GemmConfig big = space.front();
        c.config = &cfg;
        check_case(engine, c, rng);
        c.config = &big;
        c.misalign = 1, c.batch = 1, c.beta = 0.0f;
        check_case(engine, c, rng);
        c.config = nullptr;  // the engine's choice, staged
        check_case(engine, c, rng);
      }
}

TEST_CASE("gemm: refusals and no-ops") {
  Engine engine(EngineOptions{0, TunePolicy::Default, temp_cache_dir(), true});
  DeviceBuffer a(1 << 16), b(1 << 16), c(1 << 16);
  c.memset8(0xFF);
  GemmProblem p;
  p.dtype = DType::F32;
  p.out_dtype = DType::F32;
  p.m = 16, p.n = 16, p.k = 16;
  // A 16-byte-vector config on a 4-byte-aligned pointer is refused with the width that would fit when
  // staging is off; with staging (the default) A is copied into aligned scratch and the config runs.
  const GemmConfig cfg = gemm_search_space(DType::F32, DType::F32, GemmLayout::NN, 16).front();
  EngineOptions no_staging{0, TunePolicy::Default, temp_cache_dir(), true};
  no_staging.stage_narrow_operands = false;
  Engine strict(no_staging);
  try {
    strict.gemm(p, a.ptr() + 4, b.ptr(), c.ptr(), 1, 0, nullptr, &cfg);
    FAIL("expected InvalidArgument");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidArgument);
    CHECK(std::string(e.what()).find("vec=1") != std::string::npos);
  }
  {
    DeviceBuffer c2(1 << 16);
    engine.gemm(p, a.ptr() + 4, b.ptr(), c2.ptr(), 1, 0, nullptr, &cfg);
    synchronize(nullptr);
  }
  // Staging cannot help an operand that is already 8-byte aligned: a 16-byte config on it is refused.
  try {
    engine.gemm(p, a.ptr() + 8, b.ptr(), c.ptr(), 1, 0, nullptr, &cfg);
    FAIL("expected InvalidArgument");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidArgument);
    CHECK(std::string(e.what()).find("vec=2") != std::string::npos);
  }
  // A config for another layout or dtype is refused.
  p.a_order = MatrixOrder::ColMajor;
  CHECK_THROWS_AS(engine.gemm(p, a.ptr(), b.ptr(), c.ptr(), 1, 0, nullptr, &cfg), Error);
  // Unsupported dtype pairs say what is supported.
  p.out_dtype = DType::F16;
  try {
    engine.gemm(p, a.ptr(), b.ptr(), c.ptr(), 1, 0, nullptr);
    FAIL("expected Unsupported");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK(std::string(e.what()).find("supported") != std::string::npos);
  }
  // M = 0 or N = 0 does nothing: C keeps its poison, nothing is launched.
  const std::uint64_t before = engine.gemm_launches();
  for (auto mn : {std::pair<long long, long long>{0, 5}, {5, 0}}) {
    GemmProblem z;
    z.m = mn.first, z.n = mn.second, z.k = 7;
    engine.gemm(z, a.ptr(), b.ptr(), c.ptr(), 1, 1, nullptr);
  }
  synchronize(nullptr);
  CHECK(engine.gemm_launches() == before);
  std::vector<std::uint8_t> h(c.size());
  c.copy_to_host(h.data(), h.size());
  for (auto byte : h) CHECK(byte == 0xFF);
  // K = 0 with A and B null (a framework's empty tensors have no memory), narrow pitches included:
  // C = beta * C in every dtype and C order; a null C, or a null A with K > 0, is refused.
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (MatrixOrder co : {MatrixOrder::RowMajor, MatrixOrder::ColMajor}) {
      INFO(to_string(t), co == MatrixOrder::RowMajor ? " row-major C" : " column-major C");
      GemmProblem z;
      z.dtype = t;
      z.out_dtype = DType::F32;
      z.m = 5, z.n = 3, z.k = 0, z.lda = 1, z.ldb = 3, z.c_order = co;
      std::vector<float> ones(15, 1.0f), got(15, 0.0f);
      DeviceBuffer cz(ones.size() * sizeof(float));
      cz.copy_from_host(ones.data(), ones.size() * sizeof(float));
      engine.gemm(z, 0, 0, cz.ptr(), 1, 3, nullptr);
      synchronize(nullptr);
      cz.copy_to_host(got.data(), got.size() * sizeof(float));
      for (float v : got) CHECK(v == 3.0f);
      CHECK_THROWS_AS(engine.gemm(z, 0, 0, 0, 1, 3, nullptr), Error);
      z.k = 2;
      CHECK_THROWS_AS(engine.gemm(z, 0, b.ptr(), cz.ptr(), 1, 3, nullptr), Error);
    }
}

namespace {

// The split-K config of the default space for the case's kernel layout (C's order included) and
// alignment, with `split` slices (other split counts: the space's split config with its field changed).
GemmConfig split_config(const Case& c, int split, int align = 16) {
  GemmProblem probe;
  probe.dtype = c.in, probe.out_dtype = c.out, probe.a_order = c.ao, probe.b_order = c.bo, probe.c_order = c.co;
  for (const GemmConfig& g : gemm_search_space(c.in, c.out, probe.kernel_layout(), align))
    if (gemm_k_splits(g) > 1) {
      GemmConfig s = g;
      (g.kind == GemmKernelKind::Sgemm ? s.sgemm.split : s.hgemm.split) = split;
      s.validate();
      return s;
    }
  FAIL("no split-K config in the space of " << c.label());
  return GemmConfig{};
}

}  // namespace

TEST_CASE("gemm split-K: long K on few tiles, uneven and empty slices, batches, beta, misaligned C, K = 0") {
  Engine engine(EngineOptions{0, TunePolicy::Default, temp_cache_dir(), true});
  std::mt19937_64 rng(std::random_device{}());
  // The benchmark shape (6 tiles of 64x64, K = 4100: the 16th slice is empty, the 15th short) in every
  // A/B order, C row- and column-major, f16 > f16; bf16 > f32 in two orders with 8 and 16 slices.
  for (MatrixOrder ao : kOrders)
    for (MatrixOrder bo : kOrders)
      for (MatrixOrder co : kOrders)
        for (int ldm : {1, 8}) {
          // Packed odd pitches (2-byte copies) and pitches rounded up to 8 elements (16-byte copies).
          Case c;
          c.in = DType::F16, c.out = DType::F16, c.ao = ao, c.bo = bo, c.co = co;
          c.m = 127, c.n = 129, c.k = 4100, c.ld_multiple = ldm;
          const GemmConfig cfg = split_config(c, 16, ldm == 1 ? 2 : 16);
          c.config = &cfg;
          check_case(engine, c, rng);
        }
  for (MatrixOrder ao : kOrders)
    for (int split : {8, 16}) {
      Case c;
      c.in = DType::BF16, c.out = DType::F32, c.ao = ao, c.bo = MatrixOrder::ColMajor;
      c.m = 127, c.n = 129, c.k = 4100;
      const GemmConfig cfg = split_config(c, split, 2);  // packed odd pitches
      c.config = &cfg;
      check_case(engine, c, rng);
    }
  // The engine's own choice for the benchmark shape splits K, and is right.
  {
    GemmProblem p;
    p.dtype = DType::F16, p.out_dtype = DType::F16, p.m = 127, p.n = 129, p.k = 4100;
    p.b_order = MatrixOrder::ColMajor;
    CHECK(gemm_k_splits(default_gemm_config(p, 16)) > 1);
    Case c;
    c.in = DType::F16, c.out = DType::F16, c.bo = MatrixOrder::ColMajor, c.m = 127, c.n = 129, c.k = 4100;
    check_case(engine, c, rng);  // config = nullptr: the engine's choice
  }
  // Slices that do not divide K: 3 slices of 352 (the last 296); 64 slices, of which only some hold k.
  for (const auto& sk : {std::pair<int, long long>{3, 1000}, {5, 1000}, {64, 1000}, {16, 40}, {16, 1}, {4, 33}}) {
    Case c;
    c.in = DType::F16, c.out = DType::F16, c.bo = MatrixOrder::ColMajor, c.m = 77, c.n = 93, c.k = sk.second;
    c.ld_multiple = 8;  // 16-byte copies whatever K is
    const GemmConfig cfg = split_config(c, sk.first);
    c.config = &cfg;
    CAPTURE(sk.first);
    check_case(engine, c, rng);
  }
  // Batches with odd pitches, column-major C, alpha and beta; beta = 0 over NaN C (run_case poisons C
  // with NaN whenever beta = 0, so a reduction that read C would fail).
  for (const Pair& pr : {Pair{DType::F16, DType::F16}, Pair{DType::BF16, DType::BF16}, Pair{DType::F16, DType::F32}}) {
    Case c;
    c.in = pr.in, c.out = pr.out, c.co = MatrixOrder::ColMajor, c.m = 70, c.n = 50, c.k = 600, c.batch = 3, c.pad = 5;
    c.alpha = 1.5f, c.beta = 0.5f, c.ld_multiple = 1;
    const GemmConfig narrow = split_config(c, 4, 2);  // odd pitches: 2-byte copies
    c.config = &narrow;
    check_case(engine, c, rng);
    c.beta = 0.0f, c.alpha = -2.0f;
    check_case(engine, c, rng);
    // C alone misaligned (A and B keep 16-byte copies): the reduction's vector stores must step aside.
    c.pad = 0, c.ld_multiple = 8, c.c_misalign = 1, c.beta = 0.25f;
    const GemmConfig wide = split_config(c, 8);
    c.config = &wide;
    check_case(engine, c, rng);
    // Row-major C with ldc = n = 50: row starts drift through the alignments; beta = 0.
    c.co = MatrixOrder::RowMajor, c.bo = MatrixOrder::ColMajor, c.ld_multiple = 1, c.c_misalign = 3, c.beta = 0.0f;
    const GemmConfig wide_row = split_config(c, 8);
    c.config = &wide_row;
    check_case(engine, c, rng);
  }
  // K = 0: C = beta * C with no products (no workspace); beta = 0 gives zeros over NaN.
  {
    Case c;
    c.in = DType::F16, c.out = DType::F16, c.m = 65, c.n = 66, c.k = 0, c.beta = 0.25f, c.ld_multiple = 8;
    const GemmConfig cfg = split_config(c, 8);
    c.config = &cfg;
    check_case(engine, c, rng);
    c.beta = 0.0f;
    check_case(engine, c, rng);
  }
  // A batch past one launch's grid (65535 / 16 = 4095 matrices): three launches sharing the workspace.
  {
    Case c;
    c.in = DType::F16, c.out = DType::F16, c.m = 8, c.n = 8, c.k = 64, c.batch = 9000, c.beta = 0.5f;
    const GemmConfig cfg = split_config(c, 16);
    c.config = &cfg;
    c.samples = 4000;
    check_case(engine, c, rng);
  }
  // SGEMM split-K: the benchmark shape in every A/B order with packed odd pitches (1-float loads) and
  // 16-byte pitches, uneven and empty slices, a batch with alpha/beta, beta = 0 over NaN, K = 0, and the
  // engine's own choice.
  for (MatrixOrder ao : kOrders)
    for (MatrixOrder bo : kOrders)
      for (int ldm : {1, 4}) {
        Case c;
        c.in = DType::F32, c.out = DType::F32, c.ao = ao, c.bo = bo, c.co = ldm == 1 ? MatrixOrder::ColMajor : MatrixOrder::RowMajor;
        c.m = 127, c.n = 129, c.k = 4100, c.ld_multiple = ldm;
        const GemmConfig cfg = split_config(c, ldm == 1 ? 32 : 16, ldm == 1 ? 4 : 16);
        c.config = &cfg;
        check_case(engine, c, rng);
      }
  for (const auto& sk : {std::pair<int, long long>{5, 1000}, {64, 1000}, {16, 40}, {4, 1}}) {
    Case c;
    c.in = DType::F32, c.out = DType::F32, c.bo = MatrixOrder::ColMajor, c.m = 77, c.n = 93, c.k = sk.second;
    c.ld_multiple = 4;
    const GemmConfig cfg = split_config(c, sk.first);
    c.config = &cfg;
    CAPTURE(sk.first);
    check_case(engine, c, rng);
  }
  {
    Case c;
    c.in = DType::F32, c.out = DType::F32, c.m = 70, c.n = 50, c.k = 600, c.batch = 3, c.pad = 5, c.ld_multiple = 1;
    c.alpha = 1.5f, c.beta = 0.5f;
    const GemmConfig cfg = split_config(c, 8, 4);
    c.config = &cfg;
    check_case(engine, c, rng);
    c.beta = 0.0f;
    check_case(engine, c, rng);
    c.k = 0, c.beta = 0.25f;
    check_case(engine, c, rng);
  }
  {
    GemmProblem p;
    p.dtype = DType::F32, p.out_dtype = DType::F32, p.m = 127, p.n = 129, p.k = 4100;
    CHECK(gemm_k_splits(default_gemm_config(p, 16)) > 1);
    Case c;
    c.in = DType::F32, c.out = DType::F32, c.m = 127, c.n = 129, c.k = 4100;
    check_case(engine, c, rng);  // config = nullptr: the engine's choice
  }
}

TEST_CASE("gemm workspace: the size query, a caller's workspace for staging and split-K, and its refusals") {
  Engine engine(EngineOptions{0, TunePolicy::Default, temp_cache_dir(), true});
  std::mt19937_64 rng(std::random_device{}());
  GemmProblem probe;
  probe.dtype = DType::F16, probe.out_dtype = DType::F16, probe.m = 77, probe.n = 93, probe.k = 3001;
  probe.b_order = MatrixOrder::ColMajor;
  // Split-K on a batch of 5 (several matrices per launch, then fewer with half the size), odd pitches
  // (both operands staged), beta over random C and beta = 0 over NaN.
  for (int mode : {1, 2})
    for (int ldm : {8, 1}) {
      Case c;
      c.in = DType::F16, c.out = DType::F16, c.bo = MatrixOrder::ColMajor, c.m = 77, c.n = 93, c.k = 3001;
      c.batch = 5, c.ld_multiple = ldm, c.alpha = 0.75f, c.beta = ldm == 8 ? 0.5f : 0.0f, c.workspace = mode;
      const GemmConfig cfg = split_config(c, 8);
      c.config = &cfg;
      check_case(engine, c, rng);
      c.config = nullptr;  // the engine's choice (staged when ldm = 1)
      check_case(engine, c, rng);
    }
  // The size: 0 for an unsplit, aligned call; the split-K partials for a split one; the staged copies on top.
  DeviceBuffer a(1 << 24), b(1 << 24), c(1 << 24);
  GemmProblem p = probe;
  p.k = 4096;
  const std::vector<GemmConfig> space = gemm_search_space(p.dtype, p.out_dtype, p.kernel_layout(), 16);
  const GemmConfig unsplit = space.front();
  REQUIRE(gemm_k_splits(unsplit) == 1);
  CHECK(engine.gemm_workspace_size(p, a.ptr(), b.ptr(), &unsplit) == 0);
  Case sc;
  sc.in = DType::F16, sc.out = DType::F16, sc.bo = MatrixOrder::ColMajor;
  const GemmConfig split8 = split_config(sc, 8);
  const std::size_t split_bytes = engine.gemm_workspace_size(p, a.ptr(), b.ptr(), &split8);
  CHECK(split_bytes >= std::size_t(8) * 77 * 93 * sizeof(float));
  CHECK(engine.gemm_workspace_size(p, a.ptr() + 2, b.ptr(), &split8) > split_bytes);  // A misaligned: staged
  // Refusals: too small (names both sizes), and a pointer off 256 bytes.
  Stream stream;
  auto error_of = [&](const GemmWorkspace& ws) -> std::string {
    try {
      engine.gemm(p, a.ptr(), b.ptr(), c.ptr(), 1.0f, 0.0f, stream.handle(), &split8, ws);
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::InvalidArgument);
      return e.what();
    }
    return "no error";
  };
  DeviceBuffer ws(split_bytes + 512);
  CHECK(error_of(GemmWorkspace{ws.ptr(), 1024}).find("too small") != std::string::npos);
  CHECK(error_of(GemmWorkspace{ws.ptr() + 16, split_bytes}).find("256-byte aligned") != std::string::npos);
  CHECK(error_of(GemmWorkspace{ws.ptr(), split_bytes}) == "no error");
  stream.synchronize();
}

TEST_CASE("gemm on sm_90: the Hopper kernel runs what it takes, the mma.sync family the rest, both exact") {
  if (device_info(0).arch() != "sm_90") {
    MESSAGE("skipped: device 0 is " << device_info(0).arch() << ", the Hopper GEMM variant needs sm_90");
    return;
  }
  std::mt19937_64 rng(std::random_device{}());
  const auto ran_sm90 = [](Engine& e) {
    for (const KernelListing& k : e.cache().list_kernels())
      if (k.fields.name_expression.find("gemm_sm90") != std::string::npos) return true;
    return false;
  };
  // f16 and bf16 (C either order, f32 out too) over the four layouts in turn, tile-edge shapes with at least
  // half the SMs' tiles.
  int layout = 0;
  for (const Pair& pr : {Pair{DType::F16, DType::F16}, Pair{DType::BF16, DType::BF16}, Pair{DType::F16, DType::F32}})
    for (MatrixOrder co : kOrders) {
      layout = (layout + 1) % 4;
      Engine engine(EngineOptions{0, TunePolicy::Default, temp_cache_dir(), true});
      Case c;
      c.in = pr.in, c.out = pr.out, c.co = co;
      c.ao = (layout & 1) ? MatrixOrder::ColMajor : MatrixOrder::RowMajor;
      c.bo = (layout & 2) ? MatrixOrder::RowMajor : MatrixOrder::ColMajor;
      c.m = 1000, c.n = 1300, c.k = 1000, c.ld_multiple = 8, c.alpha = 0.75f, c.beta = co == MatrixOrder::RowMajor ? 0.5f : 0.0f;
      c.samples = 3000;
      check_case(engine, c, rng);
      CHECK_MESSAGE(ran_sm90(engine), c.label() << ": expected the Hopper kernel");
      c.workspace = 1;  // its workspace size is 0, and a caller's workspace changes nothing
      check_case(engine, c, rng);
    }
  // Skinny M against a long K: the Hopper kernel cuts K into slices (f32 partials in the engine's or the
  // caller's NaN-poisoned workspace, then the reduction applies alpha and beta), C either order.
  for (const Pair& pr : {Pair{DType::F16, DType::F16}, Pair{DType::BF16, DType::F32}})
    for (MatrixOrder co : kOrders) {
      Engine engine(EngineOptions{0, TunePolicy::Default, temp_cache_dir(), true});
      Case c;
      c.in = pr.in, c.out = pr.out, c.co = co;
      c.m = co == MatrixOrder::RowMajor ? 16 : 4096, c.n = co == MatrixOrder::RowMajor ? 4096 : 100, c.k = 4104;
      c.ld_multiple = 8, c.alpha = 0.5f, c.beta = 0.25f, c.samples = 2000;
      check_case(engine, c, rng);
      CHECK_MESSAGE(ran_sm90(engine), c.label() << ": expected the Hopper kernel");
      c.workspace = 1;
      c.beta = 0.0f;
      check_case(engine, c, rng);
    }
  // Batches (strides of 16-byte multiples) run the Hopper kernel too, one launch for all matrices.
  for (const Pair& pr : {Pair{DType::F16, DType::F16}, Pair{DType::BF16, DType::F32}}) {
    Engine engine(EngineOptions{0, TunePolicy::Default, temp_cache_dir(), true});
    Case c;
    c.in = pr.in, c.out = pr.out, c.bo = MatrixOrder::RowMajor;
    c.m = 300, c.n = 520, c.k = 1000, c.batch = 5, c.ld_multiple = 8, c.alpha = 1.5f, c.beta = 0.5f;
    check_case(engine, c, rng);
    CHECK_MESSAGE(ran_sm90(engine), c.label() << ": expected the Hopper kernel");
    c.m = 16, c.n = 1024, c.k = 4096, c.batch = 2, c.beta = 0.0f;  // few tiles: split-K over a batch
    c.samples = 2000;
    check_case(engine, c, rng);
  }
  // What it does not take runs on the mma.sync family: a misaligned A, few tiles, the option off.
  struct Other {
    const char* what;
    MatrixOrder bo;
    int misalign;
    long long m, batch;
    bool hopper;
  };
  for (const Other& o : {Other{"misaligned", MatrixOrder::ColMajor, 1, 1000, 1, true},
                         Other{"few tiles", MatrixOrder::ColMajor, 0, 64, 1, true},
                         Other{"option off", MatrixOrder::ColMajor, 0, 1000, 1, false}}) {
    char tmpl[] = "/tmp/swz_gemm_gpu_other_XXXXXX";  // its own cache: the kernels it lists are its own
    const char* dir = mkdtemp(tmpl);
    REQUIRE(dir != nullptr);
    EngineOptions eo{0, TunePolicy::Default, dir, true};
    eo.hopper_gemm = o.hopper;
    Engine engine(eo);
    Case c;
    c.in = DType::F16, c.out = DType::F16, c.bo = o.bo, c.m = o.m, c.n = 1300, c.k = 1000, c.ld_multiple = 8;
    c.misalign = o.misalign, c.batch = o.batch, c.samples = 2000;
    check_case(engine, c, rng);
    CHECK_MESSAGE(!ran_sm90(engine), std::string(o.what) << ": expected the mma.sync family");
  }
}
