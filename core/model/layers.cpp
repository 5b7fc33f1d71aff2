// Per-layer cache kinds from a config.json, in the engines' terms (vLLM's KVCacheSpec per
// layer: vllm/v1/kv_cache_interface.py; the model files say which spec each layer returns).
#include "core/model/layers.h"

#include "core/jsonutil.h"
#include "core/model/dtype.h"
#include "core/model/layers_detail.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace kvscope {

using nlohmann::json;
using namespace layersdetail;

namespace {

/// What the DeepSeek-V4 figures leave out. With vLLM's layout (deepseekV4CacheSpecs) the vLLM
/// pages are exact; the per-token cell stays the served-dtype estimate.
std::string compressedWarning(bool vllmLayout) {
    if (vllmLayout)
        return "DeepSeek-V4 compressed attention: the vLLM pages follow its fp8_ds_mla layout "
               "(584 B entries, block_size // compress_ratio per block, 576 B-aligned pages, "
               "compressor ring buffers, the packed per-block layout); the per-token cell and "
               "the non-vLLM figures count served-dtype entries (1 per compress_ratio tokens + "
               "the sliding window), and MTP layers are not paged";
    return "DeepSeek-V4 compressed attention is approximated: a compressed layer counts "
           "ceil(entry / ratio) bytes per token plus its uncompressed window. vLLM's "
           "DeepSeek-V4 layout is not applied: it needs compress ratios 0, 4 or 128, "
           "qk_rope_head_dim, and head_dim - qk_rope_head_dim a multiple of 64 "
           "(fp8_ds_mla scale blocks), so pages are estimates";
}

/// One resolution in progress: the config, one spec per layer, the sliding window. The steps
/// run in order; the first per-layer declaration of the kinds wins (kindsSet), cross-attention,
/// block configs and global heads apply on top.
struct Resolver {
    const LayerResolveInput& in;
    const json& cfg;
    const std::string& p;
    std::size_t L;
    LayerResolveOutput out;
    std::vector<LayerGroup> per;
    std::int64_t window = 0;
    std::string windowSource;
    bool gemma3 = false;
    bool kindsSet = false;

    explicit Resolver(const LayerResolveInput& input)
        : in(input), cfg(*input.cfg), p(input.prefix), L(static_cast<std::size_t>(input.layers)) {}

    void setKind(std::size_t i, LayerKind k, std::optional<std::int64_t> w,
                 const std::string& source) {
        per[i].kind = k;
        per[i].window = w;
        per[i].source = source;
        if (k == LayerKind::None) {
            per[i].kvHeads = per[i].headDimK = per[i].headDimV = per[i].indexerHeadDim = 0;
        }
    }
    Status needWindow(const std::string& field) const {
        if (window <= 0)
            return makeError(p + "sliding_window", "must be a positive integer when " + field +
                                                       " names sliding_attention layers");
        return Ok{};
    }
    /// The default attention spec on every layer, and the sliding window.
    Status init();
    /// Nemotron-H: one character per layer (hybrid_override_pattern).
    Status nemotronPattern();
    /// transformers' per-layer layer_types list.
    Status layerTypes();
    /// Jamba: attention every attn_layer_period layers, at attn_layer_offset.
    Status jamba();
    /// Llama-3.2-Vision: cross_attention_layers and their encoder tokens.
    Status crossAttention();
    /// Llama-4: chunked local attention on RoPE layers, NoPE layers global.
    Status llama4Chunks();
    /// DeepSeek-V4: per-layer compress_ratios.
    Status compressRatios();
    /// Sliding window from declared patterns and model-type rules.
    Status slidingDefaults();
    /// DeciLM / Nemotron-NAS: per-layer block_configs.
    Status blockConfigs();
    /// Per-layer heads and head size of the global layers (Gemma-style).
    Status globalHeads();
    /// MTP / next-n layers the checkpoint ships.
    Status mtp();
    /// Identical specs grouped, in order of first layer.
    void group();
};

Status Resolver::init() {
    LayerGroup attn;
    attn.kind = in.mla ? LayerKind::Mla : LayerKind::Full;
    attn.kvHeads = in.kvHeads;
    attn.headDimK = in.mla ? in.latentDim : in.headDim;
    attn.headDimV = in.mla ? 0 : in.headDim;
    if (in.mla) {
        auto idx = intField(cfg, "index_head_dim", p, 1, kMaxField);
        if (!idx.ok())
            return idx.error();
        attn.indexerHeadDim = idx.value().value_or(0);
    }
    attn.source =
        in.mla ? p + "kv_lora_rank + qk_rope_head_dim (MLA latent)" +
                     (attn.indexerHeadDim ? ", index_head_dim (sparse-attention indexer key)" : "")
               : "full attention (" + in.kvHeadsSource + ")";
    per.assign(L, attn);

    Result<std::optional<std::int64_t>> windowField =
        intField(cfg, "sliding_window", p, 0, std::numeric_limits<std::int32_t>::max());
    if (!windowField.ok())
        return windowField.error();
    window = windowField.value().value_or(0);
    windowSource = p + "sliding_window";
    gemma3 = in.modelType == "gemma3" || in.modelType == "gemma3_text";
    if (!windowField.value() && gemma3) {
        // transformers' Gemma3TextConfig: sliding_window defaults to 4096.
        window = 4096;
        windowSource = "transformers' Gemma3TextConfig default sliding_window = 4096 (absent)";
    }
    return Ok{};
}

Status Resolver::nemotronPattern() {
    // --- Nemotron-H: one character per layer ------------------------------------------------
    if (auto it = cfg.find("hybrid_override_pattern"); it != cfg.end() && !it->is_null()) {
        if (!it->is_string())
            return makeError(p + "hybrid_override_pattern", "must be a string");
        const std::string pat = it->get<std::string>();
        if (pat.size() != L)
            return makeError(p + "hybrid_override_pattern", "must have one character per layer (" +
                                                                std::to_string(L) + "), got " +
                                                                std::to_string(pat.size()));
        std::optional<LayerGroup> mamba;
        for (std::size_t i = 0; i < L; ++i) {
            const char c = pat[i];
            if (c == '*') {
                per[i].source = p + "hybrid_override_pattern '*' (attention)";
            } else if (c == 'M') {
                if (!mamba) {
                    auto g = mambaGeometry(in, false);
                    if (!g.ok())
                        return g.error();
                    mamba = g.value();
                    mamba->source = p + "hybrid_override_pattern 'M'; " + mamba->source;
                }
                per[i] = *mamba;
            } else if (c == '-' || c == 'E') {
                setKind(i, LayerKind::None, std::nullopt,
                        p + "hybrid_override_pattern '" + std::string(1, c) + "' (" +
                            (c == '-' ? "MLP" : "MoE") + ", no attention)");
            } else {
                return makeError(layerRef(p, "hybrid_override_pattern", i),
                                 "'" + sanitizeForMessage(std::string_view(&pat[i], 1)) +
                                     "' is not a known layer kind (M mamba, * attention, - MLP, "
                                     "E MoE)");
            }
        }
        kindsSet = true;
    }
    return Ok{};
}

Status Resolver::layerTypes() {
    // --- layer_types (transformers' per-layer list) -----------------------------------------
    if (auto it = cfg.find("layer_types"); !kindsSet && it != cfg.end() && !it->is_null()) {
        if (!it->is_array())
            return makeError(p + "layer_types", "must be an array with one entry per layer (" +
                                                    std::to_string(L) + ")");
        if (it->size() != L)
            return makeError(p + "layer_types", "must be an array with one entry per layer (" +
                                                    std::to_string(L) + "), got " +
                                                    std::to_string(it->size()));
        std::optional<LayerGroup> gdn, mamba;
        for (std::size_t i = 0; i < L; ++i) {
            const json& t = (*it)[i];
            if (!t.is_string())
                return makeError(layerRef(p, "layer_types", i), "must be a string");
            const std::string s = t.get<std::string>();
            const std::string src = p + "layer_types";
            if (s == "full_attention" || s == "attention") {
                per[i].source = src;
            } else if (s == "sliding_attention") {
                if (auto st = needWindow("layer_types"); !st.ok())
                    return st.error();
                setKind(i, LayerKind::Sliding, window, src + " + " + windowSource);
            } else if (s == "chunked_attention") {
                auto chunk = requiredInt(cfg, "attention_chunk_size", p,
                                         "layer_types names chunked_attention layers");
                if (!chunk.ok())
                    return chunk.error();
                setKind(i, LayerKind::Chunked, chunk.value(), src + " + attention_chunk_size");
            } else if (s == "linear_attention") {
                if (!gdn) {
                    auto g = gdnGeometry(in);
                    if (!g.ok())
                        return g.error();
                    gdn = g.value();
                    gdn->source = src + "; " + gdn->source;
                }
                per[i] = *gdn;
            } else if (s == "mamba") {
                if (!mamba) {
                    auto g = mambaGeometry(in, false);
                    if (!g.ok())
                        return g.error();
                    mamba = g.value();
                    mamba->source = src + "; " + mamba->source;
                }
                per[i] = *mamba;
            } else {
                return makeError(layerRef(p, "layer_types", i),
                                 "\"" + sanitizeForMessage(s) + "\" is not a known layer kind");
            }
        }
        kindsSet = true;
    }
    return Ok{};
}

Status Resolver::jamba() {
    // --- Jamba: attention every attn_layer_period layers, at attn_layer_offset ---------------
    if (auto it = cfg.find("attn_layer_period"); !kindsSet && it != cfg.end() && !it->is_null()) {
        auto period = intField(cfg, "attn_layer_period", p, 1, in.layers);
        auto offset = intField(cfg, "attn_layer_offset", p, 0, in.layers);
        if (!period.ok())
            return period.error();
        if (!offset.ok())
            return offset.error();
        const std::int64_t per_ = period.value().value_or(1);
        const std::int64_t off = offset.value().value_or(0);
        if (off >= per_)
            return makeError(p + "attn_layer_offset",
                             "must be less than attn_layer_period (" + std::to_string(per_) + ")");
        auto g = mambaGeometry(in, true);
        if (!g.ok())
            return g.error();
        LayerGroup mamba = g.value();
        mamba.source = p + "attn_layer_period / attn_layer_offset; " + mamba.source;
        for (std::size_t i = 0; i < L; ++i) {
            if (static_cast<std::int64_t>(i) % per_ == off)
                per[i].source = p + "attn_layer_period / attn_layer_offset (attention)";
            else
                per[i] = mamba;
        }
        kindsSet = true;
    }
    return Ok{};
}

Status Resolver::crossAttention() {
    // --- Llama-3.2-Vision: cross-attention layers -------------------------------------------
    if (auto it = cfg.find("cross_attention_layers"); it != cfg.end() && !it->is_null()) {
        if (!it->is_array())
            return makeError(p + "cross_attention_layers", "must be an array of layer indices");
        // Encoder tokens per request: one image of max_num_tiles tiles, each (image_size //
        // patch_size)^2 patches plus a class token (transformers MllamaVisionModel; vLLM
        // mllama.py sizes the encoder the same way).
        std::int64_t encoder = 0;
        std::string encoderSource = "vision_config absent: encoder tokens unknown (0 counted)";
        if (in.root) {
            if (auto v = in.root->find("vision_config"); v != in.root->end() && v->is_object()) {
                auto image = intField(*v, "image_size", "vision_config.", 1, kMaxField);
                auto patch = intField(*v, "patch_size", "vision_config.", 1, kMaxField);
                auto tiles = intField(*v, "max_num_tiles", "vision_config.", 1, 1024);
                if (!image.ok())
                    return image.error();
                if (!patch.ok())
                    return patch.error();
                if (!tiles.ok())
                    return tiles.error();
                if (image.value() && patch.value()) {
                    const std::int64_t side = *image.value() / *patch.value();
                    encoder = tiles.value().value_or(1) * (side * side + 1);
                    encoderSource = "vision_config: max_num_tiles × ((image_size / patch_size)^2 "
                                    "+ 1) encoder tokens, one image per request";
                }
            }
        }
        if (encoder == 0)
            out.warnings.push_back("cross-attention layers: " + encoderSource);
        for (std::size_t k = 0; k < it->size(); ++k) {
            const json& v = (*it)[k];
            if (!v.is_number_integer() || v.get<std::int64_t>() < 0 ||
                v.get<std::int64_t>() >= in.layers)
                return makeError(layerRef(p, "cross_attention_layers", k),
                                 "must be a layer index in [0, " + std::to_string(in.layers) + ")");
            const auto i = static_cast<std::size_t>(v.get<std::int64_t>());
            setKind(i, LayerKind::Cross, std::nullopt,
                    p + "cross_attention_layers; " + encoderSource);
            per[i].encoderTokens = encoder;
        }
    }
    return Ok{};
}

Status Resolver::llama4Chunks() {
    // --- Llama-4: chunked local attention on RoPE layers, NoPE layers global ----------------
    if (auto chunk = intField(cfg, "attention_chunk_size", p, 1, kMaxField); !chunk.ok()) {
        return chunk.error();
    } else if (!kindsSet && chunk.value()) {
        // transformers' Llama4TextConfig: no_rope_layers empty → computed from
        // nope_layer_interval (default 4): layer i uses RoPE unless (i + 1) % interval == 0.
        // vLLM llama4.py: a layer is chunked-local iff it uses RoPE.
        std::vector<bool> rope(L, true);
        std::string ropeSource;
        auto nr = cfg.find("no_rope_layers");
        if (nr != cfg.end() && nr->is_array() && !nr->empty()) {
            if (nr->size() != L)
                return makeError(p + "no_rope_layers",
                                 "must have one entry per layer (" + std::to_string(L) + ")");
            for (std::size_t i = 0; i < L; ++i) {
                const json& v = (*nr)[i];
                if (!(v.is_number_integer() || v.is_boolean()))
                    return makeError(layerRef(p, "no_rope_layers", i), "must be 0 or 1");
                rope[i] = v.is_boolean() ? v.get<bool>() : v.get<std::int64_t>() != 0;
            }
            ropeSource = p + "no_rope_layers";
        } else {
            auto interval = intField(cfg, "nope_layer_interval", p, 1, in.layers);
            if (!interval.ok())
                return interval.error();
            const std::int64_t n = interval.value().value_or(4);
            for (std::size_t i = 0; i < L; ++i)
                rope[i] = (static_cast<std::int64_t>(i) + 1) % n != 0;
            ropeSource = interval.value()
                             ? p + "nope_layer_interval"
                             : "transformers' Llama4TextConfig default nope_layer_interval = 4 "
                               "(no_rope_layers empty)";
        }
        for (std::size_t i = 0; i < L; ++i) {
            if (per[i].kind == LayerKind::Cross)
                continue;
            if (rope[i])
                setKind(i, LayerKind::Chunked, *chunk.value(),
                        p + "attention_chunk_size on RoPE layers (" + ropeSource + ")");
            else
                per[i].source = "NoPE layer, global attention (" + ropeSource + ")";
        }
        kindsSet = true;
    }
    return Ok{};
}

Status Resolver::compressRatios() {
    // --- DeepSeek-V4: per-layer compress ratios ---------------------------------------------
    if (auto it = cfg.find("compress_ratios"); !kindsSet && it != cfg.end() && it->is_array()) {
        if (it->size() < L)
            return makeError(p + "compress_ratios",
                             "must have at least one entry per layer (" + std::to_string(L) + ")");
        if (auto st = needWindow("compress_ratios"); !st.ok())
            return st.error();
        auto idx = intField(cfg, "index_head_dim", p, 1, kMaxField);
        if (!idx.ok())
            return idx.error();
        auto rope = intField(cfg, "qk_rope_head_dim", p, 0, kMaxField);
        if (!rope.ok())
            return rope.error();
        // vLLM's DeepSeek-V4 caches exist for compress ratios 0 (SWA only), 4 and 128
        // (CompressorStateCache asserts compress_ratio in [4, 128]); its fp8_ds_mla entry needs
        // qk_rope_head_dim and a NoPE part that is whole 64-value quant blocks.
        bool vllmLayout = rope.value().has_value() && *rope.value() < in.headDim &&
                          (in.headDim - *rope.value()) % 64 == 0;
        for (std::size_t i = 0; i < L; ++i) {
            const json& v = (*it)[i];
            if (!v.is_number_integer() || v.get<std::int64_t>() < 0 ||
                v.get<std::int64_t>() > kMaxField)
                return makeError(layerRef(p, "compress_ratios", i),
                                 "must be a non-negative integer");
            const std::int64_t ratio = v.get<std::int64_t>();
            vllmLayout = vllmLayout && (ratio == 0 || ratio == 4 || ratio == 128);
            // One shared K=V latent of head_dim per entry (num_key_value_heads = 1).
            per[i].headDimV = 0;
            per[i].ropeDim = rope.value().value_or(0);
            if (ratio == 0) {
                setKind(i, LayerKind::Sliding, window, p + "compress_ratios 0 + " + windowSource);
            } else {
                setKind(i, LayerKind::Compressed, ratio,
                        p + "compress_ratios (one entry per " + std::to_string(ratio) +
                            " tokens) + " + windowSource + " uncompressed");
                per[i].auxWindow = window;
                // Only the 4x-compressed layers have the sparse indexer (vllm/model_executor/
                // models/deepseek_v4.py: "Only C4A uses sparse attention and hence has indexer").
                if (ratio == 4)
                    per[i].indexerHeadDim = idx.value().value_or(0);
            }
        }
        for (std::size_t i = 0; i < L; ++i)
            per[i].deepseekV4 = vllmLayout;
        if (it->size() > L)
            out.warnings.push_back(p + "compress_ratios has " + std::to_string(it->size()) +
                                   " entries for " + std::to_string(L) +
                                   " layers: the extra entries describe MTP layers");
        out.warnings.push_back(compressedWarning(vllmLayout));
        kindsSet = true;
    }
    return Ok{};
}

Status Resolver::slidingDefaults() {
    // --- Sliding window: declared patterns and model-type rules -----------------------------
    if (!kindsSet) {
        auto useWindowIt = cfg.find("use_sliding_window");
        std::optional<bool> useWindow;
        if (useWindowIt != cfg.end() && !useWindowIt->is_null()) {
            if (!useWindowIt->is_boolean())
                return makeError(p + "use_sliding_window",
                                 "must be true or false, got " +
                                     std::string(useWindowIt->type_name()));
            useWindow = useWindowIt->get<bool>();
        }
        if (window > 0 && useWindow.value_or(true)) {
            auto pattern = intField(cfg, "sliding_window_pattern", p, 1, in.layers + 1);
            auto maxWindow = intField(cfg, "max_window_layers", p, 0, in.layers);
            if (!pattern.ok())
                return pattern.error();
            if (!maxWindow.ok())
                return maxWindow.error();
            std::int64_t pat = pattern.value().value_or(0);
            std::string source = windowSource;
            if (pat > 0) {
                source += " + " + p + "sliding_window_pattern";
            } else if (gemma3) {
                // transformers' Gemma3TextConfig: sliding_window_pattern defaults to 6 (5 local
                // layers : 1 global).
                pat = 6;
                source += " + transformers' Gemma3TextConfig default sliding_window_pattern = 6 "
                          "(absent)";
            } else if (in.modelType == "gemma2") {
                source += " (Gemma-2: every other layer)";
            }
            for (std::size_t i = 0; i < L; ++i) {
                bool sliding = true;
                if (pat > 0)
                    sliding = (static_cast<std::int64_t>(i) + 1) % pat != 0;
                else if (in.modelType == "gemma2")
                    sliding = i % 2 == 0; // Gemma-2 alternates, starting with a sliding layer
                else if (useWindow.has_value() && maxWindow.value())
                    sliding = static_cast<std::int64_t>(i) >= *maxWindow.value(); // Qwen2
                if (sliding && per[i].kind != LayerKind::Cross)
                    setKind(i, LayerKind::Sliding, window, source);
            }
        }
    }
    return Ok{};
}

Status Resolver::blockConfigs() {
    // --- DeciLM / Nemotron-NAS: per-layer block configs -------------------------------------
    if (auto it = cfg.find("block_configs"); it != cfg.end() && it->is_array()) {
        if (it->size() != L)
            return makeError(p + "block_configs",
                             "must have one entry per layer (" + std::to_string(L) + ")");
        for (std::size_t i = 0; i < L; ++i) {
            const json& b = (*it)[i];
            if (!b.is_object())
                return makeError(layerRef(p, "block_configs", i), "must be an object");
            auto a = b.find("attention");
            if (a == b.end() || !a->is_object())
                continue;
            const auto flag = [&](const char* k) {
                auto f = a->find(k);
                return f != a->end() && f->is_boolean() && f->get<bool>();
            };
            if (flag("no_op") || flag("replace_with_linear")) {
                setKind(i, LayerKind::None, std::nullopt,
                        layerRef(p, "block_configs", i) + ".attention." +
                            (flag("no_op") ? "no_op" : "replace_with_linear"));
                continue;
            }
            auto group = intField(*a, "n_heads_in_group",
                                  layerRef(p, "block_configs", i) + ".attention.", 1, kMaxField);
            if (!group.ok())
                return group.error();
            if (group.value() && in.kvHeads > 0) {
                // DeciLM: num_key_value_heads = num_attention_heads / n_heads_in_group.
                // in.kvHeads holds the model-wide head count (num_attention_heads for DeciLM,
                // which declares no KV-head field).
                if (in.kvHeads % *group.value() != 0)
                    return makeError(layerRef(p, "block_configs", i) +
                                         ".attention.n_heads_in_group",
                                     "must divide num_attention_heads");
                per[i].kvHeads = in.kvHeads / *group.value();
                per[i].source = layerRef(p, "block_configs", i) + ".attention.n_heads_in_group";
            }
        }
    }
    return Ok{};
}

Status Resolver::globalHeads() {
    // --- Per-layer heads of global layers (Gemma-style) -------------------------------------
    {
        auto gHead = intField(cfg, "global_head_dim", p, 1, kMaxField);
        auto gKv = intField(cfg, "num_global_key_value_heads", p, 1, kMaxField);
        if (!gHead.ok())
            return gHead.error();
        if (!gKv.ok())
            return gKv.error();
        const bool anySliding = std::any_of(per.begin(), per.end(), [](const LayerGroup& g) {
            return g.kind == LayerKind::Sliding;
        });
        if ((gHead.value() || gKv.value()) && anySliding) {
            for (auto& g : per) {
                if (g.kind != LayerKind::Full)
                    continue;
                if (gHead.value())
                    g.headDimK = g.headDimV = *gHead.value();
                if (gKv.value())
                    g.kvHeads = *gKv.value();
                g.source += std::string(gHead.value() ? ", " + p + "global_head_dim" : "") +
                            (gKv.value() ? ", " + p + "num_global_key_value_heads" : "");
            }
        }
        auto keqv = cfg.find("attention_k_eq_v");
        if (keqv != cfg.end() && keqv->is_boolean() && keqv->get<bool>())
            out.warnings.push_back(p + "attention_k_eq_v: K and V are still counted as two "
                                       "cached tensors");
    }
    return Ok{};
}

Status Resolver::mtp() {
    // --- MTP / next-n layers ----------------------------------------------------------------
    for (const char* k : {"num_nextn_predict_layers", "mtp_num_hidden_layers"}) {
        auto v = intField(cfg, k, p, 0, 10'000);
        if (!v.ok())
            return v.error();
        if (v.value() && *v.value() > 0) {
            out.mtpLayers = *v.value();
            out.mtpSource = p + k;
            break;
        }
    }
    return Ok{};
}

void Resolver::group() {
    // --- group identical specs, in order of first layer -------------------------------------
    for (std::size_t i = 0; i < L; ++i) {
        LayerGroup g = per[i];
        fillBytes(g, in.servedBytes);
        auto it = std::find_if(out.groups.begin(), out.groups.end(),
                               [&](const LayerGroup& o) { return o.sameSpec(g); });
        if (it == out.groups.end()) {
            g.layers = {static_cast<std::int64_t>(i)};
            out.groups.push_back(std::move(g));
        } else {
            it->layers.push_back(static_cast<std::int64_t>(i));
        }
    }
}

} // namespace

Result<LayerResolveOutput> resolveLayerGroups(const LayerResolveInput& in) {
    Resolver r(in);
    for (Status (Resolver::*step)() :
         {&Resolver::init, &Resolver::nemotronPattern, &Resolver::layerTypes, &Resolver::jamba,
          &Resolver::crossAttention, &Resolver::llama4Chunks, &Resolver::compressRatios,
          &Resolver::slidingDefaults, &Resolver::blockConfigs, &Resolver::globalHeads,
          &Resolver::mtp}) {
        if (auto st = (r.*step)(); !st.ok())
            return st.error();
    }
    r.group();
    return std::move(r.out);
}

} // namespace kvscope
