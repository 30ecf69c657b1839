// runtime (internal): the benchmark worker's side of runtime/worker/worker_protocol.hpp, run by swz-worker
// (runtime/worker/worker_main.cpp) in its own process, so a candidate that faults or hangs takes only
// the worker's CUDA context down, never the caller's.
#pragma once

namespace swz {
namespace detail {
namespace worker {

/// Serves requests from `in_fd` and answers on `out_fd` until Quit, end of input, or a sticky CUDA
/// error. Writes nothing but protocol frames to `out_fd`; a malformed stream is reported on stderr.
/// Returns the process exit code: 0 done, 1 setup failed (reported), 2 protocol error, 3 sticky error.
int serve(int in_fd, int out_fd);

}  // namespace worker
}  // namespace detail
}  // namespace swz
