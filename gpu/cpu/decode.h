// Storage formats <-> fp32 for the CPU engine: exact decoders (vectorised fp16 where the CPU
// has F16C / AVX-512) and the encoders of the activation types.
#pragma once

#include "gpu/backend.h"
#include "gpu/numerics.h"

#include <cstdint>
#include <cstring>

namespace kvscope::gpu::detail::cpu {

using Fp16RowDecoder = void (*)(const std::uint16_t*, float*, std::int64_t);

/// The fastest exact fp16 -> fp32 row decoder this CPU runs.
Fp16RowDecoder fp16RowDecoder();

inline void decodeRow(KvDtype dtype, const std::uint8_t* src, float* dst, std::int64_t n) {
    switch (dtype) {
    case KvDtype::Bf16: {
        const auto* s = reinterpret_cast<const std::uint16_t*>(src);
        for (std::int64_t i = 0; i < n; ++i)
            dst[i] = num::bf16ToFloat(s[i]);
        break;
    }
    case KvDtype::Fp16:
        fp16RowDecoder()(reinterpret_cast<const std::uint16_t*>(src), dst, n);
        break;
    case KvDtype::Fp8E4m3:
        for (std::int64_t i = 0; i < n; ++i)
            dst[i] = num::fp8e4m3ToFloat(src[i]);
        break;
    case KvDtype::Fp32:
        std::memcpy(dst, src, std::size_t(n) * sizeof(float));
        break;
    }
}

inline void encodeValue(KvDtype dtype, float x, std::uint8_t* dst) {
    switch (dtype) {
    case KvDtype::Bf16: {
        const std::uint16_t b = num::floatToBf16(x);
        std::memcpy(dst, &b, 2);
        break;
    }
    case KvDtype::Fp16: {
        const std::uint16_t b = num::floatToFp16(x);
        std::memcpy(dst, &b, 2);
        break;
    }
    case KvDtype::Fp8E4m3:
        *dst = num::floatToFp8e4m3(x);
        break;
    case KvDtype::Fp32:
        std::memcpy(dst, &x, 4);
        break;
    }
}

inline float decodeValue(KvDtype dtype, const std::uint8_t* src) {
    float out = 0; // every dtype writes it; GCC cannot see that through the switch
    decodeRow(dtype, src, &out, 1);
    return out;
}

/// Queries and outputs: bf16 for bf16 and fp8 KV, fp16 for fp16 KV, fp32 for fp32 KV.
inline KvDtype activationType(KvDtype kv) {
    return kv == KvDtype::Fp32 ? KvDtype::Fp32
                               : (kv == KvDtype::Fp16 ? KvDtype::Fp16 : KvDtype::Bf16);
}

} // namespace kvscope::gpu::detail::cpu
