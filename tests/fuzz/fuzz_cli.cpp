// tests/fuzz: the swz CLI's argument, number and list parsing (tools/cli.cpp, tools/*_args.cpp) and
// the CPU-only commands built on them (layout, bank, solve, gen, analyze), in process.
// Input: newline-separated tokens; the first picks what to run, the rest are its arguments, e.g.
//   "layout\n--swizzle\n3,3,3\n--shape=8,8"  or  "int\n-9223372036854775808".
// Results and refusals are both fine; a signal, a sanitizer report, or an exception swz's main()
// would not turn into exit code 1 or 2 is a bug.
#include <fcntl.h>
#include <unistd.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"
#include "gemm_args.hpp"
#include "swzjit/cache.hpp"
#include "swzjit/error.hpp"
#include "transpose_args.hpp"

namespace cli = swz::cli;

namespace {

std::vector<std::string> split_lines(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> out(1);
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == '\n')
      out.emplace_back();
    else
      out.back().push_back(static_cast<char>(data[i]));
  }
  return out;
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_cli: %s\n", what.c_str());
  std::abort();
}

// NOTE: `swz layout` accepts up to 2^20 cells, and its SVG of that many is 316 MB (issue 10 item 13);
// the fuzzer keeps layouts small so each input runs in milliseconds.
bool layout_too_large(const std::vector<std::string>& argv) {
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string shape;
    if (argv[i] == "--shape" && i + 1 < argv.size()) shape = argv[i + 1];
    else if (argv[i].rfind("--shape=", 0) == 0) shape = argv[i].substr(8);
    else continue;
    try {
      const auto rc = cli::parse_int_list("--shape", shape, 1, 1LL << 40, 2);
      if (rc[0] > 4096 || rc[1] > 4096 || rc[0] * rc[1] > 4096) return true;
    } catch (const cli::UsageError&) {
    }
  }
  return false;
}

// NOTE: a GEMM command without --config builds the default config from the whole search space with
// a bank analysis of every candidate: ~8 s per input under ASan+UBSan, far too slow to fuzz. Those
// inputs are skipped; the option parsing they share is reached through --config and the other modes.
bool default_gemm_config(const std::string& what, const std::vector<std::string>& argv) {
  bool gemm = what == "gemm", config = false;
  for (const auto& a : argv) {
    gemm = gemm || a == "gemm";
    config = config || a == "--config" || a.rfind("--config=", 0) == 0;
  }
  return gemm && !config;
}

void run_parser(const std::string& what, const std::vector<std::string>& argv) {
  const std::string text = argv.empty() ? std::string() : argv[0];
  if (what == "int") {
    for (const auto& [lo, hi] : {std::pair<long long, long long>{LLONG_MIN, LLONG_MAX}, {0, 2147483647LL}, {-8, 8}}) {
      try {
        const long long v = cli::parse_int("--n", text, lo, hi);
        if (v < lo || v > hi) fail("parse_int returned " + std::to_string(v) + " outside its range");
      } catch (const cli::UsageError&) {
      }
    }
  } else if (what == "list") {
    for (std::size_t count : {std::size_t{0}, std::size_t{2}, std::size_t{3}}) {
      try {
        const auto v = cli::parse_int_list("--list", text, -(1LL << 40), 1LL << 40, count);
        if (count != 0 && v.size() != count) fail("parse_int_list returned the wrong count");
        for (long long x : v)
          if (x < -(1LL << 40) || x > (1LL << 40)) fail("parse_int_list returned a value outside its range");
      } catch (const cli::UsageError&) {
      }
    }
  } else if (what == "bytes") {
    try {
      (void)swz::parse_byte_size(text);
    } catch (const swz::Error&) {
    }
  } else if (what == "choice") {
    try {
      if (cli::parse_choice("--c", text, {"a", "bb", ""}) != text) fail("parse_choice returned another text");
    } catch (const cli::UsageError&) {
    }
  } else if (what == "transpose") {
    cli::Args args(argv);
    (void)cli::read_transpose_config(args);
    args.finish();
  } else if (what == "gemm") {
    cli::Args args(argv);
    swz::GemmProblem p;
    (void)cli::read_gemm_config(args);
    cli::read_gemm_layout(args, p);
    args.finish();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // The commands print their results; the fuzzer reports on stderr.
  const int null = ::open("/dev/null", O_WRONLY);
  if (null >= 0) ::dup2(null, STDOUT_FILENO);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096) return -1;
  std::vector<std::string> tokens = split_lines(data, size);
  const std::string what = tokens[0];
  tokens.erase(tokens.begin());
  const cli::Command* command = nullptr;
  for (const cli::Command* c : {&cli::layout_command(), &cli::bank_command(), &cli::solve_command(),
                                &cli::gen_command(), &cli::analyze_command()})
    if (what == c->name) command = c;
  if (command && what == "layout" && layout_too_large(tokens)) return -1;
  if (default_gemm_config(what, tokens)) return -1;
  // As swz's main(): usage errors exit 2, library errors 1 or 2, other std::exceptions 1.
  try {
    if (command) {
      cli::Args args(tokens);
      const int code = command->run(args);
      if (code != 0 && code != 1 && code != 2) fail(what + " returned exit code " + std::to_string(code));
    } else {
      run_parser(what, tokens);
    }
  } catch (const cli::UsageError&) {
  } catch (const swz::Error&) {
  } catch (const std::exception&) {
  }
  std::fflush(stdout);
  return 0;
}
