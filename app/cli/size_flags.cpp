#include "size_flags.h"

#include "args.h"
#include "core/presets.h"

namespace kvscope::cli {

const std::set<std::string>& sizeValueFlags() {
    static const std::set<std::string> flags = {"--model",
                                                "--tp",
                                                "--dcp",
                                                "--h-kv",
                                                "--kv-dtype",
                                                "--weight-dtype",
                                                "--context",
                                                "--batch",
                                                "--gpu",
                                                "--gpu-mem-util",
                                                "--pool-model",
                                                "--pool-gib",
                                                "--max-num-batched-tokens",
                                                "--block-size",
                                                "--engine",
                                                "--pp",
                                                "--mem-fraction-static"};
    return flags;
}

Result<SizeInputs> parseSizeFlags(const std::vector<std::string>& args,
                                  const std::set<std::string>& extraSwitches) {
    ArgParser p(sizeValueFlags(), extraSwitches);
    if (!p.parse(args))
        return makeError("", p.error());
    if (!p.positional().empty())
        return makeError(p.positional().front(), "unexpected argument");
    SizeInputs in;
    in.json = p.has("--json");
    in.csv = p.has("--csv");
    auto model = loadModel(p.value("--model").value_or(kDefaultModelId));
    if (!model.ok())
        return model.error();
    in.model = std::move(model).value();
    auto gpu = loadGpu(p.value("--gpu").value_or(kDefaultGpuId));
    if (!gpu.ok())
        return gpu.error();
    in.gpu = std::move(gpu).value();

    Deployment& d = in.deployment;
    auto intFlag = [&](const char* flag, std::int64_t& out) {
        if (auto v = p.integer(flag))
            out = *v;
    };
    intFlag("--tp", d.tp);
    intFlag("--dcp", d.dcp);
    intFlag("--context", d.context);
    intFlag("--batch", d.batch);
    intFlag("--max-num-batched-tokens", d.maxNumBatchedTokens);
    intFlag("--block-size", d.blockSize);
    intFlag("--pp", d.pp);
    if (auto v = p.value("--engine")) {
        auto e = parseEngineSpec(*v);
        if (!e.ok())
            return makeError("--engine", e.error().rule);
        d.engine = e.value();
    }
    if (auto v = p.real("--mem-fraction-static"))
        d.memFractionStatic = *v;
    if (auto v = p.value("--h-kv")) {
        if (*v == "latent" || *v == "mla") {
            if (!in.model.mla)
                return makeError("--h-kv", "'latent' needs an MLA model (kv_lora_rank)");
        } else if (auto k = p.integer("--h-kv")) {
            d.kvHeads = *k;
        }
    }
    if (auto v = p.real("--gpu-mem-util"))
        d.gpuMemUtil = *v;
    if (auto v = p.real("--pool-gib"))
        d.poolGiB = *v;
    if (!p.ok())
        return makeError("", p.error());
    if (auto v = p.value("--kv-dtype")) {
        auto k = parseKvDtype(*v);
        if (!k.ok())
            return k.error();
        d.kvDtype = k.value();
    }
    if (auto v = p.value("--weight-dtype")) {
        auto w = parseWeightDtype(*v);
        if (!w.ok())
            return w.error();
        d.weightDtype = w.value();
    }
    if (auto v = p.value("--pool-model")) {
        auto pm = parsePoolModel(*v);
        if (!pm.ok())
            return pm.error();
        d.poolModel = pm.value();
    }
    // An engine pool starts from the release's own default utilisation unless the flag says
    // otherwise; the chapter's datasheet model keeps its 0.9.
    if (d.poolModel == PoolModel::Vllm && !p.real("--gpu-mem-util"))
        d.gpuMemUtil = defaultGpuMemUtil(d.engine);
    if (auto s = validate(in.model, in.gpu, d); !s.ok())
        return s.error();
    return in;
}

std::vector<std::string> splitWords(const std::string& text) {
    std::vector<std::string> out;
    std::string cur;
    char quote = 0;
    bool inWord = false;
    for (char c : text) {
        if (quote) {
            if (c == quote)
                quote = 0;
            else
                cur.push_back(c);
        } else if (c == '"' || c == '\'') {
            quote = c;
            inWord = true;
        } else if (c == ' ' || c == '\t' || c == '\n') {
            if (inWord)
                out.push_back(cur);
            cur.clear();
            inWord = false;
        } else {
            cur.push_back(c);
            inWord = true;
        }
    }
    if (inWord)
        out.push_back(cur);
    return out;
}

} // namespace kvscope::cli
