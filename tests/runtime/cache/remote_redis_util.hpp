// tests/runtime: a real redis-server on a free loopback port, its files in the test's temporary
// directory, for the remote-tier suites (remote_*_test.cpp); kill() and start() simulate an outage.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace swz_cache_test {

/// The redis-server binary: $PATH, then the Debian locations; "" when it is not installed.
inline std::string find_redis_server() {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    for (std::size_t start = 0;;) {
      const std::size_t colon = p.find(':', start);
      dirs.push_back(p.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  dirs.push_back("/usr/bin");
  dirs.push_back("/usr/sbin");
  for (const auto& d : dirs)
    if (!d.empty() && ::access((d + "/redis-server").c_str(), X_OK) == 0) return d + "/redis-server";
  return "";
}

/// A loopback port nobody listens on right now (the kernel picks it).
inline int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t n = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) != 0)
    throw std::runtime_error("no free loopback port");
  ::close(fd);
  return ntohs(a.sin_port);
}

inline bool port_accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  if (fd >= 0) ::close(fd);
  return ok;
}

/// redis-server --port P --bind 127.0.0.1, no persistence, its working files under `dir`.
/// Usage: `RedisServer r(dir); if (!r.available()) { MESSAGE(...); return; }`.
class RedisServer {
 public:
  explicit RedisServer(std::string dir, std::vector<std::string> extra = {})
      : binary_(find_redis_server()), dir_(std::move(dir)), extra_(std::move(extra)) {
    if (binary_.empty()) return;
    for (int attempt = 0; attempt < 5 && pid_ <= 0; ++attempt) {
      port_ = free_loopback_port();
      start();
    }
    if (pid_ <= 0) throw std::runtime_error("redis-server did not start (see " + dir_ + "/redis.log)");
  }
  ~RedisServer() { kill(); }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  bool available() const { return !binary_.empty(); }
  int port() const { return port_; }
  std::string url(const std::string& userinfo = "") const {
    return "redis://" + (userinfo.empty() ? "" : userinfo + "@") + "127.0.0.1:" + std::to_string(port_) + "/0";
  }

  /// Starts it on port() (again); waits up to 5 s for it to accept connections.
  void start() {
    std::vector<std::string> args = {binary_, "--port", std::to_string(port_), "--bind", "127.0.0.1",
                                     "--save", "", "--appendonly", "no", "--dir", dir_,
                                     "--logfile", dir_ + "/redis.log", "--daemonize", "no"};
    args.insert(args.end(), extra_.begin(), extra_.end());
    const pid_t pid = ::fork();
    if (pid == 0) {
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(&a[0]);
      argv.push_back(nullptr);
      ::execv(binary_.c_str(), argv.data());
      ::_exit(127);
    }
    pid_ = pid;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {  // exited: the port was taken meanwhile
        pid_ = -1;
        return;
      }
      if (port_accepts(port_)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill();
  }

  /// SIGKILL, as a crash or an operator's restart would; everything it held is lost.
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  std::string binary_, dir_;
  std::vector<std::string> extra_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace swz_cache_test
