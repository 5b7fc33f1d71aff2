// kvscope-cli size: one deployment, every number, with provenance.
#include "command.h"
#include "core/format.h"
#include "options.h"
#include "size_flags.h"

#include <iostream>
#include <memory>

namespace {

struct SizeArgs {
    kvscope::FieldTexts texts;
    bool json = false;
    std::string saveSession;
};

kvscope::cli::Runner setupSize(CLI::App& app) {
    auto a = std::make_shared<SizeArgs>();
    kvscope::cli::addSizeOptions(app, a->texts);
    app.add_flag("--json", a->json, "Print the report as JSON");
    app.add_option("--save-session", a->saveSession,
                   "Also write the deployment as a session file (open it with kvscope --session)")
        ->type_name("FILE");
    return [a] {
        auto in = kvscope::cli::resolveSizeInputs(a->texts);
        if (!in.ok())
            return kvscope::cli::fail(in.error().message());
        auto report = kvscope::evaluate(in->model, in->gpu, in->deployment);
        if (!report.ok())
            return kvscope::cli::fail(report.error().message());
        if (!a->saveSession.empty())
            if (auto s = kvscope::saveSessionFile(in->session, a->saveSession); !s.ok())
                return kvscope::cli::fail("--save-session: " + s.error().message());
        if (a->json)
            std::cout << kvscope::jsonReport(in->model, in->gpu, report.value()) << '\n';
        else
            std::cout << kvscope::textReport(in->model, in->gpu, report.value());
        return 0;
    };
}

} // namespace

KVSCOPE_CLI_COMMAND({"size",
                     "Bytes per token, pool, tokens held, concurrency and roofline of one "
                     "deployment",
                     &setupSize});
