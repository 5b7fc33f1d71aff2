// Weight quantization as the checkpoints declare it (config.json `quantization_config`, or a
// ModelOpt `hf_quant_config.json` beside it) and as the engines store it once loaded: the packed
// values, their scales and zero points, and the modules left in 16-bit.
#pragma once

#include "core/result.h"

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace kvscope {

/// How one quantized linear weight [rows = out features, cols = in features] is stored.
struct QuantScheme {
    std::string name;    ///< "fp8", "int8", "int4", "mxfp4", "nvfp4", "nf4"
    int weightBits = 16; ///< bits per stored value
    /// Scales: -1 = one per tensor, 0 = one per output channel, N = one per N inputs of a row.
    std::int64_t groupSize = -1;
    std::int64_t blockRows = 0, blockCols = 0; ///< 2-D scale blocks (fp8 128 × 128); 0 = none
    int scaleBytes = 4;                        ///< bytes per scale (fp32 4, fp16 2, e8m0/fp8 1)
    bool zeroPoints = false;                   ///< asymmetric: one zero point per scale
    int zeroBits = 0;                          ///< bits per zero point (packed)
    std::int64_t perTensorBytes = 0;           ///< extra scalars per tensor (nvfp4 global scales)
    /// Only mixture-of-experts layers are quantized (vLLM's Mxfp4Config: linear layers fall back
    /// to UnquantizedLinearMethod, quantization/mxfp4.py get_quant_method).
    bool expertsOnly = false;
    bool operator==(const QuantScheme&) const = default;
};

struct QuantSpec {
    bool present = false;
    std::string method; ///< quant_method / quant_algo as written
    std::string source; ///< "config.json quantization_config", "hf_quant_config.json", ...
    QuantScheme scheme;
    std::vector<std::string> ignore; ///< module names or patterns kept in 16-bit
    std::string ignoreField;         ///< where the list came from
    std::string kvCacheDtype;        ///< hf_quant_config kv_cache_quant_algo ("FP8"), if any
    /// The routed experts' own scheme when the checkpoint stores them apart (DeepSeek-V4's
    /// `expert_dtype: "fp4"`: mxfp4 experts beside fp8 block linears); empty name: `scheme`.
    QuantScheme expertScheme;
    std::string expertSource;
    std::string describe() const; ///< "nvfp4 (group 16, fp8 scales)"
    bool operator==(const QuantSpec&) const = default;
};

/// Reads a config.json root's `quantization_config` (or text_config's) and a companion
/// hf_quant_config.json (may be null). No quantization: present = false. Bad content: a one-line
/// error naming the field.
Result<QuantSpec> parseQuantization(const nlohmann::json& root, const nlohmann::json* hfQuant);

/// Whether a module (HF name, e.g. "model.layers.3.self_attn.q_proj") is excluded. Patterns:
/// "re:<regex>" (compressed-tensors), globs with '*' (gpt-oss, ModelOpt), else a name that
/// contains the entry as a dotted component run (transformers' modules_to_not_convert rule).
bool quantIgnores(const QuantSpec& q, const std::string& module);

/// Bytes of one quantized [rows × cols] weight: packed values + scales + zero points.
std::int64_t quantizedTensorBytes(const QuantScheme& s, std::int64_t rows, std::int64_t cols);

/// The scheme a `--weight-dtype` override stands for: fp8 (per-channel fp32 scales, as
/// llm-compressor's FP8_DYNAMIC), int8 (w8a8 per-channel), int4 (w4a16 group 128, fp16 scales),
/// mxfp4, nvfp4. Empty name for 16/32-bit.
QuantScheme overrideScheme(const std::string& name);

} // namespace kvscope
