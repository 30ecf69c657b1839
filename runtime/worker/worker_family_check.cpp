// runtime/worker: the family target's reading of a check result (runtime/worker/worker_family_check.hpp);
// the messages are the ones the host-side comparison gave, so tune reports read the same.
#include "runtime/worker/worker_family_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace swz {
namespace detail {
namespace worker {

double family_relative_error(double err, double norm) { return std::sqrt(err) / std::max(std::sqrt(norm), 1e-30); }

FamilyCheckFinding family_check_finding(const tpl::FamilyCheckResult& r, double tolerance) {
  FamilyCheckFinding f;
  f.relative_error = family_relative_error(r.err, r.norm);
  if (r.first_guard != tpl::kFamilyCheckNone) {
    f.kind = FamilyCheckFinding::Guard;
    f.at = r.first_guard;
  } else if (r.first_written != tpl::kFamilyCheckNone && r.first_written < r.first_nonfinite) {
    f.kind = FamilyCheckFinding::Written;
    f.at = r.first_written;
  } else if (r.first_nonfinite != tpl::kFamilyCheckNone || r.nonfinite != 0) {
    f.kind = FamilyCheckFinding::NonFinite;
    f.at = r.first_nonfinite;
  } else if (!(f.relative_error <= tolerance)) {  // a NaN sum fails too
    f.kind = FamilyCheckFinding::Tolerance;
  }
  return f;
}

std::string family_check_message(const std::string& name, const FamilyCheckFinding& f, std::size_t head,
                                 std::size_t tail, unsigned long long at, double got, double want, double tolerance) {
  switch (f.kind) {
    case FamilyCheckFinding::Pass:
      return "";
    case FamilyCheckFinding::Guard: {
      const auto k = static_cast<std::size_t>(f.at);
      return "wrote outside " + name + " (" +
             (k < head ? std::to_string(head - k) + " bytes before it" : std::to_string(k - tail) + " bytes after its end") +
             ")";
    }
    case FamilyCheckFinding::Written:
      return name + "[" + std::to_string(f.at) + "] was written; the reference leaves it untouched";
    case FamilyCheckFinding::NonFinite:
      return name + "[" + std::to_string(f.at) + "] is " + std::to_string(got) + " (expected " + std::to_string(want) +
             "; not written?)";
    case FamilyCheckFinding::Tolerance: {
      // Where it is worst, in the reference's terms: the element and both values (all digits).
      char values[96];
      std::snprintf(values, sizeof values, " (got %.9g, expected %.9g)", got, want);
      char rels[64];
      std::snprintf(rels, sizeof rels, "relative error %.3g above the tolerance %.3g", f.relative_error, tolerance);
      return name + ": " + rels + "; largest difference at " + name + "[" + std::to_string(at) + "]" + values;
    }
  }
  return "";
}

}  // namespace worker
}  // namespace detail
}  // namespace swz
