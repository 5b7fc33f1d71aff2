// Bounded JSON parsing for every file kvscope reads (configs, GPUs, stories, sessions,
// measurements): size and nesting limits first, then one-line errors instead of exceptions.
#pragma once

#include "core/result.h"

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kvscope {

/// Parses `text`; `what` names the file in errors ("config.json", "story"). Never throws.
Result<nlohmann::json> parseJsonBounded(std::string_view text, const std::string& what,
                                        std::size_t maxBytes = 16 * 1024 * 1024, int maxDepth = 64);

/// Reads a whole file (at most maxBytes) or returns an error naming `what`.
Result<std::string> readFileBounded(const std::string& path, const std::string& what,
                                    std::size_t maxBytes = 16 * 1024 * 1024);

} // namespace kvscope
