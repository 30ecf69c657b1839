// tests/generator/analysis (GPU suite): the wgmma descriptor decoder of swzjit/analysis/tma.hpp against the
// hardware. For K-major and MN-major operands and every swizzle mode, the host places each element of A
// (64 x 16) and B (64 x 16, N = 64) at the byte the decoder says a descriptor reads it from, a probe kernel
// copies that image into shared memory and runs one wgmma.m64n64k16 with those descriptors; the product
// must equal A * B^T computed on the host. A wrong decoding misplaces elements and changes the product.
// And the TMA side: one box per swizzle mode loaded by cp.async.bulk.tensor and dumped back, every element
// where TmaBox::address puts it.
// Needs an sm_90 GPU (skips visibly otherwise).
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "runtime/driver/driver_api.hpp"
#include "swzjit/analysis/tma.hpp"
#include "swzjit/device.hpp"
#include "swzjit/error.hpp"
#include "swzjit/jit.hpp"
#include "tests/generator/analysis/wgmma_probe.hpp"

using namespace swz;

namespace {

constexpr int kRegion = 16384;  // bytes of shared memory per operand (A at 0, B at kRegion)
constexpr int kN = 64;


bool sm90_device(std::string* why) {
  if (!driver_available(why)) return false;
  const DeviceInfo d = device_info(0);
  if (d.cc_major != 9 || d.cc_minor != 0) {
    *why = "device 0 is " + d.name + " (" + d.arch() + "); wgmma needs an sm_90 GPU";
    return false;
  }
  return true;
}

// f16 bits of a small integer (|v| <= 8), exact.
std::uint16_t f16_of(int v) {
  if (v == 0) return 0;
  const std::uint16_t sign = v < 0 ? 0x8000 : 0;
  const int a = v < 0 ? -v : v;
  int e = 0;
  while ((2 << e) <= a) ++e;
  return static_cast<std::uint16_t>(sign | ((e + 15) << 10) | ((a - (1 << e)) << (10 - e)));
}

// A canonical descriptor for a 64 x 16 f16 tile of `major` with `s`, starting at `start` (relative).
unsigned long long descriptor(WgmmaMajor major, TmaSwizzle s, long long start) {
  const long long row = tma_swizzle_row_bytes(s);
  if (major == WgmmaMajor::K) {
    if (s == TmaSwizzle::None) return WgmmaDescriptor::encode(start, 128, 256, s);  // LBO: k chunk, SBO: 8 rows
    return WgmmaDescriptor::encode(start, 16, 8 * row, s);                         // SBO: 8 rows of `row` bytes
  }
  if (s == TmaSwizzle::None) return WgmmaDescriptor::encode(start, 1024, 128, s);  // LBO: 8 k, SBO: 8 mn
  return WgmmaDescriptor::encode(start, 16 * row, 8 * row, s);  // LBO: next row-wide block of MN, SBO: 8 k rows
}

struct Probe {
  WgmmaMajor a, b;
  TmaSwizzle s;
};

}  // namespace

TEST_CASE("wgmma reads every element where the descriptor decoder says (K- and MN-major, every swizzle)") {
  std::string why;
  if (!sm90_device(&why)) {
    MESSAGE("skipped: " << why);
    return;
  }
  std::vector<Probe> probes;
  for (TmaSwizzle s : {TmaSwizzle::None, TmaSwizzle::B32, TmaSwizzle::B64, TmaSwizzle::B128}) {
    probes.push_back({WgmmaMajor::K, WgmmaMajor::K, s});
    probes.push_back({WgmmaMajor::MN, WgmmaMajor::MN, s});
  }
  probes.push_back({WgmmaMajor::K, WgmmaMajor::MN, TmaSwizzle::B128});
  probes.push_back({WgmmaMajor::MN, WgmmaMajor::K, TmaSwizzle::B128});

  std::mt19937 rng(20261124);
  std::uniform_int_distribution<int> val(-4, 4);
  for (const Probe& pr : probes) {
    const std::string name = std::string("A ") + to_string(pr.a) + ", B " + to_string(pr.b) + ", " + to_string(pr.s);
    CAPTURE(name);
    WgmmaTile ta, tb;
    ta.operand = WgmmaOperand::A;
    ta.major = pr.a;
    ta.mn = 64;
    tb.operand = WgmmaOperand::B;
    tb.major = pr.b;
    tb.mn = kN;
    const unsigned long long da = descriptor(pr.a, pr.s, 0), db = descriptor(pr.b, pr.s, kRegion);
    const std::vector<long long> aa = wgmma_read_addresses(WgmmaDescriptor::decode(da), ta);
    const std::vector<long long> ab = wgmma_read_addresses(WgmmaDescriptor::decode(db), tb);
    REQUIRE(std::set<long long>(aa.begin(), aa.end()).size() == aa.size());
    REQUIRE(std::set<long long>(ab.begin(), ab.end()).size() == ab.size());
    std::vector<std::uint16_t> image(2 * kRegion / 2, 0);
    std::vector<int> va(64 * 16), vb(kN * 16);
    for (std::size_t i = 0; i < aa.size(); ++i) {
      REQUIRE((aa[i] >= 0 && aa[i] < kRegion));
      va[i] = val(rng);
      image[aa[i] / 2] = f16_of(va[i]);
    }
    for (std::size_t i = 0; i < ab.size(); ++i) {
      REQUIRE((ab[i] >= kRegion && ab[i] < 2 * kRegion));
      vb[i] = val(rng);
      image[ab[i] / 2] = f16_of(vb[i]);
    }
    CompileRequest req;
    req.source = swz_test::kWgmmaProbeSource;
    req.source_name = "wgmma_layout_probe.cu";
    req.name_expression = swz_test::wgmma_probe_name(pr.a == WgmmaMajor::MN, pr.b == WgmmaMajor::MN);
    req.arch = "sm_90a";
    Kernel k = Module(compile(req), 0).kernel();
    const unsigned smem = 2 * kRegion + 1024;
    k.set_max_dynamic_smem(static_cast<int>(smem));
    DeviceBuffer dimage(image.size() * 2), dout(64 * kN * 4);
    dimage.copy_from_host(image.data(), image.size() * 2);
    dout.memset32(0x7FC00000u);  // NaN: a lane that stores nothing is seen
    DevicePtr pimage = dimage.ptr(), pout = dout.ptr();
    int words = static_cast<int>(image.size() * 2 / 16);
    unsigned long long ra = da, rb = db;
    void* args[5] = {&pimage, &words, &ra, &rb, &pout};
    k.launch(Dim3{1, 1, 1}, Dim3{128, 1, 1}, smem, nullptr, args);
    synchronize(nullptr);
    std::vector<float> out(64 * kN);
    dout.copy_to_host(out.data(), out.size() * 4);
    int wrong = 0;
    for (int m = 0; m < 64; ++m) {
      for (int n = 0; n < kN; ++n) {
        int want = 0;
        for (int kk = 0; kk < 16; ++kk) want += va[m * 16 + kk] * vb[n * 16 + kk];
        if (out[m * kN + n] != static_cast<float>(want) && wrong++ < 3)
          MESSAGE(name << ": D(" << m << ", " << n << ") = " << out[m * kN + n] << ", expected " << want);
      }
    }
    CHECK_MESSAGE(wrong == 0, name << ": " << wrong << " of " << 64 * kN << " products wrong");
  }
}

namespace {

struct BoxCase {
  int inner, outer;
  TmaSwizzle s;
  unsigned dst;
};

CUtensorMapSwizzle cu_swizzle(TmaSwizzle s) {
  switch (s) {
    case TmaSwizzle::B32: return CU_TENSOR_MAP_SWIZZLE_32B;
    case TmaSwizzle::B64: return CU_TENSOR_MAP_SWIZZLE_64B;
    case TmaSwizzle::B128: return CU_TENSOR_MAP_SWIZZLE_128B;
    case TmaSwizzle::None: break;
  }
  return CU_TENSOR_MAP_SWIZZLE_NONE;
}

}  // namespace

TEST_CASE("a TMA box lands in shared memory where TmaBox::address says (every swizzle mode)") {
  std::string why;
  if (!sm90_device(&why)) {
    MESSAGE("skipped: " << why);
    return;
  }
  constexpr int kWindow = 16384;  // bytes of shared memory dumped back
  CompileRequest req;
  req.source = swz_test::kTmaProbeSource;
  req.source_name = "tma_box_probe.cu";
  req.name_expression = swz_test::kTmaProbeName;
  req.arch = "sm_90a";
  Kernel k = Module(compile(req), 0).kernel();
  // Rows one swizzle row wide (the GEMM's case), at atom-aligned offsets. (Rows narrower than the swizzle's
  // are not packed by the hardware -- measured: 992 of 1024 elements of a 32 x 32 f16 box under the 128B
  // swizzle were not where packing puts them -- and TmaBox refuses them.)
  const BoxCase cases[] = {{64, 32, TmaSwizzle::B128, 0},    {32, 32, TmaSwizzle::B64, 0},
                           {16, 32, TmaSwizzle::B32, 0},     {64, 16, TmaSwizzle::None, 0},
                           {64, 64, TmaSwizzle::B128, 2048}, {32, 64, TmaSwizzle::B64, 1024}};
  {
    TmaBox narrow;
    narrow.inner = 32, narrow.outer = 32, narrow.elem_bytes = 2, narrow.swizzle = TmaSwizzle::B128;
    CHECK_THROWS_AS(narrow.validate(), Error);
  }
  for (const BoxCase& bc : cases) {
    TmaBox box;
    box.dst = bc.dst;
    box.inner = bc.inner;
    box.outer = bc.outer;
    box.elem_bytes = 2;
    box.swizzle = bc.s;
    const std::string name = box.to_string();
    CAPTURE(name);
    std::vector<std::uint16_t> host(static_cast<std::size_t>(bc.inner) * bc.outer);
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<std::uint16_t>(i + 1);
    DeviceBuffer src(host.size() * 2), out(kWindow);
    src.copy_from_host(host.data(), host.size() * 2);
    CUtensorMap map;
    {
      const detail::ContextGuard guard(0);
      const cuuint64_t dims[2] = {static_cast<cuuint64_t>(bc.inner), static_cast<cuuint64_t>(bc.outer)};
      const cuuint64_t strides[1] = {static_cast<cuuint64_t>(bc.inner) * 2};
      const cuuint32_t boxdim[2] = {static_cast<cuuint32_t>(bc.inner), static_cast<cuuint32_t>(bc.outer)};
      const cuuint32_t elem_strides[2] = {1, 1};
      detail::check(detail::driver_api().cuTensorMapEncodeTiled(
                        &map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, reinterpret_cast<void*>(static_cast<std::uintptr_t>(src.ptr())),
                        dims, strides, boxdim, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, cu_swizzle(bc.s),
                        CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                    "cuTensorMapEncodeTiled for the TMA probe");
    }
    unsigned dst = bc.dst, bytes = static_cast<unsigned>(host.size() * 2);
    DevicePtr pout = out.ptr();
    int words = kWindow / 16;
    void* args[5] = {&map, &dst, &bytes, &pout, &words};
    const unsigned smem = kWindow + 1024 + 64;
    k.set_max_dynamic_smem(static_cast<int>(smem));
    k.launch(Dim3{1, 1, 1}, Dim3{128, 1, 1}, smem, nullptr, args);
    synchronize(nullptr);
    std::vector<std::uint16_t> window(kWindow / 2);
    out.copy_to_host(window.data(), kWindow);
    int wrong = 0;
    for (int r = 0; r < bc.outer; ++r) {
      for (int c = 0; c < bc.inner; ++c) {
        const long long a = box.address(r, c);
        const std::uint16_t want = static_cast<std::uint16_t>(r * bc.inner + c + 1);
        if (window[a / 2] != want && wrong++ < 3)
          MESSAGE(name << ": element (" << r << ", " << c << ") expected at byte " << a << ", found " << window[a / 2]
                       << " there");
      }
    }
    CHECK_MESSAGE(wrong == 0, name << ": " << wrong << " elements not where TmaBox::address puts them");
  }
}
