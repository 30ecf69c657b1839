// tools: the table of `swz` subcommands; each lives in its own tools/cmd_*.cpp.
#pragma once

#include <memory>
#include <string>

#include "cli.hpp"
#include "output.hpp"
#include "swzjit/family.hpp"
#include "swzjit/jit.hpp"

namespace swz {
namespace cli {

const Command& layout_command();
const Command& bank_command();
const Command& solve_command();
const Command& info_command();
const Command& cache_command();
const Command& gen_command();
const Command& compile_command();
const Command& analyze_command();
const Command& run_command();
const Command& autotune_command();
const Command& family_command();

/// `swz run gemm ...` (tools/cmd_run_gemm.cpp); tools/cmd_run.cpp dispatches to it on the family.
int run_gemm(Args& args);
extern const char kRunGemmHelp[];

/// `swz analyze gemm_sm90 ...` (tools/cmd_analyze_sm90.cpp): the Hopper GEMM's TMA/wgmma layout proof.
int run_analyze_sm90(Args& args);
extern const char kAnalyzeSm90Help[];

/// Declared families (tools/cmd_family.cpp): true when the next positional names neither transpose nor
/// gemm; load_family takes a registered name or a path to a .family file (registered on the way).
bool is_declared_family(const Args& args);
std::shared_ptr<const Family> load_family(const std::string& name_or_path);
int family_gen(Args& args);
int family_compile(Args& args);
int family_analyze(Args& args);
int family_run(Args& args);

/// Compiles `req` and prints the image, resources, compile time and options (tools/cmd_kernel.cpp).
int report_compile(const std::string& config, const CompileRequest& req, Format format);

}  // namespace cli
}  // namespace swz
