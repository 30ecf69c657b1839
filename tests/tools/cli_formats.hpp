// tests/tools: readers for what `swz --format json|csv|svg` prints: a strict JSON syntax check, a CSV
// reader (RFC 4180 quoting) and an XML well-formedness check, so tests look inside the output.
#pragma once

#include <cctype>
#include <cstddef>
#include <string>
#include <vector>

namespace swz_test {

namespace detail {

struct JsonReader {
  const std::string& s;
  std::size_t i = 0;
  std::vector<std::string> top_keys;  // the members of the outermost object
  int depth = 0;

  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) ++i;
  }
  bool lit(const char* word) {
    const std::string w(word);
    if (s.compare(i, w.size(), w) != 0) return false;
    i += w.size();
    return true;
  }
  bool string(std::string* out = nullptr) {
    if (i >= s.size() || s[i] != '"') return false;
    ++i;
    std::string v;
    while (i < s.size() && s[i] != '"') {
      if (static_cast<unsigned char>(s[i]) < 0x20) return false;
      if (s[i] == '\\') {
        ++i;
        if (i >= s.size() || std::string("\"\\/bfnrtu").find(s[i]) == std::string::npos) return false;
        if (s[i] == 'u') {
          for (int k = 1; k <= 4; ++k)
            if (i + k >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + k]))) return false;
          i += 4;
        }
      }
      v += s[i++];
    }
    if (i >= s.size()) return false;
    ++i;
    if (out) *out = v;
    return true;
  }
  bool number() {
    const std::size_t start = i;
    if (i < s.size() && s[i] == '-') ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i < s.size() && s[i] == '.') {
      ++i;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      ++i;
      if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    }
    return i > start && std::isdigit(static_cast<unsigned char>(s[i - 1]));
  }
  bool value() {
    ws();
    if (i >= s.size()) return false;
    if (s[i] == '{') {
      ++i;
      ++depth;
      ws();
      if (i < s.size() && s[i] == '}') return ++i, --depth, true;
      while (true) {
        ws();
        std::string key;
        if (!string(&key)) return false;
        if (depth == 1) top_keys.push_back(key);
        ws();
        if (i >= s.size() || s[i++] != ':') return false;
        if (!value()) return false;
        ws();
        if (i < s.size() && s[i] == ',') {
          ++i;
          continue;
        }
        if (i < s.size() && s[i] == '}') return ++i, --depth, true;
        return false;
      }
    }
    if (s[i] == '[') {
      ++i;
      ++depth;
      ws();
      if (i < s.size() && s[i] == ']') return ++i, --depth, true;
      while (true) {
        if (!value()) return false;
        ws();
        if (i < s.size() && s[i] == ',') {
          ++i;
          continue;
        }
        if (i < s.size() && s[i] == ']') return ++i, --depth, true;
        return false;
      }
    }
    if (s[i] == '"') return string();
    if (lit("true") || lit("false") || lit("null")) return true;
    return number();
  }
};

}  // namespace detail

/// True if `text` is one JSON value (and only whitespace around it). `top_keys` receives the members of
/// the outermost object, in order.
inline bool json_valid(const std::string& text, std::vector<std::string>* top_keys = nullptr) {
  detail::JsonReader r{text};
  if (!r.value()) return false;
  r.ws();
  if (top_keys) *top_keys = r.top_keys;
  return r.i == text.size();
}

/// The rows of a CSV text (quoted fields may hold commas, doubled quotes and newlines). An unterminated
/// quote yields no rows at all.
inline std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
      continue;
    }
    if (c == '"' && field.empty()) {
      quoted = true;
      any = true;
    } else if (c == ',') {
      row.push_back(field);
      field.clear();
      any = true;
    } else if (c == '\n') {
      row.push_back(field);
      rows.push_back(row);
      row.clear();
      field.clear();
      any = false;
    } else {
      field += c;
      any = true;
    }
  }
  if (quoted) return {};
  if (any) {
    row.push_back(field);
    rows.push_back(row);
  }
  return rows;
}

/// True if `xml` is well-formed as far as an SVG needs: no '<' or '>' outside tags, '&' only in
/// entities, every element closed in order, attribute values quoted.
inline bool xml_well_formed(const std::string& xml, std::string* why = nullptr) {
  const auto fail = [why](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  std::vector<std::string> open;
  std::size_t pos = 0;
  while (pos < xml.size()) {
    const std::size_t lt = xml.find('<', pos);
    const std::string text = xml.substr(pos, lt == std::string::npos ? std::string::npos : lt - pos);
    if (text.find('>') != std::string::npos) return fail("'>' in text: " + text);
    for (std::size_t a = text.find('&'); a != std::string::npos; a = text.find('&', a + 1)) {
      const std::size_t semi = text.find(';', a);
      const std::string ent = semi == std::string::npos ? "" : text.substr(a, semi - a + 1);
      if (ent != "&lt;" && ent != "&gt;" && ent != "&amp;" && ent != "&quot;" && ent != "&apos;")
        return fail("bare '&' in text: " + text);
    }
    if (lt == std::string::npos) break;
    const std::size_t gt = xml.find('>', lt);
    if (gt == std::string::npos) return fail("unterminated tag");
    const std::string tag = xml.substr(lt + 1, gt - lt - 1);
    if (tag.empty() || tag.find('<') != std::string::npos) return fail("bad tag <" + tag + ">");
    std::size_t quotes = 0;
    for (char c : tag) quotes += c == '"';
    if (quotes % 2) return fail("unbalanced quotes in <" + tag + ">");
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return fail("</" + tag.substr(1) + "> closes nothing open");
      open.pop_back();
    } else if (tag.back() != '/' && tag[0] != '?' && tag[0] != '!') {
      open.push_back(tag.substr(0, tag.find_first_of(" \n")));
    }
    pos = gt + 1;
  }
  if (!open.empty()) return fail("<" + open.back() + "> never closed");
  return true;
}

}  // namespace swz_test
