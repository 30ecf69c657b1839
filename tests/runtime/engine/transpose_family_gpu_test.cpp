// tests/runtime (GPU suite): the built-in "transpose" family (generator/families/transpose) end to end —
// run_family on odd shapes, pitches, batches and misaligned pointers against a host transpose, bit for
// bit, with padding and guards untouched and the same bytes as Engine::transpose; a tune in the worker
// whose candidates pass its verification (packed arguments, alignment class, untouched padding).
#include <doctest/doctest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "swzjit/autotune.hpp"
#include "swzjit/device.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/family.hpp"

using namespace swz;

namespace {

constexpr std::size_t kGuardBytes = 4096;

std::string temp_dir() {
  char tmpl[] = "/tmp/swz_transpose_family_gpu_XXXXXX";
  const char* d = mkdtemp(tmpl);
  REQUIRE(d != nullptr);
  return d;
}

struct Shape {
  DType dtype;
  long long rows, cols, ld_in, ld_out, batch;
  int in_offset, out_offset;  // bytes past a 256-byte boundary: the alignment class
};

// The output bytes (guards included) of the family and of Engine::transpose, and the host's expectation.
void run_both(Engine& engine, const Family& f, const Shape& s, std::mt19937& rng) {
  const int eb = dtype_bytes(s.dtype);
  const long long stride_in = s.rows * s.ld_in, stride_out = s.cols * s.ld_out;
  const std::size_t in_bytes = static_cast<std::size_t>(s.batch * stride_in) * eb;
  const std::size_t out_bytes = static_cast<std::size_t>(s.batch * stride_out) * eb;
  std::vector<unsigned char> in(in_bytes);
  for (unsigned char& b : in) b = static_cast<unsigned char>(rng());
  DeviceBuffer d_in(in_bytes + 256), d_out(out_bytes + 2 * kGuardBytes + 256);
  d_in.copy_from_host(in.data(), in_bytes, static_cast<std::size_t>(s.in_offset));
  const DevicePtr out = d_out.ptr() + kGuardBytes + static_cast<DevicePtr>(s.out_offset);
  const FamilyValues p{{"dtype", static_cast<long long>(s.dtype)}, {"rows", s.rows}, {"cols", s.cols},
                       {"ld_in", s.ld_in}, {"ld_out", s.ld_out}, {"batch", s.batch},
                       {"stride_in", stride_in}, {"stride_out", stride_out}};
  std::vector<unsigned char> want(d_out.size(), 0xEE);
  for (long long b = 0; b < s.batch; ++b)
    for (long long r = 0; r < s.rows; ++r)
      for (long long c = 0; c < s.cols; ++c)
        std::memcpy(&want[kGuardBytes + static_cast<std::size_t>(s.out_offset) +
                          static_cast<std::size_t>(b * stride_out + c * s.ld_out + r) * eb],
                    &in[static_cast<std::size_t>(b * stride_in + r * s.ld_in + c) * eb], static_cast<std::size_t>(eb));
  Stream stream;
  for (int path = 0; path < 2; ++path) {
    d_out.memset8(0xEE);
    if (path == 0) {
      engine.run_family(f, p, {{"in", d_in.ptr() + static_cast<DevicePtr>(s.in_offset)}, {"out", out}}, stream.handle());
    } else {
      TransposeProblem tp;
      tp.dtype = s.dtype;
      tp.rows = s.rows;
      tp.cols = s.cols;
      tp.ld_in = s.ld_in;
      tp.ld_out = s.ld_out;
      tp.batch = s.batch;
      engine.transpose(tp, d_in.ptr() + static_cast<DevicePtr>(s.in_offset), out, stream.handle());
    }
    stream.synchronize();
    std::vector<unsigned char> got(d_out.size());
    d_out.copy_to_host(got.data(), got.size());
    const std::string what = std::string(path == 0 ? "run_family " : "Engine::transpose ") + to_string(s.dtype) +
                             " " + std::to_string(s.rows) + "x" + std::to_string(s.cols);
    CHECK_MESSAGE(got == want, what);
  }
}

}  // namespace

TEST_CASE("transpose family: run_family matches a host transpose and Engine::transpose, byte for byte") {
  EngineOptions eo;
  eo.cache_dir = temp_dir();
  Engine engine(eo);
  const auto f = get_family("transpose");
  std::mt19937 rng(99);
  const Shape shapes[] = {{DType::F32, 1000, 777, 777, 1000, 1, 0, 0},   {DType::F32, 513, 1029, 1031, 515, 2, 4, 8},
                          {DType::F16, 4096, 1000, 1000, 4096, 1, 0, 0}, {DType::BF16, 333, 4001, 4003, 334, 3, 2, 6},
                          {DType::F16, 77, 65, 66, 78, 5, 0, 2},         {DType::F32, 1, 5000, 5000, 1, 1, 12, 0}};
  for (const Shape& s : shapes) run_both(engine, *f, s, rng);
  // The second call of each problem is the prepared launch: no new compile or load.
  const EngineCounters before = engine.counters();
  std::mt19937 again(99);
  run_both(engine, *f, shapes[0], again);
  CHECK(engine.counters().compiles == before.compiles);
  CHECK(engine.counters().kernel_loads == before.kernel_loads);
}

TEST_CASE("transpose family: a tune in the worker verifies every candidate (pitches, batch, 4-byte class)") {
  EngineOptions eo;
  eo.cache_dir = temp_dir();
  Engine engine(eo);
  const auto f = get_family("transpose");
  const FamilyValues p = f->parse_problem(
      "dtype=f16,rows=1000,cols=1030,ld_in=1032,ld_out=1002,batch=2,stride_in=1032000,stride_out=1032060,"
      "align_in=16,align_out=4");
  TuneOptions o;
  o.max_candidates = 12;
  const TuneReport r = autotune_family(engine, *f, p, o);
  CHECK(!r.winner.empty());
  int ok = 0;
  for (const auto& c : r.candidates) {
    ok += c.status == "ok";
    CHECK_MESSAGE((c.status == "ok" || c.status == "skipped-static" || c.status == "skipped"),
                  (c.config + ": " + c.status + " " + c.reason));
  }
  CHECK(ok >= 1);
  // Every candidate honours the 4-byte class: VEC * 2 <= 4.
  for (const auto& c : r.candidates) CHECK(f->parse_config(c.config).at("VEC") <= 2);
}

TEST_CASE("transpose family: Engine::transpose uses a winner the typed API stored, not the default") {
  EngineOptions eo;
  eo.cache_dir = temp_dir();
  Engine engine(eo);
  const TransposeProblem p = TransposeProblem{DType::F32, 512, 384, 0, 0, 1, 0, 0}.resolved();
  DeviceBuffer in(static_cast<std::size_t>(p.rows * p.cols) * 4), out(static_cast<std::size_t>(p.rows * p.cols) * 4);
  const int align = p.max_vec_bytes(in.ptr(), out.ptr());
  REQUIRE(align == 16);
  // Stored the way the typed stack did: operation "transpose", TransposeProblem::key, its space id, a typed
  // config string; the config is not the default, so using it shows the winner was read.
  TransposeConfig stored;
  stored.dtype = DType::F32;
  stored.tile_rows = 32, stored.tile_cols = 32, stored.threads = 256, stored.vec = 1;
  stored.smem = SmemLayout::Pad, stored.pad = 1;
  REQUIRE(!(stored == default_transpose_config(DType::F32, align)));
  TuningProblemKey key = engine.transpose_tuning_key(p, align);
  key.operation = "transpose";
  key.problem = p.key(align);
  engine.cache().store_winner(
      key, search_space_hash({"transpose-space/4b669fbe58c5cac68ada8d1e0d25add2", "f32", "align=16", "conflict-free"}),
      stored.to_string(), 0.01);
  CHECK(engine.transpose_config(p, in.ptr(), out.ptr()) == stored);
  CHECK(engine.counters().tuned_hits == 1);
  // And it runs: one transpose through the memo, exact.
  std::vector<float> host(static_cast<std::size_t>(p.rows * p.cols)), back(host.size());
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i);
  in.copy_from_host(host.data(), host.size() * 4, 0);
  Stream stream;
  engine.transpose(p, in.ptr(), out.ptr(), stream.handle());
  stream.synchronize();
  out.copy_to_host(back.data(), back.size() * 4, 0);
  bool exact = true;
  for (long long r = 0; r < p.rows; ++r)
    for (long long c = 0; c < p.cols; ++c)
      exact = exact && back[static_cast<std::size_t>(c * p.rows + r)] == host[static_cast<std::size_t>(r * p.cols + c)];
  CHECK(exact);
}
