// swzjit public API: the library's log (generator/core/log.cpp) -- levels, where messages go
// (stderr, $SWZJIT_LOG_FILE or a callback), and the source dump directory ($SWZJIT_DUMP_SOURCE).
#pragma once

#include <functional>
#include <string>

namespace swz {

/// How much the library reports. Each level includes the ones before it.
enum class LogLevel {
  Off,    ///< nothing
  Error,  ///< failures the library recovered from by giving up a feature
  Warn,   ///< a setting or cache that could not be used as asked (the default level)
  Info,   ///< one line per notable event: a cache opened, NVRTC loaded, a tune finished
  Debug,  ///< every compile (key, options, time), every cache decision, every tuning result
};

/// Name of a level: "off", "error", "warn", "info", "debug".
const char* to_string(LogLevel level) noexcept;

/// Parses a level name (as to_string writes it; also "warning", case-insensitive).
/// @returns false, leaving `*level` unchanged, when `text` names no level.
bool parse_log_level(const std::string& text, LogLevel* level);

/// The current level: $SWZJIT_LOG_LEVEL at first use (default warn), or the last set_log_level().
LogLevel log_level() noexcept;
/// Sets the level for the whole process (thread-safe).
void set_log_level(LogLevel level) noexcept;
/// True when a message of `level` would be delivered; test it before building an expensive message.
bool log_enabled(LogLevel level) noexcept;

/// Receives every delivered message (without a trailing newline). Called under the log's mutex, so
/// one message at a time; it must not log itself.
using LogCallback = std::function<void(LogLevel level, const std::string& message)>;

/// Sends messages to `callback` instead of the default sink; an empty callback restores the
/// default: the file $SWZJIT_LOG_FILE (appended to) when set and writable, else stderr.
void set_log_callback(LogCallback callback);

/// Delivers `message` when log_enabled(level). Never throws.
void log(LogLevel level, const std::string& message) noexcept;

/// $SWZJIT_DUMP_SOURCE: the directory every generated CUDA source is written to before it is
/// compiled ("" when unset). Read once.
const std::string& dump_source_directory();

}  // namespace swz
