// kvscope-cli compare: two deployments side by side, with the ratios B / A.
#include "command.h"
#include "core/features/compare.h"
#include "options.h"
#include "size_flags.h"

#include <iostream>
#include <memory>

namespace {

struct CompareArgs {
    std::string a, b;
    bool json = false;
};

kvscope::Result<kvscope::Scenario> side(const std::string& text, const char* flag) {
    if (text.empty())
        return kvscope::makeError(flag, "missing: quote the size flags, e.g. " + std::string(flag) +
                                            " \"--model llama-3-70b --tp 8\"");
    auto in = kvscope::cli::parseSizeLine(text);
    if (!in.ok())
        return kvscope::makeError(flag, in.error().message());
    return kvscope::Scenario{in->model, in->gpu, in->deployment};
}

int runCompare(const CompareArgs& args) {
    auto a = side(args.a, "--a");
    if (!a.ok())
        return kvscope::cli::fail(a.error().message());
    auto b = side(args.b, "--b");
    if (!b.ok())
        return kvscope::cli::fail(b.error().message());
    auto c = kvscope::compare(a.value(), b.value());
    if (!c.ok()) {
        // compare() names the side as "a." / "b."; say it as the flag.
        const std::string& f = c.error().field;
        const std::string flag = f.rfind("b.", 0) == 0 ? "--b" : "--a";
        return kvscope::cli::fail(flag + ": " + f.substr(f.find('.') + 1) + ": " + c.error().rule);
    }
    if (args.json)
        std::cout << kvscope::comparisonJson(a.value(), b.value(), c.value());
    else
        std::cout << kvscope::comparisonText(a.value(), b.value(), c.value());
    return 0;
}

kvscope::cli::Runner setupCompare(CLI::App& app) {
    auto a = std::make_shared<CompareArgs>();
    app.add_option("--a", a->a, "Deployment A as quoted size flags, e.g. \"--model llama-3-70b\"")
        ->type_name("\"FLAGS\"");
    app.add_option("--b", a->b, "Deployment B as quoted size flags, e.g. \"--tp 8\"")
        ->type_name("\"FLAGS\"");
    app.add_flag("--json", a->json, "Print the comparison as JSON");
    app.footer("FLAGS: any of `kvscope-cli size --help`'s options.");
    return [a] { return runCompare(*a); };
}

} // namespace

KVSCOPE_CLI_COMMAND({"compare",
                     "Two deployments side by side: bytes per token per rank, tokens, "
                     "concurrency, intensity and attainable % of peak, as ratios B / A",
                     &setupCompare});
