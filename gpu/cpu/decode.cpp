#include "gpu/cpu/decode.h"

#include "gpu/cpu/simd.h"

namespace kvscope::gpu::detail::cpu {
namespace {

void fp16RowScalar(const std::uint16_t* s, float* dst, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i)
        dst[i] = num::fp16ToFloat(s[i]);
}
#if defined(__GNUC__) && defined(__x86_64__)
// vcvtph2ps is exact for every fp16 value (subnormals included), as num::fp16ToFloat is; GCC
// does not vectorise the bit-twiddling version (it was ~75% of the fp16 decode time).
__attribute__((target("avx512f"))) void fp16RowAvx512(const std::uint16_t* s, float* dst,
                                                      std::int64_t n) {
    std::int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(
            dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i))));
    fp16RowScalar(s + i, dst + i, n - i);
}
__attribute__((target("avx,f16c"))) void fp16RowF16c(const std::uint16_t* s, float* dst,
                                                     std::int64_t n) {
    std::int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i,
                         _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
    fp16RowScalar(s + i, dst + i, n - i);
}
#endif

} // namespace

Fp16RowDecoder fp16RowDecoder() {
    static const Fp16RowDecoder chosen = [] {
#if defined(__GNUC__) && defined(__x86_64__)
        if (__builtin_cpu_supports("avx512f"))
            return &fp16RowAvx512;
        // F16C comes with every AVX2 CPU (x86-64-v3); clang's __builtin_cpu_supports has no
        // "f16c" string.
        if (__builtin_cpu_supports("avx2"))
            return &fp16RowF16c;
#endif
        return &fp16RowScalar;
    }();
    return chosen;
}

} // namespace kvscope::gpu::detail::cpu
