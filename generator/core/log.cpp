// generator/core: the library's log (include/swzjit/log.hpp): one level and one sink per process,
// configured from $SWZJIT_LOG_LEVEL / $SWZJIT_LOG_FILE or through the API.
#include "swzjit/log.hpp"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <utility>

namespace swz {
namespace {

constexpr LogLevel kDefaultLevel = LogLevel::Warn;

std::string env_text(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::atomic<int>& level_slot() {
  static std::atomic<int> slot{[] {
    const std::string text = env_text("SWZJIT_LOG_LEVEL");
    LogLevel level = kDefaultLevel;
    if (!text.empty() && !parse_log_level(text, &level))
      std::fprintf(stderr, "swzjit: warning: SWZJIT_LOG_LEVEL='%s' is not off, error, warn, info or debug; using warn\n",
                   text.c_str());
    return static_cast<int>(level);
  }()};
  return slot;
}

// The sink: a callback, or a FILE (stderr or $SWZJIT_LOG_FILE). Guarded by its mutex.
struct Sink {
  std::mutex mu;
  LogCallback callback;
  std::FILE* file = nullptr;
  bool file_opened = false;  // the environment was looked at (once)

  std::FILE* default_file() {
    if (!file_opened) {
      file_opened = true;
      const std::string path = env_text("SWZJIT_LOG_FILE");
      if (!path.empty()) {
        file = std::fopen(path.c_str(), "a");
        if (file == nullptr)
          std::fprintf(stderr, "swzjit: warning: SWZJIT_LOG_FILE=%s cannot be opened for appending; logging to stderr\n",
                       path.c_str());
      }
    }
    return file ? file : stderr;
  }
};

Sink& sink() {
  static Sink* s = new Sink;  // never destroyed: objects destroyed at exit may still log
  return *s;
}

const char* prefix(LogLevel level) {
  switch (level) {
    case LogLevel::Error:
      return "swzjit: error: ";
    case LogLevel::Warn:
      return "swzjit: warning: ";
    case LogLevel::Info:
      return "swzjit: ";
    case LogLevel::Debug:
      return "swzjit: debug: ";
    case LogLevel::Off:
      break;
  }
  return "swzjit: ";
}

}  // namespace

const char* to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::Off:
      return "off";
    case LogLevel::Error:
      return "error";
    case LogLevel::Warn:
      return "warn";
    case LogLevel::Info:
      return "info";
    case LogLevel::Debug:
      return "debug";
  }
  return "unknown";
}

bool parse_log_level(const std::string& text, LogLevel* level) {
  std::string t;
  for (char c : text) t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::pair<const char*, LogLevel> names[] = {{"off", LogLevel::Off},     {"none", LogLevel::Off},
                                                    {"error", LogLevel::Error}, {"warn", LogLevel::Warn},
                                                    {"warning", LogLevel::Warn}, {"info", LogLevel::Info},
                                                    {"debug", LogLevel::Debug}};
  for (const auto& n : names) {
    if (t == n.first) {
      *level = n.second;
      return true;
    }
  }
  return false;
}

LogLevel log_level() noexcept { return static_cast<LogLevel>(level_slot().load(std::memory_order_relaxed)); }

void set_log_level(LogLevel level) noexcept { level_slot().store(static_cast<int>(level), std::memory_order_relaxed); }

bool log_enabled(LogLevel level) noexcept {
  return level != LogLevel::Off && static_cast<int>(level) <= level_slot().load(std::memory_order_relaxed);
}

void set_log_callback(LogCallback callback) {
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mu);
  s.callback = std::move(callback);
}

void log(LogLevel level, const std::string& message) noexcept {
  if (!log_enabled(level)) return;
  try {
    Sink& s = sink();
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.callback) {
      s.callback(level, message);
      return;
    }
    std::FILE* f = s.default_file();
    std::fprintf(f, "%s%s\n", prefix(level), message.c_str());
    std::fflush(f);
  } catch (...) {
    // NOTE: a log must never turn into a failure of the call that logged (a throwing callback, no memory).
  }
}

const std::string& dump_source_directory() {
  static const std::string dir = env_text("SWZJIT_DUMP_SOURCE");
  return dir;
}

}  // namespace swz
