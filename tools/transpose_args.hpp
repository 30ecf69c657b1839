// tools: reading a transpose config from the command line (shared by gen/compile/analyze/run).
#pragma once

#include "cli.hpp"
#include "swzjit/transpose.hpp"

namespace swz {
namespace cli {

/// Options text for --help of every command that takes a transpose config. The defaults it states are
/// read from default_transpose_config for each dtype, so --help says what a command really uses.
std::string transpose_config_help();

/// --config STRING, or --dtype/--tile/--threads/--vec/--smem on top of the defaults. `pad` and
/// `swizzle` without parameters pick conflict-free ones by static analysis. `dtype_fallback` is used
/// when neither --config nor --dtype names one.
TransposeConfig read_transpose_config(Args& args, const std::string& dtype_fallback = "f32");

/// Consume the family positional ("transpose"); a UsageError names what is supported.
void expect_family(Args& args, const char* command);

}  // namespace cli
}  // namespace swz
