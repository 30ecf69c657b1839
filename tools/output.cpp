// tools: machine-readable output shared by every `swz` command (see output.hpp).
#include "output.hpp"

#include <cmath>
#include <cstdio>

#include "swzjit/error.hpp"
#include "swzjit/version.hpp"

namespace swz {
namespace cli {

const char* format_name(Format f) {
  switch (f) {
    case Format::Text: return "text";
    case Format::Json: return "json";
    case Format::Csv: return "csv";
    case Format::Svg: return "svg";
  }
  return "text";
}

Format read_format(Args& args, std::initializer_list<Format> accepted) {
  std::vector<std::string> names;
  bool json_ok = false;
  for (Format f : accepted) {
    names.push_back(format_name(f));
    json_ok = json_ok || f == Format::Json;
  }
  std::string allowed;
  for (const auto& n : names) allowed += (allowed.empty() ? "" : "|") + n;
  const bool json_flag = args.given("json") && args.flag("json");
  const auto text = args.value("format");
  if (json_flag && !json_ok)
    throw UsageError("--json: this command prints no JSON (accepted --format values: " + allowed + ")");
  if (json_flag && text && *text != "json")
    throw UsageError("--json contradicts --format " + *text + " (--json is short for --format json)");
  if (json_flag) return Format::Json;
  if (!text) return *accepted.begin();
  const std::string chosen = parse_choice("--format", *text, names);
  for (Format f : accepted)
    if (chosen == format_name(f)) return f;
  return *accepted.begin();
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string json_version_member() { return "\"swzjit_version\": " + json_string(version()) + ", "; }

std::string stamp_json(const std::string& object) {
  if (object.empty() || object[0] != '{') throw Error(ErrorKind::Internal, "stamp_json: not a JSON object");
  // An empty object gets the version alone (no trailing comma).
  std::size_t i = 1;
  while (i < object.size() && (object[i] == ' ' || object[i] == '\n')) ++i;
  if (i < object.size() && object[i] == '}') return "{\"swzjit_version\": " + json_string(version()) + object.substr(i);
  return "{" + json_version_member() + object.substr(1);
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string json_number(double v, int decimals) { return std::isfinite(v) ? fixed(v, decimals) : "null"; }
std::string csv_number(double v, int decimals) { return std::isfinite(v) ? fixed(v, decimals) : ""; }

std::string csv_field(const std::string& value) {
  const bool quote = value.find_first_of(",\"\r\n") != std::string::npos ||
                     (!value.empty() && (value.front() == ' ' || value.back() == ' '));
  if (!quote) return value;
  std::string out = "\"";
  for (char c : value) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

CsvTable::CsvTable(std::vector<std::string> header) : header_(std::move(header)) {}

void CsvTable::add(std::vector<std::string> row) {
  if (row.size() != header_.size())
    throw Error(ErrorKind::Internal, "CsvTable: a row of " + std::to_string(row.size()) + " values for " +
                                         std::to_string(header_.size()) + " columns");
  rows_.push_back(std::move(row));
}

std::string CsvTable::str(bool header) const {
  std::string out;
  const auto line = [&out](const std::vector<std::string>& values) {
    for (std::size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + csv_field(values[i]);
    out += '\n';
  };
  if (header) line(header_);
  for (const auto& r : rows_) line(r);
  return out;
}

void CsvTable::print(bool header) const {
  const std::string s = str(header);
  std::fwrite(s.data(), 1, s.size(), stdout);
}

}  // namespace cli
}  // namespace swz
