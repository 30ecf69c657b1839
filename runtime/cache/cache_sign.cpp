// runtime: signed cache exports (see cache_sign.hpp).
#include "runtime/cache/cache_sign.hpp"

#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "swzjit/error.hpp"

namespace swz {
namespace detail {

namespace {

constexpr std::size_t kMinKeyBytes = 32;
constexpr std::size_t kMaxKeyBytes = 4096;

std::string octal(mode_t m) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

}  // namespace

std::string read_key_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error(ErrorKind::Io, "cannot read the key file " + path + ": " + std::strerror(errno));
  struct stat st {};
  std::string key;
  std::string problem;
  if (fstat(fd, &st) != 0) {
    problem = std::string("cannot read it: ") + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    problem = "it is not a regular file";
  } else if (st.st_mode & 077) {
    problem = "others may read or write it (mode " + octal(st.st_mode) + "); fix: chmod 600 " + path;
  } else if (static_cast<std::uint64_t>(st.st_size) > kMaxKeyBytes) {
    problem = "it holds " + std::to_string(st.st_size) + " bytes, more than a key (at most " +
              std::to_string(kMaxKeyBytes) + ")";
  } else {
    key.resize(kMaxKeyBytes + 1);
    const ssize_t n = ::read(fd, &key[0], key.size());
    if (n < 0) problem = std::string("cannot read it: ") + std::strerror(errno);
    key.resize(n < 0 ? 0 : static_cast<std::size_t>(n));
    while (!key.empty() && (key.back() == '\n' || key.back() == '\r')) key.pop_back();
    if (problem.empty() && key.size() < kMinKeyBytes)
      problem = "it holds " + std::to_string(key.size()) + " bytes; a key needs at least " +
                std::to_string(kMinKeyBytes) + " (make one: head -c 32 /dev/urandom > " + path + "; chmod 600 " + path +
                ")";
  }
  ::close(fd);
  if (!problem.empty()) {
    OPENSSL_cleanse(&key[0], key.size());
    throw Error(ErrorKind::InvalidArgument, "the key file " + path + " cannot be used: " + problem);
  }
  return key;
}

struct ExportMac::State {
  EVP_MAC* mac = nullptr;
  EVP_MAC_CTX* ctx = nullptr;
};

ExportMac::ExportMac(const std::string& key) : state_(std::make_unique<State>()) {
  state_->mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  if (state_->mac) state_->ctx = EVP_MAC_CTX_new(state_->mac);
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                         OSSL_PARAM_construct_end()};
  if (!state_->ctx ||
      EVP_MAC_init(state_->ctx, reinterpret_cast<const unsigned char*>(key.data()), key.size(), params) != 1) {
    EVP_MAC_CTX_free(state_->ctx);
    EVP_MAC_free(state_->mac);
    throw Error(ErrorKind::Internal,
                "OpenSSL could not set up HMAC-SHA-256 (is libcrypto's default provider installed?)");
  }
  add_marker("swzjit-cache-export-signature-v1");
}

ExportMac::~ExportMac() {
  EVP_MAC_CTX_free(state_->ctx);
  EVP_MAC_free(state_->mac);
}

void ExportMac::update(const void* data, std::size_t n) {
  if (n && EVP_MAC_update(state_->ctx, static_cast<const unsigned char*>(data), n) != 1)
    throw Error(ErrorKind::Internal, "OpenSSL's HMAC update failed");
}

void ExportMac::add_typed(char type, const std::string& bytes) {
  unsigned char head[9];
  head[0] = static_cast<unsigned char>(type);
  const std::uint64_t n = bytes.size();
  for (int i = 0; i < 8; ++i) head[1 + i] = static_cast<unsigned char>(n >> (8 * i));
  update(head, sizeof head);
  update(bytes.data(), bytes.size());
}

void ExportMac::add_marker(const std::string& label) { add_typed('M', label); }

void ExportMac::add_row(const Stmt& s) {
  add_typed('R', std::to_string(s.columns()));
  for (int c = 0; c < s.columns(); ++c) {
    switch (s.type(c)) {
      case SQLITE_INTEGER:
        add_typed('i', std::to_string(s.integer(c)));
        break;
      case SQLITE_FLOAT: {
        const double v = s.real(c);
        std::string bits(sizeof v, '\0');
        std::memcpy(&bits[0], &v, sizeof v);
        add_typed('f', bits);
        break;
      }
      case SQLITE_TEXT:
        add_typed('t', s.text(c));
        break;
      case SQLITE_BLOB:
        add_typed('b', s.blob(c));
        break;
      default:
        add_typed('n', "");
        break;
    }
  }
}

std::string ExportMac::hex() {
  unsigned char out[EVP_MAX_MD_SIZE];
  std::size_t n = 0;
  if (EVP_MAC_final(state_->ctx, out, &n, sizeof out) != 1)
    throw Error(ErrorKind::Internal, "OpenSSL's HMAC final failed");
  static const char kDigits[] = "0123456789abcdef";
  std::string h;
  for (std::size_t i = 0; i < n; ++i) {
    h.push_back(kDigits[out[i] >> 4]);
    h.push_back(kDigits[out[i] & 15]);
  }
  return h;
}

bool same_signature(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace detail
}  // namespace swz
