// Minimal, strict flag parsing shared by every kvscope-cli sub-command.
// Unknown flags, missing values and malformed numbers become one-line errors naming the flag.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kvscope::cli {

class ArgParser {
public:
    /// valueFlags take one argument ("--tp 8" or "--tp=8"); switches take none ("--json").
    ArgParser(std::set<std::string> valueFlags, std::set<std::string> switches);

    /// Parses args; on failure returns false and error() holds "--flag: rule".
    bool parse(const std::vector<std::string>& args);
    const std::string& error() const { return error_; }

    bool has(const std::string& flag) const;
    std::optional<std::string> value(const std::string& flag) const;
    /// Positional arguments (words not starting with "--").
    const std::vector<std::string>& positional() const { return positional_; }

    /// Typed getters: nullopt when absent; on a malformed value they set error() and return
    /// nullopt with ok() false.
    std::optional<std::int64_t> integer(const std::string& flag);
    std::optional<double> real(const std::string& flag);
    bool ok() const { return error_.empty(); }

private:
    std::set<std::string> valueFlags_, switches_;
    std::map<std::string, std::string> values_;
    std::set<std::string> seenSwitches_;
    std::vector<std::string> positional_;
    std::string error_;
};

/// Prints "error: <message>" as one line on stderr and returns 2.
int fail(const std::string& message);

} // namespace kvscope::cli
