// kvscope-cli explain-log: read a vLLM or SGLang startup log (or a folder of them), predict
// its KV numbers for the logged engine release and explain the difference term by term.
#include "args.h"
#include "command.h"
#include "core/explain_log.h"

#include <filesystem>
#include <iostream>
#include <iterator>
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

int runExplainLog(const kvscope::cli::Args& args) {
    using kvscope::cli::fail;
    kvscope::cli::ArgParser p({"--model", "--gpu", "--configs"}, {"--json", "--logged-weights"});
    if (!p.parse(args))
        return fail(p.error());
    if (p.positional().size() != 1)
        return fail(p.positional().empty()
                        ? "FILE: missing (a vLLM or SGLang startup log, a folder of them, or -)"
                        : p.positional()[1] + ": unexpected argument (one log file or folder)");
    const std::string& file = p.positional().front();
    kvscope::ExplainOptions opt;
    opt.model = p.value("--model").value_or("");
    opt.gpu = p.value("--gpu").value_or("");
    opt.loggedWeights = p.has("--logged-weights");
    opt.configDirs = splitComma(p.value("--configs").value_or(""));
    std::error_code ec;
    if (file != "-" && std::filesystem::is_directory(file, ec)) {
        auto rows = kvscope::explainFolder(file, opt);
        if (!rows.ok())
            return fail(rows.error().message());
        std::cout << (p.has("--json") ? kvscope::fleetJson(rows.value())
                                      : kvscope::fleetText(rows.value()));
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
    if (p.has("--json"))
        std::cout << kvscope::explanationJson(e.value());
    else
        std::cout << kvscope::explanationText(e.value());
    return 0;
}

} // namespace

KVSCOPE_CLI_COMMAND({"explain-log",
                     "explain-log FILE|DIR|- [--model <id|path>] [--gpu <id|path>] "
                     "[--configs DIR[,DIR]] [--logged-weights] [--json]",
                     "Read a vLLM or SGLang startup log (or every *.log in a folder), predict its "
                     "KV cache numbers for the logged engine release and explain the difference "
                     "term by term",
                     &runExplainLog});
