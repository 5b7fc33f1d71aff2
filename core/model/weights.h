// Weights as the engines load them: the checkpoint's bytes (quantized values, scales, zero
// points, 16-bit modules), what one tensor-parallel rank holds, and snapshot folders.
#pragma once

#include "core/model/dtype.h"
#include "core/model/model.h"
#include "core/result.h"

#include <cstdint>
#include <string>

namespace kvscope {

struct LoadedWeights {
    WeightDtype dtype = WeightDtype::BF16; ///< Auto resolved
    std::int64_t bytes = 0;        ///< the whole checkpoint as loaded (language model + vision)
    std::int64_t bytesPerRank = 0; ///< one TP rank: its shards + replicated tensors + rope cache
    std::int64_t visionBytes = 0;
    std::int64_t quantizedParams = 0; ///< parameters stored in the quantized format
    std::int64_t ropeCacheBytesPerRank = 0;
    /// Whole-model bytes as loaded, by role (before the index's total_size, if any, replaces
    /// `bytes`): attention + dense MLP + shared and routed experts (ParamCount::attention +
    /// ParamCount::mlp), the routed experts alone (ParamCount::experts), and the K/V
    /// projections (the linear tensors marked kvPart).
    std::int64_t attentionMlpBytes = 0;
    std::int64_t expertBytes = 0;
    std::int64_t kvProjectionBytes = 0;
    std::int64_t unquantizedElementBytes = 2; ///< embeddings, lm_head, norms, routers
    std::string format; ///< "nvfp4 (group 16) + bf16 embeddings, lm_head, routers"
    std::string source; ///< where the format and the size came from
};

/// The weights of `m` under `d` (Auto = the checkpoint's own quantization) at tensor parallel
/// size `tp`; `kvHeads` > 0 sizes the K/V projections for that many KV heads (an h_kv what-if)
/// instead of the checkpoint's. Never fails: the inputs were validated when the model was parsed.
LoadedWeights loadedWeights(const ModelSpec& m, WeightDtype d, std::int64_t tp,
                            std::int64_t kvHeads = 0);

struct WeightTensor;

/// How many ways tensor `t` of `m` is split across `tp` ranks: linear layers TP ways, the K/V
/// projections min(TP, h_kv) ways, norms, routers, biases and MLA's down-projections whole.
std::int64_t tensorSplitWays(const ModelSpec& m, const WeightTensor& t, std::int64_t tp);

/// Reads a model: a config.json file, or a snapshot folder holding config.json with its
/// companions — hf_quant_config.json (ModelOpt quantization) and model.safetensors.index.json
/// (metadata.total_size: the exact checkpoint size).
Result<ModelSpec> loadModelSnapshot(const std::string& path);

} // namespace kvscope
