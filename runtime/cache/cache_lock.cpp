// runtime: the cross-process build lock of the cache (see cache_lock.hpp).
#include "runtime/cache/cache_lock.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <thread>

namespace swz {
namespace detail {

namespace {

bool lock_op(int fd, short type, long offset, bool* busy) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = offset;
  fl.l_len = 1;
  fl.l_pid = 0;  // required to be 0 for OFD locks
  if (::fcntl(fd, F_OFD_SETLK, &fl) == 0) return true;
  if (busy) *busy = errno == EAGAIN || errno == EACCES;
  return false;
}

}  // namespace

BuildLock::BuildLock(const std::string& path, const std::string& key_hash, int wait_ms) {
  // The stripe: the key hash's first 8 hex digits (the hash is uniform, so any digits will do).
  offset_ = static_cast<long>(std::strtoul(key_hash.substr(0, 8).c_str(), nullptr, 16) % kStripes);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd_ < 0) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(wait_ms, 0));
  auto pause = std::chrono::milliseconds(2);
  for (;;) {
    bool busy = false;
    if (lock_op(fd_, F_WRLCK, offset_, &busy)) {
      state_ = State::Held;
      return;
    }
    if (!busy) break;  // the file system cannot lock: go on without
    waited_ = true;
    if (std::chrono::steady_clock::now() >= deadline) {
      state_ = State::TimedOut;
      return;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
  ::close(fd_);
  fd_ = -1;
}

BuildLock::~BuildLock() {
  if (fd_ < 0) return;
  if (state_ == State::Held) lock_op(fd_, F_UNLCK, offset_, nullptr);
  ::close(fd_);  // closing the last descriptor drops an OFD lock anyway
}

}  // namespace detail
}  // namespace swz
