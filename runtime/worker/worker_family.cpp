// runtime/worker: a declared family in the benchmark worker (runtime/worker/worker_family.hpp). The
// family is rebuilt from its text form, so the worker evaluates the very expressions the host does.
// Outputs sit between 64 KiB guards filled with 0xFF bytes (NaN for floating types) before every
// verification run; a candidate passes when its guards are untouched, it leaves untouched what the
// reference does (a pitch's padding), and every other output is within the family's tolerance of the
// reference (relative Frobenius error, f64 on the host, NaN never passes). A buffer an align measures is
// placed at exactly that alignment.
#include "runtime/worker/worker_family.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

#include "generator/core/checked_arith.hpp"
#include "runtime/jit/kernel_args.hpp"
#include "swzjit/device.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"
#include "swzjit/jit.hpp"

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

class FamilyTarget final : public Target {
 public:
  FamilyTarget(const FamilyDesc& desc, int device, CUstream stream)
      : family_(FamilyDef::parse(desc.definition)), device_(device), stream_(stream), seed_(desc.seed) {
    problem_ = family_.parse_problem(desc.problem);
    const std::vector<long long> elems = family_.buffer_elements(problem_);
    const auto& defs = family_.def().buffers;
    for (std::size_t i = 0; i < defs.size(); ++i) {
      Buffer b;
      b.output = defs[i].role == BufferRole::Output;
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
    // Random inputs in [-1, 1): the same for every candidate.
    std::uint64_t s = seed_;
    for (Buffer& b : buffers_) {
      if (b.output) continue;
      std::vector<unsigned char> host(b.bytes);
      const int eb = dtype_bytes(b.dtype);
      for (long long i = 0; i < b.elems; ++i) {
        const float v = static_cast<float>(static_cast<double>(next(s) >> 11) * 0x1.0p-53 * 2.0 - 1.0);
        store_element(b.dtype, host.data() + static_cast<std::size_t>(i) * eb, v);
      }
      b.memory.copy_from_host(host.data(), b.bytes, b.offset, stream_);
    }
    reference_module_ = std::make_unique<Module>(load_image(req.reference, device_));
    Kernel ref = reference_module_->kernel();
    const FamilyLaunchShape shape = family_.reference_shape(problem_);
    if (shape.dynamic_smem > 48 * 1024) ref.set_max_dynamic_smem(static_cast<int>(shape.dynamic_smem));
    for (Buffer& b : buffers_)
      if (b.output) b.twin.memset8(kPoison, stream_);
    detail::PackedArgs args = arguments(family_.reference_args(problem_), /*to_twins=*/true, family_.def().reference.packed);
    ref.launch(Dim3{shape.grid[0], shape.grid[1], shape.grid[2]}, Dim3{shape.block[0], shape.block[1], shape.block[2]},
               static_cast<unsigned>(shape.dynamic_smem), stream_, args.data());
    for (Buffer& b : buffers_) {
      if (!b.output) continue;
      std::vector<unsigned char> host(b.bytes);
      b.twin.copy_to_host(host.data(), b.bytes, b.offset, stream_);
      b.expected.resize(static_cast<std::size_t>(b.elems));
      b.untouched.assign(static_cast<std::size_t>(b.elems), false);
      const int eb = dtype_bytes(b.dtype);
      for (long long i = 0; i < b.elems; ++i) {
        const unsigned char* at = host.data() + static_cast<std::size_t>(i) * eb;
        // An element the reference leaves poisoned (a pitch's padding, a gap between matrices) is one a
        // candidate must leave alone too.
        if (std::all_of(at, at + eb, [](unsigned char c) { return c == kPoison; })) {
          b.untouched[static_cast<std::size_t>(i)] = true;
          continue;
        }
        const double v = load_element(b.dtype, at);
        if (!std::isfinite(v))
          throw_invalid("family " + family_.name() + ": the reference kernel wrote a non-finite value at element " +
                        std::to_string(i) + " (or did not write it)");
        b.expected[static_cast<std::size_t>(i)] = v;
      }
    }
  }

  CUresult launch(const BenchJob& job, CUfunction f, std::string* what) override {
    if (job.config != args_config_) {
      args_ = arguments(family_.kernel_args(family_.parse_config(job.config), problem_), false, family_.def().launch.packed);
      args_config_ = job.config;
    }
    *what = "cuLaunchKernel";
    return driver_api().cuLaunchKernel(f, job.grid[0], job.grid[1], job.grid[2], job.block[0], job.block[1],
                                       job.block[2], job.dynamic_smem, stream_, args_.data(), nullptr);
  }

  void prepare() override {
    for (Buffer& b : buffers_)
      if (b.output) b.memory.memset8(kPoison, stream_);
  }

  std::string check_output() override {
    const auto& defs = family_.def().buffers;
    for (std::size_t i = 0; i < buffers_.size(); ++i) {
      const Buffer& b = buffers_[i];
      if (!b.output) continue;
      std::vector<unsigned char> host(b.memory.size());
      b.memory.copy_to_host(host.data(), host.size(), 0, stream_);
      const std::size_t head = kGuardBytes + b.offset, tail = head + b.bytes;
      for (std::size_t k = 0; k < host.size(); ++k) {
        if (k >= head && k < tail) continue;
        if (host[k] != kPoison)
          return "wrote outside " + defs[i].name + " (" +
                 (k < head ? std::to_string(head - k) + " bytes before it"
                                  : std::to_string(k - tail) + " bytes after its end") + ")";
      }
      const int eb = dtype_bytes(b.dtype);
      double err = 0, norm = 0, worst = -1;
      long long worst_at = 0;
      for (long long e = 0; e < b.elems; ++e) {
        const unsigned char* at = host.data() + head + static_cast<std::size_t>(e) * eb;
        if (b.untouched[static_cast<std::size_t>(e)]) {
          if (!std::all_of(at, at + eb, [](unsigned char c) { return c == kPoison; }))
            return defs[i].name + "[" + std::to_string(e) + "] was written; the reference leaves it untouched";
          continue;
        }
        const double got = load_element(b.dtype, at);
        const double want = b.expected[static_cast<std::size_t>(e)];
        if (!std::isfinite(got))
          return defs[i].name + "[" + std::to_string(e) + "] is " + std::to_string(got) + " (expected " +
                 std::to_string(want) + "; not written?)";
        err += (got - want) * (got - want);
        norm += want * want;
        if (std::fabs(got - want) > worst) worst = std::fabs(got - want), worst_at = e;
      }
      const double rel = std::sqrt(err) / std::max(std::sqrt(norm), 1e-30);
      if (rel > family_.def().tolerance) {
        // Where it is worst, in the reference's terms: the element and both values (all digits).
        const double got = load_element(b.dtype, host.data() + head + static_cast<std::size_t>(worst_at) * eb);
        char values[96];
        std::snprintf(values, sizeof values, " (got %.9g, expected %.9g)", got,
                      b.expected[static_cast<std::size_t>(worst_at)]);
        char rels[64];
        std::snprintf(rels, sizeof rels, "relative error %.3g above the tolerance %.3g", rel, family_.def().tolerance);
        return defs[i].name + ": " + rels + "; largest difference at " + defs[i].name + "[" +
               std::to_string(worst_at) + "]" + values;
      }
    }
    return "";
  }

 private:
  struct Buffer {
    bool output = false;
    DType dtype = DType::F32;
    long long elems = 0;
    std::size_t bytes = 0, offset = 0;  // offset: from the allocation's start to the buffer's (alignment class)
    DeviceBuffer memory, twin;  // twin: the reference's output
    DevicePtr data = 0;         // the buffer as kernels see it (past the guard for outputs)
    std::vector<double> expected;
    std::vector<bool> untouched;  // elements the reference does not write
  };
  detail::PackedArgs arguments(const std::vector<FamilyKernelArg>& list, bool to_twins, bool packed) const {
    return detail::PackedArgs(list, [&](int index) {
      const Buffer& b = buffers_[static_cast<std::size_t>(index)];
      return to_twins && b.output ? b.twin.ptr() + b.offset : b.data;
    }, packed);
  }

  Family family_;
  int device_ = 0;
  CUstream stream_ = nullptr;
  std::uint64_t seed_ = 0;
  FamilyValues problem_;
  std::vector<Buffer> buffers_;
  std::unique_ptr<Module> reference_module_;
  std::string args_config_ = "\x01";  // no config yet
  detail::PackedArgs args_;
};

}  // namespace

std::unique_ptr<Target> make_family_target(const FamilyDesc& desc, int device, CUstream stream) {
  return std::make_unique<FamilyTarget>(desc, device, stream);
}

}  // namespace worker
}  // namespace detail
}  // namespace swz
