// Storage dtypes for the KV cache and the weights.
#pragma once

#include "core/result.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope {

/// KV-cache element type (vLLM's --kv-cache-dtype). Auto = the model's served dtype
/// (torch_dtype; float32 checkpoints are served in 16-bit). FP8DsMla is vLLM's
/// 656-byte-per-token-per-layer MLA layout. Every byte count comes from kvDtypeTable().
enum class KvDtype {
    Auto,
    BF16,
    FP16,
    FP8,
    FP32,
    FP8DsMla,
    FP8E5M2,
    NVFP4,
    Int8PerTokenHead,
    FP8PerTokenHead
};

/// One KV storage layout: how many bits an element takes, what scales ride along, and who
/// accepts it. Byte counts are computed per head in whole bytes, rounded as vLLM rounds them.
struct KvDtypeInfo {
    KvDtype dtype = KvDtype::Auto;
    const char* name = "";    ///< vLLM's spelling, what toString prints
    const char* aliases = ""; ///< other accepted spellings, comma-separated
    const char* title = "";   ///< short description for menus
    int storageBits = 16;     ///< per K/V element (0: auto, resolved to the model dtype)
    /// Block scales: scaleBytesPerGroup bytes per groupElements elements of one head's vector
    /// (NVFP4: one fp8 scale per 16 values; the indexer: one fp32 scale per 128 values).
    int scaleBytesPerGroup = 0;
    int groupElements = 0;
    /// Per-token-head scales: bytes per token per KV head, for K and for V each (fp32).
    int scaleBytesPerTokenHead = 0;
    /// A fixed per-token-per-layer layout replacing the element arithmetic (fp8_ds_mla: 656).
    int fixedBytesPerTokenPerLayer = 0;
    bool perHeadKv = true;    ///< usable for per-head K/V caches
    bool mlaLatent = true;    ///< usable for an MLA latent cache
    const char* engines = ""; ///< engines whose --kv-cache-dtype accepts it
    const char* source = "";
};

/// Every selectable KV dtype, in menu order (auto first).
const std::vector<KvDtypeInfo>& kvDtypeTable();
const KvDtypeInfo& kvDtypeInfo(KvDtype d);
/// DeepSeek-V3.2's sparse-attention indexer key cache: fp8 values plus one fp32 scale per 128
/// values, stored as uint8 whatever --kv-cache-dtype says (not selectable).
const KvDtypeInfo& dsIndexerLayout();

/// Bytes one token takes for `heads` KV heads with K width dK and V width dV (dV = 0: one
/// vector per head, as MLA's latent) in one layer. Exact integers, per head:
///   elements × bits / 8, + (elements / group) × scale bytes (vLLM nvfp4_kv_cache_full_dim:
///   head_size // 2 + head_size // 16), + per-token-head scales for K and V (AttentionSpec.
///   page_size_bytes: 2 · block · heads · 4), or the fixed layout (MLAAttentionSpec: 656).
std::int64_t kvTokenBytes(KvDtype d, std::int64_t heads, std::int64_t dK, std::int64_t dV);
/// The same arithmetic for any layout row (the indexer's, for one).
std::int64_t layoutTokenBytes(const KvDtypeInfo& t, std::int64_t heads, std::int64_t dK,
                              std::int64_t dV);

/// Storage bits per element (fp8_ds_mla: 8; the table's figure).
int kvStorageBits(KvDtype d);

/// Weight storage type. Auto = what the checkpoint declares (its quantization_config or
/// hf_quant_config.json), else the 16-bit served dtype. The others override it: quantized
/// overrides (fp8, int8, int4, mxfp4, nvfp4) keep embeddings, lm_head, norms and routers in
/// 16-bit, as real quantized checkpoints do (core/model/quant.h overrideScheme).
enum class WeightDtype { Auto, BF16, FP8, FP16, FP32, INT8, INT4, MXFP4, NVFP4 };

Result<KvDtype> parseKvDtype(std::string_view text);
Result<WeightDtype> parseWeightDtype(std::string_view text);
std::string toString(KvDtype d);
std::string toString(WeightDtype d);

/// Whole bytes per stored element (storage bits / 8, rounded down: nvfp4 is 0; use
/// kvTokenBytes for sizes).
std::int64_t bytesPerElement(KvDtype d);

/// vLLM's fp8_ds_mla layout: 512 fp8 latent values + 4 fp32 scales + 64 bf16 rope values.
inline constexpr std::int64_t kFp8DsMlaBytesPerTokenPerLayer = 656;

} // namespace kvscope
