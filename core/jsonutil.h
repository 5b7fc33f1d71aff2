// Bounded JSON parsing for every file kvscope reads (configs, GPUs, stories, sessions,
// measurements): size and nesting limits first, then one-line errors instead of exceptions.
#pragma once

#include "core/result.h"

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kvscope {

/// Parses `text`; `what` names the file in errors ("config.json", "story"). Never throws.
/// Accepts the non-standard literals NaN, Infinity and -Infinity outside strings, as Python's
/// json module (and so every engine reading a config.json) does; they become the doubles they
/// name. Error lines are valid UTF-8 whatever bytes the text holds.
Result<nlohmann::json> parseJsonBounded(std::string_view text, const std::string& what,
                                        std::size_t maxBytes = 16 * 1024 * 1024, int maxDepth = 64);

/// A fragment of input fit to echo in a one-line message: invalid UTF-8 sequences become
/// U+FFFD, control characters (and U+2028/U+2029) become \xNN / \uNNNN escapes, and the result
/// is cut to at most `maxBytes` bytes (with "..." appended) on a character boundary.
/// "a string", "an array", "null", ...: what a config value was, for a one-line error.
const char* jsonTypeName(const nlohmann::json& v);

std::string sanitizeForMessage(std::string_view text, std::size_t maxBytes = 120);

/// Reads a whole file (at most maxBytes) or returns an error naming `what`.
Result<std::string> readFileBounded(const std::string& path, const std::string& what,
                                    std::size_t maxBytes = 16 * 1024 * 1024);

} // namespace kvscope
