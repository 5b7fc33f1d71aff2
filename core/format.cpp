#include "core/format.h"

#include "core/engines/engines.h"
#include "core/features/report_fields.h"
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
    return fixedTrimmed(v, decimals);
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

std::string fixedTrimmed(double v, int decimals) {
    std::string s = fixed(v, decimals);
    if (s.find('.') != std::string::npos) {
        while (!s.empty() && s.back() == '0')
            s.pop_back();
        if (!s.empty() && s.back() == '.')
            s.pop_back();
    }
    return s;
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

namespace {

/// The text report's layout over the report's field list: every number printed comes from a
/// ReportField (by its JSON key), the labels and provenance notes are the layout's own.
class TextOut {
public:
    TextOut(const ModelSpec& m, const GpuSpec& g, const Report& r)
        : m(m), gpu(g), r(r), fields_(reportFields(r, &m, &g)) {}

    const ReportField& f(std::string_view key) const {
        static const ReportField unknown;
        const ReportField* x = findField(fields_, key);
        return x ? *x : unknown;
    }
    double v(std::string_view key) const { return f(key).value.value_or(0); }
    std::int64_t i(std::string_view key) const { return std::llround(v(key)); }
    std::string human(std::string_view key) const { return formatFieldHuman(f(key)); }
    std::string exact(std::string_view key) const { return bytesExact(i(key)); }
    std::string count(std::string_view key) const { return withCommas(i(key)); }
    std::string params(std::string_view key) const { return humanCount(v(key)); }
    std::string dec(std::string_view key) const { return fixed(v(key), f(key).precision); }
    std::string pct(std::string_view key) const {
        return fixed(100.0 * v(key), f(key).precision) + "%";
    }
    std::string ms(std::string_view key) const { return fixed(v(key) * 1e3, f(key).precision); }
    std::string tflop(std::string_view key) const { return fixed(v(key) / 1e12, f(key).precision); }
    /// "+1.5B" / "-128 MiB": a signed delta in the unit's human form.
    std::string signedHuman(std::string_view key, bool asParams) const {
        const double x = v(key);
        return (x >= 0 ? "+" : "-") +
               (asParams ? humanCount(std::fabs(x)) : humanBytes(std::fabs(x)));
    }

    void row(const std::string& label, const std::string& value, const std::string& note = {}) {
        o << "  " << pad(label, kLabel) << (note.empty() ? value : pad(value, 18) + "  " + note)
          << '\n';
    }

    static constexpr std::size_t kLabel = 22;
    const ModelSpec& m;
    const GpuSpec& gpu;
    const Report& r;
    std::ostringstream o;

private:
    std::vector<ReportField> fields_;
};

std::string kvDtypeText(const TextOut& t) {
    const KvDtypeInfo& k = kvDtypeInfo(t.r.kvDtype);
    const bool whole = t.r.kvStorageBits % 8 == 0 && k.scaleBytesPerGroup == 0 &&
                       k.scaleBytesPerTokenHead == 0 && k.fixedBytesPerTokenPerLayer == 0;
    return toString(t.r.kvDtype) + (whole ? " (" + t.count("kv_bytes_per_element") + " B)"
                                          : " (" + std::string(k.title) + ")");
}

void modelSection(TextOut& t) {
    const ModelSpec& m = t.m;
    const Report& r = t.r;
    t.o << "Model (provenance on the right)\n";
    t.row("attention",
          r.variant +
              (r.attention == AttentionKind::MLA ? "" : " · g = " + compact(t.v("group_size"))),
          m.mla && r.attention != AttentionKind::MLA ? "what-if: MLA model viewed as GQA" : "");
    t.row("layers L", t.count("model.layers"), m.layers.source);
    t.row("query heads h", t.count("model.q_heads"), m.qHeads.source);
    t.row("KV heads h_kv", t.count("model.kv_heads"),
          r.kvHeads == m.kvHeads.value || m.mla
              ? m.kvHeads.source
              : "what-if --h-kv (model has " + t.count("model.kv_heads_checkpoint") + ")");
    if (m.mla) {
        t.row("kv_lora_rank r", t.count("model.kv_lora_rank"), m.kvLoraRank.source);
        t.row("qk_rope_head_dim", t.count("model.qk_rope_head_dim"), m.qkRopeHeadDim.source);
    }
    t.row("head dim d_h", t.count("model.head_dim"), m.headDim.source);
    t.row("hidden d", t.count("model.hidden"), m.hidden.source);
    t.row("parameters", t.params("model.params"),
          "counted from the config; embeddings " +
              std::string(m.tiedEmbeddings.value ? "tied" : "untied") + " (" +
              m.tiedEmbeddings.source + ")");
    if (t.v("model.params_vision") > 0)
        t.row("vision tower", t.params("model.params_vision") + " params",
              m.weights.visionSource + "; loaded with the weights, not in the parameters above");
    if (t.v("model.params_mtp") > 0)
        t.row("MTP layers", t.params("model.params_mtp") + " params",
              m.weights.mtpSource + "; in the checkpoint, not served");
    t.row("KV dtype", kvDtypeText(t), m.torchDtype.source + " = " + m.torchDtype.value);
}

void groupsSection(TextOut& t) {
    const ModelSpec& m = t.m;
    if (!(m.layerGroups.size() > 1 || m.windowLayerCount() > 0 ||
          (m.layerGroups.size() == 1 && m.layerGroups[0].kind != LayerKind::Full &&
           m.layerGroups[0].kind != LayerKind::Mla)))
        return;
    t.o << "\nLayer groups (cache kind per layer, provenance on the right)\n";
    for (std::size_t i = 0; i < m.layerGroups.size(); ++i) {
        const LayerGroup& g = m.layerGroups[i];
        auto key = [i](const char* field) { return layerGroupKey(i, field); };
        std::string what = t.count(key("count")) + " " + toString(g.kind);
        if (t.f(key("window")).value)
            what += g.kind == LayerKind::Compressed ? " (1:" + t.count(key("window")) + ")"
                                                    : " (" + t.count(key("window")) + ")";
        std::string bytes;
        if (storesPerTokenKv(g.kind))
            bytes = t.count(key("bytes_per_token_per_layer")) + " B/token/layer";
        else if (t.v(key("state_bytes_per_request_per_layer")) > 0)
            bytes = t.human(key("state_bytes_per_request_per_layer")) + "/request/layer";
        else
            bytes = "no cache";
        t.o << "  " << pad(what, TextOut::kLabel) << pad(bytes, 22) << "  " << g.source << '\n';
    }
    if (t.v("model.mtp_layers") > 0)
        t.o << "  " << pad(t.count("model.mtp_layers") + " mtp", TextOut::kLabel)
            << pad("not allocated", 22) << "  " << m.mtpLayers.source
            << " (KV only with speculative decoding)\n";
}

void cellSection(TextOut& t) {
    const Report& r = t.r;
    t.o << "\nBytes per token (the cell)\n";
    t.row("cell, whole model", t.exact("cell_bytes_per_token"));
    t.row("cell per rank", t.exact("cell_bytes_per_token_per_rank"),
          t.count("q_heads_per_rank") + " query head(s), " + t.count("kv_heads_per_rank") +
              (r.attention == AttentionKind::MLA ? " latent" : " KV head(s)") + " per rank" +
              (r.kvReplicated ? ", replicated x" + t.count("kv_copies") : ""));
    t.row("one request", t.human("request_bytes"),
          "at " + t.count("context") + " tokens, whole model");
    t.row("one request per rank", t.human("request_bytes_per_rank"),
          r.dcp > 1 ? "ceil(S / DCP) = " + t.count("context_per_rank") + " tokens per rank" : "");
}

void poolSection(TextOut& t) {
    const Report& r = t.r;
    const PoolBreakdown& p = r.pool;
    t.o << "\nKV pool per rank ("
        << (p.overridden                      ? std::string("--pool-gib")
            : p.model == PoolModel::Datasheet ? std::string("datasheet")
                                              : p.engine.text())
        << (p.pp > 1 ? ", limiting stage " + t.count("pool.stages.limiting_stage") + " of " +
                           t.count("pool.stages.pp")
                     : std::string())
        << ")\n";
    if (p.overridden) {
        t.row("pool", t.human("pool_bytes_per_rank"), "set by --pool-gib");
        return;
    }
    const std::string capacity = p.model == PoolModel::Datasheet
                                     ? compact(t.v("pool.capacity_bytes") / 1e9) + " GB"
                                     : t.human("pool.capacity_bytes");
    t.row(t.dec("pool.gpu_memory_utilization") + " x " + capacity, t.human("pool.budget_bytes"),
          p.capacitySource);
    t.row("- weights / TP", t.human("pool.weight_bytes"),
          toString(r.weightDtype) + ", " + t.params("model.params") + " params / " + t.count("tp"));
    if (p.model == PoolModel::Vllm) {
        // The engine's own terms, each with the rule and its source (core/engines/).
        for (std::size_t i = 0; i < p.terms.size(); ++i) {
            const PoolTerm& term = p.terms[i];
            if (term.key == "budget" || term.key == "weights" || term.key == "pool")
                continue;
            t.row((term.subtracted ? "- " : "  (") + term.label + (term.subtracted ? "" : ")"),
                  t.human("pool.breakdown." + std::to_string(i) + ".bytes"), term.rule);
        }
    }
    if (p.pp > 1) {
        t.row("= pool, stage " + t.count("pool.stages.limiting_stage"),
              t.human("pool.stages.stage_pool_bytes"),
              t.count("pool.stages.stage_layers") + " of " + t.count("model.layers") +
                  " layers; the smallest stage sets the blocks");
        t.row("  as all layers", t.human("pool_bytes_per_rank"),
              "stage pool × L / stage layers, for the per-token arithmetic below");
    } else {
        t.row("= pool", t.human("pool_bytes_per_rank"), t.count("pool_bytes_per_rank") + " B");
    }
}

void capacitySection(TextOut& t) {
    const Report& r = t.r;
    t.o << "\nCapacity\n";
    t.row("tokens held", t.count("tokens_capacity"),
          "pool / per-rank cell" + std::string(r.dcp > 1 ? " x DCP" : ""));
    t.row("max concurrency", t.count("max_concurrency"),
          "requests of " + t.count("context") + " tokens (" + t.dec("concurrency") + ")");
    if (r.vllmKvCacheGroups > 1) {
        t.row("vLLM page", t.exact("page_bytes"),
              t.count("block_size") + "-token attention block, one layer, one rank");
        t.row("KV cache groups",
              t.count("vllm_kv_cache_groups") + " x " + t.count("vllm_group_size") + " layers",
              r.vllmPaddingLayers > 0 ? t.count("vllm_padding_layers") + " padding layer(s)"
                                      : "hybrid allocator");
        t.row("blocks per rank", t.count("blocks_per_rank"), "pool / (page x group size)");
        t.row("blocks per request", t.count("vllm_blocks_per_request"),
              "summed over groups at " + t.count("context") + " tokens");
        t.row("vLLM reserves", t.human("vllm_request_bytes_per_rank"),
              "per request per rank: window - 1 + max_num_batched_tokens, mamba one page");
    } else {
        t.row("vLLM page", t.exact("page_bytes"),
              t.count("block_size") + "-token block, " +
                  (r.vllmGroupSize > 0 ? "one layer" : "all layers") + ", one rank");
        t.row("blocks per rank", t.count("blocks_per_rank"), "pool / (page x L)");
    }
    t.o << "\nvLLM would log\n  " << r.vllmLogTokens << "\n  " << r.vllmLogConcurrency << "\n";
}

void rooflineSection(TextOut& t) {
    const Report& r = t.r;
    t.o << "\nDecode attention on the roofline (" << t.gpu.name << ")\n";
    t.row("intensity", t.human("intensity_flop_per_byte"),
          r.attention == AttentionKind::MLA ? "2 h_rank (2r + d_rope) / (b (r + d_rope))"
                                            : "2 g_rank / b");
    t.row("ridge", t.human("ridge_flop_per_byte"),
          t.human(r.kvDtype == KvDtype::FP32 ? "gpu.peak_fp32_flop_per_s"
                                             : "gpu.peak_bf16_flop_per_s") +
              " / " + t.human("gpu.bandwidth_bytes_per_s"));
    t.row("attainable", t.human("attainable_flop_per_s"),
          t.pct("attainable_fraction_of_peak") + " of peak");
}

void weightsSection(TextOut& t) {
    const Report& r = t.r;
    t.o << "\nWeights\n";
    const bool whatIf =
        t.i("kv_proj_params_per_layer") != t.i("kv_proj_params_per_layer_checkpoint");
    t.row("K/V projections", t.params("kv_proj_params_per_layer") + " / layer",
          whatIf ? "checkpoint: " + t.params("kv_proj_params_per_layer_checkpoint") : "");
    if (whatIf && r.attention != AttentionKind::MLA)
        t.row("what-if weights", t.signedHuman("kv_proj_params_vs_checkpoint", true) + " params",
              t.signedHuman("kv_proj_weight_bytes_vs_checkpoint", false) + " " +
                  toString(r.weightDtype) + "; the pool above keeps the checkpoint's weights");
    const LoadedWeights loaded = loadedWeights(t.m, r.weightDtype, r.tp);
    t.row("weights per rank", t.human("weight_bytes_per_rank"),
          loaded.format + "; " + loaded.source);
}

void stepSection(TextOut& t) {
    const Report& r = t.r;
    const DecodeStep& st = r.step;
    t.o << "\nOne decode step per rank (batch " << t.count("batch") << ", " << t.count("context")
        << " tokens)\n";
    t.row("weights read", t.human("decode_step.weight_bytes_per_rank"),
          st.moeLayers > 0
              ? t.dec("decode_step.experts_touched_per_moe_layer") + " of " +
                    t.count("model.routed_experts") + " routed experts per MoE layer touched"
              : "read once per step");
    t.row("KV read", t.human("decode_step.kv_bytes_per_rank"),
          t.pct("decode_step.kv_fraction") + " of the step's bytes");
    t.row("activations", t.human("decode_step.activation_bytes_per_rank"),
          "GEMM inputs/outputs, Q/O, residual stream (16-bit)");
    t.row("bytes / BW", t.human("decode_step.memory_time_s"),
          t.human("decode_step.bytes") + " / " + t.human("gpu.bandwidth_bytes_per_s"));
    t.row("FLOPs / peak", t.human("decode_step.compute_time_s"),
          t.tflop("decode_step.flops") + " TFLOP (GEMMs " + t.tflop("decode_step.gemm_flops") +
              " TFLOP, attention " + t.tflop("decode_step.attention_flops") + " TFLOP)");
    if (r.tp > 1)
        t.row("TP all-reduces",
              st.commCounted ? t.human("decode_step.comm_time_s") : std::string("not counted"),
              t.human("decode_step.comm_bytes") + " sent per rank" +
                  (st.commCounted
                       ? " / " + t.human("gpu.interconnect_bytes_per_s_each_way") + " each way (" +
                             (t.gpu.interconnect.empty() ? "interconnect" : t.gpu.interconnect) +
                             ")"
                       : ": the GPU's interconnect_gb_s is unknown"));
    t.row("time per token >=", t.human("decode_step.time_lower_bound_s"),
          toString(st.bound) + "-bound: max(bytes, FLOPs) + all-reduces");
    t.row("tokens/s", t.dec("decode_step.tokens_per_s_per_gpu") + " per GPU",
          t.dec("decode_step.tokens_per_s") + " for the deployment (" + t.count("tp") + " GPUs)");
}

} // namespace

std::string textReport(const ModelSpec& m, const GpuSpec& gpu, const Report& r) {
    TextOut t(m, gpu, r);
    t.o << "kvscope: " << m.name << " on " << t.count("tp") << " x " << gpu.name
        << " (TP=" << t.count("tp") << (r.dcp > 1 ? ", DCP=" + t.count("dcp") : "") << ")\n\n";
    modelSection(t);
    groupsSection(t);
    cellSection(t);
    poolSection(t);
    capacitySection(t);
    rooflineSection(t);
    weightsSection(t);
    stepSection(t);
    if (!r.warnings.empty()) {
        t.o << "\nWarnings\n";
        for (const auto& wn : r.warnings)
            t.o << "  ! " << wn << '\n';
    }
    return t.o.str();
}

namespace {

using nlohmann::json;

/// What `size --json` carries that is not a scalar number: names, kinds, provenance, rules,
/// flags, the layer lists. The numbers are put in afterwards from the field list.
json jsonSkeleton(const ModelSpec& m, const GpuSpec& gpu, const Report& r) {
    json groups = json::array();
    for (const auto& g : m.layerGroups)
        groups.push_back({{"kind", toString(g.kind)}, {"layers", g.layers}, {"source", g.source}});
    const LoadedWeights loaded = loadedWeights(m, r.weightDtype, r.tp);
    const PoolBreakdown& p = r.pool;
    json breakdown = json::array();
    for (const PoolTerm& t : p.terms)
        breakdown.push_back({{"key", t.key},
                             {"label", t.label},
                             {"subtracted", t.subtracted},
                             {"rule", t.rule},
                             {"source", t.source}});
    json pool = {{"model", p.overridden ? "override" : toString(p.model)},
                 {"capacity_source", p.capacitySource},
                 {"breakdown", breakdown}};
    if (p.engine.name == EngineName::Sglang && p.model == PoolModel::Vllm && !p.overridden)
        pool["mem_fraction_static_source"] = p.memFractionSource;
    json j = {
        {"model",
         {{"name", m.name},
          {"model_type", m.modelType},
          {"attention", toString(r.attention)},
          {"variant", r.variant},
          {"layer_groups", groups}}},
        {"provenance",
         {{"layers", m.layers.source},
          {"q_heads", m.qHeads.source},
          {"kv_heads", m.kvHeads.source},
          {"head_dim", m.headDim.source},
          {"hidden", m.hidden.source},
          {"dtype", m.torchDtype.source},
          {"tied_embeddings", m.tiedEmbeddings.source},
          {"layer_kinds", m.layerKindsSource},
          {"mtp_layers", m.mtpLayers.source}}},
        {"gpu", {{"id", gpu.id}, {"name", gpu.name}, {"interconnect", gpu.interconnect}}},
        {"kv_dtype", toString(r.kvDtype)},
        {"weight_dtype", toString(r.weightDtype)},
        {"kv_replicated", r.kvReplicated},
        {"pool", pool},
        {"engine", {{"name", toString(p.engine.name)}, {"version", p.engine.version.text()}}},
        {"fits", r.fits},
        {"vllm_log", {r.vllmLogTokens, r.vllmLogConcurrency}},
        {"weights", {{"format", loaded.format}, {"source", loaded.source}}},
        {"decode_step", {{"comm_counted", r.step.commCounted}, {"bound", toString(r.step.bound)}}},
        {"warnings", r.warnings}};
    if (!r.fits)
        j["no_fit_reason"] = r.noFitReason;
    return j;
}

json::json_pointer pointerOf(const std::string& key) {
    std::string pointer = "/" + key;
    for (char& c : pointer)
        if (c == '.')
            c = '/';
    return json::json_pointer(pointer);
}

void putField(json& j, const std::string& key, const ReportField& f) {
    json& slot = j[pointerOf(key)];
    if (!f.value)
        slot = nullptr;
    else if (f.integer)
        slot = static_cast<std::int64_t>(std::llround(*f.value));
    else
        slot = *f.value;
}

} // namespace

std::string jsonReport(const ModelSpec& m, const GpuSpec& gpu, const Report& r) {
    json j = jsonSkeleton(m, gpu, r);
    for (const ReportField& f : reportFields(r, &m, &gpu)) {
        putField(j, f.key, f);
        if (!f.alsoAt.empty())
            putField(j, f.alsoAt, f);
        if (!f.source.empty())
            j[pointerOf(f.key + "_source")] = f.source;
    }
    return j.dump(2);
}

} // namespace kvscope
