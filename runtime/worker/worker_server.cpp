// runtime: the benchmark worker (runtime/worker/worker_server.hpp). Owns one CUDA context, an L2-flush
// buffer and the problem's Target (runtime/worker/worker_target.hpp: GEMMs and declared families, the
// transpose among them, each own their buffers, support kernels and output check); loads, verifies and
// times each candidate with CUDA events.
#include "generator/core/checked_arith.hpp"
#include "runtime/worker/worker_server.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/tune/autotune_internal.hpp"
#include "runtime/driver/driver_api.hpp"
#include "runtime/worker/worker_family.hpp"
#include "runtime/worker/worker_protocol.hpp"
#include "swzjit/device.hpp"
#include "swzjit/error.hpp"
#include "swzjit/jit.hpp"

namespace swz {
namespace detail {
namespace worker {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMinFlushBytes = std::size_t{64} << 20;
constexpr double kReplySeconds = 60;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::size_t round_up(std::size_t v, std::size_t to) { return (v + to - 1) / to * to; }

// The message check() would throw for `r` (it also records a sticky error as a lost context).
std::string describe(CUresult r, const std::string& what) {
  try {
    check(r, what);
  } catch (const Error& e) {
    return e.what();
  }
  return what + ": ok";
}

struct Failure {
  std::string status;  // resource-limit, launch-failed, wrong-result
  std::string reason;
  bool exiting = false;
};

Failure failure_of(const Error& e, const std::string& context) {
  Failure f{"launch-failed", context + ": " + e.what(), e.kind() == ErrorKind::ContextLost};
  return f;
}

class Worker {
 public:
  HelloReply hello(const HelloRequest& req);
  SupportReply support(const SupportRequest& req);
  BenchResult bench(const BenchRequest& req);
  std::vector<BenchResult> retime(const RetimeRequest& req);

 private:
  struct Loaded {
    std::unique_ptr<Module> module;
    CUfunction function = nullptr;
  };

  CUstream stream() const { return stream_->handle(); }
  std::optional<Failure> load(const BenchJob& job, Loaded* out);
  std::optional<Failure> launch(const BenchJob& job, CUfunction f);
  std::optional<Failure> verify(const BenchJob& job, CUfunction f);
  std::optional<Failure> time(const BenchJob& job, CUfunction f, int reps, std::vector<double>* samples);
  void ensure_events(std::size_t pairs);

  bool ready_ = false, supported_ = false;
  int device_ = 0;
  DeviceInfo info_;
  std::unique_ptr<ContextGuard> context_;
  std::unique_ptr<Stream> stream_;
  DeviceBuffer flush_;
  std::vector<Event> starts_, stops_;
  unsigned flush_value_ = 0;
  std::unique_ptr<Target> target_;  // the problem: its buffers, support kernels and output check
};

HelloReply Worker::hello(const HelloRequest& req) {
  HelloReply reply;
  const auto t0 = Clock::now();
  try {
    if (ready_) throw_invalid("a second Hello");
    device_ = req.device;
    info_ = device_info(device_);
    context_ = std::make_unique<ContextGuard>(device_);  // current for the worker's whole life
    stream_ = std::make_unique<Stream>(device_, true);
    flush_ = DeviceBuffer(std::max(kMinFlushBytes, round_up(2 * static_cast<std::size_t>(info_.l2_bytes), 256)), device_);
    target_ = make_family_target(req.family, device_, stream());
    ready_ = true;
    reply.ok = true;
    reply.device_name = info_.name;
    reply.arch = info_.arch();
    reply.sm_count = info_.sm_count;
    reply.l2_bytes = info_.l2_bytes;
  } catch (const Error& e) {
    reply.ok = false;
    reply.error_kind = static_cast<int>(e.kind());
    reply.error = e.what();
  }
  reply.init_ms = ms_since(t0);
  return reply;
}

SupportReply Worker::support(const SupportRequest& req) {
  SupportReply reply;
  const auto t0 = Clock::now();
  try {
    if (!ready_) throw_invalid("Support before Hello");
    target_->support(req);
    supported_ = true;
    reply.ok = true;
  } catch (const Error& e) {
    reply.ok = false;
    reply.error_kind = static_cast<int>(e.kind());
    reply.error = e.what();
  }
  reply.fill_ms = ms_since(t0);
  return reply;
}

std::optional<Failure> Worker::load(const BenchJob& job, Loaded* out) {
  try {
    out->module = std::make_unique<Module>(load_image(job.kernel, device_));
    Kernel kernel = out->module->kernel();
    out->function = kernel.handle();
    if (job.dynamic_smem > 48 * 1024) {
      try {
        kernel.set_max_dynamic_smem(static_cast<int>(job.dynamic_smem));
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::InvalidArgument) throw;
        return Failure{"resource-limit", e.what(), false};  // more shared memory than this GPU has
      }
    }
  } catch (const Error& e) {
    return failure_of(e, "loading the module");
  }
  return std::nullopt;
}

std::optional<Failure> Worker::launch(const BenchJob& job, CUfunction f) {
  CUresult r;
  std::string what = "cuLaunchKernel";
  try {
    r = target_->launch(job, f, &what);  // split-K candidates: two kernels, timed together
  } catch (const Error& e) {
    return failure_of(e, "launching");
  }
  if (r == CUDA_SUCCESS) return std::nullopt;
  const std::string text = describe(r, what);
  if (r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES || r == CUDA_ERROR_INVALID_VALUE)
    return Failure{"resource-limit", text, false};
  return Failure{"launch-failed", text, is_sticky(r)};
}

void Worker::ensure_events(std::size_t pairs) {
  while (starts_.size() < pairs) {
    starts_.emplace_back(device_);
    stops_.emplace_back(device_);
  }
}

std::optional<Failure> Worker::verify(const BenchJob& job, CUfunction f) {
  try {
    target_->prepare();
  } catch (const Error& e) {
    return failure_of(e, "poisoning the outputs");
  }
  if (auto failed = launch(job, f)) return failed;
  std::string wrong;
  try {
    wrong = target_->check_output();
  } catch (const Error& e) {
    return failure_of(e, "running the candidate and the output check");
  }
  if (!wrong.empty()) return Failure{"wrong-result", wrong, false};
  return std::nullopt;
}

std::optional<Failure> Worker::time(const BenchJob& job, CUfunction f, int reps, std::vector<double>* samples) {
  const DriverApi& api = driver_api();
  ensure_events(static_cast<std::size_t>(reps));
  try {
    for (int i = 0; i < reps; ++i) {
      // NOTE: a fresh value each time, so the flush really writes every line of a buffer twice the L2.
      check(api.cuMemsetD32Async(flush_.ptr(), ++flush_value_, flush_.size() / 4, stream()), "flushing the L2");
      check(api.cuEventRecord(starts_[static_cast<std::size_t>(i)].handle(), stream()), "cuEventRecord");
      if (auto failed = launch(job, f)) return failed;
      check(api.cuEventRecord(stops_[static_cast<std::size_t>(i)].handle(), stream()), "cuEventRecord");
    }
    for (int i = 0; i < reps; ++i)
      samples->push_back(elapsed_ms(starts_[static_cast<std::size_t>(i)], stops_[static_cast<std::size_t>(i)]));
  } catch (const Error& e) {
    return failure_of(e, "timing");
  }
  return std::nullopt;
}

BenchResult Worker::bench(const BenchRequest& req) {
  BenchResult r;
  r.id = req.job.id;
  const auto fail = [&](const Failure& f) {
    r.status = f.status;
    r.reason = f.reason;
    r.worker_exiting = f.exiting;
    return r;
  };
  if (!supported_) return fail(Failure{"launch-failed", "the worker got Bench before Hello and Support", false});
  try {
    Loaded k;
    if (auto failed = load(req.job, &k)) return fail(*failed);
    if (auto failed = verify(req.job, k.function)) return fail(*failed);
    const TimingSettings& t = req.timing;
    std::vector<double> samples;
    for (int i = 0; i < t.warmup; ++i)
      if (auto failed = launch(req.job, k.function)) return fail(*failed);
    if (auto failed = time(req.job, k.function, 1, &samples)) return fail(*failed);  // also the estimate
    const double estimate = std::max(samples[0], 1e-4);
    const int reps = std::max(std::max(1, t.min_reps),
                              std::min(std::max(1, t.max_reps), static_cast<int>(std::ceil(t.target_ms / estimate))));
    samples.clear();
    if (auto failed = time(req.job, k.function, reps, &samples)) return fail(*failed);
    const TimeStats s = summarize_times(samples);
    r.status = "ok";
    r.median_ms = s.median_ms;
    r.p20_ms = s.p20_ms;
    r.p80_ms = s.p80_ms;
    r.repetitions = s.count;
  } catch (const Error& e) {
    return fail(failure_of(e, "benchmarking"));
  }
  return r;
}

std::vector<BenchResult> Worker::retime(const RetimeRequest& req) {
  std::vector<BenchResult> results(req.jobs.size());
  std::vector<Loaded> loaded(req.jobs.size());
  std::vector<std::vector<double>> samples(req.jobs.size());
  for (std::size_t i = 0; i < results.size(); ++i) results[i].id = req.jobs[i].id;
  // Every result stays "" (not reached) until its job has an outcome.
  const auto fail = [&](std::size_t i, const Failure& f) {
    results[i].status = f.status;
    results[i].reason = f.reason;
    results[i].worker_exiting = f.exiting;
    return f.exiting;
  };
  if (!supported_) {
    for (std::size_t i = 0; i < results.size(); ++i) fail(i, Failure{"launch-failed", "Retime before Support", false});
    return results;
  }
  try {
    for (std::size_t i = 0; i < req.jobs.size(); ++i) {
      std::optional<Failure> f = load(req.jobs[i], &loaded[i]);
      if (!f) f = verify(req.jobs[i], loaded[i].function);
      if (f && fail(i, *f)) return results;
    }
    // Warm-up rounds: the same sequence as the timed ones (flush, launch), their times dropped.
    const int warmup = std::max(0, req.warmup_rounds), rounds = std::max(1, req.rounds);
    std::vector<double> dropped;
    for (int round = 0; round < warmup + rounds; ++round)
      for (std::size_t i = 0; i < req.jobs.size(); ++i) {
        if (!results[i].status.empty()) continue;  // failed earlier
        std::vector<double>* into = round < warmup ? &dropped : &samples[i];
        if (auto f = time(req.jobs[i], loaded[i].function, std::max(1, req.reps_per_round), into))
          if (fail(i, *f)) return results;
        dropped.clear();
      }
  } catch (const Error& e) {
    for (std::size_t i = 0; i < results.size(); ++i)
      if (results[i].status.empty()) fail(i, failure_of(e, "re-timing"));
    return results;
  }
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (!results[i].status.empty()) continue;
    const TimeStats s = summarize_times(samples[i]);
    results[i].status = "ok";
    results[i].median_ms = s.median_ms;
    results[i].p20_ms = s.p20_ms;
    results[i].p80_ms = s.p80_ms;
    results[i].repetitions = s.count;
  }
  return results;
}

void complain(const std::string& what) {
  std::fprintf(stderr,
               "swz-worker: %s\nswz-worker is the benchmark worker of libswzjit's autotuner: the library starts it "
               "and speaks a binary protocol on its stdin/stdout; it is not meant to be run by hand.\n",
               what.c_str());
}

}  // namespace

int serve(int in_fd, int out_fd) {
  Worker w;
  for (;;) {
    Frame frame;
    std::string reply;
    int exit_after = -1;
    try {
      // NOTE: the one wait without a deadline: between requests the tuner may compile for as long as its
      // own (bounded) compile waits allow; its exit or kill closes the socket, which ends this wait.
      if (read_frame(in_fd, &frame, -1.0) == ReadStatus::Eof) return 0;
      switch (frame.type) {
        case MessageType::Hello: {
          const HelloReply r = w.hello(decode<HelloRequest>(frame));
          if (!r.ok) exit_after = 1;
          reply = encode(r);
          break;
        }
        case MessageType::Support: {
          const SupportReply r = w.support(decode<SupportRequest>(frame));
          if (!r.ok) exit_after = 1;
          reply = encode(r);
          break;
        }
        case MessageType::Bench: {
          BenchReply r;
          r.result = w.bench(decode<BenchRequest>(frame));
          if (r.result.worker_exiting) exit_after = 3;
          reply = encode(r);
          break;
        }
        case MessageType::Retime: {
          RetimeReply r;
          r.results = w.retime(decode<RetimeRequest>(frame));
          for (const auto& b : r.results)
            if (b.worker_exiting) exit_after = 3;
          reply = encode(r);
          break;
        }
        case MessageType::Quit:
          decode<QuitRequest>(frame);
          return 0;
        default:
          throw ProtocolError(std::string("a ") + to_string(frame.type) + " message is a reply, not a request");
      }
    } catch (const ProtocolError& e) {
      complain(e.what());
      return 2;
    }
    // The tuner reads each reply as soon as it asked; one not taken within a minute has given up on us.
    if (!write_all(out_fd, reply, kReplySeconds)) return 0;  // the tuner is gone: nothing left to do
    if (exit_after >= 0) return exit_after;
  }
}

}  // namespace worker
}  // namespace detail
}  // namespace swz
