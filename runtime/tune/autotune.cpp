// runtime: the autotuner (include/swzjit/autotune.hpp). Space after the static checks -> reuse of
// cached candidates -> parallel compiles on a thread pool, consumed by the tuning thread, which hands
// each compiled candidate to the benchmark worker process (verify, then time) -> interleaved re-timing
// of the best few and the default config -> deterministic choice (never slower than the default) ->
// candidates and winner stored in the engine's cache. The loop is family-independent
// (runtime/tune/autotune_tuner.hpp); every tune is a declared family's (runtime/tune/autotune_family.cpp), and
// the typed operations map onto their built-in families (autotune_transpose here, autotune_gemm in
// runtime/tune/autotune_gemm.cpp).
#include "swzjit/autotune.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <system_error>
#include <thread>
#include <utility>

#include "runtime/engine/engine_impl.hpp"
#include "runtime/jit/jit_cache.hpp"
#include "runtime/tune/autotune_internal.hpp"
#include "runtime/tune/autotune_tuner.hpp"
#include "runtime/tune/compile_pool.hpp"
#include "runtime/worker/worker_client.hpp"
#include "swzjit/device.hpp"
#include "swzjit/error.hpp"
#include "swzjit/jit.hpp"
#include "swzjit/log.hpp"

namespace swz {
namespace {

using Clock = std::chrono::steady_clock;
using detail::CompileOutcome;
using detail::CompilePool;
using detail::worker::BenchJob;
using detail::worker::BenchRequest;
using detail::worker::BenchResult;

constexpr double kSetupTimeoutSeconds = 120;  // CUDA init + allocations + input fill in the worker
constexpr int kMaxRegistersPerBlock = 65536;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// device_info on a thread of its own, so this process's cuInit overlaps the space enumeration. The thread
// owns the task (detached): a driver that never answers leaves a thread behind, not a tune that waits on a
// future forever (a std::async future would block in its destructor).
std::future<DeviceInfo> query_device(int ordinal) {
  auto task = std::make_shared<std::packaged_task<DeviceInfo()>>([ordinal] { return device_info(ordinal); });
  std::future<DeviceInfo> answer = task->get_future();
  try {
    std::thread([task] { (*task)(); }).detach();
  } catch (const std::system_error&) {
    (*task)();  // no thread to spare: ask here
  }
  return answer;
}

DeviceInfo await_device(std::future<DeviceInfo>& answer, int ordinal, double timeout_s) {
  if (answer.wait_for(std::chrono::duration<double>(timeout_s)) != std::future_status::ready)
    throw Error(ErrorKind::Driver, "autotune: timed out after " + std::to_string(static_cast<int>(timeout_s)) +
                                       " s waiting for the CUDA driver to describe device " + std::to_string(ordinal) +
                                       " (cuInit / cuDeviceGetAttribute did not return); check the GPU with "
                                       "nvidia-smi, then retry");
  return answer.get();
}

}  // namespace

std::string detail::first_log_lines(const std::string& text, int lines) {
  std::string out;
  std::size_t start = 0;
  while (lines > 0 && start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    if (line.find_first_not_of(" \t\r") != std::string::npos) {
      out += (out.empty() ? "" : " | ") + line;
      --lines;
    }
    start = end + 1;
  }
  return out.size() > 600 ? out.substr(0, 600) + "..." : out;
}

namespace {

// Where the worker is: read from the environment once per process.
const detail::worker::WorkerSettings& worker_settings() {
  static const detail::worker::WorkerSettings settings = detail::worker::WorkerSettings::from_environment();
  return settings;
}

bool is_failure(const std::string& status) {
  return status != "ok" && status != "compiled" && status != "skipped-static";
}

// --- one tune ---------------------------------------------------------------------------------

class Tuner {
 public:
  Tuner(Engine& engine, const TuneOptions& options, detail::TuneFamily family, TuneReport& report)
      : engine_(engine), options_(options), family_(std::move(family)), report_(report), start_(Clock::now()) {}

  void compile_only();
  void tune(detail::worker::WorkerSession& session, const DeviceInfo& info);
  /// Moves the candidates into the report in detail::report_order (the re-timed by their re-time, the other ok
  /// ones by their first pass, then the rest in space order).
  void collect();

 private:
  CompileOutcome compile_candidate(int index, const std::string& arch);
  std::vector<CompilePool::Task> support_tasks(const std::string& arch);
  std::vector<int> work_list();
  BenchJob job_for(int index, const KernelEntry& entry, const std::string& arch);
  BenchRequest bench_request(int index, const KernelEntry& entry, const std::string& arch);
  void record(int index, TuneCandidate c, bool store);
  void retime(detail::worker::WorkerSession& session, const std::string& arch);
  void choose_and_store();
  bool over_time() const { return options_.max_seconds > 0 && seconds_since(start_) >= options_.max_seconds; }
  void emit(const std::string& phase, const std::string& last);
  void finish_counts(std::uint64_t engine_compiles_before);
  int compile_threads() const;
  const std::string& config(int index) const { return family_.configs[static_cast<std::size_t>(index)]; }
  bool is_default(int index) const { return index >= 0 && index == family_.default_index; }
  int support_count() const { return static_cast<int>(family_.support.size()); }

  Engine& engine_;
  const TuneOptions& options_;
  const detail::TuneFamily family_;
  TuneReport& report_;
  const Clock::time_point start_;
  TuningProblemKey key_;
  std::map<int, TuneCandidate> results_;  // by position in the space
  std::map<int, KernelEntry> entries_;    // compiled images of ok candidates
  std::vector<int> retimed_;              // the candidates the final re-timing measured together
  std::set<int> kernel_cached_;           // candidates whose kernel the cache served (TuneCandidate::kernel_cached)
  std::atomic<int> lookups_{0}, support_compiles_{0};
  TuneProgress progress_;
};

void Tuner::emit(const std::string& phase, const std::string& last) {
  if (!options_.progress) return;
  progress_.phase = phase;
  progress_.last = last;
  progress_.elapsed_s = seconds_since(start_);
  options_.progress(progress_);
}

// The candidates to measure: the first max_candidates configs of the space (all when 0), and the default
// config whether or not it is among them. The default goes first, so a time budget never cuts it either:
// every tune measures what the Engine would run without it.
std::vector<int> Tuner::work_list() {
  const int size = static_cast<int>(family_.configs.size());
  int n = size;
  if (options_.max_candidates > 0 && size > options_.max_candidates) {
    n = options_.max_candidates;
    report_.budget_exhausted = true;
  }
  const int d = family_.default_index;
  std::vector<int> work;
  if (d >= 0) work.push_back(d);
  for (int i = 0; i < n; ++i)
    if (i != d) work.push_back(i);
  progress_.total = static_cast<int>(work.size());
  return work;
}

int Tuner::compile_threads() const {
  // The pool caps it at the process's compile threads (compile_thread_capacity()).
  return options_.compile_threads > 0 ? options_.compile_threads : static_cast<int>(detail::compile_thread_capacity());
}

CompileOutcome Tuner::compile_candidate(int index, const std::string& arch) {
  CompileOutcome o;
  o.index = index;
  ++lookups_;
  try {
    const std::uint64_t builds = detail::thread_builds();
    o.entry = family_.compile(index, arch);
    o.cached = detail::thread_builds() == builds;
    o.ok = true;
  } catch (const Error& e) {
    o.status = "compile-failed";
    o.reason = e.kind() == ErrorKind::Compile && !e.compile_log().empty() ? detail::first_log_lines(e.compile_log(), 3)
                                                                          : e.what();
    return o;
  }
  // A static resource check: more registers than a block may have can never launch.
  const int threads = family_.threads(index);
  if (o.entry.registers > 0 && o.entry.registers * threads > kMaxRegistersPerBlock) {
    o.ok = false;
    o.status = "resource-limit";
    o.reason = std::to_string(o.entry.registers) + " registers x " + std::to_string(threads) +
               " threads exceed the " + std::to_string(kMaxRegistersPerBlock) + " registers of a block";
  }
  return o;
}

// The support kernels get negative indexes: -1 - position in family_.support.
std::vector<CompilePool::Task> Tuner::support_tasks(const std::string& arch) {
  std::vector<CompilePool::Task> tasks;
  for (int i = 0; i < support_count(); ++i)
    tasks.push_back(CompilePool::Task{-1 - i, [this, arch, i] {
      CompileOutcome o;
      o.index = -1 - i;
      ++lookups_;
      try {
        o.entry = family_.support[static_cast<std::size_t>(i)](arch, &support_compiles_);
        o.ok = true;
      } catch (const Error& e) {
        o.status = "compile-failed";
        o.reason = e.what() + (e.compile_log().empty() ? std::string() : "\n" + e.compile_log());
      }
      return o;
    }});
  return tasks;
}

void Tuner::record(int index, TuneCandidate c, bool store) {
  c.config = config(index);
  if (c.status == "ok" && (progress_.best_ms == 0 || c.median_ms < progress_.best_ms)) {
    progress_.best_ms = c.median_ms;
    progress_.best_config = c.config;
  }
  if (is_failure(c.status)) ++progress_.failed;
  if (store) {
    CandidateResult r;
    r.config = c.config;
    r.status = c.status;
    r.reason = c.reason;
    r.median_ms = c.median_ms;
    r.p20_ms = c.p20_ms;
    r.p80_ms = c.p80_ms;
    r.repetitions = c.repetitions;
    engine_.cache().store_candidate(key_, r);
  }
  results_[index] = std::move(c);
}

void Tuner::finish_counts(std::uint64_t engine_compiles_before) {
  const std::uint64_t engine_compiles = engine_.counters().compiles - engine_compiles_before;
  report_.compiled = static_cast<int>(engine_compiles) + support_compiles_;
  report_.kernel_cache_hits = std::max(0, lookups_ - report_.compiled);
}

void Tuner::compile_only() {
  const std::string arch = options_.arch.empty() ? device_info(engine_.options().device).arch() : options_.arch;
  if (!is_known_arch(arch)) {
    std::string known;
    for (const auto& a : known_archs()) known += (known.empty() ? "" : ", ") + a;
    throw_invalid("autotune: arch '" + arch + "' is not a target libswzjit compiles for (allowed: " + known + ")");
  }
  report_.arch = arch;
  if (family_.default_index >= 0) report_.default_config = config(family_.default_index);
  const std::uint64_t before = engine_.counters().compiles;
  std::vector<CompilePool::Task> tasks = support_tasks(arch);
  for (int index : work_list())
    tasks.push_back(CompilePool::Task{index, [this, index, arch] { return compile_candidate(index, arch); }});
  CompilePool pool(std::move(tasks), compile_threads());
  CompileOutcome o;
  while (pool.next(&o, options_.compile_timeout_s)) {
    if (o.index < 0) {
      if (!o.ok) throw Error(ErrorKind::Compile, "an autotuner support kernel failed to compile: " + o.reason);
      continue;
    }
    TuneCandidate c;
    c.status = o.ok ? "compiled" : o.status;
    c.reason = o.reason;
    record(o.index, c, /*store=*/false);
    if (o.cached) kernel_cached_.insert(o.index);
    ++progress_.compiled;
    emit("compile", config(o.index) + ": " + c.status + (c.reason.empty() ? "" : " (" + c.reason + ")"));
    if (over_time()) {
      report_.budget_exhausted = report_.time_budget_exhausted = true;
      pool.stop();
    }
  }
  finish_counts(before);
}

BenchJob Tuner::job_for(int index, const KernelEntry& compiled, const std::string& arch) {
  KernelEntry entry = compiled;
  // TEST-ONLY: a candidate named in options.inject runs a misbehaving stand-in instead.
  const auto injected = options_.inject.find(config(index));
  if (injected != options_.inject.end() && family_.inject) {
    ++lookups_;
    entry = family_.inject(index, injected->second, arch, &support_compiles_);
  }
  BenchJob job;
  job.id = static_cast<std::uint64_t>(index);
  job.config = config(index);
  job.kernel.image = entry.image;
  job.kernel.is_ptx = entry.is_ptx;
  job.kernel.arch = arch;
  job.kernel.lowered_name = entry.lowered_name;
  family_.shape(index, job);
  return job;
}

BenchRequest Tuner::bench_request(int index, const KernelEntry& entry, const std::string& arch) {
  BenchRequest req;
  req.job = job_for(index, entry, arch);
  req.timing.warmup = 1;
  req.timing.min_reps = std::max(1, options_.min_repetitions);
  req.timing.max_reps = std::max(req.timing.min_reps, options_.max_repetitions);
  req.timing.target_ms = options_.repetition_target_ms;
  return req;
}

TuneCandidate from_bench(const BenchResult& b) {
  TuneCandidate c;
  c.status = b.status.empty() ? "launch-failed" : b.status;
  c.reason = b.status.empty() ? "not reached: the worker stopped at another candidate's fault" : b.reason;
  c.median_ms = b.median_ms;
  c.p20_ms = b.p20_ms;
  c.p80_ms = b.p80_ms;
  c.repetitions = b.repetitions;
  return c;
}

void Tuner::tune(detail::worker::WorkerSession& session, const DeviceInfo& info) {
  const std::string arch = info.arch();
  report_.arch = arch;
  report_.device = info.name;
  key_ = family_.tuning_key();
  if (family_.default_index >= 0) report_.default_config = config(family_.default_index);
  const std::map<std::string, CandidateResult> stored = engine_.cache().load_candidates(key_);

  // Candidates measured by an earlier tune are reused; only the rest is compiled and measured.
  std::vector<int> fresh;
  for (int index : work_list()) {
    const auto it = stored.find(config(index));
    if (it == stored.end()) {
      fresh.push_back(index);
      continue;
    }
    TuneCandidate c;
    c.status = it->second.status;
    c.reason = it->second.reason;
    c.median_ms = it->second.median_ms;
    c.p20_ms = it->second.p20_ms;
    c.p80_ms = it->second.p80_ms;
    c.repetitions = it->second.repetitions;
    c.from_cache = true;
    record(index, c, /*store=*/false);
    ++report_.reused;
    ++progress_.compiled;
    ++progress_.benchmarked;
    emit("benchmark", config(index) + ": reused " + c.status);
  }

  const std::uint64_t before = engine_.counters().compiles;
  std::vector<CompilePool::Task> tasks = support_tasks(arch);
  for (int index : fresh)
    tasks.push_back(CompilePool::Task{index, [this, index, arch] { return compile_candidate(index, arch); }});
  {
    CompilePool pool(std::move(tasks), compile_threads());
    // Candidates that finish before the support kernels wait for them: no benchmark runs unverified.
    std::vector<CompileOutcome> waiting;
    std::vector<KernelEntry> support(static_cast<std::size_t>(support_count()));
    int support_left = support_count();
    bool checker_ready = support_left == 0;
    const auto handle = [&](const CompileOutcome& o) {
      const std::string& name = config(o.index);
      if (over_time()) {  // no new work is started, but the default is always measured
        report_.budget_exhausted = report_.time_budget_exhausted = true;
        pool.stop();
        if (!is_default(o.index)) return;  // compiled, never measured: not recorded
      }
      TuneCandidate c;
      if (!o.ok) {
        c.status = o.status;
        c.reason = o.reason;
      } else {
        // NOTE: this blocks while the pool keeps compiling: the GPU and the CPUs work at once.
        c = from_bench(session.bench(bench_request(o.index, o.entry, arch), options_.candidate_timeout_s));
        detail::EngineAccess::impl(engine_).bench_runs += 1;
        ++report_.benchmarked;
        if (c.status == "ok") entries_[o.index] = o.entry;
      }
      ++progress_.benchmarked;
      record(o.index, c, /*store=*/true);
      emit("benchmark", name + ": " + c.status +
                            (c.status == "ok" ? " " + std::to_string(c.median_ms) + " ms" : " (" + c.reason + ")"));
    };
    CompileOutcome o;
    while (pool.next(&o, options_.compile_timeout_s)) {
      if (o.index < 0) {
        if (!o.ok) throw Error(ErrorKind::Compile, "an autotuner support kernel failed to compile: " + o.reason);
        support[static_cast<std::size_t>(-1 - o.index)] = o.entry;
        if (--support_left > 0) continue;
        session.set_support(family_.make_support(support, arch));
        checker_ready = true;
        for (const auto& w : waiting) handle(w);
        waiting.clear();
        continue;
      }
      ++progress_.compiled;
      if (o.cached) kernel_cached_.insert(o.index);
      emit("compile", config(o.index) + ": " + (o.ok ? "compiled" : o.status + " (" + o.reason + ")"));
      if (checker_ready)
        handle(o);
      else
        waiting.push_back(std::move(o));
    }
  }
  retime(session, arch);
  finish_counts(before);
  report_.worker_restarts = session.restarts();
  choose_and_store();
}

// Re-time the best few and the default interleaved in one worker, so they are compared under the same
// conditions: after untimed warm-up rounds (the first pass timed each candidate right after the GPU idled
// through compiles; an application runs its GEMM on a busy GPU), for enough rounds that the fastest gets
// about repetition_target_ms of timed runs.
void Tuner::retime(detail::worker::WorkerSession& session, const std::string& arch) {
  std::vector<detail::RankedCandidate> first;
  for (const auto& r : results_)
    if (r.second.status == "ok")
      first.push_back(detail::RankedCandidate{r.second.config, r.second.median_ms, r.first, is_default(r.first)});
  std::vector<int> ok = detail::retime_set(first, options_.retime_top);
  for (int attempt = 0; attempt < 3 && !ok.empty(); ++attempt) {
    std::vector<int> loaded;
    std::vector<double> medians;
    detail::worker::RetimeRequest req;
    for (int index : ok) {
      auto it = entries_.find(index);
      if (it == entries_.end()) {  // reused from the tuning cache: its kernel is (normally) a cache hit
        const CompileOutcome o = compile_candidate(index, arch);
        if (!o.ok) {
          TuneCandidate c;
          c.status = o.status;
          c.reason = o.reason;
          record(index, c, /*store=*/true);
          continue;
        }
        it = entries_.emplace(index, o.entry).first;
      }
      req.jobs.push_back(job_for(index, it->second, arch));
      loaded.push_back(index);
      medians.push_back(results_.at(index).median_ms);
    }
    ok = loaded;
    if (ok.empty()) return;
    const detail::RetimePlan plan =
        detail::plan_retime(medians, options_.min_repetitions, options_.max_repetitions,
                            options_.repetition_target_ms, options_.candidate_timeout_s);
    req.rounds = plan.rounds;
    req.warmup_rounds = plan.warmup_rounds;
    req.reps_per_round = 1;
    emit("retime", "re-timing " + std::to_string(ok.size()) + " interleaved (" + std::to_string(plan.rounds) +
                       " rounds after " + std::to_string(plan.warmup_rounds) + " warm-up rounds)");
    std::string why;
    const auto results = session.retime(req, plan.timeout_s, &why);
    detail::EngineAccess::impl(engine_).bench_runs += ok.size();
    if (!results) {
      emit("retime", "re-timing failed (" + why + "); choosing on the first measurements");
      return;
    }
    std::vector<int> again;
    std::vector<std::pair<int, BenchResult>> timed;  // kept only when every candidate was re-timed ok
    bool finished = true;
    for (std::size_t i = 0; i < ok.size(); ++i) {
      const BenchResult& b = (*results)[i];
      if (b.status.empty()) {  // not reached: another candidate's sticky error stopped the worker
        again.push_back(ok[i]);
        finished = false;
        continue;
      }
      TuneCandidate c = from_bench(b);
      if (c.status != "ok") {
        emit("retime", config(ok[i]) + ": " + c.status + " on re-timing (" + c.reason + ")");
        finished = false;
        c.from_cache = false;
        record(ok[i], c, /*store=*/true);  // a failure now: stored, so a later tune does not reuse its first pass
        continue;
      }
      again.push_back(ok[i]);
      timed.emplace_back(ok[i], b);
    }
    if (finished) {
      // Beside the first pass, never over it: the cache keeps first passes only, which stay comparable with
      // each other (the re-time runs on a busy GPU, at the clocks that leaves), for a later tune's ranking.
      for (const auto& t : timed) {
        const TuneCandidate c = from_bench(t.second);
        TuneCandidate& kept = results_.at(t.first);
        kept.retime_ms = c.median_ms;
        kept.retime_p20_ms = c.p20_ms;
        kept.retime_p80_ms = c.p80_ms;
      }
      report_.retimed = static_cast<int>(ok.size());
      retimed_ = ok;
      return;
    }
    ok = again;  // re-time the survivors together once more
  }
}

void Tuner::choose_and_store() {
  // The contenders: the best few and the default, re-timed together (every ok candidate when re-timing
  // was off or failed). Near-ties go to the default, so the winner is never slower than it here.
  std::vector<int> contenders = retimed_;
  if (contenders.empty())
    for (const auto& r : results_) contenders.push_back(r.first);
  std::vector<detail::RankedCandidate> ranked;
  for (int index : contenders) {
    const TuneCandidate& c = results_.at(index);
    if (c.status != "ok") continue;
    const double ms = retimed_.empty() ? c.median_ms : c.retime_ms;  // one measurement for all contenders
    ranked.push_back(detail::RankedCandidate{c.config, ms, index, is_default(index)});
    if (is_default(index)) report_.default_ms = ms;
  }
  const int w = detail::choose_winner(ranked);
  if (w < 0) {
    emit("done", "no candidate succeeded");
    return;
  }
  report_.winner = ranked[static_cast<std::size_t>(w)].config;
  report_.winner_ms = ranked[static_cast<std::size_t>(w)].median_ms;
  engine_.cache().store_winner(key_, report_.space_hash, report_.winner, report_.winner_ms);
  progress_.best_config = report_.winner;
  progress_.best_ms = report_.winner_ms;
  emit("done", "winner " + report_.winner + " " + std::to_string(report_.winner_ms) + " ms" +
                   (report_.default_ms > 0 ? " (default " + report_.default_config + " " +
                                                 std::to_string(report_.default_ms) + " ms)"
                                           : ""));
}

void Tuner::collect() {
  // results_ is in space order, which report_order keeps among ties and for the rest.
  std::vector<TuneCandidate> all;
  for (auto& r : results_) {
    r.second.kernel_cached = kernel_cached_.count(r.first) > 0;
    all.push_back(std::move(r.second));
  }
  report_.candidates.clear();
  for (const std::size_t i : detail::report_order(all)) {
    if (is_failure(all[i].status)) ++report_.failures[all[i].status];
    report_.candidates.push_back(std::move(all[i]));
  }
}

void validate_inject(const TuneOptions& o) {
  for (const auto& kv : o.inject)
    if (kv.second != "fault" && kv.second != "hang" && kv.second != "wrong" && kv.second != "oob")
      throw_invalid("autotune: inject '" + kv.second + "' for " + kv.first + " is not fault, hang, wrong or oob");
}

}  // namespace

void detail::validate_tune_options(const TuneOptions& o) {
  if (o.max_candidates < 0) throw_invalid("autotune: max_candidates must be >= 0");
  if (o.seed > 0xFFFFFFFFLL) throw_invalid("autotune: seed must be at most 4294967295 (or < 0 for the fixed seed)");
  if (!(o.max_seconds >= 0)) throw_invalid("autotune: max_seconds must be >= 0");
  if (o.compile_threads < 0) throw_invalid("autotune: compile_threads must be >= 0");
  if (!(o.candidate_timeout_s > 0)) throw_invalid("autotune: candidate_timeout_s must be > 0");
  if (!(o.compile_timeout_s > 0)) throw_invalid("autotune: compile_timeout_s must be > 0");
  if (o.retime_top < 0) throw_invalid("autotune: retime_top must be >= 0");
  if (o.min_repetitions < 1 || o.max_repetitions < o.min_repetitions || o.max_repetitions > 100000)
    throw_invalid("autotune: need 1 <= min_repetitions <= max_repetitions <= 100000");
  if (!(o.repetition_target_ms >= 0)) throw_invalid("autotune: repetition_target_ms must be >= 0");
  validate_inject(o);
}

TuneReport detail::run_tune(Engine& engine, const TuneOptions& options, const worker::HelloRequest& hello,
                            const std::function<TuneSetup()>& prepare) {
  const auto start = Clock::now();
  ++detail::EngineAccess::impl(engine).tunes;
  // The worker first, and the driver queried on another thread: the worker's CUDA initialization and
  // allocations, and this process's cuInit, overlap the space enumeration (bank analyses).
  std::unique_ptr<worker::WorkerSession> session;
  std::future<DeviceInfo> device;
  // The verification data's seed: each operation's fixed one unless the options name another.
  worker::HelloRequest seeded = hello;
  if (options.seed >= 0)
    seeded.family.seed = static_cast<std::uint32_t>(options.seed);
  if (!options.compile_only) {
    const int ordinal = engine.options().device;
    worker::HelloRequest h = seeded;
    h.device = ordinal;
    session = std::make_unique<worker::WorkerSession>(worker::find_worker(worker_settings()), h, kSetupTimeoutSeconds);
    session->start();
    device = query_device(ordinal);
  }
  TuneSetup setup = prepare();
  TuneReport report;
  report.seed = seeded.family.seed;
  report.problem = setup.problem;
  report.space_size = static_cast<int>(setup.family.configs.size() + setup.rejected.size());
  report.static_rejected = static_cast<int>(setup.rejected.size());
  report.space_hash = setup.space_hash;
  {
    Tuner tuner(engine, options, std::move(setup.family), report);
    if (options.compile_only)
      tuner.compile_only();
    else
      tuner.tune(*session, await_device(device, engine.options().device, kSetupTimeoutSeconds));
    tuner.collect();
  }
  for (const auto& r : setup.rejected) {
    TuneCandidate c;
    c.config = r.first;
    c.status = "skipped-static";
    c.reason = r.second;
    report.candidates.push_back(c);
  }
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (!report.winner.empty() && log_enabled(LogLevel::Debug))
    log(LogLevel::Debug, "tuned " + report.problem + ": " + report.winner + ", " + std::to_string(report.winner_ms) +
                             " ms (" + std::to_string(report.benchmarked) + " benchmarked, " +
                             std::to_string(report.reused) + " reused from the tuning cache, " +
                             std::to_string(report.seconds) + " s)");
  return report;
}

}  // namespace swz
