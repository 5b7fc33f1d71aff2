#include "core/features/report_fields.h"

#include "core/engines/engines.h"
#include "core/format.h"

#include <cmath>
#include <cstdio>

namespace kvscope {

namespace {

struct Inputs {
    const Report& r;
    const ModelSpec* m;
    const GpuSpec* g;
};

enum class Needs { Report, Model, Gpu };
using Reader = std::optional<double> (*)(const Inputs&);
using Shown = bool (*)(const Inputs&);

/// One fixed row: where it goes, how it reads. Per-group and per-term rows are built below.
struct Def {
    const char* key;
    const char* name; ///< nullptr: the key is the name
    const char* label;
    const char* unit;
    int precision; ///< < 0: an integer
    Needs needs;
    Reader read;
    Shown shown = nullptr;
    const char* alsoAt = nullptr;
    bool panel = false;
    std::string (*source)(const Inputs&) = nullptr;
};

// Readers: R for the report, M for the model, G for the GPU.
#define R(expr)                                                                                    \
    [](const Inputs& in) -> std::optional<double> {                                                \
        [[maybe_unused]] const Report& r = in.r;                                                   \
        return static_cast<double>(expr);                                                          \
    }
#define M(expr)                                                                                    \
    [](const Inputs& in) -> std::optional<double> {                                                \
        const ModelSpec& m = *in.m;                                                                \
        return static_cast<double>(expr);                                                          \
    }
#define G(expr)                                                                                    \
    [](const Inputs& in) -> std::optional<double> {                                                \
        const GpuSpec& g = *in.g;                                                                  \
        return static_cast<double>(expr);                                                          \
    }

constexpr int kInt = -1;
constexpr Needs kR = Needs::Report;
constexpr Needs kM = Needs::Model;
constexpr Needs kG = Needs::Gpu;
constexpr bool kPanel = true;

bool ppStages(const Inputs& in) {
    return in.r.pool.pp > 1;
}
bool sglangPool(const Inputs& in) {
    const PoolBreakdown& p = in.r.pool;
    return p.engine.name == EngineName::Sglang && p.model == PoolModel::Vllm && !p.overridden;
}

struct Section {
    const char* title;
    std::vector<Def> rows;
};

Section modelRows() {
    return {"Model",
            {
                {"model.layers", "layers", "Layers (L)", "", kInt, kR, R(r.layers)},
                {"model.q_heads", "q_heads", "Query heads (h)", "", kInt, kR, R(r.qHeads)},
                {"model.kv_heads", "kv_heads", "KV heads (h_kv)", "", kInt, kR, R(r.kvHeads)},
                {"model.kv_heads_checkpoint", "kv_heads_checkpoint", "KV heads of the checkpoint",
                 "", kInt, kM, M(m.kvHeads.value)},
                {"model.head_dim", "head_dim", "Head dim (d_h)", "", kInt, kM, M(m.headDim.value)},
                {"model.hidden", "hidden", "Hidden size (d)", "", kInt, kM, M(m.hidden.value)},
                {"key_dim", nullptr, "Key width per head", "", kInt, kR, R(r.keyDim)},
                {"value_dim", nullptr, "Value width per head", "", kInt, kR, R(r.valueDim)},
                {"model.kv_lora_rank", "kv_lora_rank", "KV LoRA rank (r)", "", kInt, kR,
                 R(r.kvLoraRank)},
                {"model.qk_rope_head_dim", "qk_rope_head_dim", "Rotary key dim (d_rope)", "", kInt,
                 kR, R(r.qkRopeHeadDim)},
                {"model.routed_experts", "routed_experts", "Routed experts", "", kInt, kM,
                 M(m.routedExperts.value)},
                {"model.params", "params_total", "Parameters", "", kInt, kR, R(r.params.total())},
                {"model.params_vision", "params_vision", "Vision tower parameters", "", kInt, kR,
                 R(r.params.vision)},
                {"model.params_mtp", "params_mtp", "MTP layer parameters", "", kInt, kR,
                 R(r.params.mtp)},
                {"model.mtp_layers", "mtp_layers", "MTP layers (not allocated)", "", kInt, kM,
                 M(m.mtpLayers.value)},
                {"kv_bytes_per_element", nullptr, "KV bytes per element", "B", kInt, kR,
                 R(r.kvBytesPerElement)},
                {"kv_storage_bits", nullptr, "KV bits per element", "bits", kInt, kR,
                 R(r.kvStorageBits)},
            }};
}

Section parallelRows() {
    return {
        "Parallelism",
        {
            {"tp", nullptr, "Tensor-parallel size", "", kInt, kR, R(r.tp)},
            {"dcp", nullptr, "Decode context parallel size", "", kInt, kR, R(r.dcp)},
            {"q_heads_per_rank", nullptr, "Query heads per rank", "", kInt, kR, R(r.qHeadsPerRank)},
            {"kv_heads_per_rank", nullptr, "KV heads per rank", "", kInt, kR, R(r.kvHeadsPerRank)},
            {"kv_copies", nullptr, "Ranks holding each KV head", "", kInt, kR, R(r.kvCopies)},
            {"group_size", nullptr, "Group size g = h / h_kv", "", 2, kR, R(r.groupSize)},
            {"group_size_per_rank", nullptr, "Query heads per KV head on a rank", "", 2, kR,
             R(r.groupSizePerRank)},
        }};
}

Section cellRows() {
    return {
        "Cell",
        {
            {"cell_bytes_per_token", nullptr, "KV cell per token (all layers)", "B", kInt, kR,
             R(r.cellBytesPerToken)},
            {"cell_bytes_per_token_per_rank", nullptr, "KV cell per token per rank", "B", kInt, kR,
             R(r.cellBytesPerTokenPerRank)},
            {"cell_bytes_per_token_per_layer_per_rank", nullptr,
             "KV cell per token per layer per rank", "B", kInt, kR,
             R(r.cellBytesPerTokenPerLayerPerRank)},
            {"per_token_layers", nullptr, "Layers that store per-token KV", "", kInt, kR,
             R(r.perTokenLayers)},
            {"fixed_state_bytes_per_request_per_rank", nullptr, "Fixed state per request per rank",
             "B", kInt, kR, R(r.fixedStateBytesPerRequestPerRank)},
            {"context", nullptr, "Context per request (S)", "tokens", kInt, kR, R(r.context)},
            {"batch", nullptr, "Batch (B)", "requests", kInt, kR, R(r.batch)},
            {"context_per_rank", nullptr, "Context per rank (S / DCP)", "tokens", kInt, kR,
             R(r.contextPerRank)},
            {"request_bytes", nullptr, "One request's KV (all ranks)", "B", kInt, kR,
             R(r.requestBytes)},
            {"request_bytes_per_rank", nullptr, "One request's KV per rank", "B", kInt, kR,
             R(r.requestBytesPerRank)},
        }};
}

Section poolRows() {
    return {"Pool",
            {
                {"pool.capacity_bytes", "pool_capacity_bytes", "Memory the pool starts from", "B",
                 kInt, kR, R(r.pool.capacityBytes)},
                {"pool.gpu_memory_utilization", "pool_util", "Memory utilisation", "", 2, kR,
                 R(r.pool.util)},
                {"pool.budget_bytes", "pool_budget_bytes", "util × memory", "B", kInt, kR,
                 R(r.pool.budgetBytes)},
                {"pool.weight_bytes", "pool_weight_bytes_per_rank", "Weights per rank (pool)", "B",
                 kInt, kR, R(r.pool.weightBytes)},
                {"pool.activation_peak_bytes", "pool_activation_peak_bytes", "Activation peak", "B",
                 kInt, kR, R(r.pool.activationPeakBytes)},
                {"pool.cuda_graph_bytes", "pool_cuda_graph_bytes", "CUDA graphs", "B", kInt, kR,
                 R(r.pool.cudaGraphBytes)},
                {"pool.cuda_graph_estimate_bytes", "pool_cuda_graph_estimate_bytes",
                 "CUDA graphs (vLLM's estimate)", "B", kInt, kR, R(r.pool.cudaGraphEstimateBytes)},
                {"pool.nccl_bytes", "pool_nccl_bytes", "NCCL buffers", "B", kInt, kR,
                 R(r.pool.ncclBytes)},
                {"pool.custom_all_reduce_bytes", "pool_custom_all_reduce_bytes",
                 "Custom all-reduce buffers", "B", kInt, kR, R(r.pool.customAllReduceBytes)},
                {"pool.cuda_context_bytes", "pool_cuda_context_bytes",
                 "CUDA context + cuBLAS workspace", "B", kInt, kR, R(r.pool.cudaContextBytes)},
                {"pool.non_torch_bytes", "pool_non_torch_bytes", "Non-torch memory", "B", kInt, kR,
                 R(r.pool.nonTorchBytes())},
                {"pool.max_num_seqs", "pool_max_num_seqs", "Profiling pass rows (max_num_seqs)", "",
                 kInt, kR, R(r.pool.maxNumSeqs)},
                {"pool.stages.pp", "pp", "Pipeline stages", "", kInt, kR, R(r.pool.pp), ppStages},
                {"pool.stages.limiting_stage", "pool_limiting_stage", "Limiting stage", "", kInt,
                 kR, R(r.pool.limitingStage), ppStages},
                {"pool.stages.stage_layers", "pool_stage_layers", "Layers in the limiting stage",
                 "", kInt, kR, R(r.pool.stageLayers), ppStages},
                {"pool.stages.stage_pool_bytes", "pool_stage_pool_bytes",
                 "Pool of the limiting stage", "B", kInt, kR, R(r.pool.stagePoolBytes), ppStages},
                {"pool.mem_fraction_static", "pool_mem_fraction_static",
                 "SGLang mem_fraction_static", "", 3, kR, R(r.pool.memFractionStatic), sglangPool},
                {"pool.free_before_weights_bytes", "pool_free_before_weights_bytes",
                 "Free memory before weights", "B", kInt, kR, R(r.pool.freeBeforeWeightsBytes),
                 sglangPool},
                {"pool_bytes_per_rank", nullptr, "KV pool per rank", "B", kInt, kR,
                 R(r.pool.poolBytes), nullptr, "pool.pool_bytes"},
                {"engine_kv_bytes_per_rank", nullptr, "KV memory the engine logs per rank", "B",
                 kInt, kR, R(r.pool.pp > 1 ? r.pool.stagePoolBytes : r.pool.poolBytes)},
            }};
}

Section capacityRows() {
    return {"Capacity",
            {
                {"tokens_capacity", nullptr, "Tokens the deployment holds", "tokens", kInt, kR,
                 R(r.tokensCapacity)},
                {"max_concurrency", nullptr, "Concurrent requests at S", "requests", kInt, kR,
                 R(r.maxConcurrency)},
                {"concurrency", nullptr, "Concurrency at S (unrounded)", "requests", 2, kR,
                 R(r.concurrency)},
                {"engine_tokens", nullptr, "Tokens the engine logs", "tokens", kInt, kR,
                 R(engineTokens(r))},
            }};
}

Section pagingRows() {
    return {
        "vLLM paging",
        {
            {"page_bytes", nullptr, "vLLM page", "B", kInt, kR, R(r.pageBytes)},
            {"block_size", nullptr, "vLLM block", "tokens", kInt, kR, R(r.blockSize)},
            {"blocks_per_rank", nullptr, "vLLM blocks per rank", "", kInt, kR, R(r.blocksPerRank)},
            {"vllm_kv_cache_groups", nullptr, "vLLM KV cache groups", "", kInt, kR,
             R(r.vllmKvCacheGroups)},
            {"vllm_group_size", nullptr, "vLLM layers per group", "", kInt, kR, R(r.vllmGroupSize)},
            {"vllm_padding_layers", nullptr, "vLLM padding layers", "", kInt, kR,
             R(r.vllmPaddingLayers)},
            {"vllm_blocks_per_request", nullptr, "vLLM blocks per request", "", kInt, kR,
             R(r.vllmBlocksPerRequest)},
            {"vllm_request_bytes_per_rank", nullptr, "vLLM reserves per request per rank", "B",
             kInt, kR, R(r.vllmRequestBytesPerRank)},
            {"vllm_tokens", nullptr, "vLLM: GPU KV cache size", "tokens", kInt, kR,
             R(r.vllmTokens)},
            {"vllm_concurrency", nullptr, "vLLM: maximum concurrency", "requests", 2, kR,
             R(r.vllmConcurrency)},
        }};
}

Section rooflineRows() {
    return {"Roofline",
            {
                {"intensity_flop_per_byte", nullptr, "Decode attention intensity", "FLOP/byte", 1,
                 kR, R(r.intensityFlopPerByte)},
                {"ridge_flop_per_byte", nullptr, "Ridge point", "FLOP/byte", 1, kR,
                 R(r.ridgeFlopPerByte)},
                {"attainable_flop_per_s", nullptr, "Attainable", "FLOP/s", 1, kR,
                 R(r.attainableFlopPerS)},
                {"attainable_fraction_of_peak", nullptr, "Attainable fraction of peak", "fraction",
                 1, kR, R(r.attainableFractionOfPeak)},
            }};
}

Section weightRows() {
    return {
        "Weights",
        {
            {"kv_proj_params_per_layer", nullptr, "K+V projection params per layer", "", kInt, kR,
             R(r.kvProjParamsPerLayer)},
            {"kv_proj_params_per_layer_checkpoint", nullptr,
             "K+V projection params per layer (checkpoint)", "", kInt, kR,
             R(r.kvProjParamsPerLayerModel)},
            {"kv_proj_params_vs_checkpoint", nullptr, "K+V projection params vs the checkpoint", "",
             kInt, kR, R((r.kvProjParamsPerLayer - r.kvProjParamsPerLayerModel) * r.layers)},
            {"kv_proj_weight_bytes_vs_checkpoint", nullptr,
             "K+V projection weights vs the checkpoint", "B", kInt, kR,
             R(r.kvProjWeightBytesDelta)},
            {"weight_bytes", nullptr, "Weights", "B", kInt, kR, R(r.weightBytes), nullptr,
             "weights.bytes"},
            {"weight_bytes_per_rank", nullptr, "Weights per rank", "B", kInt, kR,
             R(r.weightBytesPerRank), nullptr, "weights.bytes_per_rank"},
        }};
}

Section stepRows() {
    return {
        "Decode step",
        {
            {"decode_step.weight_bytes_per_rank", "step_weight_bytes_per_rank",
             "Decode step: weights read per rank", "B", kInt, kR, R(r.step.weightBytes)},
            {"decode_step.kv_bytes_per_rank", "step_kv_bytes_per_rank",
             "Decode step: KV read per rank", "B", kInt, kR, R(r.step.kvBytes)},
            {"decode_step.activation_bytes_per_rank", "step_activation_bytes_per_rank",
             "Decode step: activations per rank", "B", kInt, kR, R(r.step.activationBytes)},
            {"decode_step.bytes", "step_bytes_per_rank", "Decode step: bytes per rank", "B", kInt,
             kR, R(r.step.bytes())},
            {"decode_step.kv_fraction", "step_kv_fraction", "Decode step: KV share of bytes read",
             "fraction", 1, kR, R(r.step.kvFraction)},
            {"decode_step.experts_touched_per_moe_layer", "step_experts_touched_per_moe_layer",
             "Decode step: routed experts touched per MoE layer", "", 1, kR,
             R(r.step.expertsTouchedPerMoeLayer)},
            {"decode_step.flops", "step_flops_per_rank", "Decode step: FLOPs per rank", "FLOP", 3,
             kR, R(r.step.flops())},
            {"decode_step.gemm_flops", "step_gemm_flops_per_rank", "Decode step: GEMM FLOPs",
             "FLOP", 3, kR, R(r.step.gemmFlops)},
            {"decode_step.attention_flops", "step_attention_flops_per_rank",
             "Decode step: attention FLOPs", "FLOP", 3, kR, R(r.step.attentionFlops)},
            {"decode_step.comm_bytes", "step_comm_bytes_per_rank",
             "Decode step: TP all-reduce bytes sent per rank", "B", kInt, kR, R(r.step.commBytes)},
            {"decode_step.memory_time_s", "step_memory_time_s", "Decode step: bytes / bandwidth",
             "s", 3, kR, R(r.step.memoryTimeS)},
            {"decode_step.compute_time_s", "step_compute_time_s", "Decode step: FLOPs / peak", "s",
             3, kR, R(r.step.computeTimeS)},
            {"decode_step.comm_time_s", "step_comm_time_s", "Decode step: TP all-reduces", "s", 3,
             kR, R(r.step.commTimeS)},
            {"decode_step.time_lower_bound_s", "step_time_lower_bound_s",
             "Decode step: time lower bound", "s", 3, kR, R(r.step.timeLowerBoundS)},
            {"decode_step.tokens_per_s_per_gpu", "step_tokens_per_s_per_gpu",
             "Decode step: tokens/s per GPU", "tokens/s", 1, kR, R(r.step.tokensPerSPerGpu)},
            {"decode_step.tokens_per_s", "step_tokens_per_s", "Decode step: tokens/s, deployment",
             "tokens/s", 1, kR, R(r.step.tokensPerS)},
        }};
}

Section gpuRows() {
    return {"GPU",
            {
                {"gpu.memory_bytes", "gpu_memory_bytes", "GPU memory (datasheet)", "B", kInt, kG,
                 G(g.memoryBytes)},
                {"gpu.driver_memory_bytes", "gpu_driver_memory_bytes", "GPU memory (driver)", "B",
                 kInt, kG,
                 [](const Inputs& in) -> std::optional<double> {
                     if (in.g->driverMemoryBytes <= 0)
                         return std::nullopt;
                     return static_cast<double>(in.g->driverMemoryBytes);
                 }},
                {"gpu.l2_mib", "gpu_l2_mib", "L2 cache", "MiB", 0, kG,
                 [](const Inputs& in) { return in.g->l2MiB; }, nullptr, nullptr, kPanel,
                 [](const Inputs& in) { return in.g->l2Source; }},
                {"gpu.bandwidth_bytes_per_s", "gpu_bandwidth_bytes_per_s", "Memory bandwidth",
                 "B/s", 2, kG, G(g.bandwidthBytesPerS), nullptr, nullptr, kPanel},
                {"gpu.peak_bf16_flop_per_s", "gpu_peak_bf16_flop_per_s", "Peak bf16 (dense)",
                 "FLOP/s", 1, kG, G(g.peakBf16FlopPerS)},
                {"gpu.peak_fp8_flop_per_s", "gpu_peak_fp8_flop_per_s", "Peak fp8 (dense)", "FLOP/s",
                 1, kG, G(g.peakFp8FlopPerS)},
                {"gpu.peak_fp32_flop_per_s", "gpu_peak_fp32_flop_per_s", "Peak fp32", "FLOP/s", 1,
                 kG, G(g.peakFp32FlopPerS)},
                {"gpu.interconnect_bytes_per_s", "gpu_interconnect_bytes_per_s",
                 "Interconnect (both directions)", "B/s", 2, kG, G(g.interconnectBytesPerS)},
                {"gpu.interconnect_bytes_per_s_each_way", "gpu_interconnect_bytes_per_s_each_way",
                 "Interconnect each way", "B/s", 2, kG, G(g.interconnectBytesPerS / 2)},
            }};
}

const std::vector<Section>& fixedSections() {
    static const std::vector<Section> sections = {
        modelRows(),  parallelRows(), cellRows(),   poolRows(), capacityRows(),
        pagingRows(), rooflineRows(), weightRows(), stepRows(), gpuRows()};
    return sections;
}
#undef R
#undef M
#undef G

ReportField make(const Def& d, const char* section, const Inputs& in) {
    ReportField f;
    f.key = d.key;
    f.name = d.name ? d.name : d.key;
    f.label = d.label;
    f.unit = d.unit;
    f.section = section;
    f.integer = d.precision < 0;
    f.precision = d.precision < 0 ? 0 : d.precision;
    f.value = d.read(in);
    if (d.alsoAt)
        f.alsoAt = d.alsoAt;
    f.panel = d.panel;
    if (d.source)
        f.source = d.source(in);
    return f;
}

ReportField row(std::string key, std::string name, std::string label, const char* unit,
                const char* section, std::optional<double> value) {
    ReportField f;
    f.key = std::move(key);
    f.name = std::move(name);
    f.label = std::move(label);
    f.unit = unit;
    f.section = section;
    f.value = value;
    return f;
}

/// Each layer group's geometry and its share of one request on one rank.
void addGroups(std::vector<ReportField>& out, const Report& r, const ModelSpec& m) {
    for (std::size_t i = 0; i < m.layerGroups.size(); ++i) {
        const LayerGroup& g = m.layerGroups[i];
        const std::string n = "layer_group_" + std::to_string(i) + "_";
        const std::string what = "Layers " + std::to_string(i + 1) + " (" +
                                 std::to_string(g.count()) + " " + toString(g.kind) + "): ";
        auto add = [&](const char* field, const std::string& label, const char* unit,
                       std::optional<double> v) {
            out.push_back(
                row(layerGroupKey(i, field), n + field, what + label, unit, "Layer groups", v));
        };
        auto d = [](std::int64_t v) { return static_cast<double>(v); };
        add("count", "layers", "", d(g.count()));
        add("window", "window", "tokens",
            g.window ? std::optional<double>(d(*g.window)) : std::nullopt);
        add("kv_heads", "KV heads", "", d(g.kvHeads));
        add("head_dim_k", "key width", "", d(g.headDimK));
        add("head_dim_v", "value width", "", d(g.headDimV));
        add("bytes_per_token_per_layer", "bytes per token per layer", "B",
            d(g.bytesPerTokenPerLayer));
        add("state_bytes_per_request_per_layer", "state per request per layer", "B",
            d(g.stateBytesPerRequestPerLayer));
        if (g.indexerHeadDim > 0)
            add("indexer_bytes_per_token_per_layer", "indexer key per token per layer", "B",
                d(indexerBytesPerToken(g.indexerHeadDim)));
        if (g.encoderTokens > 0)
            add("encoder_tokens", "encoder tokens per request", "tokens", d(g.encoderTokens));
        if (i < r.groupRequestBytesPerRank.size()) {
            const auto& b = r.groupRequestBytesPerRank[i];
            add("growing_bytes_per_rank", "grows with the context (one request, per rank)", "B",
                d(b.growing));
            add("capped_bytes_per_rank", "capped at the window (one request, per rank)", "B",
                d(b.capped));
            add("fixed_bytes_per_rank", "fixed state (one request, per rank)", "B", d(b.fixed));
        }
    }
}

/// The engine's pool terms in engine order (PoolBreakdown::terms).
void addTerms(std::vector<ReportField>& out, const Report& r) {
    for (std::size_t i = 0; i < r.pool.terms.size(); ++i) {
        const PoolTerm& t = r.pool.terms[i];
        out.push_back(row("pool.breakdown." + std::to_string(i) + ".bytes",
                          "pool_term_" + t.key + "_bytes", "Pool term: " + t.label, "B", "Pool",
                          static_cast<double>(t.bytes)));
    }
}

} // namespace

std::string layerGroupKey(std::size_t group, std::string_view field) {
    return "model.layer_groups." + std::to_string(group) + "." + std::string(field);
}

std::vector<ReportField> reportFields(const Report& r, const ModelSpec* m, const GpuSpec* gpu) {
    const Inputs in{r, m, gpu};
    std::vector<ReportField> out;
    out.reserve(160);
    for (const Section& s : fixedSections()) {
        for (const Def& d : s.rows) {
            if ((d.needs == Needs::Model && !m) || (d.needs == Needs::Gpu && !gpu))
                continue;
            if (d.shown && !d.shown(in))
                continue;
            out.push_back(make(d, s.title, in));
        }
        if (std::string_view(s.title) == "Cell" && m)
            addGroups(out, r, *m);
        if (std::string_view(s.title) == "Pool")
            addTerms(out, r);
    }
    return out;
}

const ReportField* findField(const std::vector<ReportField>& fields, std::string_view key) {
    for (const ReportField& f : fields)
        if (f.key == key)
            return &f;
    return nullptr;
}

std::string formatFieldPlain(const ReportField& f) {
    if (!f.value)
        return {};
    if (f.integer)
        return std::to_string(std::llround(*f.value));
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", *f.value);
    return buf;
}

std::string formatFieldHuman(const ReportField& f) {
    if (!f.value)
        return "—";
    const double v = *f.value;
    const std::string& u = f.unit;
    if (u == "B") {
        if (!(v < 0))
            return humanBytes(v);
        std::string s = "-"; // appended, not "-" + string: GCC 12 -O3 warns -Wrestrict on that
        return s += humanBytes(-v);
    }
    if (u == "B/s")
        return humanBandwidth(v);
    if (u == "FLOP/s")
        return humanFlops(v);
    if (u == "FLOP")
        return fixed(v / 1e12, f.precision) + " TFLOP";
    if (u == "fraction")
        return fixed(100.0 * v, f.precision) + " %";
    if (u == "s")
        return fixed(v * 1e3, f.precision) + " ms";
    const std::string n = f.integer ? withCommas(std::llround(v)) : fixed(v, f.precision);
    return u.empty() ? n : n + " " + u;
}

} // namespace kvscope
