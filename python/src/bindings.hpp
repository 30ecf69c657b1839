// python/src: shared declarations of the swzjit._swzjit extension (nanobind over libswzjit).
// Each bind_* function adds one group of functions to the module; the Python package wraps them.
#pragma once

#include <nanobind/nanobind.h>

#include <string>

#include "swzjit/autotune.hpp"
#include "swzjit/engine.hpp"

namespace swzpy {

namespace nb = nanobind;

void bind_engines(nb::module_& m);     // engines.cpp: engines per device, gemm, transpose, DLPack
void bind_analysis(nb::module_& m);    // analysis.cpp: layout, bank, solve
void bind_tune_cache(nb::module_& m);  // tune_cache.cpp: autotune, cache stats and listing
void bind_families(nb::module_& m);    // families.cpp: declared kernel families (swzjit.Family)

/// The engine for `device` under the module's current settings (made on first use, kept for the
/// process's life: engines are never destroyed, so no driver call runs during interpreter shutdown).
swz::Engine& engine_for(int device);
/// The cache directory the module's settings name ("" = the library's default).
std::string configured_cache_dir();

/// Problems from the dicts the Python layer builds (keys as the C++ field names; orders "row"/"col").
swz::GemmProblem gemm_problem_from(const nb::dict& d);
swz::TransposeProblem transpose_problem_from(const nb::dict& d);

/// Tuning options from swzjit.autotune's keyword arguments (max_candidates, compile_only, arch, ...).
swz::TuneOptions tune_options_from(const nb::dict& options);
/// A tuner's report as the dict swzjit.autotune returns.
nb::dict report_dict(const swz::TuneReport& report);

}  // namespace swzpy
