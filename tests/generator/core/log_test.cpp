// tests/generator/core: the library's log (generator/core/log.cpp) -- level names, filtering by level,
// the callback, and the version (generator/core/version.cpp).
#include <doctest/doctest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "swzjit/log.hpp"
#include "swzjit/version.hpp"

namespace {

// Restores the process's level and default sink when a test ends, whatever it changed.
struct LogCapture {
  std::vector<std::pair<swz::LogLevel, std::string>> messages;
  swz::LogLevel saved = swz::log_level();
  LogCapture() {
    swz::set_log_callback([this](swz::LogLevel l, const std::string& m) { messages.emplace_back(l, m); });
  }
  ~LogCapture() {
    swz::set_log_callback(nullptr);
    swz::set_log_level(saved);
  }
};

}  // namespace

TEST_CASE("log levels are named and parsed both ways") {
  for (auto l : {swz::LogLevel::Off, swz::LogLevel::Error, swz::LogLevel::Warn, swz::LogLevel::Info,
                 swz::LogLevel::Debug}) {
    swz::LogLevel parsed = swz::LogLevel::Off;
    CHECK(swz::parse_log_level(swz::to_string(l), &parsed));
    CHECK(parsed == l);
  }
  swz::LogLevel l = swz::LogLevel::Info;
  CHECK(swz::parse_log_level("WARNING", &l));
  CHECK(l == swz::LogLevel::Warn);
  CHECK_FALSE(swz::parse_log_level("verbose", &l));
  CHECK(l == swz::LogLevel::Warn);  // unchanged
}

TEST_CASE("messages above the level are dropped; the callback gets the rest in order") {
  LogCapture cap;
  swz::set_log_level(swz::LogLevel::Warn);
  CHECK(swz::log_enabled(swz::LogLevel::Error));
  CHECK_FALSE(swz::log_enabled(swz::LogLevel::Info));
  swz::log(swz::LogLevel::Debug, "d1");
  swz::log(swz::LogLevel::Warn, "w1");
  swz::log(swz::LogLevel::Info, "i1");
  swz::log(swz::LogLevel::Error, "e1");
  REQUIRE(cap.messages.size() == 2);
  CHECK(cap.messages[0] == std::make_pair(swz::LogLevel::Warn, std::string("w1")));
  CHECK(cap.messages[1] == std::make_pair(swz::LogLevel::Error, std::string("e1")));

  swz::set_log_level(swz::LogLevel::Debug);
  swz::log(swz::LogLevel::Debug, "d2");
  CHECK(cap.messages.back().second == "d2");

  swz::set_log_level(swz::LogLevel::Off);
  swz::log(swz::LogLevel::Error, "e2");
  swz::log(swz::LogLevel::Off, "never");
  CHECK(cap.messages.size() == 3);
}

TEST_CASE("a throwing log callback does not turn a log call into a failure") {
  LogCapture cap;
  swz::set_log_level(swz::LogLevel::Info);
  swz::set_log_callback([](swz::LogLevel, const std::string&) { throw std::runtime_error("sink broke"); });
  CHECK_NOTHROW(swz::log(swz::LogLevel::Warn, "x"));
}

TEST_CASE("the version macros, the string and swz::version() agree") {
  const std::string want = std::to_string(SWZJIT_VERSION_MAJOR) + "." + std::to_string(SWZJIT_VERSION_MINOR) + "." +
                           std::to_string(SWZJIT_VERSION_PATCH);
  CHECK(want == SWZJIT_VERSION_STRING);
  CHECK(std::strcmp(swz::version(), SWZJIT_VERSION_STRING) == 0);
  CHECK(SWZJIT_VERSION == SWZJIT_VERSION_MAJOR * 10000 + SWZJIT_VERSION_MINOR * 100 + SWZJIT_VERSION_PATCH);
}
