// Storage dtypes for the KV cache and the weights.
#pragma once

#include "core/result.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace kvscope {

/// KV-cache element type. Auto = the model's served dtype (torch_dtype; float32 checkpoints
/// are served in 16-bit). Fp8DsMla is vLLM's 656-byte-per-token-per-layer MLA layout.
enum class KvDtype { Auto, BF16, FP16, FP8, FP32, FP8DsMla };

/// Weight storage type. Auto = what the checkpoint declares (its quantization_config or
/// hf_quant_config.json), else the 16-bit served dtype. The others override it: quantized
/// overrides (fp8, int8, int4, mxfp4, nvfp4) keep embeddings, lm_head, norms and routers in
/// 16-bit, as real quantized checkpoints do (core/quant.h overrideScheme).
enum class WeightDtype { Auto, BF16, FP8, FP16, FP32, INT8, INT4, MXFP4, NVFP4 };

Result<KvDtype> parseKvDtype(std::string_view text);
Result<WeightDtype> parseWeightDtype(std::string_view text);
std::string toString(KvDtype d);
std::string toString(WeightDtype d);

/// Bytes per stored element; Fp8DsMla counts as 1 (its per-token size is special-cased).
std::int64_t bytesPerElement(KvDtype d);

/// vLLM's fp8_ds_mla layout: 512 fp8 latent values + 4 fp32 scales + 64 bf16 rope values.
inline constexpr std::int64_t kFp8DsMlaBytesPerTokenPerLayer = 656;

} // namespace kvscope
