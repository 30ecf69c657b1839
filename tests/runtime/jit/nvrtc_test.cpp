// tests/runtime: NVRTC compilation (runtime/jit/nvrtc.cpp), the embedded-templates hash
// (runtime/jit/templates.cpp) and cubin metadata (runtime/jit/cubin.cpp). CPU only: needs no driver or GPU.
#include <doctest/doctest.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/jit/embedded_templates.hpp"
#include "runtime/jit/jit_internal.hpp"
#include "swzjit/device.hpp"
#include "swzjit/error.hpp"
#include "swzjit/jit.hpp"

namespace {

std::string probe_source() {
  const std::string path = std::string(SWZ_SOURCE_DIR) + "/tests/runtime/kernels/runtime_probe.cu";
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

swz::CompileRequest probe_request(const std::string& name_expression, const std::string& arch) {
  swz::CompileRequest r;
  r.source = probe_source();
  r.source_name = "runtime_probe.cu";
  r.name_expression = name_expression;
  r.arch = arch;
  return r;
}

bool has_option(const swz::CompiledKernel& k, const std::string& option) {
  return std::find(k.options.begin(), k.options.end(), option) != k.options.end();
}

// What ptxas -v said about one entry function (-1 where it said nothing).
struct PtxasReport {
  int registers = -1;
  int smem = 0;
  int stack = -1;
};

PtxasReport ptxas_report(const std::string& log, const std::string& lowered) {
  const std::string marker = "Compiling entry function '" + lowered + "'";
  const std::size_t begin = log.find(marker);
  REQUIRE_MESSAGE(begin != std::string::npos, "ptxas said nothing about " << lowered << ":\n" << log);
  const std::size_t end = log.find("Compiling entry function", begin + marker.size());
  const std::string block = log.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  PtxasReport r;
  std::smatch m;
  if (std::regex_search(block, m, std::regex(R"(Used (\d+) registers)"))) r.registers = std::stoi(m[1]);
  if (std::regex_search(block, m, std::regex(R"((\d+) bytes smem)"))) r.smem = std::stoi(m[1]);
  if (std::regex_search(block, m, std::regex(R"((\d+) bytes stack frame)"))) r.stack = std::stoi(m[1]);
  return r;
}

std::vector<std::string> entry_functions(const std::string& log) {
  std::vector<std::string> names;
  const std::regex entry(R"(Compiling entry function '([^']+)')");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), entry); it != std::sregex_iterator(); ++it)
    names.push_back((*it)[1]);
  return names;
}

}  // namespace

TEST_CASE("templates: the hash is 32 hex digits, stable, and follows the documented scheme") {
  const std::string h = swz::templates_hash();
  REQUIRE(h.size() == 32);
  CHECK(h.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(swz::templates_hash() == h);

  // Recompute from the embedded bytes as jit.hpp documents it: per file, u64le length + name,
  // u64le length + bytes; XXH3-128, high half first.
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  const auto add_length = [&](std::uint64_t n) {
    unsigned char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(n >> (8 * i));
    XXH3_128bits_update(state, b, 8);
  };
  for (std::size_t i = 0; i < swz::detail::kEmbeddedTemplateCount; ++i) {
    const auto& f = swz::detail::kEmbeddedTemplates[i];
    add_length(std::string(f.name).size());
    XXH3_128bits_update(state, f.name, std::string(f.name).size());
    add_length(f.size);
    XXH3_128bits_update(state, f.data, f.size);
  }
  const XXH128_hash_t expect = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(expect.high64),
                static_cast<unsigned long long>(expect.low64));
  CHECK(h == hex);

  const auto names = swz::template_names();
  CHECK(names.size() == swz::detail::kEmbeddedTemplateCount);
  CHECK(std::find(names.begin(), names.end(), "swizzle.cuh") != names.end());
  CHECK(std::find(names.begin(), names.end(), "common.cuh") != names.end());
}

TEST_CASE("nvrtc: version and supported architectures are reported") {
  const auto v = swz::nvrtc_version();
  CHECK(v.first >= 12);
  const auto archs = swz::nvrtc_supported_archs();
  CHECK(std::find(archs.begin(), archs.end(), 80) != archs.end());
  CHECK(std::find(archs.begin(), archs.end(), 90) != archs.end());
  CHECK(swz::is_known_arch("sm_90a"));
  CHECK_FALSE(swz::is_known_arch("sm_75"));
  CHECK_FALSE(swz::is_known_arch("compute_90"));
}

TEST_CASE("nvrtc: a template-including kernel compiles to a cubin for sm_80, sm_90 and sm_90a") {
  for (const std::string arch : {"sm_80", "sm_90", "sm_90a"}) {
    CAPTURE(arch);
    const auto k = swz::compile(probe_request("swz_test::swizzle_gather<3, 3, 3>", arch));
    CHECK_FALSE(k.is_ptx);
    CHECK(k.arch == arch);
    REQUIRE(k.image.size() > 4);
    CHECK(k.image.compare(0, 4, "\x7f" "ELF") == 0);
    CHECK(k.name_expression == "swz_test::swizzle_gather<3, 3, 3>");
    CHECK(k.lowered_name == "_ZN8swz_test14swizzle_gatherILi3ELi3ELi3EEEvPKfPfi");
    CHECK(has_option(k, "--gpu-architecture=" + arch));
    // the lowered name is a kernel of the image, with plausible resources
    const auto res = swz::cubin_resources(k);
    CHECK(res.kernel == k.lowered_name);
    CHECK(res.registers > 0);
    CHECK(res.registers <= 255);
    CHECK(res.static_smem_bytes == 0);
    CHECK(res.local_bytes == 0);
    // Its machine code: whole 16-byte instructions, part of the image.
    CHECK(res.code_bytes > 0);
    CHECK(res.code_bytes % 16 == 0);
    CHECK(res.code_bytes < static_cast<long long>(k.image.size()));
  }
}

TEST_CASE("nvrtc: options are explicit, complete, exact-math, and identical between compiles") {
  auto request = probe_request("swz_test::smem_reverse<256>", "sm_90");
  request.extra_options = {"-DSWZ_TEST_EXTRA=1"};
  const auto a = swz::compile(request);
  const auto b = swz::compile(request);
  CHECK(a.options == b.options);
  CHECK(swz::compile_options(request) == a.options);  // what cache keys are computed from
  CHECK(a.image == b.image);  // deterministic output is what makes the image cacheable by key
  CHECK(a.options.front() == "--gpu-architecture=sm_90");
  CHECK(a.options.back() == "-DSWZ_TEST_EXTRA=1");
  for (const char* o : {"-std=c++17", "-default-device", "--no-source-include", "--ftz=false", "--prec-div=true",
                        "--prec-sqrt=true", "--fmad=true"})
    CHECK_MESSAGE(has_option(a, o), o);
  for (const auto& o : a.options) CHECK_MESSAGE(o.find("fast") == std::string::npos, o);
}

TEST_CASE("nvrtc: PTX fallback when NVRTC cannot emit a cubin for the arch") {
  for (const std::string arch : {"sm_90", "sm_90a"}) {
    CAPTURE(arch);
    // Pretend NVRTC knows only sm_80: sm_90(a) must then come back as PTX for compute_90(a).
    const auto k = swz::detail::compile_with_supported_archs(probe_request("swz_test::swizzle_gather<3, 3, 3>", arch), {80});
    CHECK(k.is_ptx);
    CHECK(k.arch == arch);
    CHECK(has_option(k, "--gpu-architecture=compute_" + arch.substr(3)));
    CHECK(k.image.find(".target " + arch) != std::string::npos);
    CHECK(k.image.find(".entry " + k.lowered_name) != std::string::npos);
    CHECK(k.image.find('\0') == std::string::npos);
    CHECK(k.lowered_name.rfind("_Z", 0) == 0);
    try {
      swz::cubin_resources(k);
      FAIL("cubin_resources accepted a PTX image");
    } catch (const swz::Error& e) {
      CHECK(e.kind() == swz::ErrorKind::Unsupported);
    }
  }
  // sm_80 is in the list: still a cubin
  CHECK_FALSE(swz::detail::compile_with_supported_archs(probe_request("swz_test::store_to", "sm_80"), {80}).is_ptx);
}

TEST_CASE("nvrtc: a compile error carries the log, the options, the source and its name") {
  swz::CompileRequest r;
  r.source = "#include \"swizzle.cuh\"\n__global__ void broken(float* p) { p[0] = undeclared_name; }\n";
  r.source_name = "broken_probe.cu";
  r.name_expression = "broken";
  r.arch = "sm_80";
  try {
    swz::compile(r);
    FAIL("a broken source compiled");
  } catch (const swz::Error& e) {
    CHECK(e.kind() == swz::ErrorKind::Compile);
    CHECK(e.compile_log().find("undeclared_name") != std::string::npos);
    CHECK(e.compile_log().find("broken_probe.cu(2)") != std::string::npos);
    CHECK(e.source() == r.source);
    CHECK(e.source_name() == "broken_probe.cu");
    REQUIRE_FALSE(e.compile_options().empty());
    CHECK(e.compile_options().front() == "--gpu-architecture=sm_80");
    // the message alone names the file, the target and the first error
    const std::string what = e.what();
    CHECK(what.find("broken_probe.cu") != std::string::npos);
    CHECK(what.find("sm_80") != std::string::npos);
    CHECK(what.find("undeclared_name") != std::string::npos);
  }
}

TEST_CASE("nvrtc: a name expression that names nothing is a compile error") {
  try {
    swz::compile(probe_request("swz_test::no_such_kernel<1>", "sm_80"));
    FAIL("an unknown name expression compiled");
  } catch (const swz::Error& e) {
    CHECK(e.kind() == swz::ErrorKind::Compile);
    CHECK(e.compile_log().find("no_such_kernel") != std::string::npos);
  }
}

TEST_CASE("nvrtc: only embedded templates are visible as headers") {
  swz::CompileRequest r;
  r.source = "#include \"not_a_template.cuh\"\n__global__ void k() {}\n";
  r.name_expression = "k";
  r.arch = "sm_80";
  try {
    swz::compile(r);
    FAIL("an unknown header was found");
  } catch (const swz::Error& e) {
    CHECK(e.kind() == swz::ErrorKind::Compile);
    CHECK(e.compile_log().find("not_a_template.cuh") != std::string::npos);
    CHECK(e.source_name() == "swzjit_kernel.cu");  // the default name
  }
}

TEST_CASE("nvrtc: invalid requests are InvalidArgument naming what is allowed") {
  for (const std::string arch : {"sm_75", "sm90", "compute_90", "SM_90", "sm_101"}) {
    CAPTURE(arch);
    try {
      swz::compile(probe_request("swz_test::store_to", arch));
      FAIL("arch accepted");
    } catch (const swz::Error& e) {
      CHECK(e.kind() == swz::ErrorKind::InvalidArgument);
      const std::string what = e.what();
      CHECK(what.find("'" + arch + "'") != std::string::npos);
      CHECK(what.find("sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a, sm_100") != std::string::npos);
    }
  }
  auto empty_source = probe_request("swz_test::store_to", "sm_80");
  empty_source.source.clear();
  CHECK_THROWS_AS(swz::compile(empty_source), swz::Error);
  auto empty_name = probe_request("", "sm_80");
  try {
    swz::compile(empty_name);
    FAIL("empty name expression accepted");
  } catch (const swz::Error& e) {
    CHECK(e.kind() == swz::ErrorKind::InvalidArgument);
  }
}

TEST_CASE("nvrtc: without an arch and without a driver, compile says to name the target") {
  std::string why;
  if (swz::driver_available(&why)) {
    MESSAGE("a driver is present; arch detection is covered by the GPU suite");
    return;
  }
  try {
    swz::compile(probe_request("swz_test::store_to", ""));
    FAIL("compiled without an arch and without a device");
  } catch (const swz::Error& e) {
    CHECK(e.kind() == swz::ErrorKind::NoDevice);
    CHECK(std::string(e.what()).find("name the target explicitly") != std::string::npos);
  }
}

TEST_CASE("cubin: resources read from the ELF agree with ptxas -v for every kernel and target") {
  for (const std::string& arch : swz::known_archs()) {
    CAPTURE(arch);
    auto request = probe_request("swz_test::smem_reverse<256>", arch);
    request.extra_options = {"--ptxas-options=-v"};
    const auto k = swz::compile(request);
    const auto names = entry_functions(k.log);
    REQUIRE(names.size() == 4);  // smem_reverse<256> and the three non-template kernels
    for (const auto& name : names) {
      CAPTURE(name);
      const PtxasReport want = ptxas_report(k.log, name);
      const auto got = swz::cubin_resources(k.image, name);
      CHECK(got.registers == want.registers);
      CHECK(got.static_smem_bytes == want.smem);
      CHECK(got.local_bytes == want.stack);
      CHECK(got.code_bytes > 0);
    }
    // the probe kernels were written to exercise each field
    CHECK(swz::cubin_resources(k).static_smem_bytes == 1024);
    CHECK(swz::cubin_resources(k.image, "_ZN8swz_test11local_arrayEPKfPfi").local_bytes >= 1024);
  }
}

TEST_CASE("cubin: launch bounds are reported, bad images and unknown kernels are InvalidArgument") {
  swz::CompileRequest r;
  r.source = "__global__ void __launch_bounds__(128) bounded(float* p) { p[threadIdx.x] = 1.0f; }\n";
  r.name_expression = "bounded";
  r.arch = "sm_90";
  const auto k = swz::compile(r);
  CHECK(swz::cubin_resources(k).max_threads_per_block == 128);

  try {
    swz::cubin_resources(k.image, "_Z7missingv");
    FAIL("an unknown kernel was found");
  } catch (const swz::Error& e) {
    CHECK(e.kind() == swz::ErrorKind::InvalidArgument);
    CHECK(std::string(e.what()).find(k.lowered_name) != std::string::npos);  // lists what exists
  }
  for (const std::string& bad : {std::string(), std::string("not an elf at all"), k.image.substr(0, 64),
                                k.image.substr(0, k.image.size() / 2)}) {
    CAPTURE(bad.size());
    try {
      swz::cubin_resources(bad, k.lowered_name);
      FAIL("a truncated or foreign image was parsed");
    } catch (const swz::Error& e) {
      CHECK(e.kind() == swz::ErrorKind::InvalidArgument);
    }
  }
}
