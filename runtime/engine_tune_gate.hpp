// runtime (internal): how an Engine with TunePolicy::TuneOnMiss tunes (runtime/engine.cpp,
// runtime/engine_gemm.cpp): one tune per problem at a time, never a blocked caller, never a failed call.
#pragma once

#include <atomic>
#include <cstdio>
#include <functional>
#include <mutex>
#include <set>
#include <string>

#include "swzjit/error.hpp"

namespace swz {
namespace detail {

/// The problems an engine is tuning now. A caller that misses while the same problem is being tuned
/// gets the default at once (not remembered, so a later call picks up the winner) instead of waiting
/// minutes for the tune or starting a second one that would disturb the first one's timings.
template <class Key>
class TuneGate {
 public:
  /// What to run: `tune` when nobody tunes `key` now, else `fallback`. A tune that throws swz::Error
  /// (no worker, no device, a driver fault) also gives `fallback`, with one warning per engine naming
  /// the cause. *remember: whether the answer is final for this engine (a tune ran, or failed).
  template <class Config>
  Config choose(const Key& key, const std::string& what, const std::function<Config()>& tune,
                const std::function<Config()>& fallback, bool* remember) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!busy_.insert(key).second) {
        *remember = false;
        return fallback();
      }
    }
    struct Release {
      TuneGate& gate;
      const Key& key;
      ~Release() {
        std::lock_guard<std::mutex> lock(gate.mutex_);
        gate.busy_.erase(key);
      }
    } release{*this, key};
    *remember = true;
    try {
      return tune();
    } catch (const Error& e) {
      if (!warned_.exchange(true))
        std::fprintf(stderr,
                     "swzjit: warning: tuning %s failed (%s); this engine uses the default configuration for "
                     "problems whose tune fails (further failures are not reported)\n",
                     what.c_str(), e.what());
      return fallback();
    }
  }

 private:
  std::mutex mutex_;
  std::set<Key> busy_;
  std::atomic<bool> warned_{false};
};

}  // namespace detail
}  // namespace swz
