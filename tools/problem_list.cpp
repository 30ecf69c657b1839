// tools: problem files and `--shard i/n` (see problem_list.hpp).
#include "problem_list.hpp"

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "gemm_args.hpp"
#include "swzjit/error.hpp"

namespace swz {
namespace cli {

namespace {

constexpr std::size_t kMaxProblems = 1000000;
constexpr std::size_t kMaxLineBytes = 4096;

}  // namespace

ParsedProblem parse_problem(const ProblemLine& p, const std::string& where) {
  try {
    Args args(std::vector<std::string>(p.words.begin(), p.words.end()));
    ParsedProblem out;
    const auto family = args.next_positional();
    if (!family) throw UsageError("no family: a line starts with transpose or gemm");
    out.family = parse_choice("family", *family, {"transpose", "gemm"});
    if (out.family == "gemm") {
      const auto m = args.value("m"), n = args.value("n"), k = args.value("k");
      if (!m || !n || !k) throw UsageError("--m M, --n N and --k K are required");
      read_gemm_dtypes(args, out.gemm, "f32");
      read_gemm_layout(args, out.gemm);
      out.gemm.m = parse_int("--m", *m, 1, 2147483647LL);
      out.gemm.n = parse_int("--n", *n, 1, 2147483647LL);
      out.gemm.k = parse_int("--k", *k, 1, 2147483647LL);
      out.gemm.batch = parse_int("--batch", args.value_or("batch", "1"), 1, 65535);
      args.finish();
      out.gemm.resolved();
    } else {
      const auto rows = args.value("rows"), cols = args.value("cols");
      if (!rows || !cols) throw UsageError("--rows R and --cols C are required");
      try {
        out.transpose.dtype = parse_dtype(args.value_or("dtype", "f32"));
      } catch (const Error& e) {
        throw UsageError(std::string("--dtype: ") + e.what());
      }
      out.transpose.rows = parse_int("--rows", *rows, 1, 1LL << 31);
      out.transpose.cols = parse_int("--cols", *cols, 1, 1LL << 31);
      out.transpose.batch = parse_int("--batch", args.value_or("batch", "1"), 1, 1 << 20);
      args.finish();
      out.transpose.resolved();
    }
    return out;
  } catch (const UsageError& e) {
    throw UsageError(where + ": " + e.what());
  } catch (const Error& e) {
    throw UsageError(where + ": " + e.what());
  }
}

std::vector<ProblemLine> read_problem_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("--problems: cannot read " + path);
  std::vector<ProblemLine> out;
  std::set<std::string> seen;
  std::string raw;
  int line = 0;
  while (std::getline(in, raw)) {
    ++line;
    const std::string where = path + ":" + std::to_string(line);
    if (raw.size() > kMaxLineBytes)
      throw UsageError(where + ": the line is longer than " + std::to_string(kMaxLineBytes) + " bytes");
    const std::size_t hash = raw.find('#');
    if (hash != std::string::npos) raw.resize(hash);
    ProblemLine p;
    p.line = line;
    std::istringstream words(raw);
    for (std::string w; words >> w;) {
      for (unsigned char c : w)
        if (c < 0x20 || c == 0x7f) throw UsageError(where + ": a control character in '" + w + "'");
      p.words.push_back(w);
      p.text += (p.text.empty() ? "" : " ") + w;
    }
    if (p.words.empty()) continue;
    parse_problem(p, where);
    if (!seen.insert(p.text).second) continue;  // the same problem twice is tuned once
    if (out.size() >= kMaxProblems) throw UsageError(where + ": more than " + std::to_string(kMaxProblems) + " problems");
    out.push_back(std::move(p));
  }
  if (in.bad()) throw UsageError("--problems: reading " + path + " failed");
  if (out.empty()) throw UsageError("--problems: " + path + " lists no problem (one per line, e.g. gemm --m 4096 --n 4096 --k 4096)");
  return out;
}

Shard parse_shard(const std::string& text) {
  const std::string form = " (expected i/n with 0 <= i < n <= 100000, e.g. --shard 0/4 ... --shard 3/4)";
  const std::size_t slash = text.find('/');
  if (slash == std::string::npos) throw UsageError("--shard: '" + text + "' is not i/n" + form);
  Shard s;
  try {
    s.count = static_cast<int>(parse_integer("--shard n", text.substr(slash + 1), 1, 100000));
    s.index = static_cast<int>(parse_integer("--shard i", text.substr(0, slash), 0, 99999));
  } catch (const Error& e) {
    throw UsageError(std::string(e.what()) + form);
  }
  if (s.index >= s.count)
    throw UsageError("--shard: " + text + ": i must be below n (shards are numbered from 0)" + form);
  return s;
}

std::vector<ProblemLine> select_shard(const std::vector<ProblemLine>& all, Shard shard) {
  std::vector<ProblemLine> out;
  for (std::size_t k = 0; k < all.size(); ++k)
    if (k % static_cast<std::size_t>(shard.count) == static_cast<std::size_t>(shard.index)) out.push_back(all[k]);
  return out;
}

int run_each_problem(Args& args, const char* command, int (*run)(Args&)) {
  const std::string file = *args.value("problems");
  const auto shard_text = args.value("shard");
  const Shard shard = shard_text ? parse_shard(*shard_text) : Shard{};
  // The rest applies to every problem; a stray positional fails that problem's own parse.
  const std::vector<std::string> options = args.rest();
  const auto mine = select_shard(read_problem_file(file), shard);
  int worst = 0;
  for (std::size_t k = 0; k < mine.size(); ++k) {
    const std::string tag = "[" + std::to_string(k + 1) + "/" + std::to_string(mine.size()) + "] " + file + ":" +
                            std::to_string(mine[k].line) + ": " + mine[k].text;
    std::fprintf(stderr, "swz %s: %s\n", command, tag.c_str());
    std::vector<std::string> argv = mine[k].words;
    argv.insert(argv.end(), options.begin(), options.end());
    Args one(argv);
    int code = 1;
    try {
      code = run(one);
    } catch (const UsageError& e) {
      throw UsageError(tag + ": " + e.what());
    } catch (const Error& e) {
      // One failing problem does not stop the others of the shard; the exit code says it failed.
      std::fprintf(stderr, "swz %s: %s: %s: %s\n", command, tag.c_str(), to_string(e.kind()), e.what());
      if (e.kind() == ErrorKind::InvalidArgument) throw UsageError(tag + ": " + e.what());
    }
    if (code > worst) worst = code;
  }
  return worst;
}

}  // namespace cli
}  // namespace swz
