// runtime: the embedded kernel templates as seen by the public API -- their names and the hash that
// goes into every cache key (include/swzjit/jit.hpp; the bytes come from runtime/jit/embedded_templates.hpp).
#include <xxhash.h>

#include <cstdint>
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "runtime/jit/embedded_templates.hpp"
#include "swzjit/jit.hpp"

namespace swz {
namespace {

// Lengths are hashed as fixed-width little-endian integers so that ("ab","c") and ("a","bc")
// cannot collide by concatenation.
void update_with_length(XXH3_state_t* state, std::uint64_t length) {
  unsigned char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(length >> (8 * i));
  XXH3_128bits_update(state, bytes, sizeof bytes);
}

std::string compute_templates_hash() {
  XXH3_state_t* state = XXH3_createState();
  if (state == nullptr) throw std::bad_alloc();
  XXH3_128bits_reset(state);
  for (std::size_t i = 0; i < detail::kEmbeddedTemplateCount; ++i) {
    const detail::EmbeddedFile& file = detail::kEmbeddedTemplates[i];
    const std::string name = file.name;
    update_with_length(state, name.size());
    XXH3_128bits_update(state, name.data(), name.size());
    update_with_length(state, file.size);
    XXH3_128bits_update(state, file.data, file.size);
  }
  const XXH128_hash_t hash = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(hash.high64),
                static_cast<unsigned long long>(hash.low64));
  return std::string(hex, 32);
}

}  // namespace

std::string templates_hash() {
  // The embedded bytes never change while the process runs: hash them once.
  static const std::string hash = compute_templates_hash();
  return hash;
}

std::vector<std::string> template_names() {
  std::vector<std::string> names;
  names.reserve(detail::kEmbeddedTemplateCount);
  for (std::size_t i = 0; i < detail::kEmbeddedTemplateCount; ++i) names.emplace_back(detail::kEmbeddedTemplates[i].name);
  return names;
}

}  // namespace swz
