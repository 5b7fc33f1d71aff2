#include "args.h"

#include <charconv>
#include <cmath>
#include <iostream>

namespace kvscope::cli {

ArgParser::ArgParser(std::set<std::string> valueFlags, std::set<std::string> switches)
    : valueFlags_(std::move(valueFlags)), switches_(std::move(switches)) {}

bool ArgParser::parse(const std::vector<std::string>& args) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a.rfind("--", 0) != 0 || a.size() == 2) {
            positional_.push_back(a);
            continue;
        }
        std::string name = a, inlineValue;
        bool hasInline = false;
        if (auto eq = a.find('='); eq != std::string::npos) {
            name = a.substr(0, eq);
            inlineValue = a.substr(eq + 1);
            hasInline = true;
        }
        if (switches_.count(name)) {
            if (hasInline) {
                error_ = name + ": takes no value";
                return false;
            }
            seenSwitches_.insert(name);
        } else if (valueFlags_.count(name)) {
            if (hasInline) {
                values_[name] = inlineValue;
            } else if (i + 1 < args.size()) {
                values_[name] = args[++i];
            } else {
                error_ = name + ": needs a value";
                return false;
            }
        } else {
            error_ = name + ": unknown option (see kvscope-cli help)";
            return false;
        }
    }
    return true;
}

bool ArgParser::has(const std::string& flag) const {
    return seenSwitches_.count(flag) || values_.count(flag);
}

std::optional<std::string> ArgParser::value(const std::string& flag) const {
    auto it = values_.find(flag);
    if (it == values_.end())
        return std::nullopt;
    return it->second;
}

std::optional<std::int64_t> ArgParser::integer(const std::string& flag) {
    auto v = value(flag);
    if (!v)
        return std::nullopt;
    std::int64_t out = 0;
    const char* b = v->data();
    const char* e = b + v->size();
    auto [p, ec] = std::from_chars(b, e, out);
    if (ec != std::errc() || p != e) {
        error_ = flag + ": must be an integer, got '" + *v + "'";
        return std::nullopt;
    }
    return out;
}

std::optional<double> ArgParser::real(const std::string& flag) {
    auto v = value(flag);
    if (!v)
        return std::nullopt;
    try {
        std::size_t used = 0;
        double out = std::stod(*v, &used);
        if (used != v->size() || !std::isfinite(out))
            throw std::invalid_argument(*v);
        return out;
    } catch (const std::exception&) {
        error_ = flag + ": must be a number, got '" + *v + "'";
        return std::nullopt;
    }
}

int fail(const std::string& message) {
    std::string line = message;
    for (char& c : line)
        if (c == '\n' || c == '\r')
            c = ' ';
    std::cerr << "error: " << line << '\n';
    return 2;
}

} // namespace kvscope::cli
