// kvscope-cli plan: the smallest deployments that hold a target concurrency, and why the
// others fail.
#include "command.h"
#include "core/features/plan.h"
#include "core/model/presets.h"
#include "options.h"

#include <algorithm>
#include <iostream>
#include <memory>
#include <sstream>

namespace {

std::vector<std::string> commaList(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ','))
        if (!item.empty())
            out.push_back(item);
    return out;
}

struct PlanArgs {
    kvscope::FieldTexts texts; ///< --model, --context and the deployment base
    std::string concurrency, gpus, kvDtypes, tps;
    std::int64_t maxTp = 0, maxGpus = 0;
    bool json = false, csv = false, markdown = false;

    bool has(const char* key) const {
        return std::any_of(texts.begin(), texts.end(),
                           [key](const auto& t) { return t.first->key == key; });
    }
};

/// The schema rows plan takes: the model, the context and the pool knobs of the base.
bool planField(const kvscope::Field& f) {
    static const char* const keys[] = {"model",
                                       "context",
                                       "pool_model",
                                       "gpu_mem_util",
                                       "pool_gib",
                                       "weight_dtype",
                                       "max_num_batched_tokens",
                                       "block_size"};
    return std::find(std::begin(keys), std::end(keys), f.key) != std::end(keys);
}

/// The request's model, target and deployment base from the flags. 0, or the exit status of
/// the one error line printed.
int readTarget(const PlanArgs& a, kvscope::PlanRequest& req) {
    using kvscope::cli::fail;
    if (!a.has("model"))
        return fail("--model: missing (a preset id or a config.json path)");
    auto state = kvscope::applyFieldTexts(kvscope::Session{}, a.texts);
    if (!state.ok())
        return fail(state.error().message());
    auto model = kvscope::loadModel(state->model);
    if (!model.ok())
        return fail("--model: " + model.error().message());
    req.model = model.value();
    if (!a.has("context"))
        return fail("--context: missing (tokens per request)");
    if (a.concurrency.empty())
        return fail("--concurrency: missing (concurrent requests to hold)");
    req.context = state->deployment.context;
    req.concurrency = std::stoll(a.concurrency); // checked by the validator
    if (a.maxTp)
        req.maxTp = a.maxTp;
    if (a.maxGpus)
        req.maxGpus = a.maxGpus;
    const kvscope::Deployment& d = state->deployment;
    req.base.maxNumBatchedTokens = d.maxNumBatchedTokens;
    req.base.blockSize = d.blockSize;
    req.base.gpuMemUtil = d.gpuMemUtil;
    req.base.poolGiB = d.poolGiB;
    req.base.poolModel = d.poolModel;
    req.base.weightDtype = d.weightDtype;
    return 0;
}

/// The candidate lists --gpus, --kv-dtypes and --tps; an unset flag leaves its list empty (the
/// planner's default). 0, or the exit status of the one error line printed.
int readCandidates(const PlanArgs& a, kvscope::PlanRequest& req) {
    using kvscope::cli::fail;
    if (!a.gpus.empty()) {
        const auto ids = commaList(a.gpus);
        if (ids.empty())
            return fail("--gpus: give a comma-separated list of GPU presets or files");
        for (const auto& id : ids) {
            auto g = kvscope::loadGpu(id);
            if (!g.ok())
                return fail("--gpus: " + g.error().message());
            req.gpus.push_back(g.value());
        }
    }
    if (!a.kvDtypes.empty()) {
        const auto names = commaList(a.kvDtypes);
        if (names.empty())
            return fail("--kv-dtypes: give a comma-separated list (auto, bf16, fp8, ...)");
        for (const auto& n : names) {
            auto k = kvscope::parseKvDtype(n);
            if (!k.ok())
                return fail("--kv-dtypes: " + k.error().rule);
            req.kvDtypes.push_back(k.value());
        }
    }
    for (const auto& t : commaList(a.tps)) {
        try {
            std::size_t used = 0;
            const long long n = std::stoll(t, &used);
            if (used != t.size() || n < 1)
                throw std::invalid_argument(t);
            req.tps.push_back(n);
        } catch (const std::exception&) {
            return fail("--tps: must be positive integers, got '" + t + "'");
        }
    }
    return 0;
}

int runPlan(const PlanArgs& a) {
    using kvscope::cli::fail;
    if (int formats = a.json + a.csv + a.markdown; formats > 1)
        return fail("--json, --csv and --markdown: choose one");
    kvscope::PlanRequest req;
    if (int rc = readTarget(a, req); rc != 0)
        return rc;
    if (int rc = readCandidates(a, req); rc != 0)
        return rc;
    auto plan = kvscope::planDeployment(req);
    if (!plan.ok())
        return fail("--" + plan.error().field + ": " + plan.error().rule);
    if (a.json)
        std::cout << kvscope::planJson(plan.value());
    else if (a.csv)
        std::cout << kvscope::planCsv(plan.value());
    else if (a.markdown)
        std::cout << kvscope::planMarkdown(plan.value());
    else
        std::cout << kvscope::planText(plan.value());
    return 0;
}

CLI::Validator integer(std::int64_t min) {
    return CLI::Validator(
        [min](std::string& v) -> std::string {
            const auto n = kvscope::cli::wholeInteger(v);
            if (!n)
                return "must be an integer, got '" + v + "'";
            if (*n < min)
                return "must be at least " + std::to_string(min) + ", got " + v;
            return {};
        },
        std::string());
}

kvscope::cli::Runner setupPlan(CLI::App& app) {
    auto a = std::make_shared<PlanArgs>();
    kvscope::cli::addFieldOptions(app, a->texts, &planField);
    for (const char* required : {"--model", "--context"}) // no default here: plan needs both
        app.get_option(required)->default_str("")->description(
            app.get_option(required)->get_description() + " (required)");
    app.add_option("--concurrency", a->concurrency,
                   "Concurrent requests of --context tokens to hold")
        ->type_name("N")
        ->check(integer(0)); // planDeployment names the rule for 0
    app.add_option("--gpus", a->gpus, "GPU presets or files to consider (default: all presets)")
        ->type_name("a,b,...");
    app.add_option("--kv-dtypes", a->kvDtypes, "KV cache dtypes to consider")
        ->type_name("auto,fp8,...");
    app.add_option("--tps", a->tps, "TP sizes to consider")->type_name("1,2,...");
    app.add_option("--max-tp", a->maxTp, "Largest TP size")->type_name("N")->check(integer(1));
    app.add_option("--max-gpus", a->maxGpus, "Most GPUs in one option (TP x replicas)")
        ->type_name("N")
        ->check(integer(1));
    app.add_flag("--json", a->json, "Print the plan as JSON");
    app.add_flag("--csv", a->csv, "Print the plan as CSV");
    app.add_flag("--markdown", a->markdown, "Print the plan as a Markdown table");
    return [a] { return runPlan(*a); };
}

} // namespace

KVSCOPE_CLI_COMMAND({"plan",
                     "The smallest deployments (GPU × TP × KV dtype, replicas) that hold N "
                     "concurrent requests of S tokens, ranked, and why the others fail",
                     &setupPlan});
