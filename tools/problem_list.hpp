// tools: problem files (one problem a line, in the command line's syntax) and `--shard i/n`, shared by
// `swz autotune --problems` and `swz cache warm --problems` so n machines split one list exactly.
#pragma once

#include <string>
#include <vector>

#include "cli.hpp"
#include "swzjit/engine.hpp"

namespace swz {
namespace cli {

/// One problem of a file: its 1-based line, its text (whitespace collapsed) and its words.
struct ProblemLine {
  int line = 0;
  std::string text;
  std::vector<std::string> words;  ///< e.g. {"gemm", "--m", "4096", "--n", "4096", "--k", "4096"}
};

/// Reads a problem file: '#' starts a comment, blank lines are skipped, a repeated problem is kept
/// once (its first line). Every line is checked (family and options) before anything runs: a
/// UsageError names FILE:LINE and what is wrong. An empty list is an error too.
std::vector<ProblemLine> read_problem_file(const std::string& path);

/// The i-th of n slices ("i/n", 0 <= i < n <= 100000): 0-based, so a job array's task id fits.
struct Shard {
  int index = 0;
  int count = 1;
};
/// Throws UsageError naming --shard and the allowed form.
Shard parse_shard(const std::string& text);
/// Problems k with k % n == i, in file order: n shards together take each problem exactly once.
std::vector<ProblemLine> select_shard(const std::vector<ProblemLine>& all, Shard shard);

/// A parsed problem line: the family and its problem (the other one stays default).
struct ParsedProblem {
  std::string family;  ///< "transpose" or "gemm"
  TransposeProblem transpose;
  GemmProblem gemm;
};
/// Parses the problem options of a line (the command line's names and ranges); other options of
/// the line are a UsageError. `where` prefixes every message (e.g. "models.txt:3").
ParsedProblem parse_problem(const ProblemLine& p, const std::string& where);

/// `swz <command> --problems FILE [--shard i/n] OPTIONS`: runs `run` once per problem of the shard,
/// with the line's words followed by OPTIONS; returns the worst exit code (0 when all succeeded).
/// Each problem's start and end go to stderr as "[k/n] FILE:LINE: text".
int run_each_problem(Args& args, const char* command, int (*run)(Args&));

/// `swz cache warm ...` (tools/cmd_cache_warm.cpp); tools/cmd_cache.cpp dispatches to it.
int run_cache_warm(Args& args);

}  // namespace cli
}  // namespace swz
