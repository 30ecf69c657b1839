// tools: `swz gen`, `swz compile` and `swz analyze` — the generated source of a kernel config (transpose
// or gemm), its NVRTC compile (no GPU needed) and its static shared-memory bank analysis.
#include <chrono>
#include <cstdio>
#include <string>

#include "cli.hpp"
#include "commands.hpp"
#include "gemm_args.hpp"
#include "output.hpp"
#include "swzjit/error.hpp"
#include "swzjit/gemm.hpp"
#include "swzjit/jit.hpp"
#include "swzjit/transpose.hpp"
#include "transpose_args.hpp"

namespace swz {
namespace cli {

namespace {

bool is_gemm(const Args& args) { return args.peek_positional() == std::optional<std::string>("gemm"); }

void consume_gemm_family(Args& args) { args.next_positional(); }

bool is_sm90(Args& args) { return args.peek_positional() == std::optional<std::string>("gemm_sm90"); }

// `--config TEXT` of `swz gen|compile gemm_sm90` (the form `swz analyze gemm_sm90` takes).
std::string read_sm90_config(Args& args) {
  args.next_positional();  // "gemm_sm90"
  return args.value_or("config", "");
}

int run_gen(Args& args) {
  read_format(args, {Format::Text});  // the output is CUDA source: --format json|csv is refused, naming text
  if (is_sm90(args)) {
    const std::string config = read_sm90_config(args);
    args.finish();
    const CompileRequest req = gemm_sm90_request(config);
    std::printf("// %s  (name expression: %s; arch %s)\n%s", req.source_name.c_str(), req.name_expression.c_str(),
                req.arch.c_str(), req.source.c_str());
    return 0;
  }
  if (is_declared_family(args)) return family_gen(args);
  if (is_gemm(args)) {
    consume_gemm_family(args);
    const GemmConfig c = read_gemm_config(args);
    args.finish();
    std::printf("// %s  (name expression: %s)\n%s", gemm_source_name(c).c_str(), gemm_name_expression(c).c_str(),
                gemm_source(c).c_str());
    return 0;
  }
  const TransposeConfig c = read_transpose_config(args);
  expect_family(args, "gen");
  args.finish();
  std::printf("// %s  (name expression: %s)\n%s", transpose_source_name(c).c_str(),
              transpose_name_expression(c).c_str(), transpose_source(c).c_str());
  return 0;
}

void check_arch(const std::string& arch) {
  if (!arch.empty() && !is_known_arch(arch)) {
    std::string allowed;
    for (const auto& a : known_archs()) allowed += (allowed.empty() ? "" : "|") + a;
    throw UsageError("--arch: '" + arch + "' is not supported (allowed: " + allowed + ")");
  }
}

}  // namespace

int report_compile(const std::string& config, const CompileRequest& req, Format format) {
  const auto t0 = std::chrono::steady_clock::now();
  const CompiledKernel k = compile(req);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  CubinResources r;
  if (!k.is_ptx) r = cubin_resources(k);
  std::string opts;
  for (const auto& o : k.options) opts += (opts.empty() ? "" : " ") + o;
  if (format == Format::Json) {
    std::printf(
        "{%s\"config\": %s, \"arch\": \"%s\", \"format\": \"%s\", \"image_bytes\": %zu, \"registers\": %d, "
        "\"static_smem_bytes\": %d, \"local_bytes\": %d, \"code_bytes\": %lld, \"lowered_name\": %s, "
        "\"compile_ms\": %.1f, \"options\": %s}\n",
        json_version_member().c_str(), json_string(config).c_str(), k.arch.c_str(), k.is_ptx ? "ptx" : "cubin",
        k.image.size(), r.registers, r.static_smem_bytes, r.local_bytes, r.code_bytes,
        json_string(k.lowered_name).c_str(), ms, json_string(opts).c_str());
    return 0;
  }
  if (format == Format::Csv) {
    CsvTable t({"config", "arch", "format", "image_bytes", "registers", "static_smem_bytes", "local_bytes",
                "code_bytes", "lowered_name", "compile_ms", "options"});
    t.add({config, k.arch, k.is_ptx ? "ptx" : "cubin", std::to_string(k.image.size()), std::to_string(r.registers),
           std::to_string(r.static_smem_bytes), std::to_string(r.local_bytes), std::to_string(r.code_bytes),
           k.lowered_name, fixed(ms, 1), opts});
    t.print();
    return 0;
  }
  std::printf("config        %s\n", config.c_str());
  std::printf("arch          %s (%s, %zu bytes)\n", k.arch.c_str(), k.is_ptx ? "PTX fallback" : "cubin", k.image.size());
  std::printf("kernel        %s\n", k.lowered_name.c_str());
  if (k.is_ptx) {
    std::printf("resources     decided by the driver at load time (PTX); run on a GPU to see them\n");
  } else {
    std::printf("registers     %d per thread\n", r.registers);
    std::printf("shared mem    %d bytes static per block\n", r.static_smem_bytes);
    std::printf("local/spills  %d bytes per thread%s\n", r.local_bytes, r.local_bytes ? "  <- uses local memory" : "");
    std::printf("code          %lld bytes of machine code\n", r.code_bytes);
  }
  std::printf("compile time  %.1f ms\n", ms);
  std::printf("options       %s\n", opts.c_str());
  if (!k.log.empty()) std::printf("nvrtc log     %s\n", k.log.c_str());
  return 0;
}

namespace {

int run_compile(Args& args) {
  if (is_sm90(args)) {
    const std::string config = read_sm90_config(args);
    const std::string arch = args.value_or("arch", "");
    const Format format = read_format(args, {Format::Text, Format::Json, Format::Csv});
    args.finish();
    // wgmma and setmaxnreg exist only in sm_90a: the kernel has no other target.
    if (!arch.empty() && arch != "sm_90a" && arch != "sm_90")
      throw UsageError("--arch: the Hopper GEMM compiles for sm_90a only (got '" + arch + "')");
    return report_compile(gemm_sm90_config_text(config), gemm_sm90_request(config), format);
  }
  if (is_declared_family(args)) return family_compile(args);
  CompileRequest req;
  std::string config;
  const bool gemm = is_gemm(args);
  if (gemm) {
    consume_gemm_family(args);
    const GemmConfig c = read_gemm_config(args);
    config = c.to_string();
    req.source = gemm_source(c);
    req.source_name = gemm_source_name(c);
    req.name_expression = gemm_name_expression(c);
  } else {
    const TransposeConfig c = read_transpose_config(args);
    config = c.to_string();
    req.source = transpose_source(c);
    req.source_name = transpose_source_name(c);
    req.name_expression = transpose_name_expression(c);
  }
  const std::string arch = args.value_or("arch", "");
  const Format format = read_format(args, {Format::Text, Format::Json, Format::Csv});
  if (!gemm) expect_family(args, "compile");
  args.finish();
  check_arch(arch);
  req.arch = arch;
  return report_compile(config, req, format);
}

// One row per shared-memory instruction of an analysis (transpose and gemm alike).
template <typename Instrs>
void print_instruction_csv(const char* family, const std::string& config, const Instrs& instrs) {
  CsvTable t({"family", "config", "instruction", "count", "wavefronts", "ideal_wavefronts", "excess_wavefronts",
              "max_way"});
  for (const auto& s : instrs)
    t.add({family, config, s.name, std::to_string(s.instructions), std::to_string(s.wavefronts),
           std::to_string(s.ideal_wavefronts), std::to_string(s.excess_wavefronts), std::to_string(s.max_way)});
  t.print();
}

int run_analyze_gemm(Args& args) {
  consume_gemm_family(args);
  const GemmConfig c = read_gemm_config(args);
  const Format format = read_format(args, {Format::Text, Format::Json, Format::Csv});
  args.finish();
  const GemmAnalysis a = analyze_gemm(c);
  if (format == Format::Csv) {
    print_instruction_csv("gemm", c.to_string(), a.instrs);
    return 0;
  }
  if (format == Format::Json) {
    std::printf("{%s\"config\": \"%s\", \"excess_wavefronts\": %lld, \"store_wavefronts\": %lld, \"store_ideal\": %lld, "
                "\"load_wavefronts\": %lld, \"load_ideal\": %lld, \"instructions\": [",
                json_version_member().c_str(), c.to_string().c_str(), a.excess(), a.store_wavefronts, a.store_ideal, a.load_wavefronts, a.load_ideal);
    for (std::size_t i = 0; i < a.instrs.size(); ++i) {
      const auto& s = a.instrs[i];
      std::printf("%s{\"name\": \"%s\", \"count\": %lld, \"wavefronts\": %lld, \"ideal_wavefronts\": %lld, "
                  "\"excess_wavefronts\": %lld, \"max_way\": %d}",
                  i ? ", " : "", s.name.c_str(), s.instructions, s.wavefronts, s.ideal_wavefronts, s.excess_wavefronts,
                  s.max_way);
    }
    std::printf("]}\n");
    return 0;
  }
  std::printf("gemm %s: shared-memory instructions of one k-tile of one block (%d threads)\n", c.to_string().c_str(),
              c.threads());
  std::printf("%-36s %8s %11s %8s %8s %8s\n", "instruction", "count", "wavefronts", "ideal", "excess", "max-way");
  for (const auto& s : a.instrs)
    std::printf("%-36s %8lld %11lld %8lld %8lld %8d\n", s.name.c_str(), s.instructions, s.wavefronts,
                s.ideal_wavefronts, s.excess_wavefronts, s.max_way);
  std::printf("%s\n", a.excess() == 0 ? "bank-conflict free" : "BANK CONFLICTS: excess wavefronts above");
  return 0;
}

int run_analyze(Args& args) {
  if (is_sm90(args)) return run_analyze_sm90(args);
  if (is_declared_family(args)) return family_analyze(args);
  if (is_gemm(args)) return run_analyze_gemm(args);
  const TransposeConfig c = read_transpose_config(args);
  const Format format = read_format(args, {Format::Text, Format::Json, Format::Csv});
  expect_family(args, "analyze");
  args.finish();
  const TransposeAnalysis a = analyze_transpose(c);
  if (format == Format::Csv) {
    print_instruction_csv("transpose", c.to_string(), a.instrs);
    return 0;
  }
  if (format == Format::Json) {
    std::printf("{%s\"config\": \"%s\", \"excess_wavefronts\": %lld, \"store_wavefronts\": %lld, \"store_ideal\": %lld, "
                "\"store_instructions\": %lld, \"load_wavefronts\": %lld, \"load_ideal\": %lld, "
                "\"load_instructions\": %lld, \"instructions\": [",
                json_version_member().c_str(), c.to_string().c_str(), a.excess(), a.store_wavefronts, a.store_ideal, a.store_instructions,
                a.load_wavefronts, a.load_ideal, a.load_instructions);
    for (std::size_t i = 0; i < a.instrs.size(); ++i) {
      const auto& s = a.instrs[i];
      std::printf("%s{\"name\": \"%s\", \"count\": %lld, \"wavefronts\": %lld, \"ideal_wavefronts\": %lld, "
                  "\"excess_wavefronts\": %lld, \"max_way\": %d}",
                  i ? ", " : "", s.name.c_str(), s.instructions, s.wavefronts, s.ideal_wavefronts, s.excess_wavefronts,
                  s.max_way);
    }
    std::printf("]}\n");
    return 0;
  }
  std::printf("transpose %s: shared-memory instructions of one %dx%d tile (%d warps)\n", c.to_string().c_str(),
              c.tile_rows, c.tile_cols, c.threads / 32);
  std::printf("%-28s %8s %11s %8s %8s %8s\n", "instruction", "count", "wavefronts", "ideal", "excess", "max-way");
  for (const auto& s : a.instrs)
    std::printf("%-28s %8lld %11lld %8lld %8lld %8d\n", s.name.c_str(), s.instructions, s.wavefronts,
                s.ideal_wavefronts, s.excess_wavefronts, s.max_way);
  std::printf("%-28s %8lld %11lld %8lld %8lld\n", "total stores (sts)", a.store_instructions, a.store_wavefronts,
              a.store_ideal, a.store_wavefronts - a.store_ideal);
  std::printf("%-28s %8lld %11lld %8lld %8lld\n", "total loads (lds)", a.load_instructions, a.load_wavefronts,
              a.load_ideal, a.load_wavefronts - a.load_ideal);
  std::printf("%s\n", a.excess() == 0 ? "bank-conflict free" : "BANK CONFLICTS: excess wavefronts above");
  return 0;
}

std::string help_for(const char* usage, const char* what) {
  return std::string(usage) + "\n" + what + "\n" + transpose_config_help() + "\n" + kGemmConfigHelp;
}

// NOTE: built when --help is given (Command::make_help): the text asks the library for its default configs.
std::string gen_help() {
  return help_for(
    "usage: swz gen transpose|gemm|gemm_sm90|FAMILY [config options]   (FAMILY: see swz family --help)",
    "Print the generated translation unit (one #include and one explicit instantiation) and the name\n"
    "expression NVRTC resolves. The output is CUDA source: --format takes text only (json and csv are\n"
    "refused, exit 2). example: swz gen transpose --dtype f16 --tile 64x64 --smem swizzle\n"
    "gemm_sm90 (the Hopper GEMM): --config TEXT, as swz analyze gemm_sm90 takes it (swz analyze --help).\n");
}
std::string compile_help() {
  return help_for(
    "usage: swz compile transpose|gemm|gemm_sm90|FAMILY [config options] [--arch sm_XX] [--format text|json|csv]",
    "Compile with NVRTC (no GPU needed; without --arch the GPU's arch is detected) and print the cubin\n"
    "size, registers, static shared memory, local memory (spills) and the options used.\n"
    "--format: text (default), json (one object) or csv (a header row and one row); --json = --format json\n"
    "example: swz compile transpose --config f32,tile=64x64,threads=256,vec=4,smem=pad:1 --arch sm_90\n"
    "gemm_sm90 (the Hopper GEMM, always sm_90a): --config TEXT, as swz analyze gemm_sm90 takes it (swz analyze --help);\n"
    "  example: swz compile gemm_sm90 --config in=bf16,out=bf16,layout=TN,bn=128,stages=6,splits=4\n");
}
std::string analyze_help() {
  return help_for(
    "usage: swz analyze transpose|gemm|gemm_sm90|FAMILY [config options] [--format text|json|csv]   (FAMILY:\n"
    "       see swz family --help)",
    "Static bank analysis: every warp-wide shared-memory instruction of one tile, evaluated with the\n"
    "kernel template's own index maps through the bank model (wavefronts, ideal, excess, worst bank).\n"
    "--format: text (default), json (one object) or csv (a header row, one row per instruction);\n"
    "--json = --format json. Without config options it analyses the default config (printed first).\n"
    "example: swz analyze transpose --dtype f32 --tile 32x32 --vec 1 --smem plain\n") + kAnalyzeSm90Help;
}

}  // namespace

const Command& gen_command() {
  static const Command cmd{"gen", "print the generated source of a kernel config", nullptr, &run_gen, &gen_help};
  return cmd;
}
const Command& compile_command() {
  static const Command cmd{"compile", "compile a kernel config with NVRTC (no GPU needed)", nullptr, &run_compile,
                           &compile_help};
  return cmd;
}
const Command& analyze_command() {
  static const Command cmd{"analyze", "static shared-memory bank analysis of a kernel config", nullptr,
                           &run_analyze, &analyze_help};
  return cmd;
}

}  // namespace cli
}  // namespace swz
