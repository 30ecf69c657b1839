// tools: declared kernel families in `swz` (include/swzjit/family.hpp): `swz family ls|show`, and the
// family side of `swz gen|compile|analyze|run FAMILY` (tools/cmd_kernel.cpp and tools/cmd_run.cpp
// dispatch here for any family other than transpose and gemm; `swz autotune` calls load_family).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "swzjit/device.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"
#include "swzjit/jit.hpp"
#include "swzjit/types.hpp"

namespace swz {
namespace cli {

bool is_declared_family(const Args& args) {
  const auto f = args.peek_positional();
  return f && *f != "transpose" && *f != "gemm";
}

std::shared_ptr<const Family> load_family(const std::string& name_or_path) {
  const bool path = name_or_path.find('/') != std::string::npos ||
                    (name_or_path.size() > 7 && name_or_path.compare(name_or_path.size() - 7, 7, ".family") == 0);
  if (path) return register_family(FamilyDef::load(name_or_path));
  return get_family(name_or_path);
}

namespace {

// The seed of `swz run FAMILY`'s random inputs when --seed is not given (what it always used).
constexpr long long kFamilyRunSeed = 0x5EED;

std::shared_ptr<const Family> take_family(Args& args) {
  const auto name = args.next_positional();
  if (!name) throw UsageError("missing the family (a name from `swz family ls` or a .family file)");
  return load_family(*name);
}

// The digits after "sm_" ("sm_90a" -> 90).
int arch_number(const std::string& arch) {
  int n = 0;
  for (std::size_t i = 3; i < arch.size() && arch[i] >= '0' && arch[i] <= '9'; ++i) n = n * 10 + (arch[i] - '0');
  return n;
}

FamilyValues read_config(Args& args, const Family& f) { return f.parse_config(args.value_or("config", "")); }

// The product of the params' values; -1 when the family's own code picks the candidates per problem
// (FamilyDef::space_fn or a program's space: the values then only bound what a configuration may name).
long long space_size(const Family& f) {
  if (f.def().space_fn || (f.def().program && f.def().program->space)) return -1;
  long long n = 1;
  for (const FamilyParam& p : f.def().params) n *= static_cast<long long>(p.values.size());
  return n;
}

int run_ls(Args& args) {
  const Format format = read_format(args, {Format::Text, Format::Json, Format::Csv});
  args.finish();
  const std::vector<std::string> names = family_names();
  const bool json = format == Format::Json;
  CsvTable csv({"family", "dims", "params", "space", "about"});
  if (json) std::printf("[");
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto f = get_family(names[i]);
    std::string dims, params;
    for (const std::string& d : f->def().dims) dims += (dims.empty() ? "" : " ") + d;
    for (const FamilyParam& p : f->def().params) params += (params.empty() ? "" : " ") + p.name;
    // NOTE: the JSON stays an array (one object per family, as before); each object carries the version.
    if (json)
      std::printf("%s{%s\"family\": %s, \"dims\": %s, \"params\": %s, \"space\": %lld}", i ? ", " : "",
                  json_version_member().c_str(), json_string(f->name()).c_str(), json_string(dims).c_str(),
                  json_string(params).c_str(), space_size(*f));
    else if (format == Format::Csv)
      csv.add({f->name(), dims, params, std::to_string(space_size(*f)), f->def().about});
    else
      std::printf("%-12s dims: %-18s params: %-24s space: %s\n  %s\n", f->name().c_str(), dims.c_str(),
                  params.c_str(), space_size(*f) < 0 ? "per problem" : std::to_string(space_size(*f)).c_str(),
                  f->def().about.c_str());
  }
  if (json) std::printf("]\n");
  if (format == Format::Csv) csv.print();
  if (format == Format::Text) {
    if (names.empty()) std::printf("no declared families\n");
    std::printf("built-in typed families: transpose, gemm (swz gen|compile|analyze|autotune|run transpose|gemm)\n");
  }
  return 0;
}

int run_show(Args& args) {
  read_format(args, {Format::Text});  // the .family text itself: no json or csv
  const auto f = take_family(args);
  args.finish();
  std::printf("# definition hash %s (tuned winners are stored under it), source hash %s\n",
              f->definition_hash().c_str(), f->source_hash().c_str());
  std::printf("%s", f->def().to_text().c_str());
  return 0;
}

const char kFamilyHelp[] =
    "usage: swz family ls [--format text|json|csv]\n"
    "       swz family show NAME|FILE.family\n"
    "ls --format: text (default), json (an array, one object per family, each with swzjit_version; --json\n"
    "is the same) or csv (a header row, one row per family). show prints the .family text: text only.\n"
    "\n"
    "Declared kernel families: a CUDA template plus a description of its parameters, search space,\n"
    "launch and reference kernel (the .family text format; docs/ARCHITECTURE.md, \"Families\"). An\n"
    "application registers its own with swz::register_family; `swz` takes one as a path to a .family file\n"
    "wherever it takes a family name:\n"
    "  swz gen FAMILY [--config K=V,...]                  the translation unit and name expression\n"
    "  swz compile FAMILY [--config ...] [--arch sm_XX]   NVRTC compile, resources (no GPU needed)\n"
    "  swz analyze FAMILY [--config ...]                  static bank analysis (when the family gives one)\n"
    "  swz autotune FAMILY --problem D=V,... [COMMON]     tune; see swz autotune --help\n"
    "  swz run FAMILY --problem D=V,... [--config ...] [--seed N] [--reps N] [--format text|json|csv]\n"
    "                                                     run on random data (inputs in [-1, 1] drawn from\n"
    "                                                     --seed, default 24301 = 0x5EED), check against the\n"
    "                                                     reference, time (median of --reps, default 20)\n"
    "example: swz analyze rowsum --config BLOCK_ROWS=128,LAYOUT=0\n";

int run_family_command(Args& args) {
  const auto sub = args.next_positional();
  if (!sub) throw UsageError("say what: `swz family ls` or `swz family show NAME` (see --help)");
  if (*sub == "ls") return run_ls(args);
  if (*sub == "show") return run_show(args);
  throw UsageError("unknown `swz family " + *sub + "` (ls, show)");
}

}  // namespace

int family_gen(Args& args) {
  const auto f = take_family(args);
  const FamilyValues c = read_config(args, *f);
  args.finish();
  std::printf("// %s  (family %s, config %s, name expression: %s)\n%s", f->def().source_name.c_str(),
              f->name().c_str(), f->config_text(c).c_str(), f->name_expression(c).c_str(), f->def().source.c_str());
  return 0;
}

int family_compile(Args& args) {
  const auto f = take_family(args);
  const FamilyValues c = read_config(args, *f);
  const std::string arch = args.value_or("arch", "");
  const Format format = read_format(args, {Format::Text, Format::Json, Format::Csv});
  args.finish();
  CompileRequest req;
  req.source = f->def().source;
  req.source_name = f->def().source_name;
  req.name_expression = f->name_expression(c);
  req.arch = f->target_arch(arch);  // sm_90 -> sm_90a for an arch-specific family
  if (!arch.empty() && f->def().max_arch != 0 && arch_number(arch) > f->def().max_arch)
    throw UsageError("--arch: " + f->name() + " runs on sm_" + std::to_string(f->def().max_arch) + " at most (got '" +
                     arch + "')");
  return report_compile(f->name() + " " + f->config_text(c), req, format);
}

int family_analyze(Args& args) {
  const auto f = take_family(args);
  const FamilyValues c = read_config(args, *f);
  const Format format = read_format(args, {Format::Text, Format::Json, Format::Csv});
  args.finish();
  const FamilyBankReport r = f->analyze(c);
  if (format == Format::Csv) {
    // The same columns as `swz analyze transpose|gemm --format csv`; instructions are numbered.
    CsvTable t({"family", "config", "instruction", "count", "wavefronts", "ideal_wavefronts", "excess_wavefronts",
                "max_way"});
    for (std::size_t i = 0; i < r.per_instruction.size(); ++i) {
      const BankReport& b = r.per_instruction[i];
      t.add({f->name(), f->config_text(c), "#" + std::to_string(i), "1", std::to_string(b.wavefronts),
             std::to_string(b.ideal_wavefronts), std::to_string(b.excess_wavefronts), std::to_string(b.max_way)});
    }
    t.print();
    return 0;
  }
  if (format == Format::Json) {
    std::printf("{%s\"family\": %s, \"config\": %s, \"analysed\": %s, \"wavefronts\": %d, \"ideal_wavefronts\": %d, "
                "\"excess_wavefronts\": %d, \"instructions\": [",
                json_version_member().c_str(), json_string(f->name()).c_str(), json_string(f->config_text(c)).c_str(), r.analysed ? "true" : "false", r.wavefronts,
                r.ideal_wavefronts, r.excess_wavefronts);
    for (std::size_t i = 0; i < r.per_instruction.size(); ++i) {
      const BankReport& b = r.per_instruction[i];
      std::printf("%s{\"wavefronts\": %d, \"ideal_wavefronts\": %d, \"excess_wavefronts\": %d, \"max_way\": %d}",
                  i ? ", " : "", b.wavefronts, b.ideal_wavefronts, b.excess_wavefronts, b.max_way);
    }
    std::printf("]}\n");
    return 0;
  }
  if (!r.analysed) {
    std::printf("%s %s: the family gives no shared-memory index maps (FamilyDef::smem_accesses), so there is no\n"
                "static bank analysis; a family defined in C++ can give one\n",
                f->name().c_str(), f->config_text(c).c_str());
    return 0;
  }
  std::printf("%s %s: warp 0's shared-memory instructions\n", f->name().c_str(), f->config_text(c).c_str());
  std::printf("%-12s %11s %8s %8s %8s\n", "instruction", "wavefronts", "ideal", "excess", "max-way");
  for (std::size_t i = 0; i < r.per_instruction.size(); ++i) {
    const BankReport& b = r.per_instruction[i];
    std::printf("#%-11zu %11d %8d %8d %8d\n", i, b.wavefronts, b.ideal_wavefronts, b.excess_wavefronts, b.max_way);
  }
  std::printf("%s\n", r.excess_wavefronts == 0 ? "bank-conflict free" : "BANK CONFLICTS: excess wavefronts above");
  return 0;
}

int family_run(Args& args) {
  const auto f = take_family(args);
  const auto ptext = args.value("problem");
  if (!ptext) throw UsageError("--problem D=V,... is required (dims of " + f->name() + ": " + f->problem_text({}) + ")");
  const FamilyValues problem = f->parse_problem(*ptext);
  const bool have_config = args.given("config");
  const FamilyValues cfg = read_config(args, *f);
  const int reps = static_cast<int>(parse_int("--reps", args.value_or("reps", "20"), 1, 100000));
  const std::uint64_t seed =
      static_cast<std::uint64_t>(parse_int("--seed", args.value_or("seed", std::to_string(kFamilyRunSeed)), 0, 4294967295LL));
  const Format format = read_format(args, {Format::Text, Format::Json, Format::Csv});
  EngineOptions eo;
  eo.cache_dir = args.value_or("cache-dir", "");
  args.finish();
  Engine engine(eo);
  const FamilyValues use = have_config ? cfg : engine.family_config(*f, problem);
  const std::string why = f->check_config(use, problem);
  if (!why.empty()) throw_invalid(f->name() + " config " + f->config_text(use) + ": " + why);
  const std::vector<long long> elems = f->buffer_elements(problem);
  const auto& defs = f->def().buffers;
  Stream stream(0, true);
  std::vector<DeviceBuffer> mem, ref;
  std::map<std::string, DevicePtr> bufs, ref_bufs;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (std::size_t i = 0; i < defs.size(); ++i) {
    if (defs[i].role == BufferRole::Scratch) {  // the engine places scratch buffers
      mem.emplace_back();
      continue;
    }
    const DType t = f->buffer_dtype(i, problem);  // its own type, or the problem's for a type dim
    const std::size_t bytes = static_cast<std::size_t>(std::max(1LL, elems[i])) * dtype_bytes(t);
    mem.emplace_back(bytes, 0);
    if (defs[i].role == BufferRole::Input || defs[i].role == BufferRole::InOut) {
      std::vector<unsigned char> host(bytes);
      for (long long e = 0; e < elems[i]; ++e) store_element(t, host.data() + e * dtype_bytes(t), dist(rng));
      mem.back().copy_from_host(host.data(), bytes, 0, stream.handle());
      ref_bufs[defs[i].name] = mem.back().ptr();
      if (defs[i].role == BufferRole::InOut) {  // read and written: the reference gets its own copy
        ref.emplace_back(bytes, 0);
        ref.back().copy_from_host(host.data(), bytes, 0, stream.handle());
        ref_bufs[defs[i].name] = ref.back().ptr();
      }
    } else {
      mem.back().memset8(0xFF, stream.handle());
      ref.emplace_back(bytes, 0);
      ref.back().memset8(0xFF, stream.handle());
      ref_bufs[defs[i].name] = ref.back().ptr();
    }
    bufs[defs[i].name] = mem.back().ptr();
  }
  engine.run_family(*f, problem, bufs, stream.handle(), &use);
  engine.run_family_reference(*f, problem, ref_bufs, stream.handle());
  stream.synchronize();
  double worst = 0;
  bool within = true;
  std::size_t r = 0;
  std::vector<std::pair<std::string, double>> errors;  // per output buffer
  for (std::size_t i = 0; i < defs.size(); ++i) {
    if (defs[i].role != BufferRole::Output && defs[i].role != BufferRole::InOut) continue;
    const DType t = f->buffer_dtype(i, problem);
    const int eb = dtype_bytes(t);
    std::vector<unsigned char> got(mem[i].size()), want(ref[r].size());
    mem[i].copy_to_host(got.data(), got.size());
    ref[r++].copy_to_host(want.data(), want.size());
    double err = 0, norm = 0;
    for (long long e = 0; e < elems[i]; ++e) {
      // An element both leave poisoned (a pitch's padding) is no difference.
      if (std::memcmp(got.data() + e * eb, want.data() + e * eb, static_cast<std::size_t>(eb)) == 0 &&
          !std::isfinite(load_element(t, want.data() + e * eb)))
        continue;
      const double g = load_element(t, got.data() + e * eb), w = load_element(t, want.data() + e * eb);
      err += std::isfinite(g) ? (g - w) * (g - w) : INFINITY;
      norm += w * w;
    }
    const double rel = std::sqrt(err) / std::max(std::sqrt(norm), 1e-30);
    worst = std::max(worst, rel);
    within = within && rel <= f->tolerance_for(t);  // the buffer's own (FamilyDef::dtype_tolerance)
    errors.emplace_back(defs[i].name, rel);
  }
  Event start(0), stop(0);
  std::vector<float> times;
  for (int i = 0; i < reps; ++i) {
    start.record(stream.handle());
    engine.run_family(*f, problem, bufs, stream.handle(), &use);
    stop.record(stream.handle());
    stop.synchronize();
    times.push_back(elapsed_ms(start, stop));
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  const bool ok = within;
  const char* source = have_config ? "--config" : "engine's choice";
  if (format == Format::Json) {
    std::string outs;
    for (const auto& e : errors)
      outs += (outs.empty() ? "" : ", ") + std::string("{\"buffer\": ") + json_string(e.first) +
              ", \"relative_error\": " + json_number(e.second, 9) + "}";
    std::printf("{%s\"family\": %s, \"problem\": %s, \"config\": %s, \"config_source\": %s, \"seed\": %llu, "
                "\"verified\": %s, \"tolerance\": %g, \"outputs\": [%s], \"median_ms\": %s, \"repetitions\": %d}\n",
                json_version_member().c_str(), json_string(f->name()).c_str(),
                json_string(f->problem_text(problem)).c_str(), json_string(f->config_text(use)).c_str(),
                json_string(source).c_str(), static_cast<unsigned long long>(seed), boolean(ok), f->def().tolerance,
                outs.c_str(), json_number(median, 4).c_str(), reps);
  } else if (format == Format::Csv) {
    CsvTable t({"family", "problem", "config", "config_source", "seed", "verified", "worst_relative_error", "tolerance",
                "median_ms", "repetitions"});
    t.add({f->name(), f->problem_text(problem), f->config_text(use), source, std::to_string(seed), boolean(ok),
           csv_number(worst, 9), fixed(f->def().tolerance, 9), fixed(median, 4), std::to_string(reps)});
    t.print();
  } else {
    for (const auto& e : errors)
      std::printf("%-10s relative error %.3g (tolerance %.3g)\n", e.first.c_str(), e.second, f->def().tolerance);
    std::printf("%s %s config %s: median %.4f ms over %d runs (%s), seed %llu\n", f->name().c_str(),
                f->problem_text(problem).c_str(), f->config_text(use).c_str(), median, reps, source,
                static_cast<unsigned long long>(seed));
    if (!ok) std::printf("WRONG: an output differs from the reference beyond the tolerance\n");
  }
  return ok ? 0 : 1;
}

const Command& family_command() {
  static const Command cmd{"family", "list and show declared kernel families", kFamilyHelp, &run_family_command};
  return cmd;
}

}  // namespace cli
}  // namespace swz
