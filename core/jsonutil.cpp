#include "core/jsonutil.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
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

/// Python's json module accepts NaN, Infinity and -Infinity as values; nlohmann does not. They
/// are rewritten (outside strings, at token boundaries) into sentinel strings that the parse
/// callback turns back into doubles. A sentinel starts with a NUL character, which no literal in
/// the original text could produce without a \u0000 escape.
constexpr std::string_view kNanSentinel = "\\u0000kvscope:NaN";
constexpr std::string_view kInfSentinel = "\\u0000kvscope:+Inf";
constexpr std::string_view kNegInfSentinel = "\\u0000kvscope:-Inf";
const std::string kNanValue = std::string("\0kvscope:NaN", 12);
const std::string kInfValue = std::string("\0kvscope:+Inf", 13);
const std::string kNegInfValue = std::string("\0kvscope:-Inf", 13);

bool isDelimiter(char c) {
    return c == ',' || c == ':' || c == '[' || c == ']' || c == '{' || c == '}' || c == ' ' ||
           c == '\t' || c == '\n' || c == '\r';
}

/// Returns the text with the Python literals replaced, or nullopt when it has none.
std::optional<std::string> rewritePythonLiterals(std::string_view text) {
    std::string out;
    bool any = false, inString = false, escaped = false;
    std::size_t copied = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (inString) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                inString = false;
            continue;
        }
        if (c == '"') {
            inString = true;
            continue;
        }
        if (c != 'N' && c != 'I' && c != '-')
            continue;
        if (i > 0 && !isDelimiter(text[i - 1]))
            continue;
        std::string_view token, sentinel;
        for (auto [t, s] : {std::pair{std::string_view("NaN"), kNanSentinel},
                            std::pair{std::string_view("Infinity"), kInfSentinel},
                            std::pair{std::string_view("-Infinity"), kNegInfSentinel}}) {
            if (text.substr(i, t.size()) == t &&
                (i + t.size() == text.size() || isDelimiter(text[i + t.size()]))) {
                token = t;
                sentinel = s;
                break;
            }
        }
        if (token.empty())
            continue;
        out.append(text.substr(copied, i - copied));
        out += '"';
        out.append(sentinel);
        out += '"';
        i += token.size() - 1;
        copied = i + 1;
        any = true;
    }
    if (!any)
        return std::nullopt;
    out.append(text.substr(copied));
    return out;
}

} // namespace

std::string sanitizeForMessage(std::string_view text, std::size_t maxBytes) {
    std::string out;
    auto hex = [](unsigned v, int digits) {
        static const char* d = "0123456789abcdef";
        std::string s;
        for (int k = digits - 1; k >= 0; --k)
            s += d[(v >> (4 * k)) & 0xF];
        return s;
    };
    std::size_t i = 0;
    while (i < text.size()) {
        if (out.size() >= maxBytes) {
            out += "...";
            break;
        }
        const auto b0 = static_cast<unsigned char>(text[i]);
        if (b0 < 0x80) {
            if (b0 < 0x20 || b0 == 0x7F)
                out += "\\x" + hex(b0, 2);
            else
                out += static_cast<char>(b0);
            ++i;
            continue;
        }
        // Decode one UTF-8 sequence strictly (no overlongs, no surrogates, <= U+10FFFF).
        int len = 0;
        unsigned cp = 0, min = 0;
        if (b0 >= 0xC2 && b0 <= 0xDF) {
            len = 2;
            cp = b0 & 0x1F;
            min = 0x80;
        } else if (b0 >= 0xE0 && b0 <= 0xEF) {
            len = 3;
            cp = b0 & 0x0F;
            min = 0x800;
        } else if (b0 >= 0xF0 && b0 <= 0xF4) {
            len = 4;
            cp = b0 & 0x07;
            min = 0x10000;
        }
        bool ok = len > 0 && i + static_cast<std::size_t>(len) <= text.size();
        for (int k = 1; ok && k < len; ++k) {
            const auto b = static_cast<unsigned char>(text[i + static_cast<std::size_t>(k)]);
            if ((b & 0xC0) != 0x80)
                ok = false;
            else
                cp = (cp << 6) | (b & 0x3F);
        }
        if (ok && (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)))
            ok = false;
        if (!ok) {
            out += "\xEF\xBF\xBD"; // U+FFFD
            ++i;
            continue;
        }
        if (cp == 0x2028 || cp == 0x2029 || (cp >= 0x80 && cp < 0xA0))
            out += "\\u" + hex(cp, 4);
        else
            out.append(text.substr(i, static_cast<std::size_t>(len)));
        i += static_cast<std::size_t>(len);
    }
    return out;
}

Result<nlohmann::json> parseJsonBounded(std::string_view text, const std::string& what,
                                        std::size_t maxBytes, int maxDepth) {
    if (text.size() > maxBytes)
        return makeError(what, "larger than " + std::to_string(maxBytes / (1024 * 1024)) +
                                   " MiB; refusing to read it");
    if (!nestingWithinLimit(text, maxDepth))
        return makeError(what, "nested deeper than " + std::to_string(maxDepth) + " levels");
    const std::optional<std::string> rewritten = rewritePythonLiterals(text);
    const std::string_view input = rewritten ? std::string_view(*rewritten) : text;
    using Json = nlohmann::json;
    // Turns the sentinels back into NaN / ±Infinity (the callback may replace a parsed value).
    const Json::parser_callback_t restore = [](int, Json::parse_event_t event, Json& parsed) {
        if (event == Json::parse_event_t::value && parsed.is_string()) {
            const auto& s = parsed.get_ref<const std::string&>();
            if (!s.empty() && s[0] == '\0') {
                if (s == kNanValue)
                    parsed = std::numeric_limits<double>::quiet_NaN();
                else if (s == kInfValue)
                    parsed = std::numeric_limits<double>::infinity();
                else if (s == kNegInfValue)
                    parsed = -std::numeric_limits<double>::infinity();
            }
        }
        return true;
    };
    try {
        return rewritten ? Json::parse(input.begin(), input.end(), restore)
                         : Json::parse(input.begin(), input.end());
    } catch (const nlohmann::json::parse_error& e) {
        std::string msg = e.what();
        // "[json.exception.parse_error.101] parse error at line 1, column 2: ..." → the tail.
        if (auto p = msg.find("parse error"); p != std::string::npos)
            msg = msg.substr(p);
        return makeError(what, "malformed JSON: " + sanitizeForMessage(msg, 400));
    } catch (const std::exception& e) {
        return makeError(what, "unreadable JSON: " + sanitizeForMessage(e.what(), 400));
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

const char* jsonTypeName(const nlohmann::json& v) {
    if (v.is_string())
        return "a string";
    if (v.is_boolean())
        return "a boolean";
    if (v.is_array())
        return "an array";
    if (v.is_object())
        return "an object";
    if (v.is_null())
        return "null";
    return "a number";
}

} // namespace kvscope
