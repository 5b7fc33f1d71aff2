// kvscope-cli sub-command registry. Each sub-command lives in its own app/cli/cmd_*.cpp and
// registers itself with KVSCOPE_CLI_COMMAND, so adding one never touches a shared file.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace kvscope::cli {

/// What runs once the command line parsed; returns the exit status.
using Runner = std::function<int()>;

/// Exit status conventions: 0 success, 1 a check failed (e.g. --self-check mismatch),
/// 2 invalid input / unusable environment (with exactly one "error: ..." line on stderr).
struct Command {
    std::string name;
    std::string summary; ///< one sentence, shown by `kvscope-cli --help`
    /// Declares the command's options on its CLI11 sub-app (which gives it --help) and returns
    /// what runs after a successful parse.
    std::function<Runner(CLI::App&)> setup;
};

std::vector<Command>& registry();

struct Registrar {
    explicit Registrar(Command c) { registry().push_back(std::move(c)); }
};

} // namespace kvscope::cli

#define KVSCOPE_CLI_CONCAT2(a, b) a##b
#define KVSCOPE_CLI_CONCAT(a, b) KVSCOPE_CLI_CONCAT2(a, b)
/// Usage: KVSCOPE_CLI_COMMAND({"size", "Size a deployment", &setupSize});
#define KVSCOPE_CLI_COMMAND(...)                                                                   \
    static const ::kvscope::cli::Registrar KVSCOPE_CLI_CONCAT(kvscopeCliRegistrar_, __LINE__) {    \
        ::kvscope::cli::Command __VA_ARGS__                                                        \
    }
