// swzjit public API: the umbrella header. #include <swzjit/swzjit.hpp> and link swzjit::swzjit.
#pragma once

#include "swzjit/autotune.hpp"
#include "swzjit/analysis/bank.hpp"
#include "swzjit/cache.hpp"
#include "swzjit/device.hpp"
#include "swzjit/engine.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"
#include "swzjit/gemm.hpp"
#include "swzjit/install.hpp"
#include "swzjit/jit.hpp"
#include "swzjit/log.hpp"
#include "swzjit/analysis/layout.hpp"
#include "swzjit/analysis/solver.hpp"
#include "swzjit/transpose.hpp"
#include "swzjit/types.hpp"
#include "swzjit/version.hpp"
