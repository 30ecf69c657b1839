// generator/core: the one "key=value,key=value" reader of the library: family problems and
// configurations (generator/core/family.cpp) and the `swz` options that take such lists.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace swz {
namespace detail {

/// Splits "a=1,b=2" (spaces around items, keys and values ignored) into (key, value) pairs in order.
/// @throws Error(InvalidArgument) starting with `what` for an empty text, an empty item (a leading,
/// trailing or doubled comma), an item without '=', an empty key or value, or a key given twice.
std::vector<std::pair<std::string, std::string>> parse_key_values(const std::string& text, const std::string& what);

/// The inverse: "a=1,b=2".
std::string join_key_values(const std::vector<std::pair<std::string, std::string>>& items);

/// `text` without leading and trailing white space.
std::string trim(const std::string& text);

/// Splits at commas that are not inside parentheses (function arguments of expressions), trimming
/// each part; "" gives no parts.
std::vector<std::string> split_top_level(const std::string& text, char separator = ',');

}  // namespace detail
}  // namespace swz
