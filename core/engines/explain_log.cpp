// The explanation of one engine log: the deployment the log describes, kvscope's prediction for
// the logged engine release, and each pool term beside the figure the engine logged.
#include "core/engines/explain_log.h"

#include "core/engines/engines.h"
#include "core/format.h"
#include "core/model/presets.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

namespace kvscope {

namespace {

constexpr double kGiB = 1073741824.0;

std::string gib(double b) {
    return fixed(b / kGiB, 2) + " GiB";
}

ExplainTerm term(std::string key, std::string label, std::string unit, double predicted,
                 std::optional<double> logged, bool inferred, std::string explanation) {
    return ExplainTerm{std::move(key), std::move(label), std::move(unit),       predicted,
                       logged,         inferred,         std::move(explanation)};
}

std::optional<double> asDouble(const std::optional<std::int64_t>& v) {
    if (!v)
        return std::nullopt;
    return static_cast<double>(*v);
}

Result<GpuSpec> pickGpu(const EngineLog& log, const ExplainOptions& opt,
                        std::vector<std::string>& notes) {
    if (!opt.gpu.empty()) {
        auto g = loadGpu(opt.gpu);
        if (!g.ok())
            return makeError("gpu", g.error().message());
        return g;
    }
    std::optional<std::int64_t> total = log.totalGpuMemoryBytes;
    if (!total && log.availBeforeWeightsBytes)
        total = log.availBeforeWeightsBytes;
    if (total) {
        // The log gives a memory size, not a name: every preset within 6% matches; the default
        // GPU wins among them, else the nearest.
        std::optional<GpuSpec> nearest;
        double nearestGap = 0.06;
        std::string others;
        for (const auto& p : gpuPresets()) {
            auto g = loadGpu(p.id);
            if (!g.ok())
                continue;
            const double gap =
                std::fabs(double(g->reportedMemoryBytes()) - double(*total)) / double(*total);
            if (gap >= 0.06)
                continue;
            others += (others.empty() ? "" : ", ") + g->id;
            if (g->id == kDefaultGpuId ||
                (gap < nearestGap && !(nearest && nearest->id == kDefaultGpuId))) {
                nearestGap = gap;
                nearest = g.value();
            }
        }
        if (nearest) {
            notes.push_back("GPU inferred from the logged memory (" + gib(double(*total)) +
                            "): " + nearest->name + " (matches " + others +
                            "); pass --gpu to choose another");
            return *nearest;
        }
    }
    std::string file = opt.fileName;
    std::transform(file.begin(), file.end(), file.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    // First a preset whose whole id, dashes dropped, is in the name ("a10080gb" is a100-80gb,
    // not a100-40gb); then the id's first token as a whole word ("h20" is not in "h200",
    // "l40" not in "l40s").
    auto named = [&](const std::string& token, bool wholeWord) {
        for (std::size_t at = file.find(token); at != std::string::npos;
             at = file.find(token, at + 1)) {
            const std::size_t end = at + token.size();
            if (!wholeWord || end == file.size() ||
                !std::isalnum(static_cast<unsigned char>(file[end])))
                return true;
        }
        return false;
    };
    for (const bool wholeId : {true, false}) {
        for (const auto& p : gpuPresets()) {
            std::string token = wholeId ? p.id : p.id.substr(0, p.id.find('-'));
            if (wholeId)
                token.erase(std::remove(token.begin(), token.end(), '-'), token.end());
            if (token.size() < 3 || !named(token, !wholeId))
                continue;
            if (auto g = loadGpu(p.id); g.ok()) {
                notes.push_back("GPU taken from the file name ('" + token + "'): " + g->name +
                                "; pass --gpu to choose another");
                return g;
            }
        }
    }
    auto g = loadGpu(kDefaultGpuId);
    if (!g.ok())
        return makeError("gpu", g.error().message());
    notes.push_back(std::string("the log does not name the GPU; assumed ") + g->name +
                    " (pass --gpu)");
    return g;
}

bool quantized(const EngineLog& log) {
    if (!log.quantization)
        return false;
    const std::string& q = *log.quantization;
    return !q.empty() && q != "None" && q != "none" && q != "auto";
}

bool nameHas(const std::string& name, std::initializer_list<const char*> tokens) {
    std::string n = name;
    std::transform(n.begin(), n.end(), n.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return std::any_of(tokens.begin(), tokens.end(),
                       [&](const char* t) { return n.find(t) != std::string::npos; });
}

/// The weight format a quantized run loaded, read off the log, for a model whose config (the
/// base model's, matched by name) declares no quantization of its own. nullopt: the log does not
/// say enough. Rules (vLLM model_executor/layers/quantization):
///  - CompressedTensorsW8A8Fp8 (compressed_tensors_w8a8_fp8.py; llm-compressor FP8_DYNAMIC:
///    fp8 values, one fp32 scale per output channel) and quantization=fp8 (fp8.py) → fp8;
///  - CompressedTensorsW8A8Int8 (compressed_tensors_w8a8_int8.py, per-channel scales) → int8;
///  - GPTQ / gptq_marlin / AWQ with a 4-bit name ("w4a16", "int4", "4bit"; AWQ is 4-bit only)
///    → int4, group 128, fp16 scales (the GPTQ/AWQ default group size);
///  - quantization=mxfp4 → mxfp4.
std::optional<WeightDtype> loggedWeightFormat(const EngineLog& log) {
    const std::string method = log.linearMethod.value_or("");
    const std::string q = log.quantization.value_or("");
    if (method.find("W8A8Fp8") != std::string::npos ||
        method.find("W8A16Fp8") != std::string::npos || q == "fp8")
        return WeightDtype::FP8;
    if (method.find("W8A8Int8") != std::string::npos)
        return WeightDtype::INT8;
    const bool gptq = method.rfind("GPTQ", 0) == 0 || q.rfind("gptq", 0) == 0;
    const bool awq = method.rfind("AWQ", 0) == 0 || q.rfind("awq", 0) == 0;
    if (awq || (gptq && nameHas(log.model, {"w4a16", "int4", "4bit", "4-bit"})))
        return WeightDtype::INT4;
    if (q == "mxfp4")
        return WeightDtype::MXFP4;
    return std::nullopt;
}

/// The deployment the log describes, for the logged release.
Deployment deploymentFor(const EngineLog& log, const ModelSpec& model, const GpuSpec& gpu,
                         std::vector<std::string>& notes) {
    Deployment d;
    d.poolModel = PoolModel::Vllm;
    d.engine = log.engineSpec();
    if (!log.version)
        notes.push_back("the log states no " + toString(d.engine.name) + " version; assumed " +
                        d.engine.text());
    d.tp = log.tp.value_or(1);
    d.pp = log.pp.value_or(1);
    d.dcp = log.dcp.value_or(1);
    if (!log.tp)
        notes.push_back("no TP size in the log; assumed 1");
    const bool isVllm = log.engine == LogEngine::Vllm;
    if (isVllm) {
        d.gpuMemUtil = log.memUtil.value_or(defaultGpuMemUtil(d.engine));
        if (!log.memUtil)
            notes.push_back("no gpu_memory_utilization in the log; " + d.engine.text() +
                            "'s default " + fixed(d.gpuMemUtil, 2));
    } else {
        d.memFractionStatic = log.memUtil;
        if (!log.memUtil)
            notes.push_back("no mem_fraction_static in the log; SGLang's default for TP " +
                            std::to_string(d.tp));
    }
    if (log.kvCacheDtype) {
        auto k = parseKvDtype(*log.kvCacheDtype);
        if (k.ok())
            d.kvDtype = k.value();
        else
            notes.push_back("kv_cache_dtype '" + *log.kvCacheDtype +
                            "' not understood; assumed "
                            "auto");
    }
    if (log.concurrencyTokens)
        d.context = *log.concurrencyTokens;
    else if (log.maxModelLen)
        d.context = *log.maxModelLen;
    else
        d.context =
            model.maxPositionEmbeddings.value > 0 ? model.maxPositionEmbeddings.value : 8192;
    // vLLM's default max_num_batched_tokens for the API server follows the GPU the same way as
    // max_num_seqs (engine/arg_utils.py): 8192 on 70+ GiB non-A100 GPUs, else 2048.
    d.maxNumBatchedTokens = log.maxNumBatchedTokens.value_or(vllmDefaultMaxNumBatchedTokens(gpu));
    if (isVllm && log.blockSize)
        d.blockSize = *log.blockSize;
    return d;
}

/// Re-sizes the report's capacity for a pool computed outside evaluate (logged weights): the
/// deployment evaluated again on that pool (--pool-gib), so the paging is core's own — the
/// hybrid allocator's groups for sliding-window models included — and the breakdown kept.
void applyPool(Report& r, const ModelSpec& m, const GpuSpec& gpu, Deployment d,
               PoolBreakdown pool) {
    if (pool.poolBytes > 0) {
        d.poolGiB = double(pool.poolBytes) / kGiB;
        if (auto again = evaluate(m, gpu, d); again.ok()) {
            const std::int64_t weights = r.weightBytesPerRank;
            r = std::move(again).value();
            r.weightBytesPerRank = weights;
            r.pool = std::move(pool);
            return;
        }
    }
    r.pool = std::move(pool);
    r.tokensCapacity = 0;
    r.maxConcurrency = 0;
    r.concurrency = 0;
    r.blocksPerRank = 0;
    r.vllmTokens = 0;
    r.vllmConcurrency = 0;
}

const PoolTerm* poolTerm(const PoolBreakdown& p, const std::string& key) {
    for (const auto& t : p.terms)
        if (t.key == key)
            return &t;
    return nullptr;
}

std::string termNote(const PoolBreakdown& p, const std::string& key) {
    const PoolTerm* t = poolTerm(p, key);
    return t ? t->rule + " — " + t->source : std::string();
}

void vllmMemoryTerms(LogExplanation& e) {
    const EngineLog& log = e.log;
    const PoolBreakdown& pool = e.report.pool;
    const Deployment& d = e.scenario.deployment;
    std::optional<double> loggedBudget = asDouble(log.requestedBytes);
    if (!loggedBudget && log.totalGpuMemoryBytes)
        loggedBudget = d.gpuMemUtil * double(*log.totalGpuMemoryBytes);
    e.terms.push_back(term("budget", "util × GPU memory", "B", double(pool.budgetBytes),
                           loggedBudget, false, termNote(pool, "budget")));
    e.terms.push_back(term("weights", "weights per rank", "B", double(pool.weightBytes),
                           asDouble(log.weightBytes), false,
                           e.usedLoggedWeights
                               ? "the logged figure"
                               : "as loaded (core/model/weights.cpp), " +
                                     toString(e.report.weightDtype) +
                                     "; shards / TP + replicated tensors + rotary cache"));
    e.terms.push_back(term("activation", "activation peak (torch peak increase)", "B",
                           double(pool.activationPeakBytes), asDouble(log.activationPeakBytes),
                           false, termNote(pool, "activation")));
    e.terms.push_back(
        term("non_torch", "non-torch memory", "B",
             double(pool.cudaContextBytes + pool.ncclBytes + pool.customAllReduceBytes),
             asDouble(log.nonTorchBytes), false, termNote(pool, "non_torch")));
    std::optional<double> loggedGraphs = asDouble(log.cudaGraphEstimateBytes);
    const bool graphsInferred = !loggedGraphs && log.cudaGraphBytes;
    if (graphsInferred)
        loggedGraphs = asDouble(log.cudaGraphBytes);
    e.terms.push_back(
        term("cuda_graphs", "CUDA graphs (estimate)", "B", double(pool.cudaGraphEstimateBytes),
             loggedGraphs, graphsInferred,
             termNote(pool, "cuda_graphs") +
                 (graphsInferred ? "; logged = captured after sizing the pool" : "")));
    const double predictedOverhead = double(pool.activationPeakBytes + pool.nonTorchBytes());
    std::optional<double> loggedOverhead;
    bool inferred = false;
    if (log.nonTorchBytes && log.activationPeakBytes) {
        loggedOverhead = double(*log.nonTorchBytes + *log.activationPeakBytes);
    } else if (log.weightBytes && log.availableKvBytes) {
        const double budget = loggedBudget ? *loggedBudget : double(pool.budgetBytes);
        loggedOverhead = budget - double(*log.weightBytes) - double(*log.availableKvBytes);
        inferred = true;
    }
    e.terms.push_back(term("overhead", "all non-weight memory taken off the budget", "B",
                           predictedOverhead, loggedOverhead, inferred,
                           inferred ? "logged value inferred as budget − weights − KV memory"
                                    : "activation peak + non-torch memory (+ CUDA graphs from "
                                      "0.21)"));
    e.terms.push_back(term("pool", "KV cache memory per rank", "B", double(pool.stagePoolBytes),
                           asDouble(log.availableKvBytes), false, termNote(pool, "pool")));
}

void vllmTokenTerms(LogExplanation& e) {
    const EngineLog& log = e.log;
    const Report& r = e.report;
    const Deployment& d = e.scenario.deployment;
    std::optional<double> loggedTokens = asDouble(log.kvTokens);
    if (!loggedTokens && log.numGpuBlocks)
        loggedTokens = double(*log.numGpuBlocks * d.blockSize);
    std::optional<double> loggedCell;
    if (log.availableKvBytes && loggedTokens && *loggedTokens > 0)
        loggedCell = double(*log.availableKvBytes) / *loggedTokens;
    const double stageCell = double(r.cellBytesPerTokenPerLayerPerRank) *
                             double(d.pp > 1 ? r.pool.stageLayers : r.layers);
    e.terms.push_back(term("cell", "bytes per token per rank", "B", stageCell, loggedCell, true,
                           "(head_size + head_size_v) · b · KV heads per rank · layers = " +
                               withCommas(std::llround(stageCell)) +
                               " B; logged = KV memory / tokens (carries block rounding)"));
    e.terms.push_back(term("page", "vLLM page (all layers)", "B",
                           double(r.pageBytes) * double(r.layers), std::nullopt, false,
                           withCommas(r.pageBytes) + " B per layer × " + std::to_string(r.layers) +
                               " layers, " + std::to_string(d.blockSize) + " tokens per block"));
    e.terms.push_back(term("tokens", "GPU KV cache size", "tokens", double(r.vllmTokens),
                           loggedTokens, false,
                           "floor(pool / page) blocks × block size × DCP (= int(concurrency × "
                           "max_model_len) for one full-attention group)"));
    if (log.availableKvBytes && r.pageBytes > 0 && stageCell > 0) {
        const std::int64_t blocks = std::llround(
            std::floor(double(*log.availableKvBytes) / (stageCell * double(d.blockSize))));
        e.terms.push_back(term("tokens_from_logged_pool",
                               "tokens kvscope computes from the logged KV memory", "tokens",
                               double(blocks * d.blockSize * d.dcp), loggedTokens, false,
                               "block rounding on the logged pool; equal to the logged tokens "
                               "means the cell and paging agree and the gap is the pool"));
    }
    e.terms.push_back(term("concurrency",
                           "maximum concurrency at " + withCommas(d.context) + " tokens", "x",
                           r.vllmConcurrency, log.concurrency, false, "tokens / max_model_len"));
}

void sglangTerms(LogExplanation& e) {
    const EngineLog& log = e.log;
    const Report& r = e.report;
    const PoolBreakdown& pool = r.pool;
    const double f = pool.memFractionStatic;
    std::optional<double> loggedBudget;
    if (log.availBeforeWeightsBytes)
        loggedBudget = f * double(*log.availBeforeWeightsBytes);
    e.terms.push_back(term("budget", "mem_fraction_static × free memory at start", "B",
                           double(pool.budgetBytes), loggedBudget, false,
                           termNote(pool, "budget") +
                               "; SGLang keeps the other (1 − mem_fraction_static) for "
                               "activations and CUDA graphs"));
    const PoolTerm* slack = poolTerm(pool, "allocator");
    const std::int64_t slackBytes = slack ? slack->bytes : 0;
    e.terms.push_back(
        term("weights", "weights per rank (mem usage)", "B", double(pool.weightBytes + slackBytes),
             asDouble(log.weightBytes), false,
             e.usedLoggedWeights
                 ? "the logged figure"
                 : gib(double(pool.weightBytes)) + " of tensors + " + gib(double(slackBytes)) +
                       " of caching-allocator rounding; mem usage is a drop in free memory "
                       "(get_available_gpu_memory), so it sees the allocator's segments"));
    std::optional<double> loggedPool;
    if (log.kSizeBytes && log.vSizeBytes)
        loggedPool = double(*log.kSizeBytes + *log.vSizeBytes);
    else if (log.latentSizeBytes)
        loggedPool = double(*log.latentSizeBytes);
    e.terms.push_back(term("pool", "KV pool per rank", "B", double(pool.poolBytes), loggedPool,
                           false, termNote(pool, "pool")));
    const double cell = double(r.cellBytesPerTokenPerRank);
    std::optional<double> loggedCell;
    if (loggedPool && log.kvTokens && *log.kvTokens > 0)
        loggedCell = *loggedPool / double(*log.kvTokens);
    e.terms.push_back(term("cell", "bytes per token per rank", "B", cell, loggedCell, true,
                           "KV heads per rank × (head_dim + v_head_dim) × L × b (MLA: the "
                           "latent, on every rank); logged = (K + V size) / #tokens"));
    e.terms.push_back(term("tokens", "max_total_num_tokens (#tokens)", "tokens",
                           double(engineTokens(r)), asDouble(log.kvTokens), false,
                           "pool / cell, page size 1: no block rounding"));
    if (log.availAfterWeightsBytes && log.availAfterPoolBytes) {
        const std::int64_t context = e.scenario.deployment.context;
        // The logged #tokens, so the term checks the allocation rule apart from the token error.
        const std::int64_t tokens = log.kvTokens.value_or(r.tokensCapacity);
        const std::int64_t slots = log.maxRunningRequests.value_or(sglangReqSlots(tokens, context));
        e.terms.push_back(term("pool_reserved",
                               "memory the pool took (K, V buffers + req_to_token)", "B",
                               double(sglangPoolReservedBytes(r, tokens, context, slots)),
                               double(*log.availAfterWeightsBytes - *log.availAfterPoolBytes), true,
                               "2 × L buffers of (#tokens + 1) rows and " + withCommas(slots) +
                                   " × (" + withCommas(context) +
                                   " + 4) int32, each rounded by the caching allocator; "
                                   "logged = avail after weights − avail at Memory pool end"));
    }
    if (log.availAfterWeightsBytes && log.availBeforeWeightsBytes && cell > 0) {
        const double rest =
            double(*log.availAfterWeightsBytes) - double(*log.availBeforeWeightsBytes) * (1 - f);
        e.terms.push_back(
            term("tokens_from_logged_pool", "tokens kvscope computes from the logged free memory",
                 "tokens", std::floor(std::max(rest, 0.0) / cell), asDouble(log.kvTokens), false,
                 "SGLang's formula on the logged numbers with kvscope's cell"));
    }
}

/// Which memory term moved the tokens most, and the one-line summary.
void summarise(LogExplanation& e) {
    const ExplainTerm* tokens = nullptr;
    for (const auto& t : e.terms)
        if (t.key == "tokens")
            tokens = &t;
    const ExplainTerm* budget = nullptr;
    const ExplainTerm* pool = nullptr;
    double worst = 0;
    for (const auto& t : e.terms) {
        if (t.key == "budget")
            budget = &t;
        if (t.key == "pool")
            pool = &t;
        const bool memory = t.unit == "B" && t.logged && t.key != "pool" && t.key != "cell" &&
                            t.key != "pool_reserved" && t.key != "overhead" &&
                            !(t.key == "cuda_graphs" && t.inferred);
        if (memory && std::fabs(t.predicted - *t.logged) > worst) {
            worst = std::fabs(t.predicted - *t.logged);
            e.mainTerm = t.key + " (" + (t.predicted > *t.logged ? "kvscope " : "engine ") +
                         gib(worst) + " more)";
        }
    }
    if (e.mainTerm.empty())
        for (const auto& t : e.terms)
            if (t.key == "overhead" && t.logged)
                e.mainTerm = "overhead (" + gib(std::fabs(t.predicted - *t.logged)) + " apart)";
    if (pool && budget && pool->logged && budget->logged && *pool->logged < 0.1 * *budget->logged)
        e.smallPool = true;
    if (!tokens || !tokens->logged) {
        e.summary = "kvscope predicts " + withCommas(std::llround(tokens ? tokens->predicted : 0)) +
                    " tokens; the log states no token count to compare";
        return;
    }
    const double diff = tokens->predicted - *tokens->logged;
    e.tokensError = diff / std::max(1.0, *tokens->logged);
    e.summary = "kvscope predicts " + withCommas(std::llround(tokens->predicted)) +
                " tokens, the log says " + withCommas(std::llround(*tokens->logged)) + " (" +
                (diff >= 0 ? "+" : "") + fixed(100.0 * *e.tokensError, 1) + " %)";
    if (!e.mainTerm.empty())
        e.summary += "; the largest memory difference is " + e.mainTerm;
}

/// A refused run: the engine's error, and kvscope's own verdict on the same deployment.
Error refusedRun(const EngineLog& log, const ExplainOptions& opt) {
    std::string why = "the engine refused this run (line " + std::to_string(log.refusalLine) +
                      "): " + *log.refusal;
    auto ref = opt.model.empty() ? matchModelName(log.model, opt.configDirs)
                                 : Result<std::string>(opt.model);
    if (ref.ok())
        if (auto model = loadModel(ref.value()); model.ok()) {
            Deployment d;
            d.tp = log.tp.value_or(1);
            d.pp = log.pp.value_or(1);
            const GpuSpec gpu = loadGpu(kDefaultGpuId).value();
            if (auto s = validate(model.value(), gpu, d); !s.ok())
                why += "; kvscope refuses it too — " + s.error().message();
            if (model->vocab.value % d.tp != 0)
                why += "; the vocabulary (" + withCommas(model->vocab.value) +
                       " tokens) does not split evenly over TP " + std::to_string(d.tp);
        }
    return makeError("log", why);
}

} // namespace

Result<LogExplanation> explainEngineLog(const EngineLog& log, const ExplainOptions& opt) {
    if (log.refusal && !log.availableKvBytes && !log.kvTokens && !log.numGpuBlocks)
        return refusedRun(log, opt);
    LogExplanation e;
    e.log = log;
    auto ref = opt.model.empty() ? matchModelName(log.model, opt.configDirs)
                                 : Result<std::string>(opt.model);
    if (!ref.ok())
        return ref.error();
    e.modelRef = ref.value();
    auto model = loadModel(e.modelRef);
    if (!model.ok())
        return makeError("model", model.error().message());
    auto gpuR = pickGpu(log, opt, e.notes);
    if (!gpuR.ok())
        return gpuR.error();
    GpuSpec gpu = gpuR.value();
    if (log.totalGpuMemoryBytes) {
        gpu.driverMemoryBytes = *log.totalGpuMemoryBytes;
        gpu.driverMemorySource = "total_memory in the log";
    } else if (log.engine == LogEngine::Sglang && log.availBeforeWeightsBytes) {
        // sglangPool takes the CUDA context off the driver total; undo that for the logged free.
        gpu.driverMemoryBytes = *log.availBeforeWeightsBytes + std::llround(0.51 * kGiB);
        gpu.driverMemorySource = "free memory before weights in the log + CUDA context";
    }
    Deployment d = deploymentFor(log, model.value(), gpu, e.notes);
    // A quantized checkpoint matched to its base model's config: size the weights in the format
    // the log shows vLLM loading (core/model/weights.cpp), unless the config declares its own.
    std::optional<WeightDtype> format;
    if (quantized(log) && !model->weights.quant.present) {
        format = loggedWeightFormat(log);
        if (format) {
            d.weightDtype = *format;
            e.notes.push_back("weights sized as " + toString(*format) + " (" +
                              log.linearMethod.value_or("quantization=" + *log.quantization) +
                              " in the log) on the base model's config");
        }
    }
    const bool formatKnown = !quantized(log) || model->weights.quant.present || format;
    auto report = evaluate(model.value(), gpu, d);
    if (!report.ok())
        return report.error();
    e.scenario = Scenario{model.value(), gpu, d};
    e.report = report.value();
    // Quantized checkpoints, and checkpoints whose logged weights kvscope's count misses by over
    // 5% (vision towers, unlisted tensors), are sized with the logged weights so the pool terms
    // stand alone; the mark says so.
    const double counted = double(e.report.weightBytesPerRank);
    const bool offCount = log.weightBytes && std::fabs(counted - double(*log.weightBytes)) >
                                                 0.05 * double(*log.weightBytes);
    e.usedLoggedWeights = log.weightBytes && (opt.loggedWeights || !formatKnown || offCount);
    if (e.usedLoggedWeights) {
        e.marks.push_back(opt.loggedWeights ? std::string("weights: logged (--logged-weights)")
                          : !formatKnown    ? "weights: logged (" + *log.quantization + ")"
                          : offCount ? "weights: logged (kvscope counts " + gib(counted) + ")"
                                     : std::string("weights: logged (--logged-weights)"));
        // SGLang's logged mem usage already holds the allocator's rounding, which its pool
        // model adds to the tensor bytes.
        const std::int64_t slack =
            log.engine == LogEngine::Sglang ? sglangWeightSlackBytes(model.value(), d) : 0;
        applyPool(e.report, model.value(), gpu, d,
                  computePool(model.value(), gpu, d, *log.weightBytes - slack));
    }
    if (model->windowLayerCount() > 0)
        e.marks.push_back("hybrid: window layers");
    if (log.engine == LogEngine::Vllm) {
        vllmMemoryTerms(e);
        vllmTokenTerms(e);
    } else {
        sglangTerms(e);
    }
    summarise(e);
    return e;
}

Result<std::vector<FleetRow>> explainFolder(const std::string& dir, const ExplainOptions& opt) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        return makeError("log", "not a folder: " + dir);
    std::vector<std::string> files;
    for (auto it = fs::recursive_directory_iterator(dir, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
        if (it->is_regular_file(ec) && it->path().extension() == ".log")
            files.push_back(it->path().string());
    if (ec)
        return makeError("log", "cannot list " + dir + ": " + ec.message());
    std::sort(files.begin(), files.end());
    std::vector<FleetRow> rows;
    for (const auto& f : files) {
        FleetRow row;
        row.file = fs::relative(f, dir, ec).string();
        ExplainOptions fileOpt = opt;
        fileOpt.fileName = row.file;
        auto log = loadEngineLog(f);
        row.explanation =
            log.ok() ? explainEngineLog(log.value(), fileOpt) : Result<LogExplanation>(log.error());
        rows.push_back(std::move(row));
    }
    return rows;
}

FleetStats fleetStats(const std::vector<FleetRow>& rows, bool denseOnly) {
    FleetStats s;
    std::vector<double> errs;
    for (const auto& r : rows) {
        if (!r.explanation.ok()) {
            ++s.failed;
            continue;
        }
        ++s.explained;
        const LogExplanation& e = r.explanation.value();
        if (denseOnly && std::any_of(e.marks.begin(), e.marks.end(), [](const std::string& m) {
                return m.rfind("hybrid", 0) == 0;
            }))
            continue;
        if (e.smallPool) {
            ++s.smallPools;
            continue;
        }
        if (!e.tokensError)
            continue;
        const double a = std::fabs(*e.tokensError);
        errs.push_back(a);
        if (a >= s.worstAbsError) {
            s.worstAbsError = a;
            s.worstFile = r.file;
        }
    }
    if (!errs.empty()) {
        std::sort(errs.begin(), errs.end());
        const std::size_t n = errs.size();
        s.medianAbsError = n % 2 ? errs[n / 2] : (errs[n / 2 - 1] + errs[n / 2]) / 2;
    }
    return s;
}

} // namespace kvscope
