// tests/tools: README.md stays true to the tool: every environment variable the sources name is in its
// table, and every `swz` command is in its CLI section.
#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "cli_support.hpp"

using swz_test::run_swz;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The README's section starting at `heading` (up to the next "## ").
std::string section(const std::string& readme, const std::string& heading) {
  const std::size_t a = readme.find("\n" + heading + "\n");
  REQUIRE_MESSAGE(a != std::string::npos, heading);
  const std::size_t b = readme.find("\n## ", a + 1);
  return readme.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

}  // namespace

TEST_CASE("README's environment table names every SWZJIT_ variable the sources read") {
  const std::string root = SWZ_SOURCE_DIR;
  const std::string table = section(read_file(root + "/README.md"), "## Environment variables");
  std::set<std::string> names;
  for (const char* dir : {"generator", "runtime", "tools", "python/swzjit", "python/src", "include"}) {
    const std::filesystem::path d = root + "/" + dir;
    if (!std::filesystem::exists(d)) continue;
    for (const auto& e : std::filesystem::recursive_directory_iterator(d)) {
      const std::string ext = e.path().extension().string();
      if (ext != ".cpp" && ext != ".hpp" && ext != ".py" && ext != ".h") continue;
      const std::string text = read_file(e.path().string());
      for (std::size_t p = text.find("\"SWZJIT_"); p != std::string::npos; p = text.find("\"SWZJIT_", p + 1)) {
        std::size_t end = p + 1;
        while (end < text.size() && (std::isupper(static_cast<unsigned char>(text[end])) ||
                                     std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '_'))
          ++end;
        // a whole string literal naming a variable (not a prefix being concatenated)
        if (end < text.size() && text[end] == '"') names.insert(text.substr(p + 1, end - p - 1));
      }
    }
  }
  CHECK(names.count("SWZJIT_CACHE_DIR") == 1);  // the scan finds what it should
  CHECK(names.count("SWZJIT_TUNE_POLICY") == 1);
  CHECK(names.size() >= 10);
  for (const auto& n : names) CHECK_MESSAGE(table.find("`" + n + "`") != std::string::npos, n << " is not in the table");
}

TEST_CASE("README's CLI section names every swz command") {
  const std::string cli = section(read_file(std::string(SWZ_SOURCE_DIR) + "/README.md"), "## Using `swz`");
  CHECK(cli.find("--format text|json|csv") != std::string::npos);
  const auto top = run_swz("--help");
  std::size_t line = top.out.find('\n', top.out.find("commands:")) + 1;
  int seen = 0;
  while (line < top.out.size() && top.out.compare(line, 2, "  ") == 0) {
    const std::size_t end = top.out.find(' ', line + 2);
    const std::string name = top.out.substr(line + 2, end - line - 2);
    CHECK_MESSAGE(cli.find("`swz " + name + " ") != std::string::npos, name);
    ++seen;
    line = top.out.find('\n', line) + 1;
  }
  CHECK(seen >= 10);
}
