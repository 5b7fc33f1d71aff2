#include "size_flags.h"

#include "core/engines/engines.h"
#include "core/model/presets.h"
#include "options.h"

#include <algorithm>

namespace kvscope::cli {

void addSizeOptions(CLI::App& app, FieldTexts& texts) {
    addFieldOptions(app, texts);
}

Result<SizeInputs> resolveSizeInputs(const FieldTexts& texts) {
    Session base;
    base.model = kDefaultModelId;
    base.gpu = kDefaultGpuId;
    FieldNotes notes;
    auto session = applyFieldTexts(base, texts, &notes);
    if (!session.ok())
        return session.error();
    SizeInputs in;
    in.session = session.value();
    auto model = loadModel(in.session.model);
    if (!model.ok())
        return model.error();
    in.model = std::move(model).value();
    if (in.session.customGpu) {
        in.gpu = *in.session.customGpu;
    } else {
        auto gpu = loadGpu(in.session.gpu);
        if (!gpu.ok())
            return gpu.error();
        in.gpu = std::move(gpu).value();
    }
    if (notes.latentRequested && !in.model.mla)
        return makeError("--h-kv", "'latent' needs an MLA model (kv_lora_rank)");
    in.deployment = in.session.deployment;
    // An engine pool starts from the release's own default utilisation unless the flag says
    // otherwise; the chapter's datasheet model keeps its 0.9.
    const auto given = [&](std::string_view key) {
        return std::any_of(texts.begin(), texts.end(),
                           [&](const auto& t) { return t.first->key == key; });
    };
    if (in.deployment.poolModel == PoolModel::Vllm && !given("gpu_mem_util"))
        in.deployment.gpuMemUtil = defaultGpuMemUtil(in.deployment.engine);
    // vLLM's profiling pass size follows the GPU (engine/arg_utils.py) unless set.
    if (in.deployment.poolModel == PoolModel::Vllm && in.deployment.engine.isVllm() &&
        !given("max_num_batched_tokens"))
        in.deployment.maxNumBatchedTokens = vllmDefaultMaxNumBatchedTokens(in.gpu);
    in.session.deployment = in.deployment;
    if (auto s = validate(in.model, in.gpu, in.deployment); !s.ok())
        return s.error();
    return in;
}

Result<SizeInputs> parseSizeLine(const std::string& line) {
    CLI::App app{"", "size"};
    app.set_help_flag();
    app.allow_extras();
    FieldTexts texts;
    addSizeOptions(app, texts);
    if (const std::string err = parseLine(app, line); !err.empty())
        return makeError("", err);
    return resolveSizeInputs(texts);
}

} // namespace kvscope::cli
