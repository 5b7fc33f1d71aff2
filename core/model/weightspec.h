// The config fields the weight and parameter counts need beyond the attention geometry: layer
// layout of hybrid models (Mamba-2, Gated DeltaNet, cross-attention, MoE interleave), extra
// projections (DeepSeek's sparse-attention indexer, V4's grouped output LoRA), the vision tower,
// and the checkpoint's quantization. Resolved once per config into ModelSpec::weights.
#pragma once

#include "core/model/quant.h"
#include "core/result.h"

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace kvscope {

struct ModelSpec;

/// Token mixer of one layer.
enum class Mixer : char {
    Attention = 'A',      ///< softmax self-attention (full or sliding)
    CrossAttention = 'X', ///< Mllama cross-attention to the image tokens
    Mamba2 = 'M',
    LinearAttention = 'L', ///< Gated DeltaNet (Qwen3-Next / Qwen3.5)
    None = '-'
};
/// Feed-forward of one layer.
enum class Ffn : char { Dense = 'D', Moe = 'E', None = '-' };

/// One rotary cos/sin cache as vLLM builds it: rotary_embedding/base.py registers a
/// [positions, rotary_dim] `cos_sin_cache` buffer, and get_rope shares one instance between the
/// layers that ask for the same parameters.
struct RopeCache {
    std::int64_t positions = 0;
    std::int64_t dim = 0;
    int elementBytes = 0; ///< 0: the model dtype (get_rope's default dtype)
    std::string source;   ///< why this many positions, e.g. "max_position_embeddings × factor 8"
    bool operator==(const RopeCache&) const = default;
};

struct WeightSpec {
    std::vector<Mixer> mixer; ///< one per layer
    std::vector<Ffn> ffn;     ///< one per layer
    std::string layoutSource; ///< the field(s) the layout came from

    std::int64_t denseIntermediate = 0; ///< dense-layer MLP width when it differs (Llama-4)
    std::int64_t sharedExpertWidth = 0; ///< total width of the shared expert(s); 0 = none
    std::string sharedExpertSource;
    bool attnOutputGate = false; ///< Qwen3.5: q_proj also emits a per-head output gate

    // Mamba-2 (Nemotron-H)
    std::int64_t mambaHeads = 0, mambaHeadDim = 0, mambaGroups = 1, mambaState = 0, mambaConv = 4;
    // Gated DeltaNet (Qwen3.5 linear attention)
    std::int64_t laKeyHeads = 0, laValueHeads = 0, laKeyDim = 0, laValueDim = 0, laConv = 4;
    // DeepSeek sparse attention's lightning indexer (V3.2, V4)
    std::int64_t indexHeads = 0, indexHeadDim = 0;
    // DeepSeek-V4 attention: grouped low-rank output projection, hyper-connections
    std::int64_t oLoraRank = 0, oGroups = 0, qLora = 0;
    std::int64_t extraEmbeddingRows = 0; ///< Mllama: 8 image special tokens in embed_tokens
    std::int64_t mtpLayers = 0;          ///< MTP layers the checkpoint ships (not served)
    std::string mtpSource;

    bool plainMlp = false; ///< relu2 MLP (Nemotron-H): up + down only
    /// The config omits tie_word_embeddings and the family's default is untied (Llama-4:
    /// Llama4TextConfig tie_word_embeddings=False), so an lm_head is counted anyway.
    bool untiedByFamily = false;

    std::int64_t rotaryDim = 0; ///< width of the rotary part of a head (partial rotary)
    /// The rotary cos/sin caches vLLM allocates on every rank (one per distinct get_rope call).
    std::vector<RopeCache> ropeCaches;

    std::int64_t visionParams = 0; ///< vision tower + projector
    std::string visionSource;

    QuantSpec quant;

    /// model.safetensors.index.json `metadata.total_size` when a snapshot folder had it.
    std::int64_t checkpointBytes = 0;
    std::string checkpointSource;
};

/// Resolves the fields above from a config root for an already-resolved geometry `m`.
Result<WeightSpec> resolveWeightSpec(const nlohmann::json& root, const ModelSpec& m);

} // namespace kvscope
