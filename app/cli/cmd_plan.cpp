// kvscope-cli plan: the smallest deployments that hold a target concurrency, and why the
// others fail.
#include "args.h"
#include "command.h"
#include "core/plan.h"
#include "core/presets.h"

#include <iostream>
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

int runPlan(const kvscope::cli::Args& args) {
    using kvscope::cli::fail;
    kvscope::cli::ArgParser p({"--model", "--context", "--concurrency", "--gpus", "--kv-dtypes",
                               "--tps", "--max-tp", "--max-gpus", "--pool-model", "--gpu-mem-util",
                               "--pool-gib", "--weight-dtype", "--max-num-batched-tokens",
                               "--block-size"},
                              {"--json", "--csv", "--markdown"});
    if (!p.parse(args))
        return fail(p.error());
    if (!p.positional().empty())
        return fail(p.positional().front() + ": unexpected argument");
    if (int formats = p.has("--json") + p.has("--csv") + p.has("--markdown"); formats > 1)
        return fail("--json, --csv and --markdown: choose one");

    kvscope::PlanRequest req;
    auto modelRef = p.value("--model");
    if (!modelRef)
        return fail("--model: missing (a preset id or a config.json path)");
    auto model = kvscope::loadModel(*modelRef);
    if (!model.ok())
        return fail("--model: " + model.error().message());
    req.model = model.value();
    const auto context = p.integer("--context");
    const auto concurrency = p.integer("--concurrency");
    const auto maxTp = p.integer("--max-tp");
    const auto maxGpus = p.integer("--max-gpus");
    const auto mnbt = p.integer("--max-num-batched-tokens");
    const auto block = p.integer("--block-size");
    const auto util = p.real("--gpu-mem-util");
    const auto poolGiB = p.real("--pool-gib");
    if (!p.ok())
        return fail(p.error());
    if (!context)
        return fail("--context: missing (tokens per request)");
    if (!concurrency)
        return fail("--concurrency: missing (concurrent requests to hold)");
    req.context = *context;
    req.concurrency = *concurrency;
    if (maxTp)
        req.maxTp = *maxTp;
    if (maxGpus)
        req.maxGpus = *maxGpus;
    if (mnbt) {
        if (*mnbt < 1)
            return fail("--max-num-batched-tokens: must be a positive integer");
        req.base.maxNumBatchedTokens = *mnbt;
    }
    if (block) {
        if (*block < 1)
            return fail("--block-size: must be a positive integer");
        req.base.blockSize = *block;
    }
    if (util) {
        if (!(*util > 0 && *util <= 1))
            return fail("--gpu-mem-util: must be in (0, 1]");
        req.base.gpuMemUtil = *util;
    }
    if (poolGiB) {
        if (!(*poolGiB > 0))
            return fail("--pool-gib: must be a positive number of GiB");
        req.base.poolGiB = *poolGiB;
    }
    if (auto v = p.value("--pool-model")) {
        auto pm = kvscope::parsePoolModel(*v);
        if (!pm.ok())
            return fail("--pool-model: " + pm.error().rule);
        req.base.poolModel = pm.value();
    }
    if (auto v = p.value("--weight-dtype")) {
        auto w = kvscope::parseWeightDtype(*v);
        if (!w.ok())
            return fail("--weight-dtype: " + w.error().rule);
        req.base.weightDtype = w.value();
    }
    if (auto v = p.value("--gpus")) {
        const auto ids = commaList(*v);
        if (ids.empty())
            return fail("--gpus: give a comma-separated list of GPU presets or files");
        for (const auto& id : ids) {
            auto g = kvscope::loadGpu(id);
            if (!g.ok())
                return fail("--gpus: " + g.error().message());
            req.gpus.push_back(g.value());
        }
    }
    if (auto v = p.value("--kv-dtypes")) {
        const auto names = commaList(*v);
        if (names.empty())
            return fail("--kv-dtypes: give a comma-separated list (auto, bf16, fp8, ...)");
        for (const auto& n : names) {
            auto k = kvscope::parseKvDtype(n);
            if (!k.ok())
                return fail("--kv-dtypes: " + k.error().rule);
            req.kvDtypes.push_back(k.value());
        }
    }
    if (auto v = p.value("--tps")) {
        for (const auto& t : commaList(*v)) {
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
    }
    auto plan = kvscope::planDeployment(req);
    if (!plan.ok())
        return fail("--" + plan.error().field + ": " + plan.error().rule);
    if (p.has("--json"))
        std::cout << kvscope::planJson(plan.value());
    else if (p.has("--csv"))
        std::cout << kvscope::planCsv(plan.value());
    else if (p.has("--markdown"))
        std::cout << kvscope::planMarkdown(plan.value());
    else
        std::cout << kvscope::planText(plan.value());
    return 0;
}

} // namespace

KVSCOPE_CLI_COMMAND({"plan",
                     "plan --model M --context S --concurrency N [--gpus a,b,...] "
                     "[--kv-dtypes auto,fp8,...] [--tps 1,2,...] [--max-tp 64] [--max-gpus N] "
                     "[--pool-model vllm|datasheet] [--gpu-mem-util U] [--pool-gib P] "
                     "[--weight-dtype auto|bf16|fp16|fp32|fp8|int8|int4|mxfp4|nvfp4] "
                     "[--json|--csv|--markdown]",
                     "The smallest deployments (GPU × TP × KV dtype, replicas) that hold N "
                     "concurrent requests of S tokens, ranked, and why the others fail",
                     &runPlan});
