// runtime/worker: a declared family in the benchmark worker (runtime/worker/worker_family.hpp). The
// family is rebuilt from its text form, so the worker evaluates the very expressions the host does.
// Outputs sit between 64 KiB guards filled with 0xFF bytes (NaN for floating types) before every
// verification run; a candidate passes when its guards are untouched, it leaves untouched what the
// reference does (a pitch's padding), and every other output is within the family's tolerance of the
// reference (relative Frobenius error, sums in f64, NaN never passes). The comparison runs on the GPU
// (templates/family_check.cuh); the host reads back a few numbers per buffer. A buffer an align measures
// is placed at exactly that alignment. Scratch buffers are allocated (grown when a candidate's needs
// more), poisoned before every verification run, and neither filled nor compared; a candidate's `then`
// launches run after its kernel, verified and timed together. Scalars take the definition's defaults.
// Inputs are filled on the GPU by the check kernel's fill mode (values hashed from the seed, the buffer and
// the element: the same for every candidate), so a tune of a large problem does not wait on the host.
// An inout buffer is guarded and compared like an output, but filled like an input (on the host): the reference's
// twin starts from the same values, and they are restored before every verification run (a timing run
// may leave it changed, and the next candidate must start from the values the reference saw).
#include "runtime/worker/worker_family.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "generator/core/checked_arith.hpp"
#include "runtime/driver/driver_api.hpp"
#include "runtime/jit/kernel_args.hpp"
#include "runtime/worker/worker_family_check.hpp"
#include "swzjit/device.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"
#include "swzjit/jit.hpp"
#include "templates/family_check.cuh"

namespace swz {
namespace detail {
namespace worker {
namespace {

constexpr std::size_t kGuardBytes = std::size_t{64} << 10;
constexpr std::uint8_t kPoison = 0xFF;

std::size_t round_up(std::size_t v, std::size_t to) { return (v + to - 1) / to * to; }

// splitmix64: the inputs are the same for every candidate and every tune with the same seed.
std::uint64_t next(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The family the tuner sent: rebuilt from its text, or, for one whose launches are C++ (a program), the
// library's own built-in of the very same text (this process has the code; the text names its version).
FamilyDef definition_of(const FamilyDesc& desc) {
  FamilyDef d = FamilyDef::parse(desc.definition);
  if (d.program_id.empty()) return d;
  const std::shared_ptr<const Family> builtin = find_family(d.name);
  if (!builtin || !builtin->def().program || builtin->def().to_text() != desc.definition)
    throw_invalid("family " + d.name + ": its launches are C++ (program " + d.program_id + "), and this swz-worker's "
                  "library has no built-in family of that definition; the tuner and swz-worker must come from the same build");
  return builtin->def();
}

class FamilyTarget final : public Target {
 public:
  FamilyTarget(const FamilyDesc& desc, int device, CUstream stream)
      : family_(definition_of(desc)), device_(device), stream_(stream), seed_(desc.seed),
        result_(sizeof(tpl::FamilyCheckResult), device), sm_count_(std::max(1, device_info(device).sm_count)) {
    problem_ = family_.parse_problem(desc.problem);
    launch_problem_ = with_sm_count(problem_, sm_count_);  // launches may read the device's SM count
    const std::vector<long long> elems = family_.buffer_elements(problem_);
    const auto& defs = family_.def().buffers;
    for (std::size_t i = 0; i < defs.size(); ++i) {
      Buffer b;
      b.output = defs[i].role == BufferRole::Output || defs[i].role == BufferRole::InOut;
      b.inout = defs[i].role == BufferRole::InOut;
      b.scratch = defs[i].role == BufferRole::Scratch;
      b.dtype = family_.buffer_dtype(i, problem_);
      b.elems = elems[i];
      b.bytes = static_cast<std::size_t>(
          checked_mul(std::max(1LL, b.elems), dtype_bytes(b.dtype), "family buffer bytes"));
      if (b.bytes > (std::size_t{8} << 30)) throw_invalid("family buffer " + defs[i].name + ": over 8 GiB for a tune");
      // A buffer an align measures sits at exactly that alignment (offset by it from a 256-byte
      // boundary), so candidates run on pointers of the problem's alignment class.
      std::size_t offset = 0;
      for (const FamilyAlign& a : family_.def().aligns)
        if (a.buffer == defs[i].name) {
          const long long v = problem_.at(a.name);
          if (v < kFamilyMaxAlign && (offset == 0 || static_cast<std::size_t>(v) < offset)) offset = static_cast<std::size_t>(v);
        }
      b.offset = offset;
      if (b.output) {
        // The guard keeps its size: the front guard ends where the (shifted) output starts.
        b.memory = DeviceBuffer(2 * kGuardBytes + round_up(b.bytes + offset, 256), device_);
        b.data = b.memory.ptr() + kGuardBytes + offset;
        b.twin = DeviceBuffer(round_up(b.bytes + offset, 256), device_);
      } else {
        b.memory = DeviceBuffer(round_up(b.bytes + offset, 256), device_);
        b.data = b.memory.ptr() + offset;
      }
      buffers_.push_back(std::move(b));
    }
  }

  void support(const SupportRequest& req) override {
    if (req.reference.image.empty()) throw_invalid("family " + family_.name() + ": no reference kernel to check against");
    if (req.check.image.empty())
      throw_invalid("family " + family_.name() + ": the tuner sent no check kernel (templates/family_check.cuh); "
                    "the tuner and swz-worker must come from the same build");
    check_module_ = std::make_unique<Module>(load_image(req.check, device_));
    check_ = check_module_->kernel().handle();
    // Random inputs in [-1, 1): the same for every candidate. Input buffers are filled on the GPU (the check
    // kernel's fill mode: a value hashed from the seed, the buffer's index and the element's); inout buffers
    // on the host (splitmix64 in declaration order), whose values are restored before each verification run.
    std::uint64_t s = seed_;
    for (std::size_t index = 0; index < buffers_.size(); ++index) {
      Buffer& b = buffers_[index];
      if ((b.output && !b.inout) || b.scratch) continue;
      if (!b.inout) {
        fill(b, seed_ + 0xD1B54A32D192ED03ull * (index + 1));
        continue;
      }
      std::vector<unsigned char> host(b.bytes);
      const int eb = dtype_bytes(b.dtype);
      for (long long i = 0; i < b.elems; ++i) {
        const float v = static_cast<float>(static_cast<double>(next(s) >> 11) * 0x1.0p-53 * 2.0 - 1.0);
        store_element(b.dtype, host.data() + static_cast<std::size_t>(i) * eb, v);
      }
      // Restored before each verification run (prepare()); set now too, so that no run ever sees
      // uninitialized memory in it.
      b.memory.copy_from_host(host.data(), b.bytes, kGuardBytes + b.offset, stream_);
      b.initial = std::move(host);
    }
    reference_module_ = std::make_unique<Module>(load_image(req.reference, device_));
    Kernel ref = reference_module_->kernel();
    const FamilyLaunchShape shape = family_.reference_shape(launch_problem_);
    if (shape.dynamic_smem > 48 * 1024) ref.set_max_dynamic_smem(static_cast<int>(shape.dynamic_smem));
    for (Buffer& b : buffers_) {
      if (!b.output) continue;
      b.twin.memset8(kPoison, stream_);
      if (b.inout) b.twin.copy_from_host(b.initial.data(), b.bytes, b.offset, stream_);
    }
    detail::PackedArgs args = arguments(family_.reference_args(launch_problem_), /*to_twins=*/true, family_.def().reference.packed, {});
    ref.launch(Dim3{shape.grid[0], shape.grid[1], shape.grid[2]}, Dim3{shape.block[0], shape.block[1], shape.block[2]},
               static_cast<unsigned>(shape.dynamic_smem), stream_, args.data());
    // The reference checked against itself: an element it wrote that is not finite (an element it leaves
    // poisoned is one a candidate must leave alone too, and is not counted).
    for (Buffer& b : buffers_) {
      if (!b.output) continue;
      const tpl::FamilyCheckResult r = run_check(b, tpl::kFamilyCheckCompare, 0, b.twin.ptr(), b.offset, b.offset + b.bytes,
                                                 b.offset + b.bytes);
      if (r.first_nonfinite != tpl::kFamilyCheckNone)
        throw_invalid("family " + family_.name() + ": the reference kernel wrote a non-finite value at element " +
                      std::to_string(r.first_nonfinite) + " (or did not write it)");
    }
  }

  CUresult launch(const BenchJob& job, CUfunction f, std::string* what) override {
    // Per config, prepared once: a re-timing interleaves candidates, and loading modules or evaluating
    // arguments between its timed launches would be measured with them.
    auto it = prepared_.find(job.config);
    if (it == prepared_.end()) {
      const FamilyValues config = family_.parse_config(job.config);
      const bool moved = family_.def().program ? grow_program_scratch(config) : grow_scratch(config);
      if (moved) prepared_.clear();  // their arguments point at the old scratch
      it = prepared_.emplace(job.config, prepare_config(job, config)).first;
    }
    Prepared& p = *it->second;
    if (family_.def().program) return launch_program(p, f, what);
    *what = "cuLaunchKernel";
    CUresult r = driver_api().cuLaunchKernel(f, job.grid[0], job.grid[1], job.grid[2], job.block[0], job.block[1],
                                             job.block[2], job.dynamic_smem, stream_, p.args.data(), nullptr);
    for (std::size_t t = 0; t < p.then.size() && r == CUDA_SUCCESS; ++t) {
      const FamilyLaunchShape& s = p.then[t].shape;
      *what = "cuLaunchKernel (then launch " + std::to_string(t + 1) + ")";
      r = driver_api().cuLaunchKernel(p.then[t].function, s.grid[0], s.grid[1], s.grid[2], s.block[0], s.block[1],
                                      s.block[2], static_cast<unsigned>(s.dynamic_smem), stream_, p.then[t].args.data(),
                                      nullptr);
    }
    return r;
  }

  void prepare() override {
    // Scratch too: a candidate that reads scratch it did not write this run sees NaN and fails. An
    // inout buffer gets back the values the reference started from (its guards stay poisoned).
    if (program_scratch_.size() > 0) program_scratch_.memset8(kPoison, stream_);
    for (Buffer& b : buffers_) {
      if (!b.output && !b.scratch) continue;
      b.memory.memset8(kPoison, stream_);
      if (b.inout) b.memory.copy_from_host(b.initial.data(), b.bytes, kGuardBytes + b.offset, stream_);
    }
  }

  std::string check_output() override {
    const auto& defs = family_.def().buffers;
    for (std::size_t i = 0; i < buffers_.size(); ++i) {
      const Buffer& b = buffers_[i];
      if (!b.output) continue;
      const std::string& name = defs[i].name;
      const std::size_t head = kGuardBytes + b.offset, tail = head + b.bytes;
      const tpl::FamilyCheckResult r = run_check(b, tpl::kFamilyCheckCompare, 0, b.memory.ptr(), head, tail, b.memory.size());
      const double tolerance = family_.tolerance_for(b.dtype);
      const FamilyCheckFinding f = family_check_finding(r, tolerance);
      unsigned long long at = f.at;
      double got = 0, want = 0;
      if (f.kind == FamilyCheckFinding::Pass) continue;
      if (f.kind == FamilyCheckFinding::Tolerance) {
        // A second pass finds the first element with the largest difference: only a failing candidate
        // pays for it.
        at = run_check(b, tpl::kFamilyCheckFindWorst, r.worst_bits, b.memory.ptr(), head, tail, b.memory.size()).worst_at;
        if (at == tpl::kFamilyCheckNone)
          throw Error(ErrorKind::Internal, "family " + family_.name() + ": the check's second pass did not find the "
                                           "largest difference (please report)");
      }
      if (f.kind == FamilyCheckFinding::NonFinite || f.kind == FamilyCheckFinding::Tolerance) {
        got = got_at(b, static_cast<long long>(at));
        want = want_at(b, static_cast<long long>(at));
      }
      return family_check_message(name, f, head, tail, at, got, want, tolerance);
    }
    return "";
  }

 private:
  struct Then {
    std::unique_ptr<Module> module;
    CUfunction function = nullptr;
    FamilyLaunchShape shape;
    detail::PackedArgs args;
  };
  // A config's kernel arguments and its then launches, loaded; for a program, its plan and bound parameters
  // (the launches after the first are `then`'s modules, their arguments unused).
  struct Prepared {
    detail::PackedArgs args;
    std::vector<Then> then;
    FamilyPlan plan;
    std::vector<FamilyLaunchParams> bound;
  };

  // A program's run: its launches in plan order, each with its bound parameters (renewed first: a fresh
  // launch id for counters a kernel keeps in scratch). The worker launches helpers plainly, not as
  // programmatic dependents: the measured time is the same sequence of kernels.
  CUresult launch_program(Prepared& p, CUfunction f, std::string* what) {
    if (family_.def().program->renew) family_.def().program->renew(p.bound);
    CUresult r = CUDA_SUCCESS;
    for (std::size_t i = 0; i < p.plan.launches.size() && r == CUDA_SUCCESS; ++i) {
      const FamilyLaunchShape& s = p.plan.launches[i].shape;
      std::vector<void*> args;
      for (auto& param : p.bound[i].params) args.push_back(param.data());
      *what = i == 0 ? std::string("cuLaunchKernel") : "cuLaunchKernel (launch " + std::to_string(i + 1) + " of the plan)";
      r = driver_api().cuLaunchKernel(i == 0 ? f : p.then[i - 1].function, s.grid[0], s.grid[1], s.grid[2], s.block[0],
                                      s.block[1], s.block[2], static_cast<unsigned>(s.dynamic_smem), stream_, args.data(),
                                      nullptr);
    }
    return r;
  }

  std::unique_ptr<Prepared> prepare_program(const BenchJob& job, const FamilyValues& config) {
    auto p = std::make_unique<Prepared>();
    p->plan = family_.plan(config, launch_problem_);
    if (job.then.size() + 1 != p->plan.launches.size())
      throw_invalid("family " + family_.name() + ": the tuner sent " + std::to_string(job.then.size()) + " helper kernels "
                    "for a plan of " + std::to_string(p->plan.launches.size()) + " launches; the tuner and swz-worker must "
                    "come from the same build");
    for (std::size_t t = 0; t < job.then.size(); ++t) {
      Then n;
      n.module = std::make_unique<Module>(load_image(job.then[t], device_));
      Kernel k = n.module->kernel();
      n.shape = p->plan.launches[t + 1].shape;
      if (n.shape.dynamic_smem > 48 * 1024) k.set_max_dynamic_smem(static_cast<int>(n.shape.dynamic_smem));
      n.function = k.handle();
      p->then.push_back(std::move(n));
    }
    FamilyRunBinding run;
    for (const Buffer& b : buffers_) run.buffers.push_back(b.data);
    run.scratch = p->plan.scratch_bytes > 0 ? program_scratch_.ptr() : 0;
    for (const FamilyScalar& sc : family_.def().scalars) run.scalars.push_back(sc.default_value);
    run.device = device_;
    run.sm_count = sm_count_;
    p->bound = family_.bind(config, launch_problem_, run);
    if (p->bound.size() != p->plan.launches.size())
      throw Error(ErrorKind::Internal, "family " + family_.name() + ": the program bound " + std::to_string(p->bound.size()) +
                                           " of " + std::to_string(p->plan.launches.size()) + " launches (please report)");
    return p;
  }

  // A program's scratch is one allocation: sized for the config at hand, grown (never shrunk); true when it moved.
  bool grow_program_scratch(const FamilyValues& config) {
    const std::size_t bytes = family_.plan(config, launch_problem_).scratch_bytes;
    if (bytes <= program_scratch_.size()) return false;
    if (bytes > (std::size_t{8} << 30)) throw_invalid("family " + family_.name() + ": scratch over 8 GiB for a tune");
    check(driver_api().cuStreamSynchronize(stream_), "waiting for the family's queued work");
    program_scratch_ = DeviceBuffer();
    program_scratch_ = DeviceBuffer(round_up(bytes, 256), device_);
    program_scratch_.memset8(kPoison, stream_);
    return true;
  }

  std::unique_ptr<Prepared> prepare_config(const BenchJob& job, const FamilyValues& config) {
    if (family_.def().program) return prepare_program(job, config);
    if (job.then.size() != family_.then_count())
      throw_invalid("family " + family_.name() + ": the tuner sent " + std::to_string(job.then.size()) +
                    " then kernels for " + std::to_string(family_.then_count()) +
                    " then launches; the tuner and swz-worker must come from the same build");
    auto p = std::make_unique<Prepared>();
    p->args = arguments(family_.kernel_args(config, launch_problem_), false, family_.def().launch.packed, config);
    for (std::size_t t = 0; t < family_.then_count(); ++t) {
      Then n;
      n.module = std::make_unique<Module>(load_image(job.then[t], device_));
      Kernel k = n.module->kernel();
      n.shape = family_.then_shape(t, config, launch_problem_);
      if (n.shape.dynamic_smem > 48 * 1024) k.set_max_dynamic_smem(static_cast<int>(n.shape.dynamic_smem));
      n.function = k.handle();
      n.args = arguments(family_.then_args(t, config, launch_problem_), false, family_.def().then[t].packed, config);
      p->then.push_back(std::move(n));
    }
    return p;
  }

  // A scratch buffer whose size follows the params is sized for the default config at first and grown
  // (never shrunk) for a candidate that needs more; true when one moved.
  bool grow_scratch(const FamilyValues& config) {
    bool moved = false;
    const std::vector<long long> elems = family_.buffer_elements(problem_, config);
    for (std::size_t i = 0; i < buffers_.size(); ++i) {
      Buffer& b = buffers_[i];
      if (!b.scratch) continue;
      b.elems = elems[i];
      const std::size_t bytes = static_cast<std::size_t>(
          checked_mul(std::max(1LL, b.elems), dtype_bytes(b.dtype), "family scratch bytes"));
      if (bytes <= b.memory.size()) continue;
      if (bytes > (std::size_t{8} << 30))
        throw_invalid("family scratch buffer " + family_.def().buffers[i].name + ": over 8 GiB for a tune");
      // The work queued so far may use the old buffer (and the modules the caller then drops).
      check(driver_api().cuStreamSynchronize(stream_), "waiting for the family's queued work");
      b.memory = DeviceBuffer();  // the old one first: the two need not fit together
      b.memory = DeviceBuffer(round_up(bytes, 256), device_);
      b.memory.memset8(kPoison, stream_);
      b.data = b.memory.ptr();
      b.bytes = bytes;
      moved = true;
    }
    return moved;
  }

  struct Buffer {
    bool output = false;  // also for an inout buffer: guarded and compared
    bool inout = false;
    bool scratch = false;
    DType dtype = DType::F32;
    long long elems = 0;
    std::size_t bytes = 0, offset = 0;  // offset: from the allocation's start to the buffer's (alignment class)
    DeviceBuffer memory, twin;  // twin: the reference's output
    DevicePtr data = 0;         // the buffer as kernels see it (past the guard for outputs)
    std::vector<unsigned char> initial;  // an inout buffer's values before any kernel runs
  };

  // One pass of the check kernel over output `b`: `got` is an allocation of `total` bytes whose bytes
  // [head, tail) hold the buffer (the candidate's guarded one, or the reference's twin against itself).
  // An input buffer's values (the check kernel's fill mode), in stream order before the reference.
  void fill(const Buffer& b, std::uint64_t seed) {
    if (b.elems <= 0) return;
    tpl::FamilyCheckParams p{};
    p.mode = tpl::kFamilyCheckFill;
    p.dtype = static_cast<int>(b.dtype);
    p.got = reinterpret_cast<const unsigned char*>(b.memory.ptr());
    p.head_bytes = b.offset;
    p.elems = b.elems;
    p.seed = seed;
    void* args[] = {&p};
    const long long wanted = (b.elems + tpl::kFamilyCheckThreads - 1) / tpl::kFamilyCheckThreads;
    const unsigned blocks = static_cast<unsigned>(std::max(1LL, std::min<long long>(wanted, 16LL * sm_count_)));
    check(driver_api().cuLaunchKernel(check_, blocks, 1, 1, tpl::kFamilyCheckThreads, 1, 1, 0, stream_, args, nullptr),
          "filling the family's inputs");
  }
  tpl::FamilyCheckResult run_check(const Buffer& b, int mode, unsigned long long worst_bits, DevicePtr got,
                                   std::size_t head, std::size_t tail, std::size_t total) {
    tpl::FamilyCheckResult r{};
    r.first_nonfinite = r.first_written = r.first_guard = r.worst_at = tpl::kFamilyCheckNone;
    result_.copy_from_host(&r, sizeof r, 0, stream_);
    tpl::FamilyCheckParams p{};
    p.mode = mode;
    p.dtype = static_cast<int>(b.dtype);
    p.got = reinterpret_cast<const unsigned char*>(got);
    p.want = reinterpret_cast<const unsigned char*>(b.twin.ptr() + b.offset);
    p.total_bytes = total;
    p.head_bytes = head;
    p.tail_bytes = tail;
    p.elems = b.elems;
    p.worst_bits = worst_bits;
    p.result = reinterpret_cast<tpl::FamilyCheckResult*>(result_.ptr());
    void* args[] = {&p};
    const long long work = std::max<long long>(b.elems, static_cast<long long>(total - (tail - head)));
    const long long wanted = (work + tpl::kFamilyCheckThreads - 1) / tpl::kFamilyCheckThreads;
    const unsigned blocks = static_cast<unsigned>(std::max(1LL, std::min<long long>(wanted, 16LL * sm_count_)));
    check(driver_api().cuLaunchKernel(check_, blocks, 1, 1, tpl::kFamilyCheckThreads, 1, 1, 0, stream_, args, nullptr),
          "launching the family output check");
    result_.copy_to_host(&r, sizeof r, 0, stream_);
    return r;
  }
  // Element e of the candidate's output and of the reference's, for a message.
  double got_at(const Buffer& b, long long e) const {
    unsigned char bytes[4];
    const int eb = dtype_bytes(b.dtype);
    b.memory.copy_to_host(bytes, static_cast<std::size_t>(eb), kGuardBytes + b.offset + static_cast<std::size_t>(e) * eb, stream_);
    return load_element(b.dtype, bytes);
  }
  double want_at(const Buffer& b, long long e) const {
    unsigned char bytes[4];
    const int eb = dtype_bytes(b.dtype);
    b.twin.copy_to_host(bytes, static_cast<std::size_t>(eb), b.offset + static_cast<std::size_t>(e) * eb, stream_);
    return load_element(b.dtype, bytes);
  }
  // `config`: what the tensor maps the list names are evaluated for (none for the reference).
  detail::PackedArgs arguments(const std::vector<FamilyKernelArg>& list, bool to_twins, bool packed,
                               const FamilyValues& config) const {
    const std::vector<FamilyTensorMapShape> maps = detail::tensor_map_shapes(family_, list, config, problem_);
    return detail::PackedArgs(list, [&](int index) {
      const Buffer& b = buffers_[static_cast<std::size_t>(index)];
      return to_twins && b.output ? b.twin.ptr() + b.offset : b.data;
    }, packed, &maps, &family_, device_);
  }

  Family family_;
  int device_ = 0;
  CUstream stream_ = nullptr;
  std::uint64_t seed_ = 0;
  FamilyValues problem_;
  FamilyValues launch_problem_;  // problem_ and sm_count, what launches are evaluated with
  std::vector<Buffer> buffers_;
  DeviceBuffer program_scratch_;  // a program's scratch (FamilyPlan::scratch_bytes), poisoned like scratch buffers
  std::unique_ptr<Module> reference_module_, check_module_;
  CUfunction check_ = nullptr;
  DeviceBuffer result_;  // one FamilyCheckResult
  int sm_count_ = 1;
  std::map<std::string, std::unique_ptr<Prepared>> prepared_;  // by config text
};

}  // namespace

std::unique_ptr<Target> make_family_target(const FamilyDesc& desc, int device, CUstream stream) {
  return std::make_unique<FamilyTarget>(desc, device, stream);
}

}  // namespace worker
}  // namespace detail
}  // namespace swz
