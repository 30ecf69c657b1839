// runtime/worker (internal): what the family target makes of one output buffer's check result
// (templates/family_check.cuh, run by runtime/worker/worker_family.cpp): which failure, if any, and its message.
#pragma once

#include <cstddef>
#include <string>

#include "templates/family_check.cuh"

namespace swz {
namespace detail {
namespace worker {

/// The first thing wrong with a candidate's output buffer, in the order the check reports it: a guard
/// byte, then the first element (in index order) that was written although the reference leaves it
/// alone or is not finite, then the relative error.
struct FamilyCheckFinding {
  enum Kind { Pass, Guard, Written, NonFinite, Tolerance };
  Kind kind = Pass;
  unsigned long long at = 0;  ///< Guard: the byte of the allocation; Written, NonFinite: the element
  double relative_error = 0;  ///< sqrt(err) / sqrt(norm)
};

/// sqrt(err) / sqrt(norm), with an all-zero reference counting as norm 1e-30 (any difference fails).
double family_relative_error(double err, double norm);

/// The finding for a compare pass's result.
FamilyCheckFinding family_check_finding(const tpl::FamilyCheckResult& r, double tolerance);

/// The failure message for `f` (not Pass) on buffer `name`. `head` and `tail` bound the buffer in its
/// allocation (Guard). `at`: Tolerance: the element with the largest difference. `got` and `want`:
/// the two values at the element (NonFinite, Tolerance).
std::string family_check_message(const std::string& name, const FamilyCheckFinding& f, std::size_t head,
                                 std::size_t tail, unsigned long long at, double got, double want, double tolerance);

}  // namespace worker
}  // namespace detail
}  // namespace swz
