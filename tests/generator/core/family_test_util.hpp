// tests/generator/core: helpers the declared-family CPU tests share (family_test.cpp,
// family_contract_test.cpp, the built-in families' tests): the InvalidArgument message of a call, a
// checked text replacement, and a family's space compiled by NVRTC.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <initializer_list>
#include <string>

#include "swzjit/error.hpp"
#include "swzjit/family.hpp"
#include "swzjit/jit.hpp"

namespace swz_test {

/// The message of the swz::Error(InvalidArgument) `f` throws; a failed check when it throws none.
inline std::string invalid(const std::function<void()>& f) {
  try {
    f();
  } catch (const swz::Error& e) {
    CHECK(e.kind() == swz::ErrorKind::InvalidArgument);
    return e.what();
  }
  FAIL("no error");
  return "";
}

/// `s` with the first `from` replaced by `to` (`from` must occur).
inline std::string replace(std::string s, const std::string& from, const std::string& to) {
  const std::size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

/// Every configuration of `family`'s space for `problem` (text) compiles with NVRTC for each of `archs`
/// with no local memory (a spill fails it: its template check).
inline void check_space_compiles(const swz::Family& family, const std::string& problem,
                                 std::initializer_list<const char*> archs = {"sm_80", "sm_90"}) {
  for (const char* arch : archs)
    for (const swz::FamilyValues& c : family.space(family.parse_problem(problem))) {
      swz::CompileRequest req;
      req.source = family.def().source;
      req.source_name = family.def().source_name;
      req.name_expression = family.name_expression(c);
      req.arch = arch;
      const swz::CompiledKernel k = swz::compile(req);
      CHECK_MESSAGE(!k.image.empty(), family.config_text(c), " ", arch);
      CHECK_MESSAGE(swz::cubin_resources(k).local_bytes == 0, family.config_text(c), " ", arch);
    }
}

}  // namespace swz_test
