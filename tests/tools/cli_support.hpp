// tests/tools: run the built `swz` binary and capture stdout, stderr and the exit code.
#pragma once

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace swz_test {

struct RunResult {
  int code = -1;
  std::string out;
  std::string err;
};

/// Runs `SWZ_TOOL_PATH <args>` through the shell; `env` is prepended (e.g. "SWZJIT_CACHE_DIR=/tmp/x").
inline RunResult run_swz(const std::string& args, const std::string& env = "") {
  char err_path[] = "/tmp/swz_cli_err_XXXXXX";
  const int fd = mkstemp(err_path);
  if (fd >= 0) close(fd);
  const std::string cmd = (env.empty() ? "" : env + " ") + std::string(SWZ_TOOL_PATH) + " " + args + " 2>" + err_path;
  RunResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (FILE* e = fopen(err_path, "r")) {
    while ((n = fread(buf.data(), 1, buf.size(), e)) > 0) r.err.append(buf.data(), n);
    fclose(e);
  }
  unlink(err_path);
  // swz never exits above 3 by itself: 134 is an abort (a sanitizer report under ASan's abort_on_error), -1
  // a signal. The checks only see the code, so the log gets the stderr that says why.
  if (r.code < 0 || r.code > 3) {
    std::fprintf(stderr, "swz %s: exit %d; its stderr:\n%s\n", args.c_str(), r.code, r.err.c_str());
  }
  return r;
}

}  // namespace swz_test
