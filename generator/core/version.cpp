// generator/core: swz::version() (include/swzjit/version.hpp, generated from CMakeLists.txt's version).
#include "swzjit/version.hpp"

namespace swz {

const char* version() noexcept { return SWZJIT_VERSION_STRING; }

}  // namespace swz
