// tools: reading a GEMM config and problem options from the command line (swz gen|compile|analyze|run gemm).
#pragma once

#include "cli.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/gemm.hpp"

namespace swz {
namespace cli {

/// Options text for --help of every command that takes a GEMM config.
extern const char kGemmConfigHelp[];

/// --config STR (sgemm,... or hgemm,...), else the default config of a 4096^3 problem of --dtype
/// (default f32), --out (default: the input dtype) and --layout (default NN).
GemmConfig read_gemm_config(Args& args);

/// --dtype (default `in_fallback`) and --out (default `out_fallback`, empty = the input dtype) into a
/// problem; an unknown or unsupported pair is a UsageError (exit 2 in every command).
void read_gemm_dtypes(Args& args, GemmProblem& p, const std::string& in_fallback, const std::string& out_fallback = {});

/// --layout NN|NT|TN|TT and --c-order row|col into a problem's storage orders.
void read_gemm_layout(Args& args, GemmProblem& p);

/// "A", "B" or "A and B": the operands GemmProblem::staged reported staging.
const char* staged_operands(bool stage_a, bool stage_b);

}  // namespace cli
}  // namespace swz
