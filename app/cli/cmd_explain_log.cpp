// kvscope-cli explain-log: read a vLLM or SGLang startup log, predict its KV numbers and
// explain the difference term by term.
#include "args.h"
#include "command.h"
#include "core/explain_log.h"

#include <iostream>
#include <iterator>

namespace {

int runExplainLog(const kvscope::cli::Args& args) {
    using kvscope::cli::fail;
    kvscope::cli::ArgParser p({"--model", "--gpu"}, {"--json"});
    if (!p.parse(args))
        return fail(p.error());
    if (p.positional().size() != 1)
        return fail(p.positional().empty()
                        ? "FILE: missing (a vLLM or SGLang startup log, or - for stdin)"
                        : p.positional()[1] + ": unexpected argument (one log file)");
    const std::string& file = p.positional().front();
    kvscope::Result<kvscope::EngineLog> log = kvscope::makeError("log", "unread");
    if (file == "-") {
        std::string text((std::istreambuf_iterator<char>(std::cin)),
                         std::istreambuf_iterator<char>());
        log = kvscope::parseEngineLog(text);
    } else {
        log = kvscope::loadEngineLog(file);
    }
    if (!log.ok())
        return fail(file + ": " + log.error().message());
    kvscope::ExplainOptions opt;
    opt.model = p.value("--model").value_or("");
    opt.gpu = p.value("--gpu").value_or("");
    auto e = kvscope::explainEngineLog(log.value(), opt);
    if (!e.ok())
        return fail(e.error().message());
    if (p.has("--json"))
        std::cout << kvscope::explanationJson(e.value());
    else
        std::cout << kvscope::explanationText(e.value());
    return 0;
}

} // namespace

KVSCOPE_CLI_COMMAND({"explain-log",
                     "explain-log FILE|- [--model <id|path>] [--gpu <id|path>] [--json]",
                     "Read a vLLM or SGLang startup log, predict its KV cache numbers and "
                     "explain the difference term by term",
                     &runExplainLog});
