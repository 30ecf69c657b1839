// What the errors of the engine's family scratch pool tell a caller to lend instead (detail::ScratchAdvice):
// a FamilyWorkspace for run_family's callers, a GemmWorkspace while Engine::gemm runs the GEMM's families.
#include <doctest/doctest.h>

#include <string>
#include <thread>

#include "runtime/engine/engine_impl.hpp"

using swz::detail::ScratchAdvice;

TEST_CASE("scratch advice: the family's by default, a caller's while its guard lives, per thread") {
  const std::string family = ScratchAdvice::lend();
  CHECK(family.find("FamilyWorkspace") != std::string::npos);
  CHECK(family.find("family_workspace_size") != std::string::npos);
  {
    const ScratchAdvice gemm("a GemmWorkspace to Engine::gemm (Engine::gemm_workspace_size)");
    CHECK(std::string(ScratchAdvice::lend()).find("GemmWorkspace") != std::string::npos);
    {
      const ScratchAdvice inner("something else");
      CHECK(std::string(ScratchAdvice::lend()) == "something else");
    }
    CHECK(std::string(ScratchAdvice::lend()).find("GemmWorkspace") != std::string::npos);
    // Another thread (another caller) keeps the family's advice.
    std::string other;
    std::thread t([&] { other = ScratchAdvice::lend(); });
    t.join();
    CHECK(other == family);
  }
  CHECK(std::string(ScratchAdvice::lend()) == family);
}
