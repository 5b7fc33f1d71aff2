// Parameter counting from a config: every weight tensor the checkpoint holds, from the layer
// layout (dense, GQA, MLA with or without q_lora_rank, MoE with shared experts and interleave,
// Mamba-2, Gated DeltaNet, cross-attention, DeepSeek's indexer), plus the vision tower and MTP
// layers reported apart, and the weight bytes the engines load for them.
#pragma once

#include "core/model/dtype.h"
#include "core/model/model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvscope {

struct ParamCount {
    std::int64_t embedding = 0; ///< vocab × d
    std::int64_t lmHead = 0;    ///< 0 when tied
    std::int64_t attention = 0; ///< all layers: Q, K, V (or MLA's projections), O, biases
    std::int64_t mixer = 0;     ///< Mamba-2, Gated DeltaNet and indexer projections
    std::int64_t mlp = 0;       ///< all layers: dense MLPs + experts + shared experts
    std::int64_t experts = 0;   ///< of mlp: the routed experts alone
    std::int64_t router = 0;    ///< MoE gates
    std::int64_t norms = 0;
    std::int64_t vision = 0; ///< vision tower + projector (not in total())
    std::int64_t mtp = 0;    ///< multi-token-prediction layers (not in total(), not served)
    /// The language model's parameters (vision tower and MTP layers apart).
    std::int64_t total() const {
        return embedding + lmHead + attention + mixer + mlp + router + norms;
    }
    /// Parameters held in 16-bit even in an fp8 checkpoint (embeddings, lm_head, norms, router).
    std::int64_t sixteenBitAlways() const { return embedding + lmHead + norms + router; }
};

/// What a weight tensor is, for quantization and tensor-parallel sharding.
enum class TensorRole {
    Embedding,
    LmHead,
    Attention,
    Mixer,
    DenseMlp,
    Expert,
    SharedExpert,
    Router,
    Norm,
    Vision
};

/// One weight (or `count` identical ones, e.g. the experts of a layer).
struct WeightTensor {
    std::string module; ///< HF module name, e.g. "model.layers.3.self_attn.q_proj"
    TensorRole role = TensorRole::Attention;
    std::int64_t rows = 0, cols = 1; ///< [out features, in features]; vectors: cols = 1
    std::int64_t count = 1;
    bool linear = true;  ///< a matrix a quantization method may pack
    bool kvPart = false; ///< part of the K/V projection
    std::int64_t layer = -1;
    std::int64_t params() const { return rows * cols * count; }
};

/// Every weight of the served language model (MTP and vision apart) for the model's own h_kv,
/// or `kvHeads` as a what-if (GQA family).
/// The model's own list is built once per resolved model and shared; a what-if builds its own.
std::shared_ptr<const std::vector<WeightTensor>> weightInventory(const ModelSpec& m,
                                                                 std::int64_t kvHeads = 0);

/// Counts the checkpoint's parameters. For the GQA family `kvHeads` overrides h_kv (a
/// what-if); pass 0 to use the model's own.
ParamCount countParams(const ModelSpec& m, std::int64_t kvHeads = 0);

/// K and V projection parameters of one layer: 2 · d · h_kv · d_h (docs/formulas.md §6).
/// For MLA: the latent down-projection d·(r + d_rope) plus the up-projection r·h·(d_nope + d_v).
std::int64_t kvProjParamsPerLayer(const ModelSpec& m, std::int64_t kvHeads);

/// Bytes of the loaded weights for the whole model (see core/model/weights.h for the breakdown).
std::int64_t weightBytes(const ModelSpec& m, const ParamCount& p, WeightDtype d);

/// Resolves Auto to the dtype the checkpoint is served with.
WeightDtype resolveWeightDtype(const ModelSpec& m, WeightDtype d);

} // namespace kvscope
