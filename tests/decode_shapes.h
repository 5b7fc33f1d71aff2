// Decode shapes for the backend tests (CPU and CUDA alike).
#pragma once

#include "gpu/backend.h"

#include <cstdint>

namespace kvscope::gpu::testing {

inline DecodeShape gqa(std::int64_t h, std::int64_t hkv, std::int64_t d, std::int64_t S,
                       std::int64_t B, KvDtype dt) {
    DecodeShape s;
    s.kind = Attention::Gqa;
    s.qHeads = h;
    s.kvHeads = hkv;
    s.headDim = d;
    s.context = S;
    s.batch = B;
    s.dtype = dt;
    return s;
}

inline DecodeShape mla(std::int64_t h, std::int64_t S, std::int64_t B, KvDtype dt) {
    DecodeShape s;
    s.kind = Attention::Mla;
    s.qHeads = h;
    s.kvHeads = 1;
    s.context = S;
    s.batch = B;
    s.dtype = dt;
    return s;
}

} // namespace kvscope::gpu::testing
