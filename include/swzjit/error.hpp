// swzjit public API: the one exception type of the library (docs/ARCHITECTURE.md principle 5).
// Every failure the library reports is an swz::Error with a kind and a message that says what to do.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace swz {

/// What went wrong, coarsely; the message says the rest.
enum class ErrorKind {
  InvalidArgument,  ///< a caller-supplied value is out of range or malformed
  Unsupported,      ///< a valid request this build or device cannot serve (dtype, arch, ...)
  Compile,          ///< NVRTC rejected a generated source; see compile_log()
  Driver,           ///< a CUDA driver call failed
  NoDevice,         ///< no driver or no GPU on this machine
  ContextLost,      ///< a sticky error poisoned the CUDA context; the process must restart
  Cache,            ///< the on-disk cache could not be used
  Io,               ///< a file could not be read or written
  Internal,         ///< a broken invariant inside the library (please report)
};

/// Name of a kind, e.g. "invalid argument".
const char* to_string(ErrorKind kind) noexcept;

/// The library's exception. For ErrorKind::Compile it also carries the NVRTC log, the options
/// and the generated source, so a failed JIT compile can be reproduced without rerunning.
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message);

  ErrorKind kind() const noexcept { return kind_; }

  /// NVRTC log of a failed compile (empty otherwise).
  const std::string& compile_log() const noexcept { return log_; }
  /// Options of a failed compile (empty otherwise).
  const std::vector<std::string>& compile_options() const noexcept { return options_; }
  /// Generated source of a failed compile and the name NVRTC was given for it.
  const std::string& source() const noexcept { return source_; }
  const std::string& source_name() const noexcept { return source_name_; }

  /// Build a compile error carrying everything needed to reproduce it.
  static Error compile(const std::string& message, std::string log, std::vector<std::string> options,
                       std::string source, std::string source_name);

 private:
  ErrorKind kind_;
  std::string log_;
  std::vector<std::string> options_;
  std::string source_;
  std::string source_name_;
};

/// Shorthand for the most common throw.
[[noreturn]] void throw_invalid(const std::string& message);

}  // namespace swz
