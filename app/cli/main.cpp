// kvscope-cli: the attention-memory arithmetic on the command line.
#include "args.h"
#include "command.h"

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

void printHelp(std::ostream& out) {
    auto commands = kvscope::cli::registry();
    std::sort(commands.begin(), commands.end(),
              [](const auto& a, const auto& b) { return a.name < b.name; });
    out << "kvscope-cli: how many bytes every decode step drags across the memory bus\n\n"
           "usage: kvscope-cli <command> [options]\n\ncommands:\n";
    for (const auto& c : commands)
        out << "  " << c.name << std::string(c.name.size() < 12 ? 12 - c.name.size() : 1, ' ')
            << c.summary << "\n      " << c.usage << "\n";
    out << "\nExit status: 0 ok, 1 a check failed, 2 invalid input (one 'error:' line on "
           "stderr).\n";
}

} // namespace

int main(int argc, char** argv) {
    try {
        std::vector<std::string> args(argv + 1, argv + argc);
        if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
            printHelp(std::cout);
            return args.empty() ? 2 : 0;
        }
        const std::string name = args[0];
        args.erase(args.begin());
        for (const auto& c : kvscope::cli::registry())
            if (c.name == name)
                return c.run(args);
        return kvscope::cli::fail("unknown command '" + name + "' (see kvscope-cli help)");
    } catch (const std::exception& e) {
        return kvscope::cli::fail(std::string("internal error: ") + e.what());
    } catch (...) {
        return kvscope::cli::fail("internal error");
    }
}
