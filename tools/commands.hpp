// tools: the table of `swz` subcommands; each lives in its own tools/cmd_*.cpp.
#pragma once

#include "cli.hpp"

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

/// `swz run gemm ...` (tools/cmd_run_gemm.cpp); tools/cmd_run.cpp dispatches to it on the family.
int run_gemm(Args& args);
extern const char kRunGemmHelp[];

}  // namespace cli
}  // namespace swz
