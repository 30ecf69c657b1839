// tests/runtime/engine (GPU suite): a family whose launches are a program (FamilyProgram), the built-in
// gemm_sm90, through the generic family path on an sm_90 device: Engine::run_family with explicit configs
// of every launch plan (one kernel; the kernel and the split-K reduction as a programmatic dependent; K
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
};

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
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
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
  for (const Case& c : cases) {
    CAPTURE(c.what);
    // bf16 NT in, f32 out (exact f32 stores to compare): A m x k row-major, B n x k (K-contiguous), C m x n.
    GemmProblem p;
    p.dtype = DType::BF16;
    p.out_dtype = DType::F32;
    p.m = c.m, p.n = c.n, p.k = c.k;
    p.a_order = MatrixOrder::RowMajor, p.b_order = MatrixOrder::ColMajor;
    p = p.resolved();
    const FamilyValues v = detail::gemm_sm90_family_problem(p, 16);
    std::vector<std::uint16_t> ha(static_cast<std::size_t>(c.m * c.k)), hb(static_cast<std::size_t>(c.n * c.k));
    for (auto& x : ha) x = to_bf16(u(rng));
    for (auto& x : hb) x = to_bf16(u(rng));
    std::vector<float> hc0(static_cast<std::size_t>(c.m * c.n));
    for (auto& x : hc0) x = u(rng);
    DeviceBuffer da(ha.size() * 2), db(hb.size() * 2);
    da.copy_from_host(ha.data(), ha.size() * 2);
    db.copy_from_host(hb.data(), hb.size() * 2);
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
    FamilyValues cfg = *c.config ? f->parse_config(c.config) : engine.family_config(*f, v);
    REQUIRE_MESSAGE(f->check_config(cfg, with_sm_count(v, device_info(0).sm_count)) == "", f->config_text(cfg));
    const std::size_t ws_bytes = engine.family_workspace_size(*f, v, bufs, &cfg);
    std::unique_ptr<DeviceBuffer> ws;
    FamilyWorkspace lent;
    if (c.workspace) {
      REQUIRE(ws_bytes > 0);
      ws = std::make_unique<DeviceBuffer>(ws_bytes);
      ws->memset8(0xFF, nullptr);  // NaN partials: a slice read before written fails
      lent = FamilyWorkspace{ws->ptr(), ws_bytes};
    }
    engine.run_family(*f, v, bufs, scalars, nullptr, &cfg, lent);
    engine.run_family(*f, v, bufs, scalars, nullptr, &cfg, lent);  // twice: counters in scratch start over
    if (c.beta != 0.0f) {  // the second run read the first's C: start over from the initial values for one run
      dc.copy_from_host(init.data(), init.size());
      engine.run_family(*f, v, bufs, scalars, nullptr, &cfg, lent);
    }
    engine.run_family_reference(*f, v, ref, scalars, nullptr);
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
    CHECK_MESSAGE(rel < 1e-4, f->config_text(cfg) << ": relative error " << rel);
  }
}
