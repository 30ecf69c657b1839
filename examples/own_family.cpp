// examples: an application-defined kernel family. It declares "tile_transpose_add" (out = A^T + B per
// batch, through a Swizzle<5,0,log2(TILE)> shared tile; examples/tile_transpose_add.cuh) as a FamilyDef,
// checks its static bank analysis, warms the kernel cache for sm_90 without a GPU, and on a GPU tunes,
// verifies and runs it. Usage: own_family [PATH/tile_transpose_add.cuh]   (default: next to the program)
#include <swzjit/swzjit.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

// The template's own index functions, compiled for the host: the bank analysis below evaluates
// exactly the addresses the kernel computes.
#include "tile_transpose_add.cuh"

namespace {

constexpr const char* kSourceName = "tile_transpose_add.cuh";

std::string directory_of_executable() {
  std::vector<char> buf(4096);
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return ".";
  const std::string path(buf.data(), static_cast<std::size_t>(n));
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw swz::Error(swz::ErrorKind::InvalidArgument,
                     "cannot read the family's template '" + path +
                         "': pass its path as the first argument (it is installed next to own_family)");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The shared-memory instructions of one block of a configuration, as each warp issues them: the tile
// row stores of every pass, then the tile column reads of every pass.
template <int TILE, int SWIZZLE>
std::vector<swz::SmemInstruction> block_accesses(int rows_per_pass) {
  const int threads = TILE * rows_per_pass;
  std::vector<swz::SmemInstruction> out;
  for (int phase = 0; phase < 2; ++phase)
    for (int warp = 0; warp < threads / 32; ++warp)
      for (int k = 0; k < TILE / rows_per_pass; ++k) {
        swz::SmemInstruction in;
        in.op = phase == 0 ? swz::SmemOp::Sts : swz::SmemOp::Lds;
        in.width = 4;
        for (int lane = 0; lane < 32; ++lane) {
          const int t = warp * 32 + lane;
          const int tx = tta::thread_x(t, TILE), ty = tta::thread_y(t, TILE) + k * rows_per_pass;
          const int offset = phase == 0 ? tta::tile_offset<TILE, SWIZZLE>(ty, tx) : tta::tile_offset<TILE, SWIZZLE>(tx, ty);
          in.addresses.push_back(4LL * offset);
        }
        out.push_back(std::move(in));
      }
  return out;
}

std::vector<swz::SmemInstruction> accesses(const swz::FamilyValues& config) {
  const long long tile = config.at("TILE"), rows = config.at("ROWS"), swizzle = config.at("SWIZZLE");
  const int r = static_cast<int>(rows);
  if (tile == 32) return swizzle ? block_accesses<32, 1>(r) : block_accesses<32, 0>(r);
  if (tile == 64) return swizzle ? block_accesses<64, 1>(r) : block_accesses<64, 0>(r);
  throw swz::Error(swz::ErrorKind::InvalidArgument, "TILE must be 32 or 64, got " + std::to_string(tile));
}

swz::FamilyLaunch launch(const std::string& kernel, std::vector<std::string> template_args,
                         std::vector<std::string> grid, std::vector<std::string> block) {
  swz::FamilyLaunch l;
  l.kernel = kernel;
  l.template_args = std::move(template_args);
  l.args = {"a", "b", "out", "rows", "cols"};  // buffers by name; rows and cols as long long
  l.grid = std::move(grid);
  l.block = std::move(block);
  return l;
}

swz::FamilyDef make_definition(const std::string& source) {
  swz::FamilyDef def;
  def.name = "tile_transpose_add";
  def.about = "A[b]^T + B[b] for a batch of row-major matrices A (rows x cols), through a swizzled shared tile";
  def.source = source;
  def.source_name = kSourceName;
  def.dims = {"batch", "rows", "cols"};
  def.params = {{"TILE", {32, 64}, 64}, {"ROWS", {4, 8, 16}, 8}, {"SWIZZLE", {0, 1}, 1}};
  def.constraints = {"TILE * ROWS <= 1024", "ceil_div(rows, TILE) <= 65535", "batch <= 65535"};
  def.buffers = {{"a", swz::DType::F32, "batch * rows * cols", swz::BufferRole::Input},
                 {"b", swz::DType::F32, "batch * cols * rows", swz::BufferRole::Input},
                 {"out", swz::DType::F32, "batch * cols * rows", swz::BufferRole::Output}};
  def.launch = launch("tta::tile_transpose_add", {"TILE", "ROWS", "SWIZZLE"},
                      {"ceil_div(cols, TILE)", "ceil_div(rows, TILE)", "batch"}, {"TILE * ROWS"});
  def.reference = launch("tta::tile_transpose_add_reference", {"256"}, {"ceil_div(rows * cols, 256)", "batch"}, {"256"});
  def.tolerance = 1e-6;  // one float addition per element: in fact the outputs match the reference exactly
  def.min_arch = 80;
  def.smem_accesses = accesses;
  return def;
}

// Prints the static analysis of a configuration; returns its excess wavefronts.
int print_analysis(const swz::Family& family, const std::string& config_text) {
  const swz::FamilyValues config = family.parse_config(config_text);
  const swz::FamilyBankReport r = family.analyze(config);
  std::printf("  %-24s analysed=%d instructions=%d wavefronts=%d ideal=%d excess=%d\n",
              family.config_text(config).c_str(), r.analysed ? 1 : 0, r.instructions, r.wavefronts,
              r.ideal_wavefronts, r.excess_wavefronts);
  return r.analysed ? r.excess_wavefronts : -1;
}

void print_tune(const char* what, const swz::TuneReport& t) {
  std::printf("%s: %d configs, %d rejected statically, %d compiled, %d kernel-cache hits, %.2f s\n", what,
              t.space_size, t.static_rejected, t.compiled, t.kernel_cache_hits, t.seconds);
}

// The GPU part: tune, check against the reference kernel and the host, time. Returns failures.
int run_on_gpu(swz::Engine& engine, const swz::Family& family) {
  int failures = 0;
  const swz::FamilyValues problem = family.parse_problem("batch=3,rows=1000,cols=777");
  const swz::TuneReport tune = swz::autotune_family(engine, family, problem);
  print_tune("tune", tune);
  std::printf("  winner %s %.4f ms (default %s %.4f ms) on %s\n", tune.winner.c_str(), tune.winner_ms,
              tune.default_config.c_str(), tune.default_ms, tune.device.c_str());
  for (const auto& f : tune.failures) std::printf("  %d candidates %s\n", f.second, f.first.c_str());

  const std::vector<long long> elements = family.buffer_elements(problem);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<std::vector<float>> host(elements.size());
  std::vector<swz::DeviceBuffer> device;
  std::map<std::string, swz::DevicePtr> buffers;
  for (std::size_t i = 0; i < elements.size(); ++i) {
    host[i].resize(static_cast<std::size_t>(elements[i]));
    for (float& v : host[i]) v = dist(rng);
    device.emplace_back(host[i].size() * sizeof(float));
    device.back().copy_from_host(host[i].data(), host[i].size() * sizeof(float));
    buffers[family.def().buffers[i].name] = device.back().ptr();
  }
  const long long batch = problem.at("batch"), rows = problem.at("rows"), cols = problem.at("cols");
  const std::vector<float>& a = host[0];
  const std::vector<float>& b = host[1];
  swz::Stream stream;
  const auto check = [&](const char* what) {
    std::vector<float> got(host[2].size());
    device[2].copy_to_host(got.data(), got.size() * sizeof(float), 0, stream.handle());
    long long wrong = 0;
    for (long long z = 0; z < batch; ++z)
      for (long long j = 0; j < cols; ++j)
        for (long long i = 0; i < rows; ++i) {
          const long long o = z * rows * cols + j * rows + i;
          if (got[o] != a[z * rows * cols + i * cols + j] + b[o]) ++wrong;
        }
    std::printf("  %-38s %s (%lld of %zu elements wrong)\n", what, wrong ? "WRONG" : "matches the host", wrong,
                got.size());
    failures += wrong ? 1 : 0;
  };
  device[2].memset32(0x7fc00000u);  // NaN: an element the kernel misses shows
  engine.run_family_reference(family, problem, buffers, stream.handle());
  check("reference kernel vs host:");
  device[2].memset32(0x7fc00000u);
  const swz::FamilyValues chosen = engine.family_config(family, problem);
  engine.run_family(family, problem, buffers, stream.handle());
  check(("run_family " + family.config_text(chosen) + " vs host:").c_str());

  // Time the chosen config and the unswizzled one side by side.
  const double bytes = 3.0 * static_cast<double>(batch * rows * cols) * sizeof(float);
  for (const std::string& text : {family.config_text(chosen), std::string("TILE=64,ROWS=8,SWIZZLE=0")}) {
    const swz::FamilyValues cfg = family.parse_config(text);
    engine.run_family(family, problem, buffers, stream.handle(), &cfg);  // warm-up (load)
    swz::Event start, stop;
    constexpr int kReps = 50;
    start.record(stream.handle());
    for (int i = 0; i < kReps; ++i) engine.run_family(family, problem, buffers, stream.handle(), &cfg);
    stop.record(stream.handle());
    const double ms = swz::elapsed_ms(start, stop) / kReps;
    std::printf("  %-24s %.4f ms  %.1f GB/s\n", text.c_str(), ms, bytes / (ms * 1e6));
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string cuh = argc > 1 ? argv[1] : directory_of_executable() + "/" + kSourceName;
    const auto family = swz::register_family(make_definition(read_text(cuh)));
    std::printf("family %s: %s\n  source %s (hash %s), definition hash %s\n", family->name().c_str(),
                family->def().about.c_str(), cuh.c_str(), family->source_hash().c_str(),
                family->definition_hash().c_str());

    // 1. Static bank analysis from the template's own index functions.
    std::printf("bank analysis (one block's shared-memory instructions):\n");
    const int swizzled = print_analysis(*family, "TILE=64,ROWS=8,SWIZZLE=1");
    const int plain = print_analysis(*family, "TILE=64,ROWS=8,SWIZZLE=0");
    if (swizzled != 0 || plain <= 0) {
      std::printf("FAILED: expected the swizzled tile conflict-free and the plain one conflicted\n");
      return 1;
    }

    // 2. Warm the kernel cache for sm_90 (works without a GPU); a second pass must be all cache hits.
    const swz::FamilyValues problem = family->parse_problem("batch=3,rows=1000,cols=777");
    swz::Engine engine;
    swz::TuneOptions warm;
    warm.compile_only = true;
    warm.arch = "sm_90";
    const swz::TuneReport first = swz::autotune_family(engine, *family, problem, warm);
    print_tune("compile-only sm_90", first);
    const swz::TuneReport second = swz::autotune_family(engine, *family, problem, warm);
    print_tune("again", second);
    if (first.space_size == 0 || second.compiled != 0 || second.kernel_cache_hits == 0) {
      std::printf("FAILED: the second compile-only pass should find every kernel in the cache\n");
      return 1;
    }
    const swz::KernelEntry k = engine.compile_family(*family, family->default_config(problem), "sm_90");
    std::printf("default %s for sm_90: %d registers, %d bytes of spills, %zu-byte image\n",
                family->config_text(family->default_config(problem)).c_str(), k.registers, k.spill_bytes,
                k.image.size());

    // 3. On a GPU: tune, verify, run.
    std::string why;
    if (!swz::driver_available(&why) || swz::device_count() == 0) {
      std::printf("no GPU (%s): skipped the GPU part\n", why.empty() ? "no device" : why.c_str());
      return 0;
    }
    const int failures = run_on_gpu(engine, *family);
    std::printf("%s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
  } catch (const swz::Error& e) {
    std::fprintf(stderr, "own_family: %s\n", e.what());
    return 1;
  }
}
