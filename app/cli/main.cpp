// kvscope-cli: the attention-memory arithmetic on the command line. CLI11 parses; every
// sub-command has --help, and `kvscope-cli --version` prints the project version.
#include "command.h"
#include "core/version.h"
#include "options.h"

#include <algorithm>
#include <exception>
#include <iostream>

namespace kvscope::cli {

std::vector<Command>& registry() {
    static std::vector<Command> commands;
    return commands;
}

} // namespace kvscope::cli

namespace {

int run(int argc, char** argv) {
    using namespace kvscope::cli;
    CLI::App app{"kvscope-cli: how many bytes every decode step drags across the memory bus",
                 "kvscope-cli"};
    const std::string version = std::string("kvscope-cli ") + kvscope::kVersion;
    app.set_version_flag("--version", version, "Print the version and exit");
    app.footer("Run `kvscope-cli COMMAND --help` for a command's options.\nExit status: 0 ok, 1 "
               "a check failed, 2 invalid input (one 'error:' line on stderr).");
    app.require_subcommand(0, 1);

    auto commands = registry();
    std::sort(commands.begin(), commands.end(),
              [](const auto& a, const auto& b) { return a.name < b.name; });
    std::vector<std::pair<CLI::App*, Runner>> subs;
    for (const auto& c : commands) {
        CLI::App* sub = app.add_subcommand(c.name, c.summary);
        sub->allow_extras(); // leftovers become our own one-line error, see leftoverError()
        sub->set_version_flag("--version", version, "Print the version and exit");
        subs.emplace_back(sub, c.setup(*sub));
    }
    app.add_subcommand("help", "Print this help, or a command's (help COMMAND)")->allow_extras();

    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty()) {
        std::cout << app.help();
        return 2;
    }
    if (args[0] == "help") {
        for (const auto& [sub, runner] : subs)
            if (args.size() > 1 && sub->get_name() == args[1]) {
                std::cout << sub->help("kvscope-cli");
                return 0;
            }
        std::cout << app.help();
        return 0;
    }
    if (args[0].rfind("-", 0) != 0 && std::none_of(subs.begin(), subs.end(), [&](const auto& s) {
            return s.first->get_name() == args[0];
        }))
        return fail("unknown command '" + args[0] + "' (see kvscope-cli --help)");

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        std::cout << app.help();
        return 0;
    } catch (const CLI::CallForAllHelp&) {
        std::cout << app.help("", CLI::AppFormatMode::All);
        return 0;
    } catch (const CLI::CallForVersion& e) {
        std::cout << e.what() << '\n';
        return 0;
    } catch (const CLI::ParseError& e) {
        const auto chosen = app.get_subcommands();
        return fail(parseErrorLine(e, chosen.empty() ? app : *chosen.front()));
    }
    for (const auto& [sub, runner] : subs) {
        if (!sub->parsed())
            continue;
        if (const std::string err = leftoverError(*sub); !err.empty())
            return fail(err);
        return runner();
    }
    std::cout << app.help();
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        return kvscope::cli::fail(std::string("internal error: ") + e.what());
    } catch (...) {
        return kvscope::cli::fail("internal error");
    }
}
