// tests/runtime (GPU suite): the transpose family end to end — every layout variant and dtype against
// an exact host reference on fresh random data, with odd sizes, batches, padded pitches, misaligned
// pointers, poisoned outputs and guard regions on both sides.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "swzjit/device.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"

using namespace swz;

namespace {

constexpr std::uint8_t kPoison = 0xFF;
constexpr std::size_t kGuard = 1024;

std::string temp_cache_dir() {
  char tmpl[] = "/tmp/swz_transpose_gpu_XXXXXX";
  const char* d = mkdtemp(tmpl);
  REQUIRE(d != nullptr);
  return d;
}

struct Case {
  long long rows, cols, batch, pad_in, pad_out;
  int misalign_elems;  // both pointers offset by this many elements from a 256-byte boundary
};

// Runs one case; returns the number of wrong bytes/elements (outputs, pitch gaps and guards).
long long run_case(Engine& engine, DType t, const Case& c, const TransposeConfig* cfg, std::mt19937_64& rng) {
  const std::size_t eb = static_cast<std::size_t>(dtype_bytes(t));
  TransposeProblem p;
  p.dtype = t;
  p.rows = c.rows;
  p.cols = c.cols;
  p.batch = c.batch;
  p.ld_in = c.cols + c.pad_in;
  p.ld_out = c.rows + c.pad_out;
  const TransposeProblem r = p.resolved();
  const std::size_t in_bytes = static_cast<std::size_t>(r.batch * r.stride_in) * eb;
  const std::size_t out_bytes = static_cast<std::size_t>(r.batch * r.stride_out) * eb;
  const std::size_t mis = static_cast<std::size_t>(c.misalign_elems) * eb;
  std::vector<std::uint8_t> h_in(in_bytes + mis);
  for (auto& byte : h_in) byte = static_cast<std::uint8_t>(rng() % 255);  // never 0xFF: poison can't match
  DeviceBuffer d_in(h_in.size() + 16);
  DeviceBuffer d_out(out_bytes + mis + 2 * kGuard);
  d_in.copy_from_host(h_in.data(), h_in.size());
  d_out.memset8(kPoison);
  Stream stream;
  engine.transpose(p, d_in.ptr() + mis, d_out.ptr() + kGuard + mis, stream.handle(), cfg);
  stream.synchronize();
  std::vector<std::uint8_t> h_out(d_out.size());
  d_out.copy_to_host(h_out.data(), h_out.size());
  long long bad = 0;
  for (std::size_t i = 0; i < kGuard + mis; ++i) bad += h_out[i] != kPoison;
  for (std::size_t i = kGuard + mis + out_bytes; i < h_out.size(); ++i) bad += h_out[i] != kPoison;
  const std::uint8_t* in = h_in.data() + mis;
  const std::uint8_t* out = h_out.data() + kGuard + mis;
  for (long long b = 0; b < r.batch; ++b)
    for (long long col = 0; col < r.cols; ++col)
      for (long long row = 0; row < r.ld_out; ++row) {
        const std::uint8_t* o = out + static_cast<std::size_t>(b * r.stride_out + col * r.ld_out + row) * eb;
        if (row < r.rows) {
          bad += std::memcmp(o, in + static_cast<std::size_t>(b * r.stride_in + row * r.ld_in + col) * eb, eb) != 0;
        } else {
          for (std::size_t k = 0; k < eb; ++k) bad += o[k] != kPoison;  // pitch padding stays untouched
        }
      }
  return bad;
}

const Case kCases[] = {
    {1, 1, 1, 0, 0, 0},     {1, 1000, 1, 0, 0, 0},   {1000, 1, 1, 0, 0, 0},  {33, 17, 1, 0, 0, 0},
    {4097, 3, 1, 0, 0, 0},  {3, 4097, 1, 0, 0, 0},   {63, 65, 1, 0, 0, 0},   {64, 64, 1, 0, 0, 0},
    {65, 63, 1, 0, 0, 0},   {129, 257, 1, 0, 0, 0},  {512, 768, 1, 0, 0, 0}, {100, 60, 3, 5, 7, 0},
    {96, 128, 2, 0, 0, 1},  {257, 255, 1, 3, 1, 3},  {256, 256, 1, 0, 0, 2}, {1024, 64, 4, 16, 16, 0},
};

std::vector<TransposeConfig> variants(DType t) {
  const std::string d = to_string(t);
  const int v16 = 16 / dtype_bytes(t);
  std::vector<std::string> texts = {
      d + ",tile=32x32,threads=256,vec=1,smem=plain",
      d + ",tile=64x64,threads=256,vec=" + std::to_string(v16) + ",smem=plain",
  };
  std::vector<TransposeConfig> out;
  for (const auto& s : texts) out.push_back(TransposeConfig::parse(s));
  // Conflict-free pad and swizzle versions of several shapes, as the generator picks them.
  for (const auto& shape : {std::pair<int, int>{64, 64}, {32, 64}, {64, 32}})
    for (int vec : {v16, v16 / 2}) {
      TransposeConfig c;
      c.dtype = t;
      c.tile_rows = shape.first;
      c.tile_cols = shape.second;
      c.threads = 256;
      c.vec = vec;
      c.smem = SmemLayout::Plain;
      for (int pair = 0; pair <= (dtype_bytes(t) == 2 ? 1 : 0); ++pair) {
        c.pair = pair == 1;
        c.raster = pair;  // cover both rasters too
        try {
          c.validate();
        } catch (const Error&) {
          continue;  // this shape does not split in pair mode
        }
        TransposeConfig p = c, s = c;
        if (transpose_choose_pad(p)) out.push_back(p);
        if (transpose_choose_swizzle(s)) out.push_back(s);
      }
    }
  return out;
}

}  // namespace

TEST_CASE("every transpose variant and dtype is exact on odd sizes, batches, pitches and misaligned pointers") {
  EngineOptions eo;
  eo.cache_dir = temp_cache_dir();
  Engine engine(eo);
  std::mt19937_64 rng(std::random_device{}());
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    for (const TransposeConfig& cfg : variants(t)) {
      for (const Case& c : kCases) {
        // An explicit config must fit the call's alignment; misaligned cases use the engine's choice.
        TransposeProblem p;
        p.dtype = t;
        const bool aligned = c.misalign_elems == 0 && (c.cols + c.pad_in) % cfg.vec == 0 &&
                             (c.rows + c.pad_out) % cfg.vec == 0;
        const long long bad = run_case(engine, t, c, aligned ? &cfg : nullptr, rng);
        CHECK_MESSAGE(bad == 0, to_string(t) << " " << (aligned ? cfg.to_string() : "engine's choice") << " "
                                             << c.rows << "x" << c.cols << " batch " << c.batch << " pads "
                                             << c.pad_in << "," << c.pad_out << " misalign " << c.misalign_elems);
      }
    }
  }
  CHECK(engine.counters().launches > 0);
}

TEST_CASE("a config wider than the call's alignment is refused with the width that would fit") {
  Engine engine(EngineOptions{0, TunePolicy::Default, temp_cache_dir(), true});
  DeviceBuffer in(4096), out(4096);
  TransposeProblem p;
  p.dtype = DType::F32;
  p.rows = 8;
  p.cols = 8;
  const TransposeConfig cfg = TransposeConfig::parse("f32,tile=32x32,threads=256,vec=4,smem=plain");
  try {
    engine.transpose(p, in.ptr() + 4, out.ptr(), nullptr, &cfg);
    FAIL("expected an InvalidArgument error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidArgument);
    CHECK(std::string(e.what()).find("vec=1") != std::string::npos);
  }
}

TEST_CASE("zero-sized transposes do nothing and leave the output untouched") {
  Engine engine(EngineOptions{0, TunePolicy::Default, temp_cache_dir(), true});
  DeviceBuffer in(1024), out(1024);
  out.memset8(kPoison);
  for (auto rc : {std::pair<long long, long long>{0, 5}, {5, 0}, {0, 0}}) {
    TransposeProblem p;
    p.dtype = DType::F16;
    p.rows = rc.first;
    p.cols = rc.second;
    engine.transpose(p, in.ptr(), out.ptr(), nullptr);
  }
  synchronize(nullptr);
  std::vector<std::uint8_t> h(1024);
  out.copy_to_host(h.data(), h.size());
  for (auto b : h) CHECK(b == kPoison);
  CHECK(engine.counters().launches == 0);
}
