// tests/tools: `swz bank` and `swz solve` run as a user runs them: outputs, JSON fields, exit codes
// (0 success, 2 bad usage) and error messages that name the offending argument.
#include <doctest/doctest.h>

#include <string>

#include "cli_support.hpp"

namespace {

using swz_test::run_swz;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string column_read_addresses(int col) {
  std::string s;
  for (int i = 0; i < 32; ++i) s += (i ? "," : "") + std::to_string((i * 32 + col) * 4);
  return s;
}

// Expects exit code 2 and a one-line error on stderr containing each of `parts`.
void check_usage_error(const std::string& args, std::initializer_list<const char*> parts) {
  const auto r = run_swz(args);
  CAPTURE(args);
  CAPTURE(r.err);
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find('\n') == r.err.size() - 1);  // exactly one line
  for (const char* p : parts) CHECK_MESSAGE(has(r.err, p), "missing: ", std::string(p));
}

}  // namespace

TEST_CASE("swz bank: seed 001 column read as JSON and as text") {
  const auto j = run_swz("bank --op lds --addresses " + column_read_addresses(3) + " --format json");
  CHECK(j.code == 0);
  CHECK(j.err.empty());
  CHECK(has(j.out, "\"wavefronts\":32,"));
  CHECK(has(j.out, "\"ideal_wavefronts\":1,"));
  CHECK(has(j.out, "\"excess_wavefronts\":31,"));
  CHECK(has(j.out, "\"max_way\":32,"));
  CHECK(has(j.out, "\"phases\":[{\"first_lane\":0,\"lane_count\":32,\"active_lanes\":32"));
  CHECK(has(j.out, "\"worst_bank\":3}"));
  CHECK(j.out.front() == '{');
  CHECK(j.out.find('\n') == j.out.size() - 1);  // one object, one line

  const auto t = run_swz("bank --op lds --addresses " + column_read_addresses(3));
  CHECK(t.code == 0);
  CHECK(has(t.out, "total: 32 wavefront(s), ideal 1, excess 31, worst bank 32-way"));
  CHECK(has(t.out, "bank 3, 32-way"));
}

TEST_CASE("swz bank: broadcast, default widths, ldmatrix phases") {
  const auto b = run_swz("bank --op lds --addresses 64,64,64,64,64 --format json");
  CHECK(b.code == 0);
  CHECK(has(b.out, "\"wavefronts\":1,"));
  CHECK(has(b.out, "\"excess_wavefronts\":0,"));
  // ldmatrix defaults to 16 bytes; 128-byte rows make .x1's 8 rows 8-way
  const auto x1 = run_swz("bank --op ldmatrix.x1.trans --addresses 0,128,256,384,512,640,768,896 --format json");
  CHECK(x1.code == 0);
  CHECK(has(x1.out, "\"op\":\"ldmatrix.x1.trans\""));
  CHECK(has(x1.out, "\"width\":16,"));
  CHECK(has(x1.out, "\"max_way\":8,"));
  CHECK(has(x1.out, "\"excess_wavefronts\":7,"));
  // 8-byte stores: two phases, the second not issued for 16 lanes
  const auto w8 = run_swz("bank --op sts --width 8 --addresses 0,8,16,24 --format json");
  CHECK(w8.code == 0);
  CHECK(has(w8.out, "\"wavefronts\":1,"));
  CHECK(has(w8.out, "{\"first_lane\":16,\"lane_count\":16,\"active_lanes\":0,\"wavefronts\":0"));
  const auto text = run_swz("bank --op sts --width 8 --addresses 0,8,16,24");
  CHECK(has(text.out, "(not issued)"));
}

TEST_CASE("swz bank: bad input exits 2 naming the argument") {
  check_usage_error("bank --op lds --addresses 0,4x,8", {"--addresses", "4x", "not a whole number"});
  check_usage_error("bank --op lds --addresses 0,,8", {"--addresses", "empty"});
  std::string many;
  for (int i = 0; i < 33; ++i) many += (i ? "," : "") + std::to_string(i * 4);
  check_usage_error("bank --op lds --addresses " + many, {"--addresses", "33", "at most 32"});
  check_usage_error("bank --op lds --addresses 0,6", {"--addresses", "lane 1", "not aligned", "multiples of 4"});
  check_usage_error("bank --op lds --width 8 --addresses 4", {"--addresses", "not aligned", "8"});
  check_usage_error("bank --op lds --addresses 0,-4", {"--addresses", "negative"});
  check_usage_error("bank --op ldmatrix.x4 --width 8 --addresses 0", {"--width", "ldmatrix.x4", "allowed: 16"});
  check_usage_error("bank --op lds --width 3 --addresses 0", {"--width", "allowed: 1, 2, 4, 8, 16"});
  check_usage_error("bank --op lds --width 32 --addresses 0", {"--width", "out of range"});
  check_usage_error("bank --op lds --width four --addresses 0", {"--width", "not a whole number"});
  check_usage_error("bank --op ldx --addresses 0", {"--op", "ldx", "allowed: lds, sts, ldmatrix.x1"});
  check_usage_error("bank --op sts.trans --addresses 0", {"--op", ".trans"});
  check_usage_error("bank --addresses 0", {"--op", "required"});
  check_usage_error("bank --op lds", {"--addresses", "required"});
  check_usage_error("bank --op lds --addresses 0 --format xml", {"--format", "text|json"});
  check_usage_error("bank --op lds --addresses 0 --frobnicate", {"--frobnicate"});
  const auto h = run_swz("bank --help");
  CHECK(h.code == 0);
  CHECK(has(h.out, "usage: swz bank"));
  CHECK(has(h.out, "examples:"));
}

TEST_CASE("swz solve: seed tiles, JSON fields, composition and none found") {
  const auto r = run_swz("solve --rows 32 --row-bytes 128 --elem-bytes 4 --pattern store:4 --pattern colread --format json");
  CHECK(r.code == 0);
  CHECK(has(r.out, "\"status\":\"found\""));
  CHECK(has(r.out, "\"swizzles\":[{\"b\":5,\"m\":0,\"s\":5}]"));
  CHECK(has(r.out, "{\"pattern\":\"colread\",\"before\":{\"legal\":true,\"instructions\":32,\"wavefronts\":1024,"
                   "\"ideal_wavefronts\":32,\"excess_wavefronts\":992,\"max_way\":32},\"after\":{\"legal\":true,"
                   "\"instructions\":32,\"wavefronts\":32,\"ideal_wavefronts\":32,\"excess_wavefronts\":0,"
                   "\"max_way\":1}}"));

  // a comma list is the same as repeated --pattern
  const auto text = run_swz("solve --rows 16 --row-bytes 128 --elem-bytes 2 --pattern store:16,ldmatrix");
  CHECK(text.code == 0);
  CHECK(has(text.out, "swizzle: Swizzle<3,3,3>"));
  CHECK(has(text.out, "ldmatrix"));
  CHECK(has(text.out, "before (identity)"));

  const auto alias = run_swz("solve --rows 16 --row-bytes 128 --elem-bytes 2 --patterns store:16,ldmatrix");
  CHECK(alias.code == 0);
  CHECK(alias.out == text.out);

  const auto two = run_swz("solve --rows 16 --row-bytes 512 --elem-bytes 2 --pattern store:16,ldmatrix,ldmatrix.flat");
  CHECK(two.code == 0);
  CHECK(has(two.out, "swizzle: Swizzle<1,3,3> then Swizzle<3,3,5>"));

  const auto none = run_swz("solve --rows 64 --row-bytes 32 --pattern store:16 --pattern colread --format json");
  CHECK(none.code == 0);
  CHECK(has(none.out, "\"status\":\"none\""));
  CHECK(has(none.out, "\"swizzles\":[]"));

  const auto free = run_swz("solve --rows 8 --row-bytes 128 --pattern store:16");
  CHECK(free.code == 0);
  CHECK(has(free.out, "none needed"));

  const auto h = run_swz("solve --help");
  CHECK(h.code == 0);
  CHECK(has(h.out, "usage: swz solve"));
  CHECK(has(h.out, "ldmatrix.flat"));
}

TEST_CASE("swz solve: bad input exits 2 naming the argument") {
  check_usage_error("solve --rows 32 --row-bytes 128 --pattern colwrite", {"--pattern", "colwrite", "allowed"});
  check_usage_error("solve --rows 32 --row-bytes 128 --pattern store:3", {"--pattern", "store:3"});
  check_usage_error("solve --rows 32 --row-bytes 128 --pattern store:4,", {"--pattern"});
  check_usage_error("solve --rows 32 --row-bytes 128 --pattern ldmatrix", {"--pattern ldmatrix", "elem-bytes must be 2"});
  check_usage_error("solve --rows x --row-bytes 128 --pattern colread", {"--rows", "not a whole number"});
  check_usage_error("solve --rows -4 --row-bytes 128 --pattern colread", {"--rows", "out of range"});
  check_usage_error("solve --rows 32 --row-bytes 130 --pattern colread", {"--row-bytes", "multiple"});
  check_usage_error("solve --rows 32 --row-bytes 128 --elem-bytes 3 --pattern colread", {"--elem-bytes", "1, 2, 4, 8, 16"});
  check_usage_error("solve --rows 32 --row-bytes 128", {"--pattern", "required"});
  check_usage_error("solve --row-bytes 128 --pattern colread", {"--rows", "required"});
  check_usage_error("solve --rows 32 --row-bytes 128 --pattern colread --max-bits 9", {"--max-bits"});
}
