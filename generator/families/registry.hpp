// generator/families: the list of the library's own declared families (generator/families/registry.cpp),
// registered before any lookup (generator/core/family_registry.cpp).
#pragma once

#include <vector>

#include "swzjit/family.hpp"

namespace swz {
namespace detail {

using FamilyDefinition = FamilyDef (*)();
/// The built-in declared families, one function each.
const std::vector<FamilyDefinition>& builtin_family_definitions();
/// True when `family` is one of the library's own (generator/core/family_registry.cpp): every process of
/// this build has it, the benchmark worker included, with any C++ it carries (FamilyDef::program).
bool is_builtin_family(const Family& family);

}  // namespace detail
}  // namespace swz
