// Internal to the log reader (core/engines/log_parse.cpp): the line scanning its pattern table
// is written in (keys, numbers and memory sizes inside one log line), and the splitting of a log
// into lines with the ones a launcher wrapped at a fixed width joined again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope::logscan {

/// A letter, digit or '_': a character of a Python identifier.
bool identChar(char c);

/// Position just past `key` in `line` where the key is not the tail of a longer identifier.
std::optional<std::size_t> after(std::string_view line, std::string_view key);

/// A number at `pos` (spaces skipped), with thousands separators allowed: "1,327,136", "0.9".
std::optional<double> numberAt(std::string_view s, std::size_t pos);
/// numberAt, truncated to an integer.
std::optional<std::int64_t> intAt(std::string_view s, std::size_t pos);

/// Bytes from "<number> GiB" / "<number>GB" / "<number> MiB" at `pos`.
std::optional<std::int64_t> memoryAt(std::string_view s, std::size_t pos);

/// The value of `name=value` or `'name': value` (quotes stripped), up to , ) } or space.
std::optional<std::string> keyValue(std::string_view line, std::string_view name);
/// keyValue as a whole number; nothing when the value is not one.
std::optional<std::int64_t> keyInt(std::string_view line, std::string_view name);
/// keyValue as a number.
std::optional<double> keyReal(std::string_view line, std::string_view name);

/// The log's lines (CR LF or LF), each line a launcher wrapped at a fixed width joined back to
/// the record it continues.
std::vector<std::string> splitJoined(std::string_view text);

/// A line quoted in an error: valid UTF-8 (other bytes become '?'), at most 60 characters.
std::string quoted(std::string_view line);

} // namespace kvscope::logscan
