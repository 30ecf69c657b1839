// tools: reading a GEMM config and problem options from the command line (see gemm_args.hpp).
#include "gemm_args.hpp"

#include "swzjit/error.hpp"

namespace swz {
namespace cli {

const char kGemmConfigHelp[] =
    "gemm config (one string, or the default for a dtype and layout):\n"
    "  --config STR   sgemm,LAYOUT,tile=BMxBNxBK,warp=WMxWN,wniter=I,thread=TMxTN,threads=N,stages=1|2,vec=V,\n"
    "                 raster=R,swa=B:M:S,swb=B:M:S[,split=N]\n"
    "                 hgemm,IN>OUT,LAYOUT,tile=BMxBNxBK,warp=WMxWN,stages=S,vec=V,raster=R,swa=B:M:S,swb=B:M:S\n"
    "                 [,split=N]  (either family; split-K: N slices of K into an f32 workspace, then a\n"
    "                 reduction applying alpha/beta; 1..64)\n"
    "                 an omitted swa / swb gets the conflict-free swizzle the bank analysis picks;\n"
    "                 swa=0:0:0 means no swizzle\n"
    "  --dtype T      f32|f16|bf16 (inputs; default f32)   --out T   f32|f16|bf16 (default: the input dtype)\n"
    "  --layout L     NN|NT|TN|TT: A then B; N = row-major as in C = A*B, T = column-major (default NN)\n";

const char* staged_operands(bool stage_a, bool stage_b) { return stage_a ? (stage_b ? "A and B" : "A") : "B"; }

void read_gemm_layout(Args& args, GemmProblem& p) {
  const std::string l = parse_choice("--layout", args.value_or("layout", "NN"), {"NN", "NT", "TN", "TT"});
  p.a_order = l[0] == 'N' ? MatrixOrder::RowMajor : MatrixOrder::ColMajor;
  p.b_order = l[1] == 'N' ? MatrixOrder::RowMajor : MatrixOrder::ColMajor;
  const std::string c = parse_choice("--c-order", args.value_or("c-order", "row"), {"row", "col"});
  p.c_order = c == "row" ? MatrixOrder::RowMajor : MatrixOrder::ColMajor;
}

void read_gemm_dtypes(Args& args, GemmProblem& p, const std::string& in_fallback, const std::string& out_fallback) {
  // NOTE: one place, so `--dtype f32 --out f16` is exit 2 (bad usage) in gen, analyze, compile, run and autotune.
  try {
    p.dtype = parse_dtype(args.value_or("dtype", in_fallback));
    p.out_dtype = parse_dtype(args.value_or("out", out_fallback.empty() ? to_string(p.dtype) : out_fallback));
    check_gemm_dtypes(p.dtype, p.out_dtype);
  } catch (const Error& e) {
    throw UsageError(std::string("--dtype/--out: ") + e.what());
  }
}

GemmConfig read_gemm_config(Args& args) {
  if (args.given("config")) {
    if (args.given("dtype") || args.given("out") || args.given("layout"))
      throw UsageError("--config cannot be combined with --dtype/--out/--layout");
    return GemmConfig::parse(*args.value("config"));
  }
  GemmProblem p;
  read_gemm_dtypes(args, p, "f32");
  p.m = p.n = p.k = 4096;
  read_gemm_layout(args, p);
  return default_gemm_config(p, 16);
}

}  // namespace cli
}  // namespace swz
