#include "core/features/export.h"

#include "core/format.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace kvscope {

namespace {

ReportNumber num(std::string key, std::string label, std::string unit, double value,
                 bool integer = true) {
    return ReportNumber{std::move(key), std::move(label), std::move(unit), value, integer};
}

double d(std::int64_t v) {
    return static_cast<double>(v);
}

} // namespace

std::vector<ReportNumber> reportNumbers(const Report& r) {
    const double kvProjDelta =
        d(r.kvProjParamsPerLayer - r.kvProjParamsPerLayerModel) * d(r.layers);
    return {
        num("layers", "Layers (L)", "", d(r.layers)),
        num("q_heads", "Query heads (h)", "", d(r.qHeads)),
        num("kv_heads", "KV heads (h_kv)", "", d(r.kvHeads)),
        num("key_dim", "Key width per head", "", d(r.keyDim)),
        num("value_dim", "Value width per head", "", d(r.valueDim)),
        num("kv_bytes_per_element", "KV bytes per element", "B", d(r.kvBytesPerElement)),
        num("tp", "Tensor-parallel size", "", d(r.tp)),
        num("dcp", "Decode context parallel size", "", d(r.dcp)),
        num("q_heads_per_rank", "Query heads per rank", "", d(r.qHeadsPerRank)),
        num("kv_heads_per_rank", "KV heads per rank", "", d(r.kvHeadsPerRank)),
        num("kv_copies", "Ranks holding each KV head", "", d(r.kvCopies)),
        num("group_size", "Group size g = h / h_kv", "", r.groupSize, false),
        num("group_size_per_rank", "Query heads per KV head on a rank", "", r.groupSizePerRank,
            false),
        num("cell_bytes_per_token", "KV cell per token (all layers)", "B", d(r.cellBytesPerToken)),
        num("cell_bytes_per_token_per_rank", "KV cell per token per rank", "B",
            d(r.cellBytesPerTokenPerRank)),
        num("cell_bytes_per_token_per_layer_per_rank", "KV cell per token per layer per rank", "B",
            d(r.cellBytesPerTokenPerLayerPerRank)),
        num("context", "Context per request (S)", "tokens", d(r.context)),
        num("batch", "Batch (B)", "requests", d(r.batch)),
        num("context_per_rank", "Context per rank (S / DCP)", "tokens", d(r.contextPerRank)),
        num("request_bytes", "One request's KV (all ranks)", "B", d(r.requestBytes)),
        num("request_bytes_per_rank", "One request's KV per rank", "B", d(r.requestBytesPerRank)),
        num("pool_capacity_bytes", "Memory the pool starts from", "B", d(r.pool.capacityBytes)),
        num("pool_util", "Memory utilisation", "", r.pool.util, false),
        num("pool_budget_bytes", "util × memory", "B", d(r.pool.budgetBytes)),
        num("pool_weight_bytes_per_rank", "Weights per rank (pool)", "B", d(r.pool.weightBytes)),
        num("pool_activation_peak_bytes", "Activation peak", "B", d(r.pool.activationPeakBytes)),
        num("pool_non_torch_bytes", "Non-torch memory", "B", d(r.pool.nonTorchBytes())),
        num("pool_bytes_per_rank", "KV pool per rank", "B", d(r.pool.poolBytes)),
        num("tokens_capacity", "Tokens the deployment holds", "tokens", d(r.tokensCapacity)),
        num("max_concurrency", "Concurrent requests at S", "requests", d(r.maxConcurrency)),
        num("concurrency", "Concurrency at S (unrounded)", "requests", r.concurrency, false),
        num("page_bytes", "vLLM page", "B", d(r.pageBytes)),
        num("blocks_per_rank", "vLLM blocks per rank", "", d(r.blocksPerRank)),
        num("vllm_tokens", "vLLM: GPU KV cache size", "tokens", d(r.vllmTokens)),
        num("vllm_concurrency", "vLLM: maximum concurrency", "requests", r.vllmConcurrency, false),
        num("intensity_flop_per_byte", "Decode attention intensity", "FLOP/byte",
            r.intensityFlopPerByte, false),
        num("ridge_flop_per_byte", "Ridge point", "FLOP/byte", r.ridgeFlopPerByte, false),
        num("attainable_flop_per_s", "Attainable", "FLOP/s", r.attainableFlopPerS, false),
        num("attainable_fraction_of_peak", "Attainable fraction of peak", "fraction",
            r.attainableFractionOfPeak, false),
        num("params_total", "Parameters", "", d(r.params.total())),
        num("kv_proj_params_per_layer", "K+V projection params per layer", "",
            d(r.kvProjParamsPerLayer)),
        num("kv_proj_params_per_layer_checkpoint", "K+V projection params per layer (checkpoint)",
            "", d(r.kvProjParamsPerLayerModel)),
        num("kv_proj_params_vs_checkpoint", "K+V projection params vs the checkpoint", "",
            kvProjDelta),
        num("kv_proj_weight_bytes_vs_checkpoint", "K+V projection weights vs the checkpoint", "B",
            d(r.kvProjWeightBytesDelta)),
        num("weight_bytes", "Weights", "B", d(r.weightBytes)),
        num("weight_bytes_per_rank", "Weights per rank", "B", d(r.weightBytesPerRank)),
        num("step_weight_bytes_per_rank", "Decode step: weights read per rank", "B",
            d(r.step.weightBytes)),
        num("step_kv_bytes_per_rank", "Decode step: KV read per rank", "B", d(r.step.kvBytes)),
        num("step_activation_bytes_per_rank", "Decode step: activations per rank", "B",
            d(r.step.activationBytes)),
        num("step_bytes_per_rank", "Decode step: bytes per rank", "B", d(r.step.bytes())),
        num("step_kv_fraction", "Decode step: KV share of bytes read", "fraction",
            r.step.kvFraction, false),
        num("step_flops_per_rank", "Decode step: FLOPs per rank", "FLOP", r.step.flops(), false),
        num("step_comm_bytes_per_rank", "Decode step: TP all-reduce bytes sent per rank", "B",
            d(r.step.commBytes)),
        num("step_time_lower_bound_s", "Decode step: time lower bound", "s", r.step.timeLowerBoundS,
            false),
        num("step_tokens_per_s_per_gpu", "Decode step: tokens/s per GPU", "tokens/s",
            r.step.tokensPerSPerGpu, false),
        num("step_tokens_per_s", "Decode step: tokens/s, deployment", "tokens/s", r.step.tokensPerS,
            false),
    };
}

std::optional<double> reportNumber(const Report& r, const std::string& key) {
    for (const auto& n : reportNumbers(r))
        if (n.key == key)
            return n.value;
    return std::nullopt;
}

std::string formatNumberPlain(const ReportNumber& n) {
    if (n.integer)
        return std::to_string(std::llround(n.value));
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", n.value);
    return buf;
}

std::string formatNumberHuman(const ReportNumber& n) {
    if (n.unit == "B") {
        if (!(n.value < 0))
            return humanBytes(n.value);
        std::string s = "-"; // appended, not "-" + string: GCC 12 -O3 warns -Wrestrict on that
        return s += humanBytes(-n.value);
    }
    if (n.unit == "fraction")
        return fixed(100.0 * n.value, 2) + " %";
    if (n.unit == "FLOP/s")
        return humanFlops(n.value);
    std::string v = n.integer ? withCommas(std::llround(n.value)) : fixed(n.value, 2);
    return n.unit.empty() ? v : v + " " + n.unit;
}

std::string csvField(const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos)
        return s;
    std::string out = "\"";
    for (char c : s) {
        if (c == '"')
            out += '"';
        out += c;
    }
    return out + "\"";
}

std::string markdownCell(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '|')
            out += '\\';
        out += (c == '\n' || c == '\r') ? ' ' : c;
    }
    return out;
}

std::string reportCsv(const Report& r) {
    std::ostringstream out;
    out << "key,label,value,unit\n";
    out << "variant,Variant," << csvField(r.variant) << ",\n";
    out << "kv_dtype,KV dtype," << toString(r.kvDtype) << ",\n";
    out << "weight_dtype,Weight dtype," << toString(r.weightDtype) << ",\n";
    for (const auto& n : reportNumbers(r))
        out << n.key << ',' << csvField(n.label) << ',' << formatNumberPlain(n) << ','
            << csvField(n.unit) << '\n';
    return out.str();
}

std::string reportMarkdown(const ModelSpec& m, const GpuSpec& gpu, const Report& r) {
    std::ostringstream out;
    out << "### " << markdownCell(m.name) << " on " << markdownCell(gpu.name) << ", "
        << markdownCell(r.variant) << ", TP=" << r.tp;
    if (r.dcp > 1)
        out << ", DCP=" << r.dcp;
    out << ", KV " << toString(r.kvDtype) << "\n\n";
    out << "| Quantity | Value |\n|---|---:|\n";
    for (const auto& n : reportNumbers(r))
        out << "| " << markdownCell(n.label) << " | " << markdownCell(formatNumberHuman(n))
            << " |\n";
    return out.str();
}

std::string reportJson(const ModelSpec& m, const GpuSpec& gpu, const Report& r) {
    return jsonReport(m, gpu, r);
}

} // namespace kvscope
