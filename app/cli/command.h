// kvscope-cli sub-command registry. Each sub-command lives in its own app/cli/cmd_*.cpp and
// registers itself with KVSCOPE_CLI_COMMAND, so adding one never touches a shared file.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace kvscope::cli {

/// Arguments after the sub-command name, e.g. {"--model", "llama-3-70b", "--tp", "8"}.
using Args = std::vector<std::string>;

/// Exit status conventions: 0 success, 1 a check failed (e.g. --self-check mismatch),
/// 2 invalid input / unusable environment (with exactly one "error: ..." line on stderr).
struct Command {
    std::string name;
    std::string usage;   ///< one usage line, shown by `kvscope-cli help`
    std::string summary; ///< one sentence
    std::function<int(const Args&)> run;
};

std::vector<Command>& registry();

struct Registrar {
    explicit Registrar(Command c) { registry().push_back(std::move(c)); }
};

} // namespace kvscope::cli

#define KVSCOPE_CLI_CONCAT2(a, b) a##b
#define KVSCOPE_CLI_CONCAT(a, b) KVSCOPE_CLI_CONCAT2(a, b)
/// Usage: KVSCOPE_CLI_COMMAND({"size", "size --model M ...", "Size a deployment", &runSize});
#define KVSCOPE_CLI_COMMAND(...)                                                                   \
    static const ::kvscope::cli::Registrar KVSCOPE_CLI_CONCAT(kvscopeCliRegistrar_, __LINE__) {    \
        ::kvscope::cli::Command __VA_ARGS__                                                        \
    }
