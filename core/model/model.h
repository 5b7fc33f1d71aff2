// A model's attention geometry, resolved from a HuggingFace config.json the way vLLM and SGLang
// resolve it (docs/formulas.md §1). Every number carries its provenance.
#pragma once

#include "core/model/layers.h"
#include "core/model/weightspec.h"
#include "core/result.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope {

/// A resolved value and where it came from: the config field ("num_key_value_heads"), or the
/// rule used when no field was there ("fallback: hidden_size / num_attention_heads").
template <class T> struct Sourced {
    T value{};
    std::string source;
};

enum class AttentionKind { MHA, MQA, GQA, MLA };
std::string toString(AttentionKind k);

/// Classifies a GQA-family head layout: h_kv == h → MHA, h_kv == 1 → MQA, else GQA.
AttentionKind classifyHeads(std::int64_t qHeads, std::int64_t kvHeads);

/// The model's own weight tensors, listed once on first use (core/model/params.cpp) and shared by
/// every copy of the spec. A ModelSpec is not changed once resolved, so the list stays valid.
struct WeightInventoryCache;
std::shared_ptr<WeightInventoryCache> newWeightInventoryCache();

struct ModelSpec {
    std::string name;         ///< preset id or file stem
    std::string modelType;    ///< `model_type`
    std::string architecture; ///< `architectures[0]`, may be empty

    Sourced<std::int64_t> layers;  ///< L
    Sourced<std::int64_t> qHeads;  ///< h, query heads
    Sourced<std::int64_t> kvHeads; ///< h_kv as the engines allocate it (1 for MLA)
    Sourced<std::int64_t> headDim; ///< d_h (for MLA: qk_nope + qk_rope, the per-head q/k width)
    Sourced<std::int64_t> hidden;  ///< d, hidden size
    Sourced<std::int64_t> vocab;
    Sourced<std::int64_t> intermediate;          ///< dense MLP width
    Sourced<std::int64_t> maxPositionEmbeddings; ///< 0 when absent

    // MLA (DeepSeek-V2/V3, Kimi-K2): present when kv_lora_rank is present and not null.
    bool mla = false;
    Sourced<std::int64_t> kvLoraRank;    ///< r
    Sourced<std::int64_t> qkRopeHeadDim; ///< d_rope
    Sourced<std::int64_t> qkNopeHeadDim;
    Sourced<std::int64_t> vHeadDim;
    Sourced<std::int64_t> qLoraRank; ///< 0 = no query compression

    // Mixture of experts (0 experts = dense).
    Sourced<std::int64_t> routedExperts;
    Sourced<std::int64_t> expertsPerToken;
    Sourced<std::int64_t> moeIntermediate;
    Sourced<std::int64_t> sharedExperts;
    Sourced<std::int64_t> firstDenseLayers; ///< DeepSeek `first_k_dense_replace`
    Sourced<std::int64_t> moeLayerFreq;     ///< every n-th layer is MoE (1 = all)
    Sourced<std::int64_t> mtpLayers; ///< `num_nextn_predict_layers` / `mtp_num_hidden_layers`;
                                     ///< not counted in params nor in the layer groups

    Sourced<bool> tiedEmbeddings; ///< transformers' default when absent: tied
    Sourced<bool> gatedMlp;       ///< SwiGLU/GeGLU (3 matrices) vs plain 2-matrix MLP
    Sourced<bool> qkvBias;
    Sourced<bool> mlpBias;

    Sourced<std::string> torchDtype;   ///< as declared ("bfloat16", "float32", ...)
    std::int64_t servedDtypeBytes = 2; ///< float32 checkpoints are served in 16-bit

    /// Per layer: 0 = no window, else the sliding-window (or local-chunk) size in tokens.
    /// Derived from layerGroups.
    std::vector<std::int64_t> layerWindow;
    std::string layerKindsSource;
    /// The decoder layers by cache kind and geometry, as vLLM groups its KV cache specs
    /// (core/model/layers.h). Every layer index in [0, L) is in exactly one group. MTP / next-n
    /// layers are not in them (mtpLayers): engines allocate their KV only for speculative
    /// decoding.
    std::vector<LayerGroup> layerGroups;

    std::vector<std::string> warnings;

    /// Filled by weightInventory; an evaluate asks for the list several times, a slider drag
    /// evaluates hundreds of deployments.
    std::shared_ptr<WeightInventoryCache> inventoryCache = newWeightInventoryCache();

    WeightSpec
        weights; ///< layout, extra projections, vision, quantization (core/model/weightspec.h)

    AttentionKind attention() const;
    std::int64_t windowLayerCount() const;
    /// Per-head K and V widths stored in the cache for the GQA family (d_k, d_v). For an MLA
    /// model viewed as a GQA what-if: (qk_nope + qk_rope, v_head_dim).
    std::int64_t keyDim() const;
    std::int64_t valueDim() const;
};

/// Hard limits on inputs so no arithmetic can overflow; larger values are "absurd sizes".
inline constexpr std::int64_t kMaxLayers = 10'000;
inline constexpr std::int64_t kMaxHeads = 65'536;
inline constexpr std::int64_t kMaxDim = 1'048'576;
inline constexpr std::int64_t kMaxVocab = 100'000'000;
inline constexpr std::size_t kMaxConfigBytes = 16 * 1024 * 1024;
inline constexpr int kMaxJsonDepth = 64;

/// Resolves a config.json text. `name` becomes ModelSpec::name. Never throws.
Result<ModelSpec> parseModelConfig(std::string_view jsonText, const std::string& name);

/// Reads and resolves a config.json file; the name is the file's parent folder or stem.
Result<ModelSpec> loadModelConfigFile(const std::string& path);

} // namespace kvscope
