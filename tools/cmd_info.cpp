// tools: `swz info` -- what this machine offers libswzjit: driver, NVRTC, devices, templates, cache.
// Works with no driver and no GPU (it says why the driver is unavailable and exits 0).
#include <cstdio>
#include <string>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "swzjit/cache.hpp"
#include "swzjit/device.hpp"
#include "swzjit/error.hpp"
#include "swzjit/install.hpp"
#include "swzjit/jit.hpp"
#include "swzjit/version.hpp"

namespace swz {
namespace cli {

namespace {

// Everything `swz info` reports, gathered once and then printed as text or JSON.
struct Report {
  std::string library;      // the file libswzjit was loaded from
  std::string worker;       // the swz-worker the autotuner would start ("" when none is found)
  std::string worker_why;   // why none was found
  bool nvrtc_ok = false;
  std::string nvrtc_why;
  std::string nvrtc_path;
  bool driver_ok = false;
  std::string driver_why;
  std::string driver_version;
  std::vector<DeviceInfo> devices;
  std::string device_error;  // a device query that failed after the driver loaded
  std::string nvrtc_version;
  std::vector<int> nvrtc_archs;
  std::vector<std::string> targets;
  std::string templates_hash;
  std::vector<std::string> templates;
  std::string cache_dir;
};

Report gather() {
  Report r;
  r.driver_ok = driver_available(&r.driver_why);
  if (r.driver_ok) {
    try {
      r.driver_version = driver_version_string();
      for (int i = 0; i < device_count(); ++i) r.devices.push_back(device_info(i));
    } catch (const Error& e) {
      r.device_error = e.what();
    }
  }
  r.library = library_path();
  try {
    r.worker = worker_path();
  } catch (const Error& e) {
    r.worker_why = e.what();
  }
  r.nvrtc_ok = nvrtc_available(&r.nvrtc_why);
  if (r.nvrtc_ok) {
    r.nvrtc_path = nvrtc_library_path();
    const auto v = nvrtc_version();
    r.nvrtc_version = std::to_string(v.first) + "." + std::to_string(v.second);
    r.nvrtc_archs = nvrtc_supported_archs();
  }
  r.targets = known_archs();
  r.templates_hash = templates_hash();
  r.templates = template_names();
  r.cache_dir = cache_directory();
  return r;
}

std::string mib(long long bytes) { return std::to_string(bytes / (1024 * 1024)) + " MiB"; }

void print_text(const Report& r) {
  std::printf("libswzjit: %s (%s)\n", version(), r.library.empty() ? "location unknown" : r.library.c_str());
  if (r.worker.empty())
    std::printf("worker: not found (%s)\n", r.worker_why.c_str());
  else
    std::printf("worker: %s\n", r.worker.c_str());
  if (r.driver_ok)
    std::printf("driver: available (CUDA %s)\n", r.driver_version.c_str());
  else
    std::printf("driver: not available (%s)\n", r.driver_why.c_str());
  std::string archs;
  for (int a : r.nvrtc_archs) archs += " sm_" + std::to_string(a);
  if (r.nvrtc_ok)
    std::printf("nvrtc: %s (cubin for:%s) from %s\n", r.nvrtc_version.c_str(), archs.c_str(), r.nvrtc_path.c_str());
  else
    std::printf("nvrtc: not available (%s); cached kernels still load, nothing new compiles\n", r.nvrtc_why.c_str());
  std::string targets;
  for (const auto& t : r.targets) targets += " " + t;
  std::printf("targets:%s\n", targets.c_str());
  std::string names;
  for (const auto& n : r.templates) names += (names.empty() ? "" : ", ") + n;
  std::printf("templates: %s (%zu files: %s)\n", r.templates_hash.c_str(), r.templates.size(), names.c_str());
  if (r.driver_ok) {
    std::printf("devices: %zu\n", r.devices.size());
    for (const auto& d : r.devices)
      std::printf("  [%d] %s: %s, %d SMs, smem/block %d KiB (opt-in %d KiB), L2 %s, memory %s (%s)\n",
                  d.ordinal, d.name.c_str(), d.arch().c_str(), d.sm_count, d.max_smem_per_block / 1024,
                  d.max_smem_per_block_optin / 1024, mib(d.l2_bytes).c_str(), mib(d.global_mem_bytes).c_str(),
                  d.dram_gbps > 0 ? (std::to_string(d.dram_gbps) + " GB/s").c_str() : "bandwidth unknown");
    if (!r.device_error.empty()) std::printf("  device query failed: %s\n", r.device_error.c_str());
  } else {
    std::printf("devices: none usable (generate, analyze and compile still work)\n");
  }
  std::printf("cache: %s\n", r.cache_dir.empty() ? "(none: no HOME; kept in memory)" : r.cache_dir.c_str());
}

template <class T, class F>
std::string json_array(const std::vector<T>& items, F item) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + item(items[i]);
  return out + "]";
}

void print_json(const Report& r) {
  std::string out = "{\n";
  out += "  \"swzjit_version\": " + json_string(version()) + ",\n";
  out += "  \"version\": " + json_string(version()) + ",\n";
  out += "  \"library\": " + json_string(r.library) + ",\n";
  out += "  \"worker\": {\"found\": " + std::string(r.worker.empty() ? "false" : "true") + ", " +
         (r.worker.empty() ? "\"reason\": " + json_string(r.worker_why) : "\"path\": " + json_string(r.worker)) +
         "},\n";
  out += "  \"driver\": {\"available\": " + std::string(r.driver_ok ? "true" : "false");
  if (r.driver_ok)
    out += ", \"version\": " + json_string(r.driver_version);
  else
    out += ", \"reason\": " + json_string(r.driver_why);
  out += "},\n";
  out += "  \"nvrtc\": {\"available\": " + std::string(r.nvrtc_ok ? "true" : "false");
  if (r.nvrtc_ok)
    out += ", \"version\": " + json_string(r.nvrtc_version) + ", \"library\": " + json_string(r.nvrtc_path) +
           ", \"archs\": " + json_array(r.nvrtc_archs, [](int a) { return json_string("sm_" + std::to_string(a)); });
  else
    out += ", \"reason\": " + json_string(r.nvrtc_why);
  out += "},\n";
  out += "  \"targets\": " + json_array(r.targets, json_string) + ",\n";
  out += "  \"templates\": {\"hash\": " + json_string(r.templates_hash) + ", \"files\": " +
         json_array(r.templates, json_string) + "},\n";
  out += "  \"devices\": " + json_array(r.devices, [](const DeviceInfo& d) {
           return "{\"ordinal\": " + std::to_string(d.ordinal) + ", \"name\": " + json_string(d.name) +
                  ", \"arch\": " + json_string(d.arch()) + ", \"sm_count\": " + std::to_string(d.sm_count) +
                  ", \"max_smem_per_block\": " + std::to_string(d.max_smem_per_block) +
                  ", \"max_smem_per_block_optin\": " + std::to_string(d.max_smem_per_block_optin) +
                  ", \"l2_bytes\": " + std::to_string(d.l2_bytes) +
                  ", \"global_mem_bytes\": " + std::to_string(d.global_mem_bytes) +
                  ", \"dram_gbps\": " + std::to_string(d.dram_gbps) + "}";
         });
  if (!r.device_error.empty()) out += ",\n  \"device_error\": " + json_string(r.device_error);
  out += ",\n  \"cache\": " + json_string(r.cache_dir) + "\n}\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
}

int run_info(Args& args) {
  // A report of facts, not a table: csv is refused (exit 2), naming text|json.
  const bool json = read_format(args, {Format::Text, Format::Json}) == Format::Json;
  args.finish();
  const Report report = gather();
  if (json)
    print_json(report);
  else
    print_text(report);
  return 0;
}

const char kHelp[] =
    "usage: swz info [--format text|json]\n\n"
    "What this machine offers libswzjit: the library's version and file, the swz-worker the\n"
    "autotuner would start, whether the CUDA driver and NVRTC could be loaded (and why not),\n"
    "the driver and NVRTC versions, the architectures NVRTC emits cubins for, the targets\n"
    "libswzjit compiles for, each GPU (name, arch, SMs, shared memory, L2), the hash of the\n"
    "embedded kernel templates (part of every cache key) and the cache directory.\n"
    "Works without a driver, GPU or NVRTC (exit 0).\n\n"
    "options:\n"
    "  --format F  text (default) or json (one object; swzjit_version and version both name the\n"
    "              library's); csv is refused: this is a report, not a table\n"
    "  --json      short for --format json\n\n"
    "environment:\n"
    "  SWZJIT_LIBCUDA     path of libcuda.so.1 to load (default: the dynamic loader's search)\n"
    "  SWZJIT_LIBNVRTC    path of libnvrtc.so.N to load (default: the newest found)\n"
    "  SWZJIT_WORKER      path of swz-worker (default: next to swz, then <prefix>/libexec)\n"
    "  SWZJIT_CACHE_DIR   cache directory (else $XDG_CACHE_HOME/swzjit, else ~/.cache/swzjit)\n";

}  // namespace

const Command& info_command() {
  static const Command cmd{"info", "driver, NVRTC, devices, templates hash and cache location", kHelp, &run_info};
  return cmd;
}

}  // namespace cli
}  // namespace swz
