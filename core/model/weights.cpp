// Bytes of the weights per tensor, per format, per rank. Rules and their sources:
//  - 16-bit: 2 bytes per parameter; float32 checkpoints are served in 16-bit (dtype=auto).
//  - Quantized formats: core/model/quant.cpp (values + scales + zero points); embeddings, lm_head,
//    norms, routers and the vision tower stay 16-bit (every quantized checkpoint in the
//    fixtures keeps them so; vLLM builds MoE gates as ReplicatedLinear without a quant method).
//  - Tensor parallelism (vLLM linear.py / vocab_parallel_embedding.py): column/row-parallel
//    linears, the vocab-parallel embedding and lm_head are split TP ways; K/V projections split
//    min(TP, h_kv) ways (KV heads replicate past h_kv); norms, routers and MLA's q_a/kv_a
//    down-projections (ReplicatedLinear in deepseek_v2.py) are whole on every rank.
//  - mxfp4 MoE on the Triton backend (vLLM fused_moe/oracle/mxfp4.py, the default on Hopper):
//    the per-rank intermediate size is rounded up to 64, triton_kernels' Hopper value layout
//    pads to 64-byte tiles, and the layer keeps its loaded w13/w2_weight_scale beside the
//    swizzled copy (scales twice) and its biases in fp32 (tritonMxfp4RankBytes).
//  - Routed experts in their own scheme (DeepSeek-V4 expert_dtype "fp4": core/model/quant.cpp).
//  - Rotary caches (vLLM rotary_embedding/base.py): a [positions, rotary_dim] cos/sin buffer per
//    distinct rope on every rank, in the model dtype unless the model asks otherwise; positions
//    follow the rope scaling (core/model/weightspec.cpp ropeCaches) — 2.5 GiB for Llama-4's 10M.
#include "core/model/weights.h"

#include "core/jsonutil.h"
#include "core/model/params.h"
#include "core/model/quant.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <tuple>

namespace kvscope {

namespace {

std::int64_t ceilDiv(std::int64_t a, std::int64_t b) {
    return (a + b - 1) / b;
}

bool quantizableRole(TensorRole r) {
    return r == TensorRole::Attention || r == TensorRole::Mixer || r == TensorRole::DenseMlp ||
           r == TensorRole::Expert || r == TensorRole::SharedExpert;
}

/// The scheme `d` stands for, and whether it came from the checkpoint.
struct Resolved {
    WeightDtype dtype = WeightDtype::BF16;
    QuantScheme scheme; ///< empty name: unquantized
    int elementBytes = 2;
    const QuantSpec* spec = nullptr; ///< the checkpoint's, when Auto resolved to it
    QuantScheme expertScheme;        ///< the routed experts' own scheme (empty: `scheme`)
};

WeightDtype dtypeOfScheme(const QuantScheme& s) {
    if (s.name == "fp8")
        return WeightDtype::FP8;
    if (s.name == "mxfp4")
        return WeightDtype::MXFP4;
    if (s.name == "nvfp4")
        return WeightDtype::NVFP4;
    if (s.weightBits == 8)
        return WeightDtype::INT8;
    return WeightDtype::INT4;
}

Resolved resolve(const ModelSpec& m, WeightDtype d) {
    Resolved r;
    const QuantSpec& q = m.weights.quant;
    switch (d) {
    case WeightDtype::Auto:
        if (q.present) {
            r.scheme = q.scheme;
            r.spec = &q;
            r.dtype = dtypeOfScheme(q.scheme);
            r.expertScheme = q.expertScheme;
        }
        return r;
    case WeightDtype::BF16:
        return r;
    case WeightDtype::FP16:
        r.dtype = WeightDtype::FP16;
        return r;
    case WeightDtype::FP32:
        r.dtype = WeightDtype::FP32;
        r.elementBytes = 4;
        return r;
    default:
        r.dtype = d;
        if (q.present && dtypeOfScheme(q.scheme) == d) { // the checkpoint's own format
            r.scheme = q.scheme;
            r.spec = &q;
            r.expertScheme = q.expertScheme;
            return r;
        }
        r.scheme = overrideScheme(toString(d));
        return r;
    }
}

std::string sixteenName(const Resolved& r) {
    return r.dtype == WeightDtype::FP16 ? "fp16" : r.dtype == WeightDtype::FP32 ? "fp32" : "bf16";
}

} // namespace

std::int64_t tensorSplitWays(const ModelSpec& m, const WeightTensor& t, std::int64_t tp) {
    std::int64_t ways = tp;
    if (t.role == TensorRole::Norm || t.role == TensorRole::Router || !t.linear)
        ways = t.role == TensorRole::Embedding || t.role == TensorRole::LmHead ? tp : 1;
    if (t.kvPart && !m.mla)
        ways = std::min(tp, m.kvHeads.value);
    if (m.mla && (t.module.find("q_a_proj") != std::string::npos ||
                  t.module.find("kv_a_proj") != std::string::npos))
        ways = 1;
    return ways;
}

namespace {

bool endsWith(const std::string& s, const char* tail) {
    const std::size_t n = std::char_traits<char>::length(tail);
    return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

std::int64_t roundUp(std::int64_t a, std::int64_t b) {
    return ceilDiv(a, b) * b;
}

/// One rank's bytes of an mxfp4 expert tensor [rows = out, cols = in] on vLLM's Triton MoE
/// backend (the default on Hopper; fused_moe/oracle/mxfp4.py):
///  - create_weights pads the per-rank intermediate size to 64
///    (mxfp4_round_up_hidden_size_and_intermediate_size);
///  - convert_to_mxfp4_moe_kernel_format swizzles the values into triton_kernels'
///    HopperMXValueLayout, which pads the packed K bytes and the N extent to 64 (triton PR #8677;
///    the padding PR #10428 later widened N to 256 describes the earlier 64; PR #10343: "pads RHS
///    K to a 64-row tile") — w13 is one fused [2·I, H] tensor, so gate and up each take half;
///  - the swizzled scales (HopperMXScaleLayout, 8 warps: rows to 2·8·2·8 = 256, scale columns to
///    2) live in the precision config while layer.w13/w2_weight_scale keep the loaded copy
///    (quantization/mxfp4.py _setup_kernel replaces only the weights for TRITON_BACKENDS);
///  - the biases become fp32.
std::int64_t tritonMxfp4RankBytes(const ModelSpec& m, const WeightTensor& t, const QuantScheme& s,
                                  std::int64_t tp) {
    const std::int64_t padded = roundUp(ceilDiv(m.moeIntermediate.value, tp), 64);
    const bool down = endsWith(t.module, "down_proj");
    const std::int64_t rows = down ? t.rows : padded;
    const std::int64_t cols = down ? padded : t.cols;
    const std::int64_t rowAlign = down ? 64 : 32, scaleRowAlign = down ? 256 : 128;
    const std::int64_t values = roundUp(rows, rowAlign) * roundUp(ceilDiv(cols, 2), 64);
    const std::int64_t scaleCols = ceilDiv(cols, s.groupSize);
    const std::int64_t loadedScales = rows * scaleCols * s.scaleBytes;
    const std::int64_t swizzledScales =
        roundUp(rows, scaleRowAlign) * roundUp(scaleCols, 2) * s.scaleBytes;
    return t.count * (values + loadedScales + swizzledScales + rows * 4);
}

/// Whether vLLM runs these mxfp4 experts on its Triton backend: the checkpoint's own mxfp4 with
/// the swigluoai activation, the only one OAITritonExperts takes (fused_moe/
/// gpt_oss_triton_kernels_moe.py _supports_activation) — gpt-oss (gpt_oss.py).
bool tritonMxfp4(const ModelSpec& m, const Resolved& r, const QuantScheme& s) {
    return r.spec && s.name == "mxfp4" && m.modelType == "gpt_oss";
}

/// Bytes of every rotary cache on one rank, and its provenance.
std::int64_t ropeCacheBytes(const ModelSpec& m, std::int64_t modelDtypeBytes, std::string& why) {
    const bool rope = std::any_of(m.weights.mixer.begin(), m.weights.mixer.end(), [](Mixer x) {
        return x == Mixer::Attention || x == Mixer::CrossAttention;
    });
    std::int64_t bytes = 0;
    for (const RopeCache& c : rope ? m.weights.ropeCaches : std::vector<RopeCache>{}) {
        const std::int64_t b = c.elementBytes > 0 ? c.elementBytes : modelDtypeBytes;
        bytes += c.positions * c.dim * b;
        why += (why.empty() ? "" : " + ") + std::to_string(c.positions) + " positions (" +
               c.source + ") × " + std::to_string(c.dim) + " × " + std::to_string(b) + " B";
    }
    return bytes;
}

/// Bytes of the language-model tensors: whole-model totals by role and one rank's share.
void tallyTensors(const ModelSpec& m, const Resolved& r, std::int64_t tp, std::int64_t kvHeads,
                  LoadedWeights& out, bool& anyIgnored, double& perRank) {
    const bool quantized = !r.scheme.name.empty();
    for (const WeightTensor& t : *weightInventory(m, kvHeads)) {
        const bool expert = t.role == TensorRole::Expert;
        const QuantScheme& sch = expert && !r.expertScheme.name.empty() ? r.expertScheme : r.scheme;
        const bool eligible =
            quantized && t.linear && quantizableRole(t.role) && (!sch.expertsOnly || expert);
        const bool quantize = eligible && !(r.spec && quantIgnores(*r.spec, t.module));
        anyIgnored = anyIgnored || (eligible && !quantize);
        std::int64_t bytes = t.params() * out.unquantizedElementBytes, rankBytes = 0;
        if (quantize) {
            bytes = t.count * quantizedTensorBytes(sch, t.rows, t.cols);
            out.quantizedParams += t.params();
            if (tritonMxfp4(m, r, sch) && expert)
                rankBytes = tritonMxfp4RankBytes(m, t, sch, tp);
        }
        out.bytes += bytes;
        if (t.role == TensorRole::Attention || t.role == TensorRole::DenseMlp ||
            t.role == TensorRole::SharedExpert || expert)
            out.attentionMlpBytes += bytes;
        if (expert)
            out.expertBytes += bytes;
        if (t.kvPart && t.linear)
            out.kvProjectionBytes += bytes;
        perRank += rankBytes > 0 ? static_cast<double>(rankBytes)
                                 : static_cast<double>(bytes) /
                                       static_cast<double>(tensorSplitWays(m, t, tp));
    }
}

/// The format line and its provenance.
void describe(const ModelSpec& m, const Resolved& r, WeightDtype d, bool anyIgnored,
              LoadedWeights& out) {
    if (r.scheme.name.empty()) {
        out.format = sixteenName(r);
        out.source = d == WeightDtype::Auto
                         ? m.torchDtype.source + " (" + m.torchDtype.value + ", served 16-bit)"
                         : "--weight-dtype " + toString(d);
        return;
    }
    out.format = (r.spec ? r.spec->describe() : toString(d) + " override") + " + " +
                 sixteenName(r) + " embeddings" +
                 (m.tiedEmbeddings.value && !m.weights.untiedByFamily ? "" : ", lm_head") +
                 ", norms" + (m.routedExperts.value > 0 ? ", routers" : "") +
                 (m.weights.visionParams > 0 ? ", vision tower" : "") +
                 (anyIgnored ? ", ignored modules" : "");
    out.source = r.spec ? r.spec->source + (r.spec->ignoreField.empty()
                                                ? std::string()
                                                : " (16-bit: " + r.spec->ignoreField + ")")
                        : "--weight-dtype " + toString(d);
    if (!r.expertScheme.name.empty())
        out.source += "; experts: " + r.spec->expertSource;
    const QuantScheme& experts = r.expertScheme.name.empty() ? r.scheme : r.expertScheme;
    if (tritonMxfp4(m, r, experts) && m.routedExperts.value > 0)
        out.source += "; per rank: the mxfp4 experts as vLLM's Triton MoE backend (the Hopper "
                      "default) lays them out: padded swizzle, scales twice, fp32 biases";
    else if (r.spec && experts.name == "mxfp4" && m.routedExperts.value > 0)
        out.source += "; per rank: the mxfp4 experts at checkpoint size split over TP (vLLM "
                      "runs this activation on Marlin or FlashInfer, whose padding is not "
                      "modelled)";
}

LoadedWeights computeLoadedWeights(const ModelSpec& m, WeightDtype d, std::int64_t tp,
                                   std::int64_t kvHeads) {
    tp = std::max<std::int64_t>(1, tp);
    if (d != WeightDtype::Auto && resolve(m, WeightDtype::Auto).dtype == d)
        d = WeightDtype::Auto; // the checkpoint's own format, named explicitly
    const Resolved r = resolve(m, d);
    LoadedWeights out;
    out.dtype = r.dtype;
    out.unquantizedElementBytes = r.elementBytes;
    bool anyIgnored = false;
    double perRank = 0;
    tallyTensors(m, r, tp, kvHeads, out, anyIgnored, perRank);
    out.visionBytes = m.weights.visionParams * r.elementBytes;
    out.bytes += out.visionBytes;
    perRank += static_cast<double>(out.visionBytes) / static_cast<double>(tp);
    std::string ropeWhy;
    out.ropeCacheBytesPerRank = ropeCacheBytes(m, r.elementBytes, ropeWhy);
    out.bytesPerRank = static_cast<std::int64_t>(perRank) + out.ropeCacheBytesPerRank;
    describe(m, r, d, anyIgnored, out);
    if (d == WeightDtype::Auto && m.weights.checkpointBytes > 0) {
        // The index's total_size is the exact byte count of the checkpoint's tensors; the
        // per-rank figure keeps the computed split, shifted by the difference spread over TP.
        const std::int64_t delta = m.weights.checkpointBytes - out.bytes;
        out.bytes = m.weights.checkpointBytes;
        out.bytesPerRank = std::max<std::int64_t>(0, out.bytesPerRank + delta / tp);
        out.source += "; size: " + m.weights.checkpointSource;
    }
    if (out.ropeCacheBytesPerRank > 0)
        out.source +=
            "; per rank adds the rotary cos/sin cache (rotary_embedding/base.py): " + ropeWhy;
    return out;
}

// loadedWeights runs several times per evaluate (the pool, the h_kv delta, the step, the dtype)
// and a slider step evaluates hundreds of deployments, each walking every tensor of the model
// (thousands for a 671B MoE). Results are kept per inventory (one resolved model, shared by its
// copies) and arguments. An entry also keeps the fields the walk reads outside the inventory, so
// a spec changed after it was first sized (a snapshot's hf_quant_config.json) is sized anew: a
// field read above that can change after the model is resolved belongs in sameInputs.
struct WeightsMemo {
    std::weak_ptr<const std::vector<WeightTensor>> inventory;
    WeightDtype dtype;
    std::int64_t tp, kvHeads;
    ModelSpec inputs; ///< only the fields sameInputs compares
    LoadedWeights out;
};

bool sameInputs(const ModelSpec& a, const ModelSpec& b) {
    return a.weights.quant == b.weights.quant && a.weights.ropeCaches == b.weights.ropeCaches &&
           a.modelType == b.modelType &&
           std::tie(a.weights.checkpointBytes, a.weights.checkpointSource, a.weights.visionParams,
                    a.weights.rotaryDim, a.weights.mixer, a.weights.untiedByFamily,
                    a.maxPositionEmbeddings.value, a.moeIntermediate.value, a.kvHeads.value, a.mla,
                    a.torchDtype.value, a.torchDtype.source, a.tiedEmbeddings.value,
                    a.routedExperts.value) ==
               std::tie(b.weights.checkpointBytes, b.weights.checkpointSource,
                        b.weights.visionParams, b.weights.rotaryDim, b.weights.mixer,
                        b.weights.untiedByFamily, b.maxPositionEmbeddings.value,
                        b.moeIntermediate.value, b.kvHeads.value, b.mla, b.torchDtype.value,
                        b.torchDtype.source, b.tiedEmbeddings.value, b.routedExperts.value);
}

ModelSpec memoInputs(const ModelSpec& m) {
    ModelSpec k;
    k.weights.quant = m.weights.quant;
    k.weights.checkpointBytes = m.weights.checkpointBytes;
    k.weights.checkpointSource = m.weights.checkpointSource;
    k.weights.visionParams = m.weights.visionParams;
    k.weights.rotaryDim = m.weights.rotaryDim;
    k.weights.ropeCaches = m.weights.ropeCaches;
    k.modelType = m.modelType;
    k.weights.mixer = m.weights.mixer;
    k.weights.untiedByFamily = m.weights.untiedByFamily;
    k.maxPositionEmbeddings = m.maxPositionEmbeddings;
    k.moeIntermediate = m.moeIntermediate;
    k.kvHeads = m.kvHeads;
    k.mla = m.mla;
    k.torchDtype = m.torchDtype;
    k.tiedEmbeddings = m.tiedEmbeddings;
    k.routedExperts = m.routedExperts;
    return k;
}
} // namespace

LoadedWeights loadedWeights(const ModelSpec& m, WeightDtype d, std::int64_t tp,
                            std::int64_t kvHeads) {
    thread_local std::vector<WeightsMemo> memo;
    thread_local std::size_t next = 0;
    constexpr std::size_t kEntries = 64;
    const auto inventory = weightInventory(m, kvHeads);
    for (const WeightsMemo& e : memo)
        if (e.dtype == d && e.tp == tp && e.kvHeads == kvHeads &&
            !e.inventory.owner_before(inventory) && !inventory.owner_before(e.inventory) &&
            sameInputs(e.inputs, m))
            return e.out;
    WeightsMemo e{
        inventory, d, tp, kvHeads, memoInputs(m), computeLoadedWeights(m, d, tp, kvHeads)};
    LoadedWeights out = e.out;
    if (memo.size() < kEntries)
        memo.push_back(std::move(e));
    else
        memo[next++ % kEntries] = std::move(e); // the oldest entry goes
    return out;
}

Result<ModelSpec> loadModelSnapshot(const std::string& path) {
    namespace fs = std::filesystem;
    using nlohmann::json;
    std::error_code ec;
    fs::path p(path);
    const fs::path dir = fs::is_directory(p, ec) ? p : p.parent_path();
    // loadModelConfigFile reads through parseJsonBounded, which takes Python's NaN/Infinity
    // tokens (Nemotron-H: "time_step_limit": [0.0, Infinity]) as the doubles they name.
    auto m = loadModelConfigFile(path);
    if (!m.ok())
        return m;
    // Only a folder's own config.json has companions (not "org__model.json" fixtures).
    if (!fs::is_directory(p, ec) && p.filename() != "config.json")
        return m;
    ModelSpec spec = std::move(m.value());
    const fs::path hfq = dir / "hf_quant_config.json";
    if (fs::is_regular_file(hfq, ec)) {
        auto text = readFileBounded(hfq.string(), "hf_quant_config.json", kMaxConfigBytes);
        if (!text.ok())
            return text.error();
        auto j =
            parseJsonBounded(text.value(), "hf_quant_config.json", kMaxConfigBytes, kMaxJsonDepth);
        if (!j.ok())
            return j.error();
        auto q = parseQuantization(json::object(), &j.value());
        if (!q.ok())
            return q.error();
        spec.weights.quant = q.value();
    }
    const fs::path index = dir / "model.safetensors.index.json";
    if (fs::is_regular_file(index, ec)) {
        auto text = readFileBounded(index.string(), "model.safetensors.index.json", 64 << 20);
        if (!text.ok())
            return text.error();
        auto j =
            parseJsonBounded(text.value(), "model.safetensors.index.json", 64 << 20, kMaxJsonDepth);
        if (!j.ok())
            return j.error();
        const json& root = j.value();
        const auto meta = root.is_object() ? root.find("metadata") : root.end();
        if (!root.is_object() || meta == root.end() || !meta->is_object())
            return makeError("model.safetensors.index.json.metadata", "missing");
        const auto total = meta->find("total_size");
        if (total == meta->end() || !total->is_number_integer() || total->get<std::int64_t>() <= 0)
            return makeError("model.safetensors.index.json.metadata.total_size",
                             "must be a positive integer (bytes)");
        spec.weights.checkpointBytes = total->get<std::int64_t>();
        spec.weights.checkpointSource =
            "model.safetensors.index.json metadata.total_size (exact checkpoint bytes)";
    }
    return spec;
}

} // namespace kvscope
