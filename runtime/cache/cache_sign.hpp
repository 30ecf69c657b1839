// runtime: signed cache exports (runtime/cache/cache_transfer.cpp): key files, and an HMAC-SHA-256 over
// every row of an export in a canonical order, computed with OpenSSL's libcrypto.
#pragma once

#include <memory>
#include <string>

#include "runtime/cache/cache_sqlite.hpp"

namespace swz {
namespace detail {

/// Reads a signing key. Throws swz::Error naming the file (never the key) and what to do when it is
/// not a private regular file (mode 0600 or stricter) of 32 to 4096 bytes (trailing newlines dropped).
std::string read_key_file(const std::string& path);

/// A streaming HMAC-SHA-256 over typed, length-prefixed values: a value's type, its length and its
/// bytes all enter, so no two different row sequences feed the same bytes.
class ExportMac {
 public:
  explicit ExportMac(const std::string& key);
  ~ExportMac();
  ExportMac(const ExportMac&) = delete;
  ExportMac& operator=(const ExportMac&) = delete;

  /// A marker between tables (their name) and rows, so rows cannot move between tables.
  void add_marker(const std::string& label);
  /// Every column of the current row of `s`, typed.
  void add_row(const Stmt& s);
  /// 64 lowercase hex digits; call once.
  std::string hex();

 private:
  void update(const void* data, std::size_t n);
  void add_typed(char type, const std::string& bytes);
  struct State;
  std::unique_ptr<State> state_;
};

/// Constant-time comparison (the signature check must not leak how many digits matched).
bool same_signature(const std::string& a, const std::string& b);

/// The meta row holding an export's signature ("hmac-sha256:" + hex); excluded from the MAC.
constexpr const char* kSignatureRow = "signature";
constexpr const char* kSignaturePrefix = "hmac-sha256:";

}  // namespace detail
}  // namespace swz
