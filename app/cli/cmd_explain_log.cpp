// kvscope-cli explain-log: read a vLLM or SGLang startup log (or a folder of them), predict
// its KV numbers for the logged engine release and explain the difference term by term.
#include "command.h"
#include "core/engines/explain_log.h"
#include "options.h"

#include <filesystem>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>

namespace {

std::vector<std::string> splitComma(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    for (std::string part; std::getline(in, part, ',');)
        if (!part.empty())
            out.push_back(part);
    return out;
}

struct ExplainArgs {
    std::string file, model, gpu, configs;
    bool json = false, loggedWeights = false;
};

int runExplainLog(const ExplainArgs& a) {
    using kvscope::cli::fail;
    if (a.file.empty())
        return fail("FILE: missing (a vLLM or SGLang startup log, a folder of them, or -)");
    const std::string& file = a.file;
    kvscope::ExplainOptions opt;
    opt.model = a.model;
    opt.gpu = a.gpu;
    opt.loggedWeights = a.loggedWeights;
    opt.configDirs = splitComma(a.configs);
    std::error_code ec;
    if (file != "-" && std::filesystem::is_directory(file, ec)) {
        auto rows = kvscope::explainFolder(file, opt);
        if (!rows.ok())
            return fail(rows.error().message());
        std::cout << (a.json ? kvscope::fleetJson(rows.value()) : kvscope::fleetText(rows.value()));
        return 0;
    }
    opt.fileName = file;
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
    auto e = kvscope::explainEngineLog(log.value(), opt);
    if (!e.ok())
        return fail(file + ": " + e.error().message());
    if (a.json)
        std::cout << kvscope::explanationJson(e.value());
    else
        std::cout << kvscope::explanationText(e.value());
    return 0;
}

kvscope::cli::Runner setupExplainLog(CLI::App& app) {
    auto a = std::make_shared<ExplainArgs>();
    app.add_option("FILE", a->file,
                   "A vLLM or SGLang startup log, a folder of *.log, or - for "
                   "stdin")
        ->type_name("FILE|DIR|-");
    app.add_option("--model", a->model, "Model to explain with, instead of the one the log names")
        ->type_name("ID|PATH");
    app.add_option("--gpu", a->gpu, "GPU to explain with, instead of the one the log names")
        ->type_name("ID|PATH");
    app.add_option("--configs", a->configs, "Folders of config.json files to find the model in")
        ->type_name("DIR[,DIR]");
    app.add_flag("--logged-weights", a->loggedWeights,
                 "Take the weight memory the log reports instead of counting it");
    app.add_flag("--json", a->json, "Print the explanation as JSON");
    return [a] { return runExplainLog(*a); };
}

} // namespace

KVSCOPE_CLI_COMMAND({"explain-log",
                     "Read a vLLM or SGLang startup log (or every *.log in a folder), predict its "
                     "KV cache numbers for the logged engine release and explain the difference "
                     "term by term",
                     &setupExplainLog});
