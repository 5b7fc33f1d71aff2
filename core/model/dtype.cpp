#include "core/model/dtype.h"

#include "core/jsonutil.h"

#include <algorithm>
#include <cctype>

namespace kvscope {

namespace {
std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}
} // namespace

const std::vector<KvDtypeInfo>& kvDtypeTable() {
    // vLLM: vllm/v1/kv_cache_interface.py (KVQuantMode, AttentionSpec.page_size_bytes,
    // FullAttentionSpec.real_page_size_bytes, MLAAttentionSpec); vllm/utils/torch_utils.py
    // (nvfp4_kv_cache_full_dim). SGLang: --kv-cache-dtype auto, fp8_e4m3, fp8_e5m2, bf16.
    static const std::vector<KvDtypeInfo> table = {
        {KvDtype::Auto, "auto", "", "auto (model dtype)", 0, 0, 0, 0, 0, true, true, "vllm, sglang",
         "the served model dtype"},
        {KvDtype::BF16, "bf16", "bfloat16", "bf16", 16, 0, 0, 0, 0, true, true, "vllm, sglang",
         "2 bytes per element"},
        {KvDtype::FP16, "fp16", "float16,half", "fp16", 16, 0, 0, 0, 0, true, true, "vllm, sglang",
         "2 bytes per element"},
        {KvDtype::FP32, "fp32", "float32,float", "fp32", 32, 0, 0, 0, 0, true, true, "vllm",
         "4 bytes per element"},
        {KvDtype::FP8, "fp8", "fp8_e4m3", "fp8 (e4m3)", 8, 0, 0, 0, 0, true, true, "vllm, sglang",
         "1 byte per element, per-tensor scales (KVQuantMode.FP8_PER_TENSOR)"},
        {KvDtype::FP8E5M2, "fp8_e5m2", "", "fp8 (e5m2)", 8, 0, 0, 0, 0, true, true, "vllm, sglang",
         "1 byte per element, per-tensor scales"},
        {KvDtype::NVFP4, "nvfp4", "", "nvfp4 (4 bits + fp8 scale / 16)", 4, 1, 16, 0, 0, true,
         false, "vllm",
         "packed fp4 values + one fp8 scale per 16 (nvfp4_kv_cache_full_dim: head_size // 2 + "
         "head_size // 16)"},
        {KvDtype::Int8PerTokenHead, "int8_per_token_head", "", "int8 + fp32 scale / token-head", 8,
         0, 0, 4, 0, true, false, "vllm",
         "int8 values + fp32 K and V scales per token per head (AttentionSpec.page_size_bytes)"},
        {KvDtype::FP8PerTokenHead, "fp8_per_token_head", "", "fp8 + fp32 scale / token-head", 8, 0,
         0, 4, 0, true, false, "vllm",
         "fp8 values + fp32 K and V scales per token per head (AttentionSpec.page_size_bytes)"},
        {KvDtype::FP8DsMla, "fp8_ds_mla", "", "fp8_ds_mla (656 B/token/layer)", 8, 0, 0, 0,
         static_cast<int>(kFp8DsMlaBytesPerTokenPerLayer), false, true, "vllm",
         "512 fp8 latent values + 4 fp32 scales + 64 bf16 rope values (MLAAttentionSpec)"},
    };
    return table;
}

const KvDtypeInfo& kvDtypeInfo(KvDtype d) {
    for (const auto& row : kvDtypeTable())
        if (row.dtype == d)
            return row;
    return kvDtypeTable().front();
}

const KvDtypeInfo& dsIndexerLayout() {
    // vllm/model_executor/models/deepseek_v2.py, Indexer: head_dim + head_dim //
    // quant_block_size * 4 bytes (fp8 values, fp32 scale per 128), dtype uint8.
    static const KvDtypeInfo row = {KvDtype::FP8,
                                    "ds_indexer_fp8",
                                    "",
                                    "indexer fp8 + fp32 / 128",
                                    8,
                                    4,
                                    128,
                                    0,
                                    0,
                                    true,
                                    false,
                                    "vllm",
                                    "DeepSeek-V3.2 indexer key cache"};
    return row;
}

namespace {
std::int64_t vectorBytes(const KvDtypeInfo& t, std::int64_t elements) {
    if (elements <= 0)
        return 0;
    std::int64_t b = elements * t.storageBits / 8;
    if (t.groupElements > 0)
        b += elements / t.groupElements * t.scaleBytesPerGroup;
    return b;
}
} // namespace

std::int64_t kvTokenBytes(KvDtype d, std::int64_t heads, std::int64_t dK, std::int64_t dV) {
    return layoutTokenBytes(d == KvDtype::Auto ? kvDtypeInfo(KvDtype::BF16) : kvDtypeInfo(d), heads,
                            dK, dV);
}

std::int64_t layoutTokenBytes(const KvDtypeInfo& t, std::int64_t heads, std::int64_t dK,
                              std::int64_t dV) {
    if (t.fixedBytesPerTokenPerLayer > 0)
        return t.fixedBytesPerTokenPerLayer;
    std::int64_t perHead = vectorBytes(t, dK) + vectorBytes(t, dV);
    if (t.scaleBytesPerTokenHead > 0)
        perHead += (dV > 0 ? 2 : 1) * t.scaleBytesPerTokenHead;
    return heads * perHead;
}

int kvStorageBits(KvDtype d) {
    return d == KvDtype::Auto ? 16 : kvDtypeInfo(d).storageBits;
}

Result<KvDtype> parseKvDtype(std::string_view text) {
    const std::string t = lower(text);
    std::string names;
    for (const auto& row : kvDtypeTable()) {
        if (t == row.name)
            return row.dtype;
        std::string_view aliases = row.aliases;
        while (!aliases.empty()) {
            const auto comma = aliases.find(',');
            if (t == aliases.substr(0, comma))
                return row.dtype;
            aliases =
                comma == std::string_view::npos ? std::string_view() : aliases.substr(comma + 1);
        }
        names += names.empty() ? "" : ", ";
        names += row.name;
    }
    return makeError("kv-dtype",
                     "must be one of " + names + "; got '" + sanitizeForMessage(text) + "'");
}

Result<WeightDtype> parseWeightDtype(std::string_view text) {
    const std::string t = lower(text);
    if (t == "auto")
        return WeightDtype::Auto;
    if (t == "bf16" || t == "bfloat16")
        return WeightDtype::BF16;
    if (t == "fp16" || t == "float16" || t == "half")
        return WeightDtype::FP16;
    if (t == "fp32" || t == "float32")
        return WeightDtype::FP32;
    if (t == "fp8")
        return WeightDtype::FP8;
    if (t == "int8")
        return WeightDtype::INT8;
    if (t == "int4")
        return WeightDtype::INT4;
    if (t == "mxfp4")
        return WeightDtype::MXFP4;
    if (t == "nvfp4")
        return WeightDtype::NVFP4;
    return makeError("weight-dtype",
                     "must be one of auto, bf16, fp16, fp32, fp8, int8, int4, mxfp4, nvfp4; got '" +
                         std::string(text) + "'");
}

std::string toString(KvDtype d) {
    return kvDtypeInfo(d).name;
}

std::string toString(WeightDtype d) {
    switch (d) {
    case WeightDtype::Auto:
        return "auto";
    case WeightDtype::BF16:
        return "bf16";
    case WeightDtype::FP8:
        return "fp8";
    case WeightDtype::FP16:
        return "fp16";
    case WeightDtype::FP32:
        return "fp32";
    case WeightDtype::INT8:
        return "int8";
    case WeightDtype::INT4:
        return "int4";
    case WeightDtype::MXFP4:
        return "mxfp4";
    case WeightDtype::NVFP4:
        return "nvfp4";
    }
    return "?";
}

std::int64_t bytesPerElement(KvDtype d) {
    return kvStorageBits(d) / 8;
}

} // namespace kvscope
