// Parameter counting from a config (dense, GQA, MLA with or without q_lora_rank, MoE with
// shared experts, tied embeddings) and weight bytes.
#pragma once

#include "core/dtype.h"
#include "core/model.h"

#include <cstdint>

namespace kvscope {

struct ParamCount {
    std::int64_t embedding = 0;    ///< vocab × d
    std::int64_t lmHead = 0;       ///< 0 when tied
    std::int64_t attention = 0;    ///< all layers: Q, K, V (or MLA's projections), O, biases
    std::int64_t kvProjection = 0; ///< all layers: the K and V projections alone (GQA family)
    std::int64_t mlp = 0;          ///< all layers: dense MLPs + experts + shared experts
    std::int64_t router = 0;       ///< MoE gates
    std::int64_t norms = 0;
    std::int64_t total() const { return embedding + lmHead + attention + mlp + router + norms; }
    /// Parameters held in 16-bit even in an fp8 checkpoint (embeddings, lm_head, norms, router).
    std::int64_t sixteenBitAlways() const { return embedding + lmHead + norms + router; }
};

/// Counts the checkpoint's parameters (MTP layers excluded). For the GQA family `kvHeads`
/// overrides h_kv (a what-if); pass 0 to use the model's own.
ParamCount countParams(const ModelSpec& m, std::int64_t kvHeads = 0);

/// K and V projection parameters of one layer: 2 · d · h_kv · d_h (docs/formulas.md §6).
/// For MLA: the latent down-projection d·(r + d_rope) plus the up-projection r·h·(d_nope + d_v).
std::int64_t kvProjParamsPerLayer(const ModelSpec& m, std::int64_t kvHeads);

/// Bytes of the loaded weights for the whole model.
std::int64_t weightBytes(const ModelSpec& m, const ParamCount& p, WeightDtype d);

/// Resolves Auto to the dtype the checkpoint is served with.
WeightDtype resolveWeightDtype(const ModelSpec& m, WeightDtype d);

} // namespace kvscope
