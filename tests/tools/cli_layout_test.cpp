// tests/tools: `swz --help`, `swz layout` output formats and its error paths (exit codes 0/2).
#include <doctest/doctest.h>

#include "cli_support.hpp"

using swz_test::run_swz;

TEST_CASE("swz --help and every command's --help exit 0") {
  const auto top = run_swz("--help");
  CHECK(top.code == 0);
  CHECK(top.out.find("layout") != std::string::npos);
  CHECK(run_swz("").code == 2);
  CHECK(run_swz("frobnicate").code == 2);
  // every command listed in the top-level help answers --help
  std::size_t pos = top.out.find("commands:");
  REQUIRE(pos != std::string::npos);
  int seen = 0;
  std::size_t line = top.out.find('\n', pos) + 1;
  while (line < top.out.size() && top.out.compare(line, 2, "  ") == 0) {
    const std::size_t end = top.out.find(' ', line + 2);
    const std::string name = top.out.substr(line + 2, end - line - 2);
    const auto h = run_swz(name + " --help");
    CHECK_MESSAGE(h.code == 0, name);
    CHECK_MESSAGE(h.out.find("usage: swz " + name) != std::string::npos, name);
    ++seen;
    line = top.out.find('\n', line) + 1;
  }
  CHECK(seen >= 3);
}

TEST_CASE("swz layout csv prints only the grid") {
  const auto r = run_swz("layout --swizzle 1,1,1 --shape 2,8 --format csv");
  CHECK(r.code == 0);
  CHECK(r.out == "0,1,2,3,6,7,4,5\n8,9,10,11,14,15,12,13\n");
  const auto c = run_swz("layout --swizzle 1,0,-1 --shape 4,4 --order col --format csv");
  CHECK(c.out == "0,4,8,12\n3,7,11,15\n2,6,10,14\n1,5,9,13\n");
  const auto s = run_swz("layout --swizzle 1,0,-1 --shape 4,4 --stride 1,4 --format csv");
  CHECK(s.out == c.out);
  const auto t = run_swz("layout --swizzle 2,1,2 --shape 8,8");
  CHECK(t.code == 0);
  CHECK(t.out.find("Sw<2,1,2>") == 0);
  const auto v = run_swz("layout --swizzle 3,3,3 --shape 8,64 --format svg --elem-bytes 2");
  CHECK(v.code == 0);
  CHECK(v.out.find("<svg") == 0);
}

TEST_CASE("swz layout bad input: one-line error naming the argument, exit 2") {
  struct Case {
    const char* args;
    const char* needle;
  } cases[] = {
      {"layout --swizzle 3,3,2 --shape 8,8", "|S|"},
      {"layout --swizzle 3,3 --shape 8,8", "--swizzle"},
      {"layout --swizzle a,b,c --shape 8,8", "--swizzle"},
      {"layout --swizzle 1,1,1 --shape -2,8", "--shape"},
      {"layout --swizzle 1,1,1 --shape 8", "--shape"},
      {"layout --swizzle 1,1,1 --shape 8,8x", "--shape"},
      {"layout --swizzle 1,1,1 --shape 8,8 --order diagonal", "--order"},
      {"layout --swizzle 1,1,1 --shape 8,8 --format png", "--format"},
      {"layout --swizzle 1,1,1 --shape 8,8 --order row --stride 8,1", "--order"},
      {"layout --shape 8,8", "--swizzle"},
      {"layout --swizzle 1,1,1 --shape 8,8 --bogus 1", "--bogus"},
      {"layout --swizzle 1,1,1 --shape 8,8 --format svg --elem-bytes 3", "--elem-bytes"},
  };
  for (const auto& c : cases) {
    const auto r = run_swz(c.args);
    CHECK_MESSAGE(r.code == 2, c.args);
    CHECK_MESSAGE(r.err.find(c.needle) != std::string::npos, c.args << " -> " << r.err);
    CHECK_MESSAGE(r.out.empty(), c.args);
    // one line
    CHECK_MESSAGE(r.err.find('\n') == r.err.size() - 1, c.args);
  }
}
