// Layer kinds, per-group byte sizing and recurrent-state geometry (vLLM mamba_utils.py), with
// the checked config fields the layer resolution (core/model/layers.cpp) reads them through.
#include "core/jsonutil.h"
#include "core/model/dtype.h"
#include "core/model/layers.h"
#include "core/model/layers_detail.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace kvscope {

std::string toString(LayerKind k) {
    switch (k) {
    case LayerKind::Full:
        return "full";
    case LayerKind::Sliding:
        return "sliding";
    case LayerKind::Chunked:
        return "chunked";
    case LayerKind::Cross:
        return "cross";
    case LayerKind::Mla:
        return "mla";
    case LayerKind::Compressed:
        return "compressed";
    case LayerKind::Linear:
        return "linear";
    case LayerKind::Mamba:
        return "mamba";
    case LayerKind::None:
        return "none";
    }
    return "?";
}

bool storesPerTokenKv(LayerKind k) {
    return k == LayerKind::Full || k == LayerKind::Sliding || k == LayerKind::Chunked ||
           k == LayerKind::Mla || k == LayerKind::Compressed;
}

bool isFixedState(LayerKind k) {
    return k == LayerKind::Linear || k == LayerKind::Mamba;
}

bool LayerGroup::sameSpec(const LayerGroup& o) const {
    const auto& a = state;
    const auto& b = o.state;
    return kind == o.kind && window == o.window && kvHeads == o.kvHeads && headDimK == o.headDimK &&
           headDimV == o.headDimV && indexerHeadDim == o.indexerHeadDim &&
           encoderTokens == o.encoderTokens && auxWindow == o.auxWindow &&
           deepseekV4 == o.deepseekV4 && ropeDim == o.ropeDim && a.form == b.form &&
           a.convKernel == b.convKernel && a.intermediate == b.intermediate &&
           a.nGroups == b.nGroups && a.stateSize == b.stateSize && a.heads == b.heads &&
           a.headDim == b.headDim && a.keyHeads == b.keyHeads && a.keyHeadDim == b.keyHeadDim &&
           a.convBytes == b.convBytes && a.ssmBytes == b.ssmBytes;
}

namespace {

/// _apply_alignment_padding (vllm/v1/kv_cache_interface.py): round_up(real page, alignment).
std::int64_t alignPage(std::int64_t real) {
    constexpr std::int64_t kAlign = 576; // "FlashMLA requires 576B alignment"
    return (real + kAlign - 1) / kAlign * kAlign;
}

Dsv4CacheSpec dsv4Spec(std::string name, bool full, std::int64_t block, std::int64_t window,
                       std::int64_t entries, std::int64_t entryBytes) {
    return {
        std::move(name), full, block, window, entries, entryBytes, alignPage(entries * entryBytes)};
}

/// CompressorStateCache (vllm/model_executor/layers/deepseek_compressor.py): fp32 state of
/// 2 · coff · head_dim (kv_state + score_state), coff = 1 + (ratio == 4); block_size 4 for
/// ratio 4, 8 for ratio 128; sliding_window = coff · ratio; one slot per token
/// (SlidingWindowMLASpec compress_ratio 1).
Dsv4CacheSpec compressorState(std::string name, std::int64_t ratio, std::int64_t headDim) {
    const std::int64_t coff = ratio == 4 ? 2 : 1;
    const std::int64_t block = ratio == 4 ? 4 : 8;
    return dsv4Spec(std::move(name), false, block, coff * ratio, block, 2 * coff * headDim * 4);
}

} // namespace

std::vector<Dsv4CacheSpec> deepseekV4CacheSpecs(const LayerGroup& g, std::int64_t blockSize) {
    std::vector<Dsv4CacheSpec> out;
    if (!g.deepseekV4 || blockSize <= 0)
        return out;
    // fp8_ds_mla entry (DeepseekV4MultiHeadLatentAttentionWrapper head_bytes): NoPE values fp8,
    // RoPE values bf16, one UE8M0 scale per 64 NoPE values, 1 pad byte: 448 + 128 + 7 + 1 = 584.
    const std::int64_t nope = g.headDimK - g.ropeDim;
    const std::int64_t entry = nope + g.ropeDim * 2 + nope / 64 + 1;
    // DeepseekV4SWACache: SlidingWindowMLASpec, block_size 64 ("C4A KV block shape [256//4,
    // head_dim] = [64, head_dim] determines the SWA block size of 64 tokens").
    const std::int64_t window =
        g.kind == LayerKind::Compressed ? g.auxWindow : g.window.value_or(0);
    out.push_back(dsv4Spec("swa_cache", false, 64, window, 64, entry));
    if (g.kind != LayerKind::Compressed)
        return out;
    const std::int64_t ratio = g.window.value_or(1);
    // DeepseekV4MLAAttention.get_kv_cache_spec: MLAAttentionSpec, model_version deepseek_v4,
    // storage_block_size = block_size // compress_ratio entries of 584 B.
    out.push_back(dsv4Spec("attn", true, blockSize, 0, blockSize / ratio, entry));
    out.push_back(compressorState("compressor.state_cache", ratio, g.headDimK));
    if (g.indexerHeadDim > 0) {
        // DeepseekV4IndexerCache: MLAAttentionSpec of head_dim + head_dim // 128 · 4 uint8
        // (fp8 key + fp32 scale), compress_ratio 4, alignment 576.
        out.push_back(dsv4Spec("indexer.k_cache", true, blockSize, 0, blockSize / ratio,
                               indexerBytesPerToken(g.indexerHeadDim)));
        out.push_back(compressorState("indexer.compressor.state_cache", ratio, g.indexerHeadDim));
    }
    return out;
}

std::int64_t deepseekV4StateBytes(const LayerGroup& g) {
    std::int64_t total = 0;
    for (const Dsv4CacheSpec& s : deepseekV4CacheSpecs(g, 256))
        if (s.name.find("state_cache") != std::string::npos)
            total += s.window * s.entryBytes;
    return total;
}

std::int64_t indexerBytesPerToken(std::int64_t indexerHeadDim) {
    return layoutTokenBytes(dsIndexerLayout(), 1, indexerHeadDim, 0);
}

std::int64_t stateBytesPerRank(const StateGeometry& s, std::int64_t tp) {
    const std::int64_t convLen = std::max<std::int64_t>(0, s.convKernel - 1);
    switch (s.form) {
    case StateGeometry::Form::None:
        return 0;
    case StateGeometry::Form::Mamba2: {
        // mamba2_state_shape + extra_groups_for_head_shards (vLLM mamba_utils.py)
        const std::int64_t groups = s.nGroups + (s.nGroups % tp == 0 ? 0 : tp - s.nGroups);
        const std::int64_t convDim = s.intermediate + 2 * groups * s.stateSize;
        const std::int64_t conv = convLen * (convDim / tp);
        const std::int64_t ssm = (s.heads / tp) * s.headDim * s.stateSize;
        return conv * s.convBytes + ssm * s.ssmBytes;
    }
    case StateGeometry::Form::Mamba1: {
        const std::int64_t conv = convLen * (s.intermediate / tp);
        const std::int64_t ssm = (s.intermediate / tp) * s.stateSize;
        return conv * s.convBytes + ssm * s.ssmBytes;
    }
    case StateGeometry::Form::GatedDeltaNet: {
        // gated_delta_net_state_shape (vLLM mamba_utils.py)
        const std::int64_t convDim = 2 * s.keyHeads * s.keyHeadDim + s.heads * s.headDim;
        const std::int64_t conv = convLen * (convDim / tp);
        const std::int64_t recurrent = (s.heads / tp) * s.headDim * s.keyHeadDim;
        return conv * s.convBytes + recurrent * s.ssmBytes;
    }
    }
    return 0;
}

namespace layersdetail {

/// A non-null integer field of `j`, validated to [min, max]; nullopt when absent or null.
Result<std::optional<std::int64_t>> intField(const json& j, const std::string& key,
                                             const std::string& prefix, std::int64_t min,
                                             std::int64_t max) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null())
        return std::optional<std::int64_t>{};
    std::int64_t v = 0;
    if (it->is_number_integer() &&
        !(it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(max))) {
        v = it->get<std::int64_t>();
    } else if (it->is_number_float() && std::isfinite(it->get<double>()) &&
               it->get<double>() == std::floor(it->get<double>()) &&
               std::fabs(it->get<double>()) <= static_cast<double>(max)) {
        v = static_cast<std::int64_t>(it->get<double>());
    } else if (it->is_number()) {
        return makeError(prefix + key, "must be an integer in [" + std::to_string(min) + ", " +
                                           std::to_string(max) + "]");
    } else {
        return makeError(prefix + key, "must be an integer");
    }
    if (v < min || v > max)
        return makeError(prefix + key, "must be in [" + std::to_string(min) + ", " +
                                           std::to_string(max) + "], got " + std::to_string(v));
    return std::optional<std::int64_t>{v};
}

Result<std::int64_t> requiredInt(const json& j, const std::string& key, const std::string& prefix,
                                 const std::string& why) {
    auto v = intField(j, key, prefix, 1, kMaxField);
    if (!v.ok())
        return v.error();
    if (!v.value())
        return makeError(prefix + key, "missing (" + why + ")");
    return *v.value();
}

/// First present alias of `keys`; error naming the first key when none is present.
Result<std::pair<std::int64_t, std::string>> requiredAlias(const json& j,
                                                           std::initializer_list<const char*> keys,
                                                           const std::string& prefix,
                                                           const std::string& why) {
    for (const char* k : keys) {
        auto v = intField(j, k, prefix, 1, kMaxField);
        if (!v.ok())
            return v.error();
        if (v.value())
            return std::pair<std::int64_t, std::string>{*v.value(), k};
    }
    return makeError(prefix + *keys.begin(), "missing (" + why + ")");
}

std::string stringField(const json& j, const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// Element size of a state dtype named by the config ("float32", "bfloat16", ...).
Result<std::int64_t> stateDtypeBytes(const std::string& name, const std::string& field) {
    if (name == "float32" || name == "float" || name == "fp32")
        return std::int64_t{4};
    if (name == "bfloat16" || name == "float16" || name == "half" || name == "bf16" ||
        name == "fp16")
        return std::int64_t{2};
    std::string message = "\""; // appended: see schema_codecs.cpp's quoted()
    message += sanitizeForMessage(name);
    message += "\" is not a state dtype kvscope knows (float32, bfloat16, float16)";
    return makeError(field, message);
}

/// The SSM/recurrent state dtype: the config's mamba_ssm_cache_dtype / mamba_ssm_dtype (vLLM
/// copies Qwen3.5's mamba_ssm_dtype into cache_config.mamba_ssm_cache_dtype,
/// vllm/model_executor/models/config.py), else vLLM's default "auto": the model dtype.
Result<std::pair<std::int64_t, std::string>> ssmDtype(const json& cfg, const std::string& prefix,
                                                      std::int64_t served) {
    for (const char* k : {"mamba_ssm_cache_dtype", "mamba_ssm_dtype"}) {
        const std::string v = stringField(cfg, k);
        if (v.empty() || v == "auto")
            continue;
        auto b = stateDtypeBytes(v, prefix + k);
        if (!b.ok())
            return b.error();
        return std::pair<std::int64_t, std::string>{b.value(), prefix + k + " = " + v};
    }
    return std::pair<std::int64_t, std::string>{
        served, "mamba_ssm_cache_dtype absent: vLLM's default auto (the model dtype)"};
}

Result<LayerGroup> mambaGeometry(const LayerResolveInput& in, bool jamba) {
    const json& cfg = *in.cfg;
    const std::string& p = in.prefix;
    LayerGroup g;
    g.kind = LayerKind::Mamba;
    StateGeometry& s = g.state;
    s.convBytes = in.servedBytes;
    auto dt = ssmDtype(cfg, p, in.servedBytes);
    if (!dt.ok())
        return dt.error();
    s.ssmBytes = dt.value().first;
    if (jamba) {
        // Jamba: Mamba-1 with d_inner = mamba_expand · hidden_size (vLLM jamba.py,
        // get_mamba_state_shape_from_config → mamba1_state_shape).
        s.form = StateGeometry::Form::Mamba1;
        auto expand = requiredInt(cfg, "mamba_expand", p, "Jamba's mamba layers");
        auto state = requiredInt(cfg, "mamba_d_state", p, "Jamba's mamba layers");
        auto conv = requiredInt(cfg, "mamba_d_conv", p, "Jamba's mamba layers");
        if (!expand.ok())
            return expand.error();
        if (!state.ok())
            return state.error();
        if (!conv.ok())
            return conv.error();
        s.intermediate = expand.value() * in.hidden;
        s.stateSize = state.value();
        s.convKernel = conv.value();
        g.source = p + "mamba_expand · hidden_size, mamba_d_state, mamba_d_conv (Mamba-1); " +
                   dt.value().second;
        return g;
    }
    // Mamba-2 (Nemotron-H: d_inner = mamba_num_heads · mamba_head_dim, vLLM nemotron_h.py
    // get_mamba_state_shape_from_config → mamba2_state_shape).
    s.form = StateGeometry::Form::Mamba2;
    const std::string why = "the config has mamba layers";
    auto heads = requiredAlias(cfg, {"mamba_num_heads", "mamba_n_heads"}, p, why);
    auto headDim = requiredAlias(cfg, {"mamba_head_dim", "mamba_d_head"}, p, why);
    auto groups = requiredAlias(cfg, {"n_groups", "mamba_n_groups"}, p, why);
    auto state = requiredAlias(cfg, {"ssm_state_size", "mamba_d_state", "state_size"}, p, why);
    auto conv = requiredAlias(cfg, {"conv_kernel", "mamba_d_conv", "conv_kernel_size"}, p, why);
    for (const auto* r : {&heads, &headDim, &groups, &state, &conv})
        if (!r->ok())
            return r->error();
    s.heads = heads.value().first;
    s.headDim = headDim.value().first;
    s.intermediate = s.heads * s.headDim;
    s.nGroups = groups.value().first;
    s.stateSize = state.value().first;
    s.convKernel = conv.value().first;
    g.source = p + heads.value().second + " · " + headDim.value().second + ", " +
               groups.value().second + ", " + state.value().second + ", " + conv.value().second +
               " (Mamba-2); " + dt.value().second;
    return g;
}

Result<LayerGroup> gdnGeometry(const LayerResolveInput& in) {
    const json& cfg = *in.cfg;
    const std::string& p = in.prefix;
    const std::string why = "layer_types names linear_attention layers";
    LayerGroup g;
    g.kind = LayerKind::Linear;
    StateGeometry& s = g.state;
    s.form = StateGeometry::Form::GatedDeltaNet;
    auto kh = requiredInt(cfg, "linear_num_key_heads", p, why);
    auto kd = requiredInt(cfg, "linear_key_head_dim", p, why);
    auto vh = requiredInt(cfg, "linear_num_value_heads", p, why);
    auto vd = requiredInt(cfg, "linear_value_head_dim", p, why);
    auto ck = requiredInt(cfg, "linear_conv_kernel_dim", p, why);
    for (const auto* r : {&kh, &kd, &vh, &vd, &ck})
        if (!r->ok())
            return r->error();
    s.keyHeads = kh.value();
    s.keyHeadDim = kd.value();
    s.heads = vh.value();
    s.headDim = vd.value();
    s.convKernel = ck.value();
    s.convBytes = in.servedBytes;
    auto dt = ssmDtype(cfg, p, in.servedBytes);
    if (!dt.ok())
        return dt.error();
    s.ssmBytes = dt.value().first;
    g.source = p +
               "linear_num_key_heads, linear_key_head_dim, linear_num_value_heads, "
               "linear_value_head_dim, linear_conv_kernel_dim (Gated DeltaNet); " +
               dt.value().second;
    return g;
}

void fillBytes(LayerGroup& g, std::int64_t served) {
    const std::int64_t entry = g.kvHeads * (g.headDimK + g.headDimV) * served;
    g.bytesPerTokenPerLayer = 0;
    g.stateBytesPerRequestPerLayer = 0;
    switch (g.kind) {
    case LayerKind::Full:
    case LayerKind::Sliding:
    case LayerKind::Chunked:
        g.bytesPerTokenPerLayer = entry;
        break;
    case LayerKind::Mla:
        g.bytesPerTokenPerLayer =
            entry + (g.indexerHeadDim ? indexerBytesPerToken(g.indexerHeadDim) : 0);
        break;
    case LayerKind::Compressed: {
        // One entry (and one indexer key) per `ratio` tokens, rounded up per token.
        const std::int64_t ratio = g.window.value_or(1);
        const std::int64_t idx = g.indexerHeadDim ? indexerBytesPerToken(g.indexerHeadDim) : 0;
        g.bytesPerTokenPerLayer = (entry + ratio - 1) / ratio + (idx + ratio - 1) / ratio;
        break;
    }
    case LayerKind::Cross:
        g.bytesPerTokenPerLayer = entry;
        g.stateBytesPerRequestPerLayer = entry * g.encoderTokens;
        break;
    case LayerKind::Linear:
    case LayerKind::Mamba:
        g.stateBytesPerRequestPerLayer = stateBytesPerRank(g.state, 1);
        break;
    case LayerKind::None:
        break;
    }
}

std::string layerRef(const std::string& prefix, const char* field, std::size_t i) {
    return prefix + field + "[" + std::to_string(i) + "]";
}

} // namespace layersdetail

} // namespace kvscope
