// runtime: the cross-process half of the cache's single flight (runtime/cache/cache.cpp): a byte-range
// lock per key stripe in one file beside the database, so two processes never compile one key twice.
#pragma once

#include <string>

namespace swz {
namespace detail {

/// An open-file-description lock (F_OFD_SETLK) on one byte of `path`, chosen by the key's hash.
/// OFD locks belong to the descriptor, not the process, so threads lock independently; the kernel
/// drops them when the holder exits, SIGKILL included. The wait polls, so it is always bounded.
class BuildLock {
 public:
  enum class State {
    Held,        ///< acquired (maybe after waiting for another builder)
    TimedOut,    ///< another builder held it for longer than the wait allowed
    Unavailable  ///< the lock file could not be opened (read-only directory, ...): no lock
  };
  /// Tries for up to `wait_ms` milliseconds (0: one try).
  BuildLock(const std::string& path, const std::string& key_hash, int wait_ms);
  ~BuildLock();
  BuildLock(const BuildLock&) = delete;
  BuildLock& operator=(const BuildLock&) = delete;

  State state() const { return state_; }
  /// True when another process held the lock first: its build may be stored by now.
  bool waited() const { return waited_; }

  /// Number of stripes (bytes) keys are spread over; two keys share one with odds 1 / kStripes.
  static constexpr long kStripes = 65536;

 private:
  int fd_ = -1;
  long offset_ = 0;
  State state_ = State::Unavailable;
  bool waited_ = false;
};

}  // namespace detail
}  // namespace swz
