// python/src: the module definition of swzjit._swzjit — version, error translation, device queries.
// swz::Error becomes the swzjit.Error subclass of its kind (python/swzjit/_errors.py builds it).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/pair.h>

#include "bindings.hpp"
#include "swzjit/device.hpp"
#include "swzjit/error.hpp"

namespace nb = nanobind;

namespace {

const char* kind_name(swz::ErrorKind kind) {
  switch (kind) {
    case swz::ErrorKind::InvalidArgument: return "invalid_argument";
    case swz::ErrorKind::Unsupported: return "unsupported";
    case swz::ErrorKind::Compile: return "compile";
    case swz::ErrorKind::Driver: return "driver";
    case swz::ErrorKind::NoDevice: return "no_device";
    case swz::ErrorKind::ContextLost: return "context_lost";
    case swz::ErrorKind::Cache: return "cache";
    case swz::ErrorKind::Io: return "io";
    case swz::ErrorKind::Internal: return "internal";
  }
  return "internal";
}

// Sets the Python error for a library error. Runs with the GIL held (nanobind's translator contract).
void raise_library_error(const swz::Error& e) {
  try {
    nb::object make = nb::module_::import_("swzjit._errors").attr("_from_native");
    nb::object exc = make(kind_name(e.kind()), std::string(e.what()), e.compile_log(), e.compile_options(),
                          e.source(), e.source_name());
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
  } catch (const nb::python_error&) {
    // The error classes could not be made: still report the library's message.
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
}

}  // namespace

NB_MODULE(_swzjit, m) {
  m.doc() = "libswzjit: JIT-compiled, autotuned CUDA kernels with XOR-swizzled shared memory";
  m.attr("__version__") = SWZJIT_PY_VERSION;

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const swz::Error& e) {
      raise_library_error(e);
    }
  });

  m.def("error_kinds", [] {
    std::vector<std::string> kinds;
    for (auto k : {swz::ErrorKind::InvalidArgument, swz::ErrorKind::Unsupported, swz::ErrorKind::Compile,
                   swz::ErrorKind::Driver, swz::ErrorKind::NoDevice, swz::ErrorKind::ContextLost,
                   swz::ErrorKind::Cache, swz::ErrorKind::Io, swz::ErrorKind::Internal})
      kinds.push_back(kind_name(k));
    return kinds;
  }, "The library's error kinds, as swzjit.Error.kind spells them.");
  m.def("raise_test_error", [](const std::string& kind, const std::string& message) {
    // Lets the tests check the translation of every kind without a GPU.
    for (auto k : {swz::ErrorKind::InvalidArgument, swz::ErrorKind::Unsupported, swz::ErrorKind::Compile,
                   swz::ErrorKind::Driver, swz::ErrorKind::NoDevice, swz::ErrorKind::ContextLost,
                   swz::ErrorKind::Cache, swz::ErrorKind::Io, swz::ErrorKind::Internal})
      if (kind == kind_name(k)) {
        if (k == swz::ErrorKind::Compile)
          throw swz::Error::compile(message, "log line", {"-arch=sm_90"}, "// source", "test.cu");
        throw swz::Error(k, message);
      }
    throw swz::Error(swz::ErrorKind::InvalidArgument, "kind: unknown error kind '" + kind + "'");
  });

  m.def("driver_available", [] {
    std::string why;
    const bool ok = swz::driver_available(&why);
    return std::make_pair(ok, why);
  }, "(available, why not): whether the CUDA driver could be loaded.");
  m.def("device_count", [] { return swz::device_count(); });
  m.def("current_device", [] { return swz::current_device(); });
  m.def("device_info", [](int ordinal) {
    const swz::DeviceInfo d = swz::device_info(ordinal);
    nb::dict r;
    r["ordinal"] = d.ordinal;
    r["name"] = d.name;
    r["arch"] = d.arch();
    r["sm_count"] = d.sm_count;
    r["global_mem_bytes"] = d.global_mem_bytes;
    r["dram_gbps"] = d.dram_gbps;
    r["driver_version"] = d.driver_version;
    return r;
  }, nb::arg("ordinal") = 0);

  swzpy::bind_engines(m);
  swzpy::bind_analysis(m);
  swzpy::bind_tune_cache(m);
  swzpy::bind_families(m);
}
