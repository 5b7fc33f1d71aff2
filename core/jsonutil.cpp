#include "core/jsonutil.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace kvscope {

namespace {

/// Rejects nesting deeper than `limit` before the recursive parser sees it, so hostile input
/// ("[[[[...") cannot exhaust the stack.
bool nestingWithinLimit(std::string_view text, int limit) {
    int depth = 0;
    bool inString = false, escaped = false;
    for (char c : text) {
        if (inString) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                inString = false;
            continue;
        }
        if (c == '"')
            inString = true;
        else if (c == '[' || c == '{') {
            if (++depth > limit)
                return false;
        } else if (c == ']' || c == '}')
            --depth;
    }
    return true;
}

} // namespace

Result<nlohmann::json> parseJsonBounded(std::string_view text, const std::string& what,
                                        std::size_t maxBytes, int maxDepth) {
    if (text.size() > maxBytes)
        return makeError(what, "larger than " + std::to_string(maxBytes / (1024 * 1024)) +
                                   " MiB; refusing to read it");
    if (!nestingWithinLimit(text, maxDepth))
        return makeError(what, "nested deeper than " + std::to_string(maxDepth) + " levels");
    try {
        return nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::parse_error& e) {
        std::string msg = e.what();
        // "[json.exception.parse_error.101] parse error at line 1, column 2: ..." → the tail.
        if (auto p = msg.find("parse error"); p != std::string::npos)
            msg = msg.substr(p);
        return makeError(what, "malformed JSON: " + msg);
    } catch (const std::exception& e) {
        return makeError(what, std::string("unreadable JSON: ") + e.what());
    }
}

Result<std::string> readFileBounded(const std::string& path, const std::string& what,
                                    std::size_t maxBytes) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(path, ec))
        return makeError(what, "no such file: " + path);
    if (!fs::is_regular_file(path, ec))
        return makeError(what, "not a regular file: " + path);
    const auto size = fs::file_size(path, ec);
    if (ec)
        return makeError(what, "cannot read " + path + ": " + ec.message());
    if (size > maxBytes)
        return makeError(what, path + " is larger than " +
                                   std::to_string(maxBytes / (1024 * 1024)) + " MiB");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return makeError(what, "cannot open " + path);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

} // namespace kvscope
