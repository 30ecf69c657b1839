// tests/runtime/engine (GPU suite): families whose launches are a program (FamilyProgram) through the generic
// family path: the mma.sync GEMM families sgemm and hgemm on any GPU (default configs, batches, beta, split-K
// into the engine's scratch or a lent workspace), and the built-in gemm_sm90 on an sm_90 device:
// Engine::run_family with explicit configs of every launch plan (one kernel; the kernel and the split-K reduction as a programmatic dependent; K
// slices summed in the kernel or in a cluster; the last wave in slices; short A stages), the engine's scratch
// or a caller's workspace, compared element by element with the family's declarative f64 reference
// (run_family_reference) on fresh random data, C poisoned with NaN (beta = 0 must not read it) inside
// guards. Skips visibly elsewhere.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "generator/families/gemm/gemm_family.hpp"
#include "generator/families/gemm/gemm_splitk.hpp"
#include "generator/families/gemm_sm90/gemm_sm90_family.hpp"
#include "swzjit/device.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"
#include "tests/runtime/cache/cache_test_util.hpp"

using namespace swz;

namespace {

std::uint16_t to_bf16(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  return static_cast<std::uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

float from_f32_bits(std::uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

constexpr std::size_t kGuard = 4096;  // bytes before and after C, 0x5A

struct Case {
  const char* what;
  long long m, n, k;
  const char* config;  // family config text ("" = the family's default for the problem)
  bool workspace;      // lend a FamilyWorkspace instead of the engine's pool
  float beta;
  long long batch = 1;
};

// One run of `c` through run_family (twice, as a repeated call) compared element by element with the
// family's f64 reference: A and B of `in` (f32 or bf16) random in [-1, 1], C f32 inside guards, NaN where
// beta = 0 (must not be read), else random; the frame is NT with packed pitches and batch strides.
void check_case(Engine& engine, const Family& f, const Case& c, DType in, std::mt19937_64& rng, double tolerance) {
  CAPTURE(c.what);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  GemmProblem p;
  p.dtype = in;
  p.out_dtype = DType::F32;
  p.m = c.m, p.n = c.n, p.k = c.k;
  p.batch = c.batch;
  p.a_order = MatrixOrder::RowMajor, p.b_order = MatrixOrder::ColMajor;
  p = p.resolved();
  const FamilyValues v = detail::gemm_family_problem(p, 16);
  const std::vector<long long> elems = f.buffer_elements(v);
  const std::size_t eb = static_cast<std::size_t>(dtype_bytes(in));
  const auto fill = [&](long long n) {
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(n) * eb);
    for (long long i = 0; i < n; ++i) {
      const float x = u(rng);
      if (in == DType::F32) std::memcpy(bytes.data() + 4 * i, &x, 4);
      else {
        const std::uint16_t h = to_bf16(x);
        std::memcpy(bytes.data() + 2 * i, &h, 2);
      }
    }
    DeviceBuffer d(bytes.size());
    d.copy_from_host(bytes.data(), bytes.size());
    return d;
  };
  DeviceBuffer da = fill(elems[0]), db = fill(elems[1]);
  std::vector<float> hc0(static_cast<std::size_t>(elems[2]));
  for (auto& x : hc0) x = u(rng);
  const std::size_t cbytes = hc0.size() * 4;
  DeviceBuffer dc(cbytes + 2 * kGuard), dr(cbytes);
  // C: guards of 0x5A around it; its elements NaN (beta = 0) or the initial values (beta != 0).
  std::vector<std::uint8_t> init(cbytes + 2 * kGuard, 0x5A);
  if (c.beta == 0.0f) std::memset(init.data() + kGuard, 0xFF, cbytes);
  else std::memcpy(init.data() + kGuard, hc0.data(), cbytes);
  dc.copy_from_host(init.data(), init.size());
  dr.copy_from_host(init.data() + kGuard, cbytes);
  const std::map<std::string, DevicePtr> bufs{{"a", da.ptr()}, {"b", db.ptr()}, {"c", dc.ptr() + kGuard}};
  const std::map<std::string, DevicePtr> ref{{"a", da.ptr()}, {"b", db.ptr()}, {"c", dr.ptr()}};
  const FamilyScalars scalars{{"alpha", 1.5}, {"beta", c.beta}};
  FamilyValues cfg = *c.config ? f.parse_config(c.config) : engine.family_config(f, v);
  REQUIRE_MESSAGE(f.check_config(cfg, with_sm_count(v, device_info(0).sm_count)) == "", f.config_text(cfg));
  const std::size_t ws_bytes = engine.family_workspace_size(f, v, bufs, &cfg);
  std::unique_ptr<DeviceBuffer> ws;
  FamilyWorkspace lent;
  if (c.workspace) {
    REQUIRE(ws_bytes > 0);
    ws = std::make_unique<DeviceBuffer>(ws_bytes);
    ws->memset8(0xFF, nullptr);  // NaN partials: a slice read before written fails
    lent = FamilyWorkspace{ws->ptr(), ws_bytes};
  }
  engine.run_family(f, v, bufs, scalars, nullptr, &cfg, lent);
  engine.run_family(f, v, bufs, scalars, nullptr, &cfg, lent);  // twice: counters in scratch start over
  if (c.beta != 0.0f) {  // the second run read the first's C: start over from the initial values for one run
    dc.copy_from_host(init.data(), init.size());
    engine.run_family(f, v, bufs, scalars, nullptr, &cfg, lent);
  }
  engine.run_family_reference(f, v, ref, scalars, nullptr);
  synchronize(nullptr);
  std::vector<std::uint8_t> got(init.size());
  dc.copy_to_host(got.data(), got.size());
  std::vector<float> want(hc0.size());
  dr.copy_to_host(want.data(), cbytes);
  for (std::size_t i = 0; i < kGuard; ++i) {
    REQUIRE(got[i] == 0x5A);
    REQUIRE(got[kGuard + cbytes + i] == 0x5A);
  }
  double num = 0, den = 0;
  long long nonfinite = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, got.data() + kGuard + 4 * i, 4);
    const double g = from_f32_bits(bits), w = want[i];
    if (!std::isfinite(g)) {
      ++nonfinite;
      continue;
    }
    num += (g - w) * (g - w);
    den += w * w;
  }
  CHECK(nonfinite == 0);
  const double rel = std::sqrt(num / (den > 0 ? den : 1));
  CHECK_MESSAGE(rel < tolerance, f.config_text(cfg) << ": relative error " << rel);
}

}  // namespace

TEST_CASE("family program: gemm_sm90 through run_family, every launch plan, against its f64 reference") {
  std::string why;
  if (!driver_available(&why) || device_info(0).arch() != "sm_90") {
    MESSAGE("skipped: " << (why.empty() ? "device 0 is " + device_info(0).arch() + ", gemm_sm90 needs sm_90" : why));
    return;
  }
  const std::shared_ptr<const Family> f = detail::gemm_sm90_builtin();
  const swz_cache_test::TempDir dir;
  Engine engine(EngineOptions{0, TunePolicy::Default, dir.path(), true});
  std::mt19937_64 rng(std::random_device{}());
  const Case cases[] = {
      {"default, 128 x 256 tiles", 1000, 1300, 1000, "", false, 0.0f},
      {"beta != 0, register epilogue", 1000, 1300, 1000, "", false, 0.5f},
      {"split-K: the reduction kernel as a dependent launch",
       16, 1024, 4104, "BN=128,STAGES=6,RASTER=8,PERSISTENT=1,INFLIGHT=1,CLUSTER=1,SPLITS=8,REDUCE=0,EPILOGUE=1,TAIL=1,AROWS=128",
       false, 0.25f},
      {"split-K into a lent workspace",
       16, 1024, 4104, "BN=128,STAGES=6,RASTER=8,PERSISTENT=1,INFLIGHT=1,CLUSTER=1,SPLITS=8,REDUCE=0,EPILOGUE=1,TAIL=1,AROWS=128",
       true, 0.0f},
      {"K slices summed in the kernel (fixup)",
       16, 1024, 4104, "BN=128,STAGES=6,RASTER=8,PERSISTENT=1,INFLIGHT=1,CLUSTER=1,SPLITS=8,REDUCE=1,EPILOGUE=1,TAIL=1,AROWS=128",
       false, 0.0f},
      {"K slices summed in a cluster",
       100, 1024, 2048, "BN=128,STAGES=6,RASTER=8,PERSISTENT=1,INFLIGHT=1,CLUSTER=1,SPLITS=4,REDUCE=2,EPILOGUE=0,TAIL=1,AROWS=128",
       false, 0.0f},
      {"the last wave in K slices", 2048, 2816, 1024,
       "BN=256,STAGES=4,RASTER=8,PERSISTENT=1,INFLIGHT=1,CLUSTER=1,SPLITS=1,REDUCE=0,EPILOGUE=1,TAIL=4,AROWS=128", false, 0.0f},
      {"short A stages", 16, 4096, 1024, "BN=32,STAGES=35,RASTER=8,PERSISTENT=1,INFLIGHT=1,CLUSTER=1,SPLITS=1,REDUCE=0,EPILOGUE=0,TAIL=1,AROWS=16",
       false, 0.0f},
  };
  for (const Case& c : cases) check_case(engine, *f, c, DType::BF16, rng, 1e-4);
}

TEST_CASE("family program: the mma.sync families sgemm and hgemm through run_family, against their f64 reference") {
  std::string why;
  if (!driver_available(&why)) {
    MESSAGE("skipped: " << why);
    return;
  }
  const swz_cache_test::TempDir dir;
  Engine engine(EngineOptions{0, TunePolicy::Default, dir.path(), true});
  std::mt19937_64 rng(std::random_device{}());
  const std::shared_ptr<const Family> s = detail::gemm_mma_builtin(DType::F32), h = detail::gemm_mma_builtin(DType::BF16);
  // The split configs' texts: the first of the typed space with that many slices, for the case's problem.
  const auto split = [](DType in, int splits) {
    for (const GemmConfig& c : gemm_search_space(in, DType::F32, GemmLayout::NT, 16))
      if (gemm_k_splits(c) == splits) return detail::gemm_mma_builtin(in)->config_text(detail::gemm_mma_family_config(c));
    return std::string();
  };
  const std::string s8 = split(DType::F32, 8), h8 = split(DType::BF16, 8);
  REQUIRE_FALSE(s8.empty());
  REQUIRE_FALSE(h8.empty());
  const Case sg[] = {
      {"sgemm default, odd sizes", 333, 517, 259, "", false, 0.0f},
      {"sgemm beta != 0, a batch", 97, 130, 64, "", false, 0.5f, 3},
      {"sgemm split-K", 100, 60, 4096, s8.c_str(), false, 0.25f},
      {"sgemm split-K into a lent workspace", 100, 60, 4096, s8.c_str(), true, 0.0f, 2},
  };
  for (const Case& c : sg) check_case(engine, *s, c, DType::F32, rng, 1e-5);
  const Case hg[] = {
      {"hgemm default, odd sizes", 1000, 1300, 1000, "", false, 0.0f},
      {"hgemm beta != 0, a batch", 97, 130, 72, "", false, 0.5f, 3},
      {"hgemm split-K", 100, 60, 4096, h8.c_str(), false, 0.25f},
      {"hgemm split-K into a lent workspace", 100, 60, 4096, h8.c_str(), true, 0.0f, 2},
  };
  for (const Case& c : hg) check_case(engine, *h, c, DType::BF16, rng, 1e-4);
}

TEST_CASE("family program: the GEMM reference covers M past the grid's 65535 x 16 rows") {
  std::string why;
  if (!driver_available(&why)) {
    MESSAGE("skipped: " << why);
    return;
  }
  const swz_cache_test::TempDir dir;
  Engine engine(EngineOptions{0, TunePolicy::Default, dir.path(), true});
  const std::shared_ptr<const Family> s = detail::gemm_mma_builtin(DType::F32);
  // f32 NT, M = 65535 * 16 + 37 rows: small integers, so every sum is exact.
  GemmProblem p;
  p.dtype = p.out_dtype = DType::F32;
  p.m = 65535LL * 16 + 37, p.n = 3, p.k = 5;
  p.a_order = MatrixOrder::RowMajor, p.b_order = MatrixOrder::ColMajor;
  p = p.resolved();
  const FamilyValues v = detail::gemm_family_problem(p, 16);
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_int_distribution<int> small(-4, 4);
  std::vector<float> ha(static_cast<std::size_t>(p.m * p.k)), hb(static_cast<std::size_t>(p.n * p.k));
  for (auto& x : ha) x = static_cast<float>(small(rng));
  for (auto& x : hb) x = static_cast<float>(small(rng));
  DeviceBuffer da(ha.size() * 4), db(hb.size() * 4), dc(static_cast<std::size_t>(p.m * p.n) * 4);
  da.copy_from_host(ha.data(), ha.size() * 4);
  db.copy_from_host(hb.data(), hb.size() * 4);
  dc.memset8(0xFF, nullptr);  // NaN: a row the reference skips stays NaN
  engine.run_family_reference(*s, v, {{"a", da.ptr()}, {"b", db.ptr()}, {"c", dc.ptr()}}, FamilyScalars{{"alpha", 2.0}}, nullptr);
  synchronize(nullptr);
  std::vector<float> got(static_cast<std::size_t>(p.m * p.n));
  dc.copy_to_host(got.data(), got.size() * 4);
  long long wrong = 0;
  for (long long i = 0; i < p.m; ++i)
    for (long long j = 0; j < p.n; ++j) {
      float want = 0;
      for (long long k = 0; k < p.k; ++k) want += ha[static_cast<std::size_t>(i * p.k + k)] * hb[static_cast<std::size_t>(j * p.k + k)];
      wrong += got[static_cast<std::size_t>(i * p.n + j)] != 2.0f * want;
    }
  CHECK(wrong == 0);
}
