// generator/core: the process-wide registry of declared families (register_family, find_family,
// get_family, family_names in include/swzjit/family.hpp), the library's own declarative families loaded
// into it on first use; the engine, the tuner, the worker and `swz` look families up here.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "generator/families/registry.hpp"
#include "swzjit/error.hpp"
#include "swzjit/family.hpp"

namespace swz {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const Family>> families;
  bool builtins_loaded = false;
  std::map<std::string, std::string> builtin_hashes;  // name -> definition hash of the library's own
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: families may be used from static destructors
  return *r;
}

// Caller holds the mutex.
void load_builtins(Registry& r) {
  if (r.builtins_loaded) return;
  r.builtins_loaded = true;
  for (auto make : detail::builtin_family_definitions()) {
    auto f = std::make_shared<const Family>(make());
    r.families[f->name()] = f;
    r.builtin_hashes[f->name()] = f->definition_hash();
  }
}

}  // namespace

std::shared_ptr<const Family> register_family(FamilyDef def) {
  auto f = std::make_shared<const Family>(std::move(def));  // validates outside the lock
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  load_builtins(r);
  const auto it = r.families.find(f->name());
  if (it != r.families.end()) {
    if (it->second->definition_hash() == f->definition_hash()) return it->second;
    throw_invalid("register_family: a different family named \"" + f->name() + "\" is already registered");
  }
  r.families[f->name()] = f;
  return f;
}

bool detail::is_builtin_family(const Family& family) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  load_builtins(r);
  const auto it = r.builtin_hashes.find(family.name());
  return it != r.builtin_hashes.end() && it->second == family.definition_hash();
}

std::shared_ptr<const Family> find_family(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  load_builtins(r);
  const auto it = r.families.find(name);
  return it == r.families.end() ? nullptr : it->second;
}

std::vector<std::string> family_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  load_builtins(r);
  std::vector<std::string> out;
  for (const auto& kv : r.families) out.push_back(kv.first);
  return out;
}

std::shared_ptr<const Family> get_family(const std::string& name) {
  if (auto f = find_family(name)) return f;
  std::string known;
  for (const std::string& n : family_names()) known += (known.empty() ? "" : ", ") + n;
  throw_invalid("no family named \"" + name + "\" (registered: " + (known.empty() ? "none" : known) +
                "; a .family file can be given by its path)");
}
}  // namespace swz
