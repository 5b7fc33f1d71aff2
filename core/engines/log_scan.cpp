// Scanning engine log lines: keys, numbers and memory sizes inside a line, and the lines of a
// log with the ones a launcher wrapped at a fixed width joined.
#include "core/engines/log_scan.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <exception>
#include <map>

namespace kvscope::logscan {

namespace {

constexpr double kGiB = 1073741824.0;

} // namespace

bool identChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

std::optional<std::size_t> after(std::string_view line, std::string_view key) {
    std::size_t from = 0;
    while (true) {
        const std::size_t p = line.find(key, from);
        if (p == std::string_view::npos)
            return std::nullopt;
        if (p == 0 || !identChar(key.front()) || !identChar(line[p - 1]))
            return p + key.size();
        from = p + 1;
    }
}

std::optional<double> numberAt(std::string_view s, std::size_t pos) {
    while (pos < s.size() && s[pos] == ' ')
        ++pos;
    std::string digits;
    bool seenDigit = false;
    for (; pos < s.size(); ++pos) {
        const char c = s[pos];
        if (std::isdigit(static_cast<unsigned char>(c))) {
            digits += c;
            seenDigit = true;
        } else if (c == '.' && seenDigit && digits.find('.') == std::string::npos) {
            digits += c;
        } else if (c == ',' && seenDigit && pos + 3 < s.size() + 0 &&
                   std::isdigit(static_cast<unsigned char>(s[pos + 1])) &&
                   std::isdigit(static_cast<unsigned char>(s[pos + 2])) &&
                   std::isdigit(static_cast<unsigned char>(s[pos + 3])) &&
                   (pos + 4 >= s.size() || !std::isdigit(static_cast<unsigned char>(s[pos + 4])))) {
            continue; // thousands separator
        } else {
            break;
        }
    }
    if (!seenDigit)
        return std::nullopt;
    if (digits.back() == '.')
        digits.pop_back();
    try {
        return std::stod(digits);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

std::optional<std::int64_t> memoryAt(std::string_view s, std::size_t pos) {
    auto v = numberAt(s, pos);
    if (!v)
        return std::nullopt;
    while (pos < s.size() && (s[pos] == ' '))
        ++pos;
    while (pos < s.size() &&
           (std::isdigit(static_cast<unsigned char>(s[pos])) || s[pos] == '.' || s[pos] == ','))
        ++pos;
    while (pos < s.size() && s[pos] == ' ')
        ++pos;
    double scale = kGiB; // vLLM's and SGLang's "GB" are 2^30 bytes
    if (s.substr(pos, 3) == "MiB" || s.substr(pos, 2) == "MB")
        scale = 1048576.0;
    else if (s.substr(pos, 3) == "KiB" || s.substr(pos, 2) == "KB")
        scale = 1024.0;
    return static_cast<std::int64_t>(std::llround(*v * scale));
}

std::optional<std::string> keyValue(std::string_view line, std::string_view name) {
    // Built by appending: "'" + std::string(...) draws a false -Wrestrict from GCC 12 at -O3.
    auto key = [name](std::string_view open, std::string_view close) {
        std::string k(open);
        k += name;
        k += close;
        return k;
    };
    std::optional<std::size_t> p = after(line, key("", "="));
    if (!p)
        p = after(line, key("'", "': "));
    if (!p)
        p = after(line, key("\"", "\": "));
    if (!p)
        return std::nullopt;
    std::size_t i = *p;
    if (i < line.size() && (line[i] == '\'' || line[i] == '"')) {
        const char q = line[i];
        const std::size_t end = line.find(q, i + 1);
        if (end == std::string_view::npos)
            return std::nullopt;
        return std::string(line.substr(i + 1, end - i - 1));
    }
    std::size_t end = i;
    while (end < line.size() && line[end] != ',' && line[end] != ')' && line[end] != '}' &&
           line[end] != ' ')
        ++end;
    if (end == i)
        return std::nullopt;
    return std::string(line.substr(i, end - i));
}

std::optional<std::int64_t> keyInt(std::string_view line, std::string_view name) {
    auto v = keyValue(line, name);
    if (!v)
        return std::nullopt;
    auto n = numberAt(*v, 0);
    if (!n || *n != std::floor(*n))
        return std::nullopt;
    return static_cast<std::int64_t>(*n);
}

std::optional<double> keyReal(std::string_view line, std::string_view name) {
    auto v = keyValue(line, name);
    if (!v)
        return std::nullopt;
    return numberAt(*v, 0);
}

std::optional<std::int64_t> intAt(std::string_view s, std::size_t pos) {
    auto n = numberAt(s, pos);
    if (!n)
        return std::nullopt;
    return static_cast<std::int64_t>(*n);
}

namespace {

/// The widths at which a launcher wrapped the lines: lengths of 80+ characters that at least a
/// tenth of the long lines have exactly (a free-running log has no such spike; one launcher
/// wraps the front-end's and the engine's lines at two widths). Empty: not wrapped.
std::vector<std::size_t> wrapWidths(const std::vector<std::string_view>& lines) {
    std::map<std::size_t, std::size_t> count;
    std::size_t longLines = 0;
    for (auto l : lines)
        if (l.size() >= 80) {
            ++count[l.size()];
            ++longLines;
        }
    std::vector<std::size_t> out;
    for (const auto& [width, n] : count)
        if (n >= 5 && n * 10 >= longLines)
            out.push_back(width);
    return out;
}

} // namespace

std::vector<std::string> splitJoined(std::string_view text) {
    std::vector<std::string_view> raw;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos)
            end = text.size();
        std::string_view line = text.substr(start, end - start);
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        raw.push_back(line);
        if (end == text.size())
            break;
        start = end + 1;
    }
    const std::vector<std::size_t> widths = wrapWidths(raw);
    std::vector<std::string> out;
    bool continues = false;
    // A continuation never starts like a log record: "(EngineCore pid=1) INFO …", "INFO 09-04",
    // "[2025-03-08 …]".
    auto startsRecord = [](std::string_view l) {
        return l.empty() || l.front() == '(' || l.front() == '[' || l.rfind("INFO", 0) == 0 ||
               l.rfind("DEBUG", 0) == 0 || l.rfind("WARNING", 0) == 0 || l.rfind("ERROR", 0) == 0;
    };
    for (auto l : raw) {
        if (continues && !startsRecord(l))
            out.back() += l;
        else
            out.emplace_back(l);
        continues = std::find(widths.begin(), widths.end(), l.size()) != widths.end();
    }
    return out;
}

std::string quoted(std::string_view line) {
    std::string out;
    for (std::size_t i = 0; i < line.size() && out.size() < 60; ++i) {
        const unsigned char c = static_cast<unsigned char>(line[i]);
        out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
    }
    return out;
}

} // namespace kvscope::logscan
