#include "core/dtype.h"

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

Result<KvDtype> parseKvDtype(std::string_view text) {
    const std::string t = lower(text);
    if (t == "auto")
        return KvDtype::Auto;
    if (t == "bf16" || t == "bfloat16")
        return KvDtype::BF16;
    if (t == "fp16" || t == "float16" || t == "half")
        return KvDtype::FP16;
    if (t == "fp8" || t == "fp8_e4m3" || t == "fp8_e5m2")
        return KvDtype::FP8;
    if (t == "fp32" || t == "float32" || t == "float")
        return KvDtype::FP32;
    if (t == "fp8_ds_mla")
        return KvDtype::FP8DsMla;
    return makeError("kv-dtype", "must be one of auto, bf16, fp16, fp8, fp32, fp8_ds_mla; got '" +
                                     std::string(text) + "'");
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
    switch (d) {
    case KvDtype::Auto:
        return "auto";
    case KvDtype::BF16:
        return "bf16";
    case KvDtype::FP16:
        return "fp16";
    case KvDtype::FP8:
        return "fp8";
    case KvDtype::FP32:
        return "fp32";
    case KvDtype::FP8DsMla:
        return "fp8_ds_mla";
    }
    return "?";
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
    switch (d) {
    case KvDtype::FP8:
    case KvDtype::FP8DsMla:
        return 1;
    case KvDtype::FP32:
        return 4;
    default:
        return 2;
    }
}

} // namespace kvscope
