// tools: machine-readable output shared by every `swz` command: the --format option (text|json|csv,
// --json as an alias), the library version stamped into JSON objects, CSV written as cutlass_profiler does.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "cli.hpp"

namespace swz {
namespace cli {

/// What a command prints: text for people, json (one object), csv (a header row, one row per result).
enum class Format { Text, Json, Csv, Svg };

/// "text", "json", "csv" or "svg".
const char* format_name(Format f);

/// Reads --format FMT and its alias --json. `accepted` lists what this command prints (the first is the
/// default); any other value, or --json where json is not accepted, is a UsageError naming the accepted
/// values (exit 2). --json together with another --format is a UsageError too.
Format read_format(Args& args, std::initializer_list<Format> accepted);

/// A JSON string literal (quotes, backslashes and control characters escaped).
std::string json_string(const std::string& s);

/// `"swzjit_version": "X.Y.Z", `: the first member of every JSON object swz prints (the library's
/// version, as `swz --version` shows it), so a stored result says what produced it.
std::string json_version_member();

/// `object` (text starting with '{') with json_version_member() inserted after its opening brace.
std::string stamp_json(const std::string& object);

/// A number for JSON or CSV: "%.*f"-style with `decimals` digits after the point; JSON's null (or an
/// empty CSV field) for NaN and infinities is the caller's choice, see csv_number / json_number.
std::string fixed(double v, int decimals);
std::string json_number(double v, int decimals);  ///< "null" when not finite
std::string csv_number(double v, int decimals);   ///< "" when not finite

/// A CSV table as cutlass_profiler writes one: a header row, then one row per result, comma-separated
/// plain values; a value is quoted (and its quotes doubled) only when it holds a comma, a quote, a
/// newline or leading/trailing spaces.
class CsvTable {
 public:
  explicit CsvTable(std::vector<std::string> header);
  /// Adds a row; it must have as many values as the header (an internal error otherwise).
  void add(std::vector<std::string> row);
  std::size_t rows() const { return rows_.size(); }
  /// The whole table, each line ending in '\n'; without the header row when `header` is false (the
  /// rows of a table whose header is already out).
  std::string str(bool header = true) const;
  /// Writes str(header) to stdout.
  void print(bool header = true) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

/// One CSV field, quoted only when needed.
std::string csv_field(const std::string& value);

/// "true" or "false" (JSON and CSV alike).
inline const char* boolean(bool b) { return b ? "true" : "false"; }

}  // namespace cli
}  // namespace swz
