// generator/families: the library's own declared families. Adding one is a template, a definition file
// (generator/families/NAME/NAME.cpp defining swz::detail::NAME_family()) and one X(NAME) entry here
// (docs/ARCHITECTURE.md, "Adding a family").
#include "generator/families/registry.hpp"

#define SWZ_BUILTIN_FAMILIES(X) \
  X(gemm_sm90)                 \
  X(hgemm)                     \
  X(rowscan)                   \
  X(rowsum)                    \
  X(sgemm)                     \
  X(transpose)

namespace swz {
namespace detail {

#define SWZ_DECLARE_FAMILY(name) FamilyDef name##_family();
SWZ_BUILTIN_FAMILIES(SWZ_DECLARE_FAMILY)
#undef SWZ_DECLARE_FAMILY

const std::vector<FamilyDefinition>& builtin_family_definitions() {
#define SWZ_LIST_FAMILY(name) name##_family,
  static const std::vector<FamilyDefinition> list = {SWZ_BUILTIN_FAMILIES(SWZ_LIST_FAMILY)};
#undef SWZ_LIST_FAMILY
  return list;
}

}  // namespace detail
}  // namespace swz
