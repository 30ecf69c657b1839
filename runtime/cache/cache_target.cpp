// runtime: where a cache export is written (see cache_target.hpp).
#include "runtime/cache/cache_target.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "swzjit/error.hpp"

namespace swz {
namespace detail {

namespace {

std::string errno_text() { return std::strerror(errno); }

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string name_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

const char* kind_of(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISDIR(m)) return "a directory";
  return "not a regular file";
}

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw Error(ErrorKind::Io, "will not write the cache export to " + path + ": " + why);
}

}  // namespace

ExportTarget export_target(const std::string& path, bool allow_special) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) refuse(path, errno_text());
    return ExportTarget{path, directory_of(path), name_of(path), false};
  }
  std::string target = path;
  if (S_ISLNK(st.st_mode)) {
    if (!allow_special) refuse(path, "it is a symbolic link (give --force-target to replace the file it points to)");
    char* real = ::realpath(path.c_str(), nullptr);
    if (!real) refuse(path, "it is a symbolic link that cannot be followed (" + errno_text() + ")");
    target = real;
    std::free(real);
    if (::stat(target.c_str(), &st) != 0) refuse(path, "its target " + target + ": " + errno_text());
  }
  if (S_ISREG(st.st_mode)) return ExportTarget{target, directory_of(target), name_of(target), false};
  const bool streamable = S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode);
  if (!streamable) refuse(path, std::string("it is ") + kind_of(st.st_mode) + "; give the path of a file");
  if (!allow_special)
    refuse(path, std::string("it is ") + kind_of(st.st_mode) +
                     ", not a regular file, and would be replaced (give --force-target to write the export into it)");
  std::error_code ec;
  const std::string tmp = std::filesystem::temp_directory_path(ec).string();
  return ExportTarget{target, ec || tmp.empty() ? std::string("/tmp") : tmp, "swzjit-export", true};
}

TempFile::TempFile(const std::string& directory, const std::string& stem) {
  std::string tmpl = directory + "/." + stem + ".tmp-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  const int fd = ::mkstemp(buf.data());  // O_EXCL, mode 0600: nothing planted at the name is followed
  if (fd < 0)
    throw Error(ErrorKind::Io,
                "cannot create a temporary file in " + directory + " for the cache export: " + errno_text());
  ::close(fd);
  path_ = buf.data();
}

TempFile::~TempFile() {
  if (!published_) ::unlink(path_.c_str());
  ::unlink((path_ + "-journal").c_str());
}

void TempFile::publish(const std::string& final_path, bool stream) {
  if (!stream) {
    if (std::rename(path_.c_str(), final_path.c_str()) != 0)
      throw Error(ErrorKind::Io, "cannot write the cache export " + final_path + ": " + errno_text());
    published_ = true;
    return;
  }
  // O_NONBLOCK: opening a FIFO nobody reads fails at once (ENXIO) instead of waiting forever.
  const int out = ::open(final_path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (out < 0)
    throw Error(ErrorKind::Io, "cannot open " + final_path + " for the cache export: " +
                                   (errno == ENXIO ? std::string("no process is reading it") : errno_text()));
  const int in = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  std::string problem = in < 0 ? "cannot reopen " + path_ + ": " + errno_text() : "";
  char buf[65536];
  while (problem.empty()) {
    const ssize_t n = ::read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) problem = "cannot read " + path_ + ": " + errno_text();
    if (n <= 0) break;
    for (ssize_t done = 0; done < n && problem.empty();) {
      const ssize_t w = ::write(out, buf + done, static_cast<std::size_t>(n - done));
      if (w > 0) {
        done += w;
        continue;
      }
      if (w < 0 && errno != EAGAIN && errno != EINTR) {
        problem = errno_text();
        break;
      }
      pollfd p{out, POLLOUT, 0};
      if (::poll(&p, 1, kStreamStallMs) == 0)
        problem = "it accepted no bytes for " + std::to_string(kStreamStallMs / 1000) + " s";
    }
  }
  if (in >= 0) ::close(in);
  ::close(out);
  if (!problem.empty()) throw Error(ErrorKind::Io, "cannot write the cache export into " + final_path + ": " + problem);
}

}  // namespace detail
}  // namespace swz
