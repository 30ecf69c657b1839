// runtime: implementation of swz::Error (include/swzjit/error.hpp).
#include "swzjit/error.hpp"

#include <utility>

namespace swz {

const char* to_string(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::InvalidArgument: return "invalid argument";
    case ErrorKind::Unsupported: return "unsupported";
    case ErrorKind::Compile: return "compile error";
    case ErrorKind::Driver: return "driver error";
    case ErrorKind::NoDevice: return "no device";
    case ErrorKind::ContextLost: return "context lost";
    case ErrorKind::Cache: return "cache error";
    case ErrorKind::Io: return "i/o error";
    case ErrorKind::Internal: return "internal error";
  }
  return "unknown error";
}

Error::Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}

Error Error::compile(const std::string& message, std::string log, std::vector<std::string> options,
                     std::string source, std::string source_name) {
  Error e(ErrorKind::Compile, message);
  e.log_ = std::move(log);
  e.options_ = std::move(options);
  e.source_ = std::move(source);
  e.source_name_ = std::move(source_name);
  return e;
}

void throw_invalid(const std::string& message) { throw Error(ErrorKind::InvalidArgument, message); }

}  // namespace swz
