// Layer layouts and extra projections, following the transformers modeling files named per
// block; vision towers follow each family's vision module (cited per family below).
#include "core/model/weightspec.h"

#include "core/jsonutil.h"
#include "core/model/model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace kvscope {

using nlohmann::json;

namespace {

const json* member(const json& o, const char* key) {
    if (!o.is_object())
        return nullptr;
    auto it = o.find(key);
    if (it == o.end() || it->is_null())
        return nullptr;
    return &*it;
}

/// A non-negative integer field, or `fallback` when absent; an error names the field.
Result<std::int64_t> intField(const json& o, const char* key, const std::string& prefix,
                              std::int64_t fallback, std::int64_t max = kMaxDim * 64) {
    const json* v = member(o, key);
    if (!v)
        return fallback;
    if (!v->is_number_integer())
        return makeError(prefix + key, "must be a non-negative integer, got " + v->dump());
    if (v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(max))
        return makeError(prefix + key, "must be at most " + std::to_string(max));
    const std::int64_t n = v->get<std::int64_t>();
    if (n < 0 || n > max)
        return makeError(prefix + key, "must be between 0 and " + std::to_string(max) + ", got " +
                                           std::to_string(n));
    return n;
}

Result<std::vector<std::int64_t>> intList(const json& o, const char* key, const std::string& prefix,
                                          std::int64_t maxValue) {
    std::vector<std::int64_t> out;
    const json* v = member(o, key);
    if (!v)
        return out;
    if (!v->is_array())
        return makeError(prefix + key, "must be an array of layer indices");
    for (const json& e : *v) {
        if (!e.is_number_integer() || e.get<std::int64_t>() < 0 ||
            e.get<std::int64_t>() >= maxValue)
            return makeError(prefix + key, "entries must be layer indices below " +
                                               std::to_string(maxValue) + ", got " + e.dump());
        out.push_back(e.get<std::int64_t>());
    }
    return out;
}

std::string str(const json& o, const char* key) {
    const json* v = member(o, key);
    return v && v->is_string() ? v->get<std::string>() : std::string();
}

#define WS_TRY(var, expr)                                                                          \
    auto var##_r = (expr);                                                                         \
    if (!var##_r.ok())                                                                             \
        return var##_r.error();                                                                    \
    const auto var = var##_r.value();

/// One ViT block: attention (4 v² + biases), two LayerNorms (weight + bias), and the MLP
/// (plain: fc1, fc2 with biases; gated: gate, up, down with biases).
std::int64_t vitBlock(std::int64_t v, std::int64_t ff, bool attnBias, bool gated, bool mlpBias) {
    std::int64_t p = 4 * v * v + (attnBias ? 4 * v : 0) + 4 * v;
    p += gated ? 3 * v * ff + (mlpBias ? 2 * ff + v : 0) : 2 * v * ff + (mlpBias ? ff + v : 0);
    return p;
}

/// The ViT sizes every vision family reads, and the text model's hidden size it projects to.
struct VitDims {
    std::int64_t v = 0, layers = 0, ff = 0, patch = 0, channels = 0, text = 0;
    std::int64_t patchesPerSide = 0;
};

const std::string kVisionPre = "vision_config.";

/// Qwen2-VL / Qwen2.5-VL (modeling_qwen2_5_vl.py): Conv3d patch embed (temporal 2, no bias),
/// RMSNorm blocks with qkv bias and a gated MLP (gate/up/down with bias, Qwen2.5), then the patch
/// merger: ln_q, Linear(v·m², v·m²), Linear(v·m², out).
Result<std::int64_t> qwen2VlParams(const json& vc, const VitDims& t, bool gated,
                                   std::string& source) {
    const std::string& pre = kVisionPre;
    WS_TRY(temporal, intField(vc, "temporal_patch_size", pre, 2, 64));
    WS_TRY(merge, intField(vc, "spatial_merge_size", pre, 2, 64));
    WS_TRY(out, intField(vc, "out_hidden_size", pre, t.text));
    const std::int64_t mv = t.v * merge * merge;
    source = "vision_config (Qwen2.5-VL ViT + patch merger)";
    return 3 * temporal * t.patch * t.patch * t.v +
           t.layers * (vitBlock(t.v, t.ff, true, gated, true) - 2 * t.v) + t.v + mv * mv + mv +
           mv * out + out;
}

/// Qwen3-VL / Qwen3.5 (modeling_qwen3_vl.py): Conv3d patch embed with bias, learned position
/// table, LayerNorm blocks with a plain MLP, merger norm + two linears, deepstack mergers.
Result<std::int64_t> qwen3VlParams(const json& vc, const VitDims& t, std::string& source) {
    const std::string& pre = kVisionPre;
    WS_TRY(temporal, intField(vc, "temporal_patch_size", pre, 2, 64));
    WS_TRY(merge, intField(vc, "spatial_merge_size", pre, 2, 64));
    WS_TRY(out, intField(vc, "out_hidden_size", pre, t.text));
    WS_TRY(positions, intField(vc, "num_position_embeddings", pre, 0));
    const std::int64_t mv = t.v * merge * merge;
    std::int64_t p = t.channels * temporal * t.patch * t.patch * t.v + t.v + positions * t.v +
                     t.layers * vitBlock(t.v, t.ff, true, false, true) + 2 * t.v + mv * mv + mv +
                     mv * out + out;
    if (const json* ds = member(vc, "deepstack_visual_indexes"); ds && ds->is_array())
        p += static_cast<std::int64_t>(ds->size()) * (2 * mv + mv * mv + mv + mv * out + out);
    source = "vision_config (Qwen3-VL ViT + merger)";
    return p;
}

/// Llama-4 (modeling_llama4.py): unfold patch embedding (no bias), class token, positions,
/// LayerNorm pre/post, blocks with biases, pixel-shuffle MLP (no bias), then the multi-modal
/// projector (no bias).
Result<std::int64_t> llama4VisionParams(const json& vc, const VitDims& t, std::string& source) {
    const std::string& pre = kVisionPre;
    WS_TRY(projIn, intField(vc, "projector_input_dim", pre, 4096));
    WS_TRY(projOut, intField(vc, "projector_output_dim", pre, 4096));
    WS_TRY(visionOut, intField(vc, "vision_output_dim", pre, projOut));
    double ratio = 0.5;
    if (const json* r = member(vc, "pixel_shuffle_ratio"); r && r->is_number())
        ratio = r->get<double>();
    if (!(ratio > 0 && ratio <= 1))
        return makeError(pre + "pixel_shuffle_ratio", "must be in (0, 1]");
    const auto shuffled = static_cast<std::int64_t>(std::llround(t.v / (ratio * ratio)));
    source = "vision_config (Llama-4 ViT + pixel-shuffle adapter + projector)";
    return t.channels * t.patch * t.patch * t.v + t.v +
           (t.patchesPerSide * t.patchesPerSide + 1) * t.v + 4 * t.v +
           t.layers * vitBlock(t.v, t.ff, true, false, true) + shuffled * projIn +
           projIn * projOut + visionOut * t.text;
}

/// Mllama (modeling_mllama.py): conv patch embed, class token, gated position and tile
/// embeddings, local + gated global transformer (attention without bias), then the projector
/// vision_output_dim × text hidden (+ bias).
Result<std::int64_t> mllamaVisionParams(const json& vc, const VitDims& t, std::string& source) {
    const std::string& pre = kVisionPre;
    WS_TRY(global, intField(vc, "num_global_layers", pre, 8, kMaxLayers));
    WS_TRY(tiles, intField(vc, "max_num_tiles", pre, 4, 1024));
    WS_TRY(visionOut, intField(vc, "vision_output_dim", pre, t.v));
    std::int64_t ratios = 8;
    if (const json* a = member(vc, "supported_aspect_ratios"); a && a->is_array())
        ratios = static_cast<std::int64_t>(a->size());
    const std::int64_t positions = t.patchesPerSide * t.patchesPerSide + 1;
    const std::int64_t block = vitBlock(t.v, t.ff, false, false, true);
    source = "vision_config (Mllama ViT + projector)";
    return t.channels * t.patch * t.patch * t.v + t.v + positions * t.v + 1 +
           (ratios + 1) * tiles * positions * t.v + 2 * ((ratios + 1) * tiles * t.v + 1) + 4 * t.v +
           t.layers * block + global * (block + 2) + visionOut * t.text + t.text;
}

/// Vision tower + projector parameters, or 0 with an empty source when the config has none.
Result<std::int64_t> visionParams(const json& root, const ModelSpec& m, std::string& source) {
    const json* vc = member(root, "vision_config");
    if (!vc || !vc->is_object())
        return std::int64_t{0};
    const std::string& pre = kVisionPre;
    const std::string type = str(*vc, "model_type");
    const std::string top = str(root, "model_type");
    WS_TRY(v, intField(*vc, "hidden_size", pre, 0));
    if (v <= 0)
        return makeError(pre + "hidden_size", "missing");
    WS_TRY(layers, intField(*vc, "depth", pre, 0, kMaxLayers));
    WS_TRY(layers2, intField(*vc, "num_hidden_layers", pre, 0, kMaxLayers));
    WS_TRY(ff, intField(*vc, "intermediate_size", pre, 4 * v));
    WS_TRY(patch, intField(*vc, "patch_size", pre, 14, 4096));
    WS_TRY(channels, intField(*vc, "num_channels", pre, 3, 64));
    WS_TRY(image, intField(*vc, "image_size", pre, 0, 1 << 20));
    const VitDims t{v,
                    layers > 0 ? layers : layers2,
                    ff,
                    patch,
                    channels,
                    m.hidden.value,
                    patch > 0 && image > 0 ? image / patch : 0};
    if (top == "qwen2_5_vl" || top == "qwen2_vl")
        return qwen2VlParams(*vc, t, top == "qwen2_5_vl", source);
    if (type.rfind("qwen3", 0) == 0 || top.rfind("qwen3_5", 0) == 0 ||
        top.rfind("qwen3_vl", 0) == 0)
        return qwen3VlParams(*vc, t, source);
    if (type == "llama4_vision_model")
        return llama4VisionParams(*vc, t, source);
    if (type == "mllama_vision_model")
        return mllamaVisionParams(*vc, t, source);
    const std::int64_t grid = t.patchesPerSide * t.patchesPerSide;
    const std::int64_t blocks = t.layers * vitBlock(v, ff, true, false, true);
    if (type == "siglip_vision_model") {
        // SigLIP (modeling_siglip.py) without the pooling head, then Gemma-3's projector
        // (modeling_gemma3.py Gemma3MultiModalProjector): RMSNorm(v) + v × text.
        source = "vision_config (SigLIP + Gemma-3 projector)";
        return channels * patch * patch * v + v + grid * v + blocks + 2 * v + v + v * t.text;
    }
    // Any other ViT: patch embedding, learned positions, L plain blocks, a linear projector.
    source = "vision_config (generic ViT estimate: " + (type.empty() ? top : type) + ")";
    return channels * patch * patch * v + grid * v + blocks + v * t.text;
}

/// A positive number field of a rope dict, or `fallback` when absent.
Result<double> ropeNumber(const json& o, const char* key, const std::string& prefix,
                          double fallback) {
    const json* v = member(o, key);
    if (!v)
        return fallback;
    if (!v->is_number() || !(v->get<double>() > 0) || v->get<double>() > 1e9)
        return makeError(prefix + key, "must be a positive number, got " + v->dump());
    return v->get<double>();
}

/// Positions of one rotary cache for a rope dict (rope_scaling / rope_parameters), following
/// vLLM's get_rope (rotary_embedding/__init__.py) and the class it picks: linear and dynamic
/// scaling build max_position × factor rows (LinearScalingRotaryEmbedding,
/// DynamicNTKScalingRotaryEmbedding), YaRN and DeepSeek-YaRN original_max_position × factor
/// (YaRNScalingRotaryEmbedding, DeepseekScalingRotaryEmbedding), LongRoPE a short and a long
/// cache side by side; default, llama3 and mrope keep max_position.
Result<RopeCache> ropeCacheFor(const json* rope, const std::string& field, std::int64_t maxPos,
                               std::int64_t dim) {
    RopeCache c{maxPos, dim, 0, "max_position_embeddings"};
    if (!rope || !rope->is_object())
        return c;
    std::string type = str(*rope, "rope_type");
    if (type.empty())
        type = str(*rope, "type");
    WS_TRY(factor, ropeNumber(*rope, "factor", field + ".", 1.0));
    WS_TRY(original, intField(*rope, "original_max_position_embeddings", field + ".", maxPos,
                              std::numeric_limits<std::int32_t>::max()));
    const auto scaled = [&](std::int64_t base) {
        return static_cast<std::int64_t>(static_cast<double>(base) * factor);
    };
    if (type == "linear" || type == "dynamic") {
        c.positions = scaled(maxPos);
        c.source = "max_position_embeddings × " + field + ".factor (" + type + ")";
    } else if (type == "yarn" || type == "deepseek_yarn") {
        c.positions = scaled(original);
        c.source = field + ".original_max_position_embeddings × factor (YaRN)";
    } else if (type == "longrope") {
        c.positions = original + maxPos;
        c.source = field + ".original_max_position_embeddings + max_position_embeddings (LongRoPE "
                           "short and long caches)";
    } else if (!type.empty() && type != "default" && type != "llama3" && type != "mrope" &&
               type != "ntk") {
        c.source = "max_position_embeddings (" + field + " type '" + sanitizeForMessage(type, 40) +
                   "' not known to kvscope: sized as unscaled)";
    }
    return c;
}

/// The rotary caches one rank holds. Gemma-3 (vLLM gemma3.py Gemma3Attention) gives its
/// sliding layers their own rope — rope_local_base_freq, default scaling — beside the global
/// one; gpt-oss (gpt_oss.py OAIAttention) builds its cache in float32.
Result<std::vector<RopeCache>> ropeCaches(const json& cfg, const std::string& pre,
                                          const ModelSpec& m, std::int64_t dim) {
    std::vector<RopeCache> out;
    const std::int64_t maxPos = m.maxPositionEmbeddings.value;
    if (dim <= 0 || maxPos <= 0)
        return out;
    const char* key = member(cfg, "rope_scaling") ? "rope_scaling" : "rope_parameters";
    WS_TRY(global, ropeCacheFor(member(cfg, key), pre + key, maxPos, dim));
    RopeCache g = global;
    if (m.modelType == "gpt_oss")
        g.elementBytes = 4;
    out.push_back(g);
    if (m.modelType == "gemma3" || m.modelType == "gemma3_text") {
        WS_TRY(theta, ropeNumber(cfg, "rope_theta", pre, 1'000'000.0));
        WS_TRY(local, ropeNumber(cfg, "rope_local_base_freq", pre, 10'000.0));
        if (theta != local || g.positions != maxPos)
            out.push_back(
                {maxPos, dim, 0, "sliding layers: max_position_embeddings, rope_local_base_freq"});
    }
    return out;
}

/// Which layers are MoE, the dense and shared-expert widths.
Status moeLayout([[maybe_unused]] const json& root, const json& cfg, const std::string& pre,
                 const ModelSpec& m, WeightSpec& w) {
    const auto L = static_cast<std::size_t>(m.layers.value);
    const bool moe = m.routedExperts.value > 0;
    if (moe) {
        WS_TRY(interleave, intField(cfg, "interleave_moe_layer_step", pre, 0, m.layers.value));
        WS_TRY(mlpOnly, intList(cfg, "mlp_only_layers", pre, m.layers.value));
        const std::int64_t freq = std::max<std::int64_t>(1, m.moeLayerFreq.value);
        const bool deepseekFreq = m.moeLayerFreq.source.find("moe_layer_freq") != std::string::npos;
        for (std::size_t i = 0; i < L; ++i) {
            const auto l = static_cast<std::int64_t>(i);
            bool isMoe;
            if (interleave > 0) // Llama-4: layers step-1, 2·step-1, ... are MoE
                isMoe = (l + 1) % interleave == 0;
            else if (deepseekFreq) // DeepSeek: past first_k_dense_replace, layer % freq == 0
                isMoe = l >= m.firstDenseLayers.value && l % freq == 0;
            else // Qwen-MoE: (layer + 1) % decoder_sparse_step == 0
                isMoe = l >= m.firstDenseLayers.value && (l + 1) % freq == 0;
            if (std::find(mlpOnly.begin(), mlpOnly.end(), l) != mlpOnly.end())
                isMoe = false;
            w.ffn[i] = isMoe ? Ffn::Moe : Ffn::Dense;
        }
        w.layoutSource = interleave > 0 ? pre + "interleave_moe_layer_step"
                         : m.firstDenseLayers.value > 0
                             ? pre + "first_k_dense_replace + " + m.moeLayerFreq.source
                             : m.moeLayerFreq.source;
        if (!mlpOnly.empty())
            w.layoutSource += " + mlp_only_layers";
        WS_TRY(denseWidth, intField(cfg, "intermediate_size_mlp", pre, 0));
        w.denseIntermediate = denseWidth;
        // Shared experts: Qwen's shared_expert_intermediate_size, DeepSeek's n_shared_experts,
        // Llama-4's always-present shared expert (Llama4TextMoe.shared_expert, intermediate_size).
        WS_TRY(sharedWidth, intField(cfg, "shared_expert_intermediate_size", pre, 0));
        if (sharedWidth > 0) {
            w.sharedExpertWidth = sharedWidth;
            w.sharedExpertSource = pre + "shared_expert_intermediate_size";
        } else if (m.sharedExperts.value > 0) {
            w.sharedExpertWidth = m.sharedExperts.value * m.moeIntermediate.value;
            w.sharedExpertSource = m.sharedExperts.source + " × moe_intermediate_size";
        } else if (m.modelType == "llama4_text" || m.modelType == "llama4") {
            w.sharedExpertWidth = m.moeIntermediate.value;
            w.sharedExpertSource = "Llama-4: one shared expert of intermediate_size";
        }
    }
    return Ok{};
}

/// Per-layer token mixers: Nemotron-H pattern, layer_types, cross-attention.
Status mixerLayout([[maybe_unused]] const json& root, const json& cfg, const std::string& pre,
                   const ModelSpec& m, WeightSpec& w) {
    const auto L = static_cast<std::size_t>(m.layers.value);
    const bool moe = m.routedExperts.value > 0;
    if (const json* pat = member(cfg, "hybrid_override_pattern")) {
        // Nemotron-H (configuration_nemotron_h.py): M = Mamba-2, * = attention, - = MLP,
        // E = MoE; each layer is one block.
        if (!pat->is_string() || pat->get<std::string>().size() != L)
            return makeError(pre + "hybrid_override_pattern",
                             "must be a string with one character per layer (" + std::to_string(L) +
                                 ")");
        const std::string s = pat->get<std::string>();
        for (std::size_t i = 0; i < L; ++i) {
            switch (s[i]) {
            case 'M':
                w.mixer[i] = Mixer::Mamba2;
                w.ffn[i] = Ffn::None;
                break;
            case '*':
                w.mixer[i] = Mixer::Attention;
                w.ffn[i] = Ffn::None;
                break;
            case '-':
                w.mixer[i] = Mixer::None;
                w.ffn[i] = Ffn::Dense;
                break;
            case 'E':
                w.mixer[i] = Mixer::None;
                w.ffn[i] = Ffn::Moe;
                break;
            default:
                return makeError(pre + "hybrid_override_pattern[" + std::to_string(i) + "]",
                                 std::string("must be M, *, - or E, got '") + s[i] + "'");
            }
        }
        w.layoutSource = pre + "hybrid_override_pattern";
    }
    if (const json* lt = member(cfg, "layer_types"); lt && lt->is_array() && lt->size() == L) {
        bool any = false;
        for (std::size_t i = 0; i < L; ++i)
            if ((*lt)[i].is_string() && (*lt)[i].get<std::string>() == "linear_attention") {
                w.mixer[i] = Mixer::LinearAttention;
                any = true;
            }
        if (any)
            w.layoutSource = pre + "layer_types (linear_attention = Gated DeltaNet)" +
                             (moe ? " + " + w.layoutSource : "");
    }
    {
        WS_TRY(cross, intList(cfg, "cross_attention_layers", pre, m.layers.value));
        for (std::int64_t l : cross)
            w.mixer[static_cast<std::size_t>(l)] = Mixer::CrossAttention;
        if (!cross.empty())
            w.layoutSource = pre + "cross_attention_layers";
    }

    return Ok{};
}

/// Mamba-2, Gated DeltaNet, indexer and output-LoRA shapes.
Status blockShapes([[maybe_unused]] const json& root, const json& cfg, const std::string& pre,
                   const ModelSpec& m, WeightSpec& w) {
    WS_TRY(mh, intField(cfg, "mamba_num_heads", pre, 0));
    WS_TRY(mhd, intField(cfg, "mamba_head_dim", pre, 0));
    WS_TRY(mg, intField(cfg, "n_groups", pre, 1));
    WS_TRY(ms, intField(cfg, "ssm_state_size", pre, 0));
    WS_TRY(mc, intField(cfg, "conv_kernel", pre, 4, 1024));
    w.mambaHeads = mh;
    w.mambaHeadDim = mhd;
    w.mambaGroups = std::max<std::int64_t>(1, mg);
    w.mambaState = ms;
    w.mambaConv = mc;
    if (std::count(w.mixer.begin(), w.mixer.end(), Mixer::Mamba2) > 0 && (mh == 0 || mhd == 0))
        return makeError(pre + "mamba_num_heads",
                         "Mamba-2 layers need mamba_num_heads and mamba_head_dim");
    WS_TRY(lk, intField(cfg, "linear_num_key_heads", pre, 0));
    WS_TRY(lv, intField(cfg, "linear_num_value_heads", pre, 0));
    WS_TRY(lkd, intField(cfg, "linear_key_head_dim", pre, 0));
    WS_TRY(lvd, intField(cfg, "linear_value_head_dim", pre, 0));
    WS_TRY(lc, intField(cfg, "linear_conv_kernel_dim", pre, 4, 1024));
    w.laKeyHeads = lk;
    w.laValueHeads = lv;
    w.laKeyDim = lkd;
    w.laValueDim = lvd;
    w.laConv = lc;
    if (std::count(w.mixer.begin(), w.mixer.end(), Mixer::LinearAttention) > 0 &&
        (lk == 0 || lv == 0 || lkd == 0 || lvd == 0))
        return makeError(pre + "linear_num_key_heads",
                         "linear_attention layers need linear_num_key_heads, "
                         "linear_num_value_heads, linear_key_head_dim and linear_value_head_dim");
    if (const json* g = member(cfg, "attn_output_gate"); g && g->is_boolean())
        w.attnOutputGate = g->get<bool>();
    WS_TRY(ih, intField(cfg, "index_n_heads", pre, 0));
    WS_TRY(ihd, intField(cfg, "index_head_dim", pre, 0));
    w.indexHeads = ih;
    w.indexHeadDim = ihd;
    WS_TRY(olr, intField(cfg, "o_lora_rank", pre, 0));
    WS_TRY(og, intField(cfg, "o_groups", pre, 0, 1 << 16));
    WS_TRY(qlr, intField(cfg, "q_lora_rank", pre, 0));
    w.oLoraRank = olr;
    w.oGroups = og;
    w.qLora = qlr;
    if (olr > 0 && (og == 0 || m.qHeads.value % og != 0))
        return makeError(pre + "o_groups",
                         "must divide num_attention_heads when o_lora_rank is set");
    return Ok{};
}

/// Family defaults (Mllama image tokens, MTP, relu2, untied Llama-4, Gemma-3 vocab) and the rotary
/// width and caches.
Status familyRules([[maybe_unused]] const json& root, const json& cfg, const std::string& pre,
                   const ModelSpec& m, WeightSpec& w) {
    if (m.modelType == "mllama_text_model" || str(root, "model_type") == "mllama")
        w.extraEmbeddingRows = 8; // MllamaTextModel: vocab_size + 8 image special tokens
    WS_TRY(mtp, intField(cfg, "mtp_num_hidden_layers", pre, 0, kMaxLayers));
    w.mtpLayers = mtp > 0 ? mtp : m.mtpLayers.value;
    w.mtpSource = mtp > 0 ? pre + "mtp_num_hidden_layers"
                          : (m.mtpLayers.value > 0 ? m.mtpLayers.source : std::string());
    w.plainMlp = str(cfg, "mlp_hidden_act") == "relu2" || str(cfg, "hidden_act") == "relu2";
    if (m.tiedEmbeddings.source.rfind("fallback", 0) == 0 &&
        (m.modelType == "llama4_text" || m.modelType == "llama4"))
        w.untiedByFamily = true;

    // Rotary width: the rope part of a head (MLA: qk_rope_head_dim; partial_rotary_factor).
    double partial = 1.0;
    for (const json* holder : {&cfg, member(cfg, "rope_parameters")}) {
        if (const json* f = holder ? member(*holder, "partial_rotary_factor") : nullptr;
            f && f->is_number() && f->get<double>() > 0 && f->get<double>() <= 1)
            partial = f->get<double>();
    }
    // DeepSeek-V4 (not MLA here: one shared KV head) ropes the last qk_rope_head_dim dims.
    WS_TRY(ropeDim, intField(cfg, "qk_rope_head_dim", pre, 0, kMaxDim));
    w.rotaryDim = m.mla         ? m.qkRopeHeadDim.value
                  : ropeDim > 0 ? ropeDim
                                : static_cast<std::int64_t>(
                                      std::llround(static_cast<double>(m.headDim.value) * partial));
    WS_TRY(ropes, ropeCaches(cfg, pre, m, w.rotaryDim));
    w.ropeCaches = ropes;

    return Ok{};
}

} // namespace

Result<WeightSpec> resolveWeightSpec(const json& root, const ModelSpec& m) {
    WeightSpec w;
    const json* tc = member(root, "text_config");
    const json& cfg = tc && tc->is_object() ? *tc : root;
    const std::string pre = tc && tc->is_object() ? "text_config." : "";
    const auto L = static_cast<std::size_t>(m.layers.value);
    w.mixer.assign(L, Mixer::Attention);
    w.ffn.assign(L, Ffn::Dense);
    w.layoutSource = "every layer attention + MLP";
    for (auto step : {&moeLayout, &mixerLayout, &blockShapes, &familyRules})
        if (auto st = step(root, cfg, pre, m, w); !st.ok())
            return st.error();
    // --- vision ------------------------------------------------------------------------------
    auto vis = visionParams(root, m, w.visionSource);
    if (!vis.ok())
        return vis.error();
    w.visionParams = vis.value();

    // --- quantization ------------------------------------------------------------------------
    auto q = parseQuantization(root, nullptr);
    if (!q.ok())
        return q.error();
    w.quant = q.value();
    return w;
}

} // namespace kvscope
