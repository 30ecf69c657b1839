// tests/generator: checked size arithmetic (generator/core/checked_arith.hpp), the one integer parser
// (swz::parse_integer), and the problems, launch shapes and configs that used to overflow or SIGFPE
// on unvalidated input (issue 10 items 5 and 6).
#include <doctest/doctest.h>

#include <climits>
#include <string>

#include "generator/core/checked_arith.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/gemm.hpp"
#include "generator/families/gemm/gemm_pack.hpp"
#include "generator/families/gemm/gemm_splitk.hpp"
#include "swzjit/transpose.hpp"

namespace {

// The message of the InvalidArgument `f` throws ("no error" if none, "wrong kind" for another kind).
template <class F>
std::string invalid_message(F&& f) {
  try {
    f();
  } catch (const swz::Error& e) {
    return e.kind() == swz::ErrorKind::InvalidArgument ? std::string(e.what()) : std::string("wrong kind");
  }
  return "no error";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("checked_mul / checked_add / checked_extent throw naming the quantity instead of wrapping") {
  using swz::detail::checked_add;
  using swz::detail::checked_extent;
  using swz::detail::checked_mul;
  CHECK(checked_mul(1LL << 31, 1LL << 31, "x") == 1LL << 62);
  CHECK(checked_mul(-3, 4, "x") == -12);
  CHECK(has(invalid_message([] { checked_mul(1LL << 32, 1LL << 31, "bytes of A"); }), "bytes of A"));
  CHECK(has(invalid_message([] { checked_mul(LLONG_MAX, 2, "q"); }), "does not fit in 64 bits"));
  CHECK(checked_add(LLONG_MAX - 1, 1, "x") == LLONG_MAX);
  CHECK(has(invalid_message([] { checked_add(LLONG_MAX, 1, "stride"); }), "stride"));
  // (batch - 1) * stride + (lines - 1) * ld + line
  CHECK(checked_extent(3, 100, 4, 20, 10, 4, "m") == 2 * 100 + 3 * 20 + 10);
  CHECK(checked_extent(0, 100, 4, 20, 10, 4, "m") == 0);
  CHECK(checked_extent(1, 0, 1LL << 30, 1LL << 30, 1LL << 30, 4, "m") > 0);  // 2^60 elements * 4 = 2^62 bytes
  CHECK(has(invalid_message([] { checked_extent(1, 0, 1LL << 31, 1LL << 31, 1, 4, "gemm A"); }), "more than 2^62 bytes"));
  CHECK(swz::detail::ceil_div_ll(LLONG_MAX, 2) == LLONG_MAX / 2 + 1);  // (a + b - 1) / b would overflow
}

TEST_CASE("parse_integer: decimal only, no space or sign, range-checked, message names the field") {
  CHECK(swz::parse_integer("--n", "64", 0, 100) == 64);
  CHECK(swz::parse_integer("--n", "007", 0, 100) == 7);
  CHECK(swz::parse_integer("--s", "-1", -64, 64) == -1);
  CHECK(swz::parse_integer("--x", "9223372036854775807", LLONG_MIN, LLONG_MAX) == LLONG_MAX);
  CHECK(swz::parse_integer("--x", "-9223372036854775808", LLONG_MIN, LLONG_MAX) == LLONG_MIN);
  for (const char* bad : {"", " 3", "3 ", "+64", "0x10", "1e3", "3.0", "-", "--1", "12a", "\t8"}) {
    const std::string m = invalid_message([&] { swz::parse_integer("--width", bad, -100, 100); });
    CHECK_MESSAGE(has(m, "--width"), bad);
    CHECK_MESSAGE(has(m, "allowed: a decimal integer from -100 to 100"), bad);
  }
  // a sign only where negatives mean something
  CHECK(has(invalid_message([] { swz::parse_integer("--rows", "-1", 0, 10); }), "out of range (negative)"));
  CHECK(has(invalid_message([] { swz::parse_integer("--rows", "11", 0, 10); }), "out of range"));
  CHECK(has(invalid_message([] { swz::parse_integer("--rows", "99999999999999999999", 0, 10); }), "out of range"));
  CHECK(has(invalid_message([] { swz::parse_integer("--rows", "99999999999999999999x", 0, 10); }),
            "not a whole number"));
}

TEST_CASE("TransposeProblem::resolved enforces the 2^62 limit instead of wrapping") {
  swz::TransposeProblem p;
  p.rows = p.cols = 1LL << 40;  // 2^80 elements: accepted before
  CHECK(has(invalid_message([&] { p.resolved(); }), "transpose input matrix"));
  // swz run transpose --rows 2147483648 --cols 2147483648 --batch 1048576 --pad-ld 1048576
  swz::TransposeProblem q;
  q.rows = q.cols = 1LL << 31;
  q.ld_in = q.ld_out = (1LL << 31) + (1LL << 20);
  q.batch = 1LL << 20;
  CHECK(invalid_message([&] { q.resolved(); }) != "no error");
  q.batch = 1;  // 2^62 + 2^51 elements: past the limit
  CHECK(has(invalid_message([&] { q.resolved(); }), "2^62"));
  swz::TransposeProblem ok;
  ok.rows = 1 << 20;
  ok.cols = 1 << 20;
  ok.batch = 1 << 10;  // 2^50 elements, 2^52 bytes: fine
  CHECK(ok.resolved().stride_in == 1LL << 40);
  swz::TransposeProblem neg;
  neg.rows = neg.cols = 4;
  neg.ld_in = -8;
  CHECK(invalid_message([&] { neg.resolved(); }) != "no error");
}

TEST_CASE("GemmProblem::resolved rejects a pitch whose stride wraps; staged() does not stage past 1 GiB") {
  swz::GemmProblem g;
  g.m = g.n = g.k = 2;
  g.ldc = LLONG_MAX;
  g.batch = 2;  // stride_c was 2 * LLONG_MAX = -2 elements: accepted before
  CHECK(has(invalid_message([&] { g.resolved(); }), "gemm C matrix"));
  // swz autotune gemm --m 2147483647 --n 2147483647 --k 2147483647 --batch 65535
  swz::GemmProblem big;
  big.m = big.n = big.k = 2147483647LL;
  big.batch = 65535;
  CHECK(has(invalid_message([&] { big.resolved(); }), "gemm A"));
  // A narrow (stride 1 element) 2^20 x 2^20 f16 operand in a batch of 2^31: the old byte count
  // 2^31 * 2^20 * 2^20 * 2 wrapped to 0 and said "stage it" (a 2^72-byte scratch).
  swz::GemmProblem s;
  s.dtype = s.out_dtype = swz::DType::F16;
  s.m = s.k = 1LL << 20;
  s.n = 1;
  s.batch = 1LL << 31;
  s.stride_a = 1;
  bool sa = true, sb = true;
  const swz::GemmProblem r = s.staged(0, 0, &sa, &sb);
  CHECK_FALSE(sa);
  CHECK_FALSE(sb);
  CHECK(r.stride_a == 1);
  // a small narrow operand is still staged
  swz::GemmProblem small;
  small.m = small.n = 64;
  small.k = 63;
  small.lda = 63;
  const swz::GemmProblem rs = small.staged(0, 0, &sa, &sb);
  CHECK(sa);
  CHECK(rs.lda == 64);
}

TEST_CASE("public functions that divide by config fields throw InvalidArgument, not SIGFPE") {
  swz::TransposeConfig t;
  t.tile_rows = 0;
  CHECK(has(invalid_message([&] { swz::transpose_launch_shape(t, 64, 64, 1); }), "tile rows"));
  t = swz::TransposeConfig{};
  t.threads = 0;
  CHECK(has(invalid_message([&] { (void)t.elems_per_thread(); }), "threads 0"));
  CHECK(invalid_message([&] { swz::transpose_launch_shape(t, 64, 64, 1); }) != "no error");
  t = swz::TransposeConfig{};
  CHECK(invalid_message([&] { swz::transpose_launch_shape(t, -1, 64, 1); }) != "no error");
  const swz::LaunchShape huge = swz::transpose_launch_shape(t, LLONG_MAX, LLONG_MAX, LLONG_MAX);
  CHECK(huge.grid[0] == 2147483647u);  // clamped, no overflow in the tile count
  CHECK(huge.grid[2] == 65535u);

  swz::GemmConfig g = swz::GemmConfig::of(swz::SgemmConfig{});
  g.sgemm.bm = 0;
  CHECK(has(invalid_message([&] { swz::gemm_launch_shape(g, 64, 64, 1); }), "bm 0"));
  swz::GemmConfig h = swz::GemmConfig::of(swz::HgemmConfig{});
  h.hgemm.wm = 0;
  CHECK(has(invalid_message([&] { (void)h.hgemm.threads(); }), "warp tile 0x64"));
  CHECK(invalid_message([&] { swz::gemm_launch_shape(h, 64, 64, 1); }) != "no error");
  h = swz::GemmConfig::of(swz::HgemmConfig{});
  h.hgemm.split = 1000;
  CHECK(has(invalid_message([&] { swz::gemm_max_batch_per_launch(h); }), "split 1000"));
  h.hgemm.split = 2;
  h.hgemm.bk = 0;
  CHECK(invalid_message([&] { swz::gemm_k_slice(h, 4096); }) != "no error");
  swz::SgemmConfig sg;
  sg.bm = sg.bn = sg.bk = sg.stages = INT_MAX;
  CHECK(has(invalid_message([&] { (void)sg.smem_bytes(); }), "64 bits"));
  sg = swz::SgemmConfig{};
  sg.stages = 4096;
  sg.bm = sg.bn = 1 << 20;
  CHECK(has(invalid_message([&] { (void)sg.smem_bytes(); }), "2^31 - 1 bytes"));
  sg = swz::SgemmConfig{};
  sg.tm = 0;
  CHECK(sg.wmiter() == 0);
  // a full-size GEMM launch shape stays in range; more tiles than a grid holds is an error
  const swz::GemmConfig d = swz::GemmConfig::of(swz::SgemmConfig{});
  CHECK(invalid_message([&] { swz::gemm_launch_shape(d, LLONG_MAX, LLONG_MAX, 1); }) != "no error");
  CHECK(swz::gemm_launch_shape(d, 4096, 4096, 1).grid[0] == 32u * 32u);
  CHECK(invalid_message([&] { swz::gemm_splitk_workspace_stride(1LL << 40, 1LL << 40); }) != "no error");
  CHECK(invalid_message([&] { swz::gemm_pack_ld(-1, swz::DType::F16); }) != "no error");
  CHECK(invalid_message([&] { swz::gemm_pack_launch_shape(1LL << 40, 1LL << 40, 1, swz::DType::F32); }) != "no error");
  CHECK(invalid_message([&] { swz::gemm_reference_launch_shape(-1, 4, 1); }) != "no error");
}
