// runtime (internal): how an Engine with TunePolicy::TuneOnMiss tunes (runtime/engine/engine.cpp,
// runtime/engine/engine_gemm.cpp): one tune per problem at a time, and no caller ever waits for another's tune.
#pragma once

#include <functional>
#include <mutex>
#include <set>

namespace swz {
namespace detail {

/// The problems an engine is tuning now. A caller that misses while the same problem is being tuned
/// gets the default at once (not remembered, so a later call picks up the winner) instead of waiting
/// minutes for the tune or starting a second one that would disturb the first one's timings.
template <class Key>
class TuneGate {
 public:
  /// What to run: `tune` when nobody tunes `key` now, else `fallback`. (A tune that fails already gives
  /// the default, with a warning: autotune_*_for_engine.) *remember: whether the answer is final for this
  /// engine (true when this call tuned).
  template <class Config>
  Config choose(const Key& key, const std::function<Config()>& tune, const std::function<Config()>& fallback,
                bool* remember) {
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
    return tune();
  }

 private:
  std::mutex mutex_;
  std::set<Key> busy_;
};

}  // namespace detail
}  // namespace swz
