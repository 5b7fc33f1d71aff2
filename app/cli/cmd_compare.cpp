// kvscope-cli compare: two deployments side by side, with the ratios B / A.
#include "args.h"
#include "command.h"
#include "core/compare.h"
#include "size_flags.h"

#include <iostream>

namespace {

kvscope::Result<kvscope::Scenario> side(const kvscope::cli::ArgParser& p, const char* flag) {
    auto text = p.value(flag);
    if (!text)
        return kvscope::makeError(flag, "missing: quote the size flags, e.g. " + std::string(flag) +
                                            " \"--model llama-3-70b --tp 8\"");
    auto in = kvscope::cli::parseSizeFlags(kvscope::cli::splitWords(*text), {});
    if (!in.ok())
        return kvscope::makeError(flag, in.error().message());
    return kvscope::Scenario{in->model, in->gpu, in->deployment};
}

int runCompare(const kvscope::cli::Args& args) {
    kvscope::cli::ArgParser p({"--a", "--b"}, {"--json"});
    if (!p.parse(args))
        return kvscope::cli::fail(p.error());
    if (!p.positional().empty())
        return kvscope::cli::fail(p.positional().front() + ": unexpected argument");
    auto a = side(p, "--a");
    if (!a.ok())
        return kvscope::cli::fail(a.error().message());
    auto b = side(p, "--b");
    if (!b.ok())
        return kvscope::cli::fail(b.error().message());
    auto c = kvscope::compare(a.value(), b.value());
    if (!c.ok()) {
        // compare() names the side as "a." / "b."; say it as the flag.
        const std::string& f = c.error().field;
        const std::string flag = f.rfind("b.", 0) == 0 ? "--b" : "--a";
        return kvscope::cli::fail(flag + ": " + f.substr(f.find('.') + 1) + ": " + c.error().rule);
    }
    if (p.has("--json"))
        std::cout << kvscope::comparisonJson(a.value(), b.value(), c.value());
    else
        std::cout << kvscope::comparisonText(a.value(), b.value(), c.value());
    return 0;
}

} // namespace

KVSCOPE_CLI_COMMAND({"compare", "compare --a \"<size flags>\" --b \"<size flags>\" [--json]",
                     "Two deployments side by side: bytes per token per rank, tokens, "
                     "concurrency, intensity and attainable % of peak, as ratios B / A",
                     &runCompare});
