// runtime/worker: main of swz-worker, the autotuner's benchmark process (runtime/worker/worker_server.cpp).
// The library starts it with a socket on stdin/stdout; run by hand, it explains itself and exits.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>

#include "runtime/worker/worker_server.hpp"

int main(int argc, char** argv) {
  if (argc > 1 || isatty(STDIN_FILENO) || isatty(STDOUT_FILENO)) {
    // NOTE: stderr only: stdout carries nothing but protocol frames, even here.
    std::fprintf(stderr,
                 "%s: the benchmark worker of libswzjit's autotuner.\n"
                 "The library (swz autotune, or an Engine with TunePolicy::TuneOnMiss) starts it and speaks a\n"
                 "binary protocol on its stdin/stdout; it takes no arguments and is not meant to be run by hand.\n"
                 "To use another build of it, set SWZJIT_WORKER=/path/to/swz-worker.\n",
                 argc > 0 ? argv[0] : "swz-worker");
    return 2;
  }
  // NOTE: a worker stuck in a hung kernel never reads the end of its input; if the tuner dies, the
  // kernel would spin on. Die with the thread that started us (it waits on us for the whole tune).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  return swz::detail::worker::serve(STDIN_FILENO, STDOUT_FILENO);
}
