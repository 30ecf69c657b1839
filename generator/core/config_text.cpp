// generator/core: the "key=value" lists of generator/core/config_text.hpp.
#include "generator/core/config_text.hpp"

#include <cctype>
#include <set>

#include "swzjit/error.hpp"

namespace swz {
namespace detail {

std::string trim(const std::string& text) {
  std::size_t a = 0, b = text.size();
  while (a < b && std::isspace(static_cast<unsigned char>(text[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(text[b - 1]))) --b;
  return text.substr(a, b - a);
}

std::vector<std::string> split_top_level(const std::string& text, char separator) {
  std::vector<std::string> parts;
  if (trim(text).empty()) return parts;
  int depth = 0;
  std::string cur;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == separator && depth == 0) {
      parts.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(trim(cur));
  return parts;
}

std::vector<std::pair<std::string, std::string>> parse_key_values(const std::string& text, const std::string& what) {
  if (trim(text).empty()) throw_invalid(what + ": empty; expected key=value[,key=value...]");
  std::vector<std::pair<std::string, std::string>> items;
  std::set<std::string> seen;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    const std::string item = trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (item.empty())
      throw_invalid(what + ": empty item in \"" + text + "\" (a leading, trailing or doubled comma)");
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) throw_invalid(what + ": \"" + item + "\" is not key=value");
    std::string key = trim(item.substr(0, eq)), value = trim(item.substr(eq + 1));
    if (key.empty() || value.empty()) throw_invalid(what + ": \"" + item + "\" needs a key and a value");
    if (!seen.insert(key).second) throw_invalid(what + ": " + key + " given twice");
    items.emplace_back(std::move(key), std::move(value));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

std::string join_key_values(const std::vector<std::pair<std::string, std::string>>& items) {
  std::string out;
  for (const auto& kv : items) {
    if (!out.empty()) out += ',';
    out += kv.first + "=" + kv.second;
  }
  return out;
}

}  // namespace detail
}  // namespace swz
