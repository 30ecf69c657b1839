// tests/tools: `swz info` (tools/cmd_info.cpp) -- works and exits 0 with or without a driver,
// reports why a driver is missing, and prints the cache location and templates hash.
#include <doctest/doctest.h>

#include <string>

#include "cli_support.hpp"
#include "swzjit/device.hpp"
#include "swzjit/jit.hpp"

using swz_test::run_swz;

TEST_CASE("swz info reports driver, NVRTC, templates and cache, and exits 0") {
  const auto r = run_swz("info", "SWZJIT_CACHE_DIR=/tmp/swz-info-probe");
  CHECK(r.code == 0);
  CHECK(r.out.find("cache: /tmp/swz-info-probe\n") != std::string::npos);
  CHECK(r.out.find("templates: " + swz::templates_hash()) != std::string::npos);
  CHECK(r.out.find("nvrtc: ") != std::string::npos);
  CHECK(r.out.find("sm_90a") != std::string::npos);
  if (swz::driver_available())
    CHECK(r.out.find("driver: available") != std::string::npos);
  else
    CHECK(r.out.find("driver: not available (") != std::string::npos);
}

TEST_CASE("swz info without a driver says why, in text and JSON") {
  const std::string env = "SWZJIT_LIBCUDA=/nonexistent/libcuda.so.1 SWZJIT_CACHE_DIR=/tmp/swz-info-probe";
  const auto text = run_swz("info", env);
  CHECK(text.code == 0);
  CHECK(text.out.find("driver: not available (") != std::string::npos);
  CHECK(text.out.find("/nonexistent/libcuda.so.1") != std::string::npos);
  CHECK(text.err.empty());

  const auto json = run_swz("info --json", env);
  CHECK(json.code == 0);
  CHECK(json.out.find("\"available\": false") != std::string::npos);
  CHECK(json.out.find("\"reason\": \"could not load /nonexistent/libcuda.so.1") != std::string::npos);
  CHECK(json.out.find("\"cache\": \"/tmp/swz-info-probe\"") != std::string::npos);
  CHECK(json.out.find("\"devices\": []") != std::string::npos);
  CHECK(json.out.front() == '{');

  CHECK(run_swz("info --bogus").code == 2);
}
