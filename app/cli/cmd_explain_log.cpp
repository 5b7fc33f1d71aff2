// kvscope-cli explain-log: read a vLLM or SGLang startup log, predict its KV numbers and
// explain the difference term by term.
#include "command.h"
#include "core/explain_log.h"
#include "options.h"

#include <iostream>
#include <iterator>
#include <memory>

namespace {

struct ExplainArgs {
    std::string file, model, gpu;
    bool json = false;
};

int runExplainLog(const ExplainArgs& a) {
    using kvscope::cli::fail;
    if (a.file.empty())
        return fail("FILE: missing (a vLLM or SGLang startup log, or - for stdin)");
    const std::string& file = a.file;
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
    opt.model = a.model;
    opt.gpu = a.gpu;
    auto e = kvscope::explainEngineLog(log.value(), opt);
    if (!e.ok())
        return fail(e.error().message());
    if (a.json)
        std::cout << kvscope::explanationJson(e.value());
    else
        std::cout << kvscope::explanationText(e.value());
    return 0;
}

kvscope::cli::Runner setupExplainLog(CLI::App& app) {
    auto a = std::make_shared<ExplainArgs>();
    app.add_option("FILE", a->file, "A vLLM or SGLang startup log, or - for stdin")
        ->type_name("FILE|-");
    app.add_option("--model", a->model, "Model to explain with, instead of the one the log names")
        ->type_name("ID|PATH");
    app.add_option("--gpu", a->gpu, "GPU to explain with, instead of the one the log names")
        ->type_name("ID|PATH");
    app.add_flag("--json", a->json, "Print the explanation as JSON");
    return [a] { return runExplainLog(*a); };
}

} // namespace

KVSCOPE_CLI_COMMAND({"explain-log",
                     "Read a vLLM or SGLang startup log, predict its KV cache numbers and "
                     "explain the difference term by term",
                     &setupExplainLog});
