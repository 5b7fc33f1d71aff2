#include "core/format.h"

#include "core/engines/engines.h"
#include "core/model/weights.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

namespace kvscope {

namespace {

/// Up to three significant digits, trailing zeros dropped: 320, 50.6, 2.5, 4.66.
std::string compact(double v) {
    const int decimals = std::fabs(v) >= 100 ? 0 : (std::fabs(v) >= 10 ? 1 : 2);
    std::string s = fixed(v, decimals);
    if (s.find('.') != std::string::npos) {
        while (!s.empty() && s.back() == '0')
            s.pop_back();
        if (!s.empty() && s.back() == '.')
            s.pop_back();
    }
    return s;
}

std::string pad(std::string s, std::size_t width) {
    if (s.size() < width)
        s.append(width - s.size(), ' ');
    return s;
}

std::string bytesExact(std::int64_t b) {
    return humanBytes(static_cast<double>(b)) + " (" + withCommas(b) + " B)";
}

} // namespace

std::string fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string withCommas(std::int64_t n) {
    const bool neg = n < 0;
    std::uint64_t mag = neg ? 0 - static_cast<std::uint64_t>(n) : static_cast<std::uint64_t>(n);
    std::string rev;
    int digits = 0;
    do {
        if (digits > 0 && digits % 3 == 0)
            rev.push_back(',');
        rev.push_back(static_cast<char>('0' + mag % 10));
        mag /= 10;
        ++digits;
    } while (mag > 0);
    if (neg)
        rev.push_back('-');
    return std::string(rev.rbegin(), rev.rend());
}

std::string humanBytes(double bytes) {
    const double a = std::fabs(bytes);
    if (a < 1024)
        return withCommas(std::llround(bytes)) + " B";
    static const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = bytes / 1024.0;
    int u = 0;
    while (std::fabs(v) >= 1024.0 && u < 5) {
        v /= 1024.0;
        ++u;
    }
    // 1023.96 KiB would print as "1024 KiB": promote.
    if (std::fabs(v) >= 999.5 && u < 5 && compact(v).size() > 3) {
        v /= 1024.0;
        ++u;
    }
    return compact(v) + " " + units[u];
}

std::string humanCount(double n) {
    const double a = std::fabs(n);
    if (a >= 1e12)
        return fixed(n / 1e12, 2) + "T";
    if (a >= 1e9)
        return fixed(n / 1e9, 2) + "B";
    if (a >= 1e6)
        return fixed(n / 1e6, 1) + "M";
    if (a >= 1e3)
        return fixed(n / 1e3, 1) + "K";
    return fixed(n, 0);
}

std::string humanFlops(double f) {
    const double a = std::fabs(f);
    if (a >= 1e15)
        return fixed(f / 1e15, 2) + " PFLOP/s";
    if (a >= 1e12)
        return fixed(f / 1e12, 1) + " TFLOP/s";
    if (a >= 1e9)
        return fixed(f / 1e9, 1) + " GFLOP/s";
    return fixed(f / 1e6, 1) + " MFLOP/s";
}

std::string humanBandwidth(double b) {
    const double a = std::fabs(b);
    if (a >= 1e12)
        return fixed(b / 1e12, 2) + " TB/s";
    if (a >= 1e9)
        return fixed(b / 1e9, 1) + " GB/s";
    return fixed(b / 1e6, 1) + " MB/s";
}

std::string textReport(const ModelSpec& m, const GpuSpec& gpu, const Report& r) {
    std::ostringstream o;
    const std::size_t w = 22;
    auto row = [&](const std::string& label, const std::string& value,
                   const std::string& note = {}) {
        o << "  " << pad(label, w) << (note.empty() ? value : pad(value, 18) + "  " + note) << '\n';
    };
    o << "kvscope: " << m.name << " on " << r.tp << " x " << gpu.name << " (TP=" << r.tp
      << (r.dcp > 1 ? ", DCP=" + std::to_string(r.dcp) : "") << ")\n\n";

    o << "Model (provenance on the right)\n";
    row("attention",
        r.variant +
            (r.attention == AttentionKind::MLA ? "" : " (g = " + compact(r.groupSize) + ")"),
        m.mla && r.attention != AttentionKind::MLA ? "what-if: MLA model viewed as GQA" : "");
    row("layers L", std::to_string(m.layers.value), m.layers.source);
    row("query heads h", std::to_string(m.qHeads.value), m.qHeads.source);
    row("KV heads h_kv", std::to_string(r.kvHeads),
        r.kvHeads == m.kvHeads.value || m.mla
            ? m.kvHeads.source
            : "what-if --h-kv (model has " + std::to_string(m.kvHeads.value) + ")");
    if (m.mla) {
        row("kv_lora_rank r", std::to_string(m.kvLoraRank.value), m.kvLoraRank.source);
        row("qk_rope_head_dim", std::to_string(m.qkRopeHeadDim.value), m.qkRopeHeadDim.source);
    }
    row("head dim d_h", std::to_string(m.headDim.value), m.headDim.source);
    row("hidden d", std::to_string(m.hidden.value), m.hidden.source);
    row("parameters", humanCount(static_cast<double>(r.params.total())),
        "counted from the config; embeddings " +
            std::string(m.tiedEmbeddings.value ? "tied" : "untied") + " (" +
            m.tiedEmbeddings.source + ")");
    if (r.params.vision > 0)
        row("vision tower", humanCount(static_cast<double>(r.params.vision)) + " params",
            m.weights.visionSource + "; loaded with the weights, not in the parameters above");
    if (r.params.mtp > 0)
        row("MTP layers", humanCount(static_cast<double>(r.params.mtp)) + " params",
            m.weights.mtpSource + "; in the checkpoint, not served");
    row("KV dtype",
        toString(r.kvDtype) + (r.kvStorageBits % 8 == 0 &&
                                       kvDtypeInfo(r.kvDtype).scaleBytesPerGroup == 0 &&
                                       kvDtypeInfo(r.kvDtype).scaleBytesPerTokenHead == 0 &&
                                       kvDtypeInfo(r.kvDtype).fixedBytesPerTokenPerLayer == 0
                                   ? " (" + std::to_string(r.kvBytesPerElement) + " B)"
                                   : " (" + std::string(kvDtypeInfo(r.kvDtype).title) + ")"),
        m.torchDtype.source + " = " + m.torchDtype.value);
    if (m.layerGroups.size() > 1 || m.windowLayerCount() > 0 ||
        (m.layerGroups.size() == 1 && m.layerGroups[0].kind != LayerKind::Full &&
         m.layerGroups[0].kind != LayerKind::Mla)) {
        o << "\nLayer groups (cache kind per layer, provenance on the right)\n";
        for (const auto& g : m.layerGroups) {
            std::string what = std::to_string(g.count()) + " " + toString(g.kind);
            if (g.window)
                what += g.kind == LayerKind::Compressed ? " (1:" + withCommas(*g.window) + ")"
                                                        : " (" + withCommas(*g.window) + ")";
            std::string bytes;
            if (storesPerTokenKv(g.kind))
                bytes = withCommas(g.bytesPerTokenPerLayer) + " B/token/layer";
            else if (g.stateBytesPerRequestPerLayer > 0)
                bytes = humanBytes(static_cast<double>(g.stateBytesPerRequestPerLayer)) +
                        "/request/layer";
            else
                bytes = "no cache";
            o << "  " << pad(what, w) << pad(bytes, 22) << "  " << g.source << '\n';
        }
        if (m.mtpLayers.value > 0)
            o << "  " << pad(std::to_string(m.mtpLayers.value) + " mtp", w)
              << pad("not allocated", 22) << "  " << m.mtpLayers.source
              << " (KV only with speculative decoding)\n";
    }

    o << "\nBytes per token (the cell)\n";
    row("cell, whole model", bytesExact(r.cellBytesPerToken));
    row("cell per rank", bytesExact(r.cellBytesPerTokenPerRank),
        std::to_string(r.qHeadsPerRank) + " query head(s), " + std::to_string(r.kvHeadsPerRank) +
            (r.attention == AttentionKind::MLA ? " latent" : " KV head(s)") + " per rank" +
            (r.kvReplicated ? ", replicated x" + std::to_string(r.kvCopies) : ""));
    row("one request", humanBytes(static_cast<double>(r.requestBytes)),
        "at " + withCommas(r.context) + " tokens, whole model");
    row("one request per rank", humanBytes(static_cast<double>(r.requestBytesPerRank)),
        r.dcp > 1 ? "ceil(S / DCP) = " + withCommas(r.contextPerRank) + " tokens per rank" : "");

    const PoolBreakdown& p = r.pool;
    o << "\nKV pool per rank ("
      << (p.overridden                      ? std::string("--pool-gib")
          : p.model == PoolModel::Datasheet ? std::string("datasheet")
                                            : p.engine.text())
      << (p.pp > 1 ? ", limiting stage " + std::to_string(p.limitingStage) + " of " +
                         std::to_string(p.pp)
                   : std::string())
      << ")\n";
    if (p.overridden) {
        row("pool", humanBytes(static_cast<double>(p.poolBytes)), "set by --pool-gib");
    } else {
        const std::string capacity =
            p.model == PoolModel::Datasheet
                ? compact(static_cast<double>(p.capacityBytes) / 1e9) + " GB"
                : humanBytes(static_cast<double>(p.capacityBytes));
        row(fixed(p.util, 2) + " x " + capacity, humanBytes(static_cast<double>(p.budgetBytes)),
            p.capacitySource);
        row("- weights / TP", humanBytes(static_cast<double>(p.weightBytes)),
            toString(r.weightDtype) + ", " + humanCount(static_cast<double>(r.params.total())) +
                " params / " + std::to_string(r.tp));
        if (p.model == PoolModel::Vllm) {
            // The engine's own terms, each with the rule and its source (core/engines/).
            for (const PoolTerm& t : p.terms) {
                if (t.key == "budget" || t.key == "weights" || t.key == "pool")
                    continue;
                row((t.subtracted ? "- " : "  (") + t.label + (t.subtracted ? "" : ")"),
                    humanBytes(static_cast<double>(t.bytes)), t.rule);
            }
        }
        if (p.pp > 1) {
            row("= pool, stage " + std::to_string(p.limitingStage),
                humanBytes(static_cast<double>(p.stagePoolBytes)),
                std::to_string(p.stageLayers) + " of " + std::to_string(r.layers) +
                    " layers; the smallest stage sets the blocks");
            row("  as all layers", humanBytes(static_cast<double>(p.poolBytes)),
                "stage pool × L / stage layers, for the per-token arithmetic below");
        } else {
            row("= pool", humanBytes(static_cast<double>(p.poolBytes)),
                withCommas(p.poolBytes) + " B");
        }
    }

    o << "\nCapacity\n";
    row("tokens held", withCommas(r.tokensCapacity),
        "pool / per-rank cell" + std::string(r.dcp > 1 ? " x DCP" : ""));
    row("max concurrency", withCommas(r.maxConcurrency),
        "requests of " + withCommas(r.context) + " tokens (" + fixed(r.concurrency, 2) + ")");
    if (r.vllmKvCacheGroups > 1) {
        row("vLLM page", bytesExact(r.pageBytes),
            std::to_string(r.blockSize) + "-token attention block, one layer, one rank");
        row("KV cache groups",
            std::to_string(r.vllmKvCacheGroups) + " x " + std::to_string(r.vllmGroupSize) +
                " layers",
            r.vllmPaddingLayers > 0 ? std::to_string(r.vllmPaddingLayers) + " padding layer(s)"
                                    : "hybrid allocator");
        row("blocks per rank", withCommas(r.blocksPerRank), "pool / (page x group size)");
        row("blocks per request", withCommas(r.vllmBlocksPerRequest),
            "summed over groups at " + withCommas(r.context) + " tokens");
        row("vLLM reserves", humanBytes(static_cast<double>(r.vllmRequestBytesPerRank)),
            "per request per rank: window - 1 + max_num_batched_tokens, mamba one page");
    } else {
        row("vLLM page", bytesExact(r.pageBytes),
            std::to_string(r.blockSize) + "-token block, " +
                (r.vllmGroupSize > 0 ? "one layer" : "all layers") + ", one rank");
        row("blocks per rank", withCommas(r.blocksPerRank), "pool / (page x L)");
    }
    o << "\nvLLM would log\n  " << r.vllmLogTokens << "\n  " << r.vllmLogConcurrency << "\n";

    o << "\nDecode attention on the roofline (" << gpu.name << ")\n";
    row("intensity", fixed(r.intensityFlopPerByte, 1) + " FLOP/byte",
        r.attention == AttentionKind::MLA ? "2 h_rank (2r + d_rope) / (b (r + d_rope))"
                                          : "2 g_rank / b");
    row("ridge", fixed(r.ridgeFlopPerByte, 1) + " FLOP/byte",
        humanFlops(r.kvDtype == KvDtype::FP32 ? gpu.peakFp32FlopPerS : gpu.peakBf16FlopPerS) +
            " / " + humanBandwidth(gpu.bandwidthBytesPerS));
    row("attainable", humanFlops(r.attainableFlopPerS),
        fixed(100.0 * r.attainableFractionOfPeak, 1) + "% of peak");

    o << "\nWeights\n";
    row("K/V projections", humanCount(static_cast<double>(r.kvProjParamsPerLayer)) + " / layer",
        r.kvProjParamsPerLayer != r.kvProjParamsPerLayerModel
            ? "checkpoint: " + humanCount(static_cast<double>(r.kvProjParamsPerLayerModel))
            : "");
    if (r.kvProjParamsPerLayer != r.kvProjParamsPerLayerModel &&
        r.attention != AttentionKind::MLA) {
        const double delta =
            static_cast<double>(r.kvProjParamsPerLayer - r.kvProjParamsPerLayerModel) *
            static_cast<double>(r.layers);
        row("what-if weights", (delta >= 0 ? "+" : "-") + humanCount(std::fabs(delta)) + " params",
            (r.kvProjWeightBytesDelta >= 0 ? "+" : "-") +
                humanBytes(std::fabs(static_cast<double>(r.kvProjWeightBytesDelta))) + " " +
                toString(r.weightDtype) + "; the pool above keeps the checkpoint's weights");
    }
    {
        const LoadedWeights loaded = loadedWeights(m, r.weightDtype, r.tp);
        row("weights per rank", humanBytes(static_cast<double>(r.weightBytesPerRank)),
            loaded.format + "; " + loaded.source);
    }

    const DecodeStep& st = r.step;
    o << "\nOne decode step per rank (batch " << r.batch << ", " << withCommas(r.context)
      << " tokens)\n";
    row("weights read", humanBytes(static_cast<double>(st.weightBytes)),
        st.moeLayers > 0
            ? fixed(st.expertsTouchedPerMoeLayer, 1) + " of " +
                  std::to_string(m.routedExperts.value) + " routed experts per MoE layer touched"
            : "read once per step");
    row("KV read", humanBytes(static_cast<double>(st.kvBytes)),
        fixed(100.0 * st.kvFraction, 1) + "% of the step's bytes");
    row("activations", humanBytes(static_cast<double>(st.activationBytes)),
        "GEMM inputs/outputs, Q/O, residual stream (16-bit)");
    row("bytes / BW", fixed(st.memoryTimeS * 1e3, 3) + " ms",
        humanBytes(static_cast<double>(st.bytes())) + " / " +
            humanBandwidth(gpu.bandwidthBytesPerS));
    row("FLOPs / peak", fixed(st.computeTimeS * 1e3, 3) + " ms",
        fixed(st.flops() / 1e12, 3) + " TFLOP (GEMMs " + fixed(st.gemmFlops / 1e12, 3) +
            ", attention " + fixed(st.attentionFlops / 1e12, 3) + ")");
    if (r.tp > 1)
        row("TP all-reduces",
            st.commCounted ? fixed(st.commTimeS * 1e3, 3) + " ms" : std::string("not counted"),
            humanBytes(static_cast<double>(st.commBytes)) + " sent per rank" +
                (st.commCounted
                     ? " / " + humanBandwidth(gpu.interconnectBytesPerS / 2) + " each way (" +
                           (gpu.interconnect.empty() ? "interconnect" : gpu.interconnect) + ")"
                     : ": the GPU's interconnect_gb_s is unknown"));
    row("time per token >=", fixed(st.timeLowerBoundS * 1e3, 3) + " ms",
        toString(st.bound) + "-bound: max(bytes, FLOPs) + all-reduces");
    row("tokens/s", fixed(st.tokensPerSPerGpu, 1) + " per GPU",
        fixed(st.tokensPerS, 1) + " for the deployment (" + std::to_string(r.tp) + " GPUs)");

    if (!r.warnings.empty()) {
        o << "\nWarnings\n";
        for (const auto& wn : r.warnings)
            o << "  ! " << wn << '\n';
    }
    return o.str();
}

std::string jsonReport(const ModelSpec& m, const GpuSpec& gpu, const Report& r) {
    using nlohmann::json;
    json model = {{"name", m.name},
                  {"model_type", m.modelType},
                  {"attention", toString(r.attention)},
                  {"variant", r.variant},
                  {"layers", r.layers},
                  {"q_heads", r.qHeads},
                  {"kv_heads", r.kvHeads},
                  {"head_dim", m.headDim.value},
                  {"kv_lora_rank", r.kvLoraRank},
                  {"qk_rope_head_dim", r.qkRopeHeadDim},
                  {"params", r.params.total()},
                  {"params_vision", r.params.vision},
                  {"params_mtp", r.params.mtp}};
    const LoadedWeights loaded = loadedWeights(m, r.weightDtype, r.tp);
    json weights = {{"bytes", r.weightBytes},
                    {"bytes_per_rank", r.weightBytesPerRank},
                    {"format", loaded.format},
                    {"source", loaded.source}};
    json groups = json::array();
    for (const auto& g : m.layerGroups) {
        groups.push_back({{"kind", toString(g.kind)},
                          {"layers", g.layers},
                          {"count", g.count()},
                          {"window", g.window ? json(*g.window) : json(nullptr)},
                          {"kv_heads", g.kvHeads},
                          {"head_dim_k", g.headDimK},
                          {"head_dim_v", g.headDimV},
                          {"bytes_per_token_per_layer", g.bytesPerTokenPerLayer},
                          {"state_bytes_per_request_per_layer", g.stateBytesPerRequestPerLayer},
                          {"source", g.source}});
        if (g.indexerHeadDim > 0)
            groups.back()["indexer_bytes_per_token_per_layer"] =
                indexerBytesPerToken(g.indexerHeadDim);
        if (g.encoderTokens > 0)
            groups.back()["encoder_tokens"] = g.encoderTokens;
    }
    model["layer_groups"] = groups;
    model["mtp_layers"] = m.mtpLayers.value;
    json provenance = {{"layers", m.layers.source},
                       {"q_heads", m.qHeads.source},
                       {"kv_heads", m.kvHeads.source},
                       {"head_dim", m.headDim.source},
                       {"hidden", m.hidden.source},
                       {"dtype", m.torchDtype.source},
                       {"tied_embeddings", m.tiedEmbeddings.source},
                       {"layer_kinds", m.layerKindsSource},
                       {"mtp_layers", m.mtpLayers.source}};
    const PoolBreakdown& p = r.pool;
    json pool = {{"model", p.overridden ? "override" : toString(p.model)},
                 {"capacity_bytes", p.capacityBytes},
                 {"capacity_source", p.capacitySource},
                 {"gpu_memory_utilization", p.util},
                 {"budget_bytes", p.budgetBytes},
                 {"weight_bytes", p.weightBytes},
                 {"activation_peak_bytes", p.activationPeakBytes},
                 {"cuda_graph_bytes", p.cudaGraphBytes},
                 {"cuda_graph_estimate_bytes", p.cudaGraphEstimateBytes},
                 {"nccl_bytes", p.ncclBytes},
                 {"custom_all_reduce_bytes", p.customAllReduceBytes},
                 {"pool_bytes", p.poolBytes}};
    if (p.pp > 1)
        pool["stages"] = {{"pp", p.pp},
                          {"limiting_stage", p.limitingStage},
                          {"stage_layers", p.stageLayers},
                          {"stage_pool_bytes", p.stagePoolBytes}};
    if (p.engine.name == EngineName::Sglang && p.model == PoolModel::Vllm && !p.overridden) {
        pool["mem_fraction_static"] = p.memFractionStatic;
        pool["mem_fraction_static_source"] = p.memFractionSource;
        pool["free_before_weights_bytes"] = p.freeBeforeWeightsBytes;
    }
    json breakdown = json::array();
    for (const PoolTerm& t : p.terms)
        breakdown.push_back({{"key", t.key},
                             {"label", t.label},
                             {"bytes", t.bytes},
                             {"subtracted", t.subtracted},
                             {"rule", t.rule},
                             {"source", t.source}});
    pool["breakdown"] = breakdown;
    json j = {{"model", model},
              {"provenance", provenance},
              {"gpu", {{"id", gpu.id}, {"name", gpu.name}}},
              {"tp", r.tp},
              {"dcp", r.dcp},
              {"context", r.context},
              {"batch", r.batch},
              {"kv_dtype", toString(r.kvDtype)},
              {"kv_bytes_per_element", r.kvBytesPerElement},
              {"kv_storage_bits", r.kvStorageBits},
              {"weight_dtype", toString(r.weightDtype)},
              {"q_heads_per_rank", r.qHeadsPerRank},
              {"kv_heads_per_rank", r.kvHeadsPerRank},
              {"kv_replicated", r.kvReplicated},
              {"kv_copies", r.kvCopies},
              {"cell_bytes_per_token", r.cellBytesPerToken},
              {"cell_bytes_per_token_per_rank", r.cellBytesPerTokenPerRank},
              {"request_bytes", r.requestBytes},
              {"request_bytes_per_rank", r.requestBytesPerRank},
              {"pool", pool},
              {"pool_bytes_per_rank", p.poolBytes},
              {"engine", {{"name", toString(p.engine.name)}, {"version", p.engine.version.text()}}},
              {"engine_tokens", engineTokens(r)},
              {"engine_kv_bytes_per_rank", p.pp > 1 ? p.stagePoolBytes : p.poolBytes},
              {"fits", r.fits},
              {"tokens_capacity", r.tokensCapacity},
              {"max_concurrency", r.maxConcurrency},
              {"concurrency", r.concurrency},
              {"page_bytes", r.pageBytes},
              {"blocks_per_rank", r.blocksPerRank},
              {"block_size", r.blockSize},
              {"vllm_kv_cache_groups", r.vllmKvCacheGroups},
              {"vllm_group_size", r.vllmGroupSize},
              {"vllm_padding_layers", r.vllmPaddingLayers},
              {"vllm_blocks_per_request", r.vllmBlocksPerRequest},
              {"vllm_request_bytes_per_rank", r.vllmRequestBytesPerRank},
              {"fixed_state_bytes_per_request_per_rank", r.fixedStateBytesPerRequestPerRank},
              {"vllm_log", {r.vllmLogTokens, r.vllmLogConcurrency}},
              {"intensity_flop_per_byte", r.intensityFlopPerByte},
              {"ridge_flop_per_byte", r.ridgeFlopPerByte},
              {"attainable_flop_per_s", r.attainableFlopPerS},
              {"attainable_fraction_of_peak", r.attainableFractionOfPeak},
              {"kv_proj_params_per_layer", r.kvProjParamsPerLayer},
              {"weight_bytes", r.weightBytes},
              {"weight_bytes_per_rank", r.weightBytesPerRank},
              {"weights", weights},
              {"decode_step",
               {{"weight_bytes_per_rank", r.step.weightBytes},
                {"kv_bytes_per_rank", r.step.kvBytes},
                {"activation_bytes_per_rank", r.step.activationBytes},
                {"bytes", r.step.bytes()},
                {"kv_fraction", r.step.kvFraction},
                {"experts_touched_per_moe_layer", r.step.expertsTouchedPerMoeLayer},
                {"flops", r.step.flops()},
                {"gemm_flops", r.step.gemmFlops},
                {"attention_flops", r.step.attentionFlops},
                {"comm_bytes", r.step.commBytes},
                {"comm_counted", r.step.commCounted},
                {"memory_time_s", r.step.memoryTimeS},
                {"compute_time_s", r.step.computeTimeS},
                {"comm_time_s", r.step.commTimeS},
                {"bound", toString(r.step.bound)},
                {"time_lower_bound_s", r.step.timeLowerBoundS},
                {"tokens_per_s_per_gpu", r.step.tokensPerSPerGpu},
                {"tokens_per_s", r.step.tokensPerS}}},
              {"warnings", r.warnings}};
    if (!r.fits)
        j["no_fit_reason"] = r.noFitReason;
    return j.dump(2);
}

} // namespace kvscope
