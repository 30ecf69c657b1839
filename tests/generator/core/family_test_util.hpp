// tests/generator/core: helpers the declared-family CPU tests share (family_test.cpp,
// family_contract_test.cpp): the InvalidArgument message of a call, and a checked text replacement.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <string>

#include "swzjit/error.hpp"

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

}  // namespace swz_test
