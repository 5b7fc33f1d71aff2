#include "gpu/cpu/ceiling_kernels.h"

#include "gpu/cpu/simd.h"

namespace kvscope::gpu::detail::cpu {

KVSCOPE_CLONES
float sumRegion(const float* p, std::int64_t n) {
    float lanes[64] = {};
    std::int64_t i = 0;
    for (; i + 64 <= n; i += 64)
        for (int l = 0; l < 64; ++l)
            lanes[l] += p[i + l];
    float s = 0;
    for (; i < n; ++i)
        s += p[i];
    for (float x : lanes)
        s += x;
    return s;
}

/// 4 sequential streams per thread, as the decode kernel reads 2 per thread (K and V) or
/// more: one stream per core leaves the hardware prefetchers short of memory-level parallelism
/// and understated the bandwidth by ~1.7x.
KVSCOPE_CLONES
float sumStreams(const float* p, std::int64_t n) {
    constexpr int kStreams = 4;
    const std::int64_t per = n / kStreams / 64 * 64;
    float lanes[kStreams][32] = {};
    for (std::int64_t i = 0; i < per; i += 32)
        for (int st = 0; st < kStreams; ++st)
            for (int l = 0; l < 32; ++l)
                lanes[st][l] += p[st * per + i + l];
    float s = sumRegion(p + kStreams * per, n - kStreams * per);
    for (auto& row : lanes)
        for (float x : row)
            s += x;
    return s;
}

/// FMA-bound on any vector width up to 512 bits.
KVSCOPE_CLONES
float fmaLoop(std::int64_t iterations, float seed) {
    float acc[8][16];
    for (int c = 0; c < 8; ++c)
        for (int l = 0; l < 16; ++l)
            acc[c][l] = seed + float(c * 16 + l) * 1e-3f;
    const float a = 0.999999f, b = 1e-7f;
    for (std::int64_t it = 0; it < iterations; ++it)
        for (int c = 0; c < 8; ++c)
            for (int l = 0; l < 16; ++l)
                acc[c][l] = acc[c][l] * a + b;
    float s = 0;
    for (int c = 0; c < 8; ++c)
        for (int l = 0; l < 16; ++l)
            s += acc[c][l];
    return s;
}

#if KVSCOPE_HAVE_BF16_KERNEL
namespace {
KVSCOPE_BF16_TARGET inline __m512bh asBh(__m512i v) {
    __m512bh r;
    __builtin_memcpy(&r, &v, sizeof r);
    return r;
}
} // namespace

/// Latency ~6, two per cycle on Zen 4/5: 12 chains keep both pipes busy; 64 FLOPs per
/// instruction.
KVSCOPE_BF16_TARGET float bf16DotLoop(std::int64_t iterations, float seed) {
    constexpr int kChains = 12;
    __m512 acc[kChains];
    for (int c = 0; c < kChains; ++c)
        acc[c] = _mm512_set1_ps(seed + float(c) * 1e-3f);
    const __m512i a = _mm512_set1_epi32(0x3f803f80); // (1.0, 1.0) in bf16
    __m512i b = _mm512_set1_epi32(0x33d633d6);       // ~1e-7 in bf16
    for (std::int64_t it = 0; it < iterations; ++it) {
        for (int c = 0; c < kChains; ++c)
            acc[c] = _mm512_dpbf16_ps(acc[c], asBh(a), asBh(b));
        __asm__ volatile("" : "+v"(b)); // keeps the loop from being folded
    }
    __m512 s = acc[0];
    for (int c = 1; c < kChains; ++c)
        s = _mm512_add_ps(s, acc[c]);
    return _mm512_reduce_add_ps(s);
}
double bf16DotLoopFlops() {
    return 12 * 16 * 2 * 2;
}
#else
float bf16DotLoop(std::int64_t, float) {
    return 0;
}
double bf16DotLoopFlops() {
    return 0;
}
#endif

} // namespace kvscope::gpu::detail::cpu
