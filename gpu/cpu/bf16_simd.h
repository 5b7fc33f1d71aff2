// Vector helpers shared by the bf16 dot-product kernel and the AMX kernel: fp8 e4m3 -> bf16
// (exact), 2^x for x <= 0, and the __m512i -> __m512bh cast.
#pragma once

#include "gpu/cpu/bf16_kernel.h"
#include "gpu/cpu/simd.h"
#include "gpu/numerics.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace kvscope::gpu::detail::cpu {

/// fp8 e4m3 -> bf16 bits, exact (3 mantissa bits and exponents 2^-9..2^8 fit in bf16).
inline const std::uint16_t* fp8ToBf16Table() {
    static const auto table = [] {
        std::array<std::uint16_t, 256> t{};
        for (int i = 0; i < 256; ++i)
            t[std::size_t(i)] =
                std::uint16_t(num::floatToBits(num::fp8e4m3ToFloat(std::uint8_t(i))) >> 16);
        return t;
    }();
    return table.data();
}

/// Software prefetch (T0) of the K and V rows a later tile reads, a pair of rows at a time
/// from inside a phase's loop, so the requests spread over the tile's work instead of going
/// out as one burst. Off by default: on this Intel VM a synthetic stream (8 loads + 32 FMAs per
/// 512-byte token) ran 8.3-9.0 GB/s without and 9.7-10.7 GB/s with T0 prefetches 1-4 KB
/// ahead, but the kernels' own DRAM A/B (16 tokens ahead) stayed inside the loaded machine's
/// noise, and in L2 it cost a little (NOTES.md, "sixth session").
/// KVSCOPE_CPU_PREFETCH=TOKENS turns it on at that distance for A/B runs on a quiet machine.
struct Prefetch {
    const std::uint8_t *k = nullptr, *v = nullptr; // the first row to fetch (none: k null)
    std::int64_t ks = 0, vs = 0;                   // row strides (bytes)
    int kLines = 0, vLines = 0;                    // cache lines per row; vLines 0 for MLA
    int rows = 0;                                  // rows to fetch
};
inline int prefetchTokens() {
    static const int tokens = [] {
        const char* e = std::getenv("KVSCOPE_CPU_PREFETCH");
        return e ? std::max(0, std::atoi(e)) : 0;
    }();
    return tokens;
}
/// The `rows` rows from token t + prefetchTokens() on, within the segment.
inline Prefetch prefetchAhead(const SegmentBf16& sg, std::int64_t t, int rows) {
    Prefetch pf;
    const std::int64_t from = t + prefetchTokens();
    if (prefetchTokens() == 0 || from >= sg.t1)
        return pf;
    pf.k = sg.keys + from * sg.keyRowBytes;
    pf.v = sg.values + from * sg.valueRowBytes;
    pf.ks = sg.keyRowBytes;
    pf.vs = sg.valueRowBytes;
    pf.kLines = int((sg.keyRowBytes + 63) / 64);
    pf.vLines = sg.values == sg.keys ? 0 : int((sg.valueRowBytes + 63) / 64);
    pf.rows = int(std::min<std::int64_t>(rows, sg.t1 - from));
    return pf;
}
/// Prefetches rows 2p and 2p + 1 of pf (those that exist).
inline void prefetchPair(const Prefetch& pf, int p) {
    if (!pf.k)
        return;
    for (int r = 2 * p; r < std::min(2 * p + 2, pf.rows); ++r) {
        for (int i = 0; i < pf.kLines; ++i)
            __builtin_prefetch(pf.k + r * pf.ks + 64 * i, 0, 3);
        for (int i = 0; i < pf.vLines; ++i)
            __builtin_prefetch(pf.v + r * pf.vs + 64 * i, 0, 3);
    }
}

#if KVSCOPE_HAVE_BF16_KERNEL
/// 2^x for x <= 0 (as exp2NegW): degree-7 polynomial, then scalef by the integer part.
KVSCOPE_BF16_TARGET inline __m512 exp2Neg512(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-125.0f));
    const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m512 t = _mm512_mul_ps(_mm512_sub_ps(x, n), _mm512_set1_ps(0.69314718056f));
    __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

/// 2^x for x <= 8 to about 1.6e-4 relative (degree-5 Taylor polynomial of 2^f in f, the
/// fraction, then scalef): for weights that are rounded to bf16 next (2^-9 relative), so the
/// degree-7 one above buys nothing there. Three operations fewer per vector.
KVSCOPE_BF16_TARGET inline __m512 exp2Bf16Weights512(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-125.0f));
    const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_sub_ps(x, n);
    __m512 p = _mm512_set1_ps(1.3333558e-3f); // ln2^k / k!
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6181291e-3f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5504109e-2f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.24022651f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.69314718f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

KVSCOPE_BF16_TARGET inline __m512bh asBh(__m512i v) {
    __m512bh r;
    std::memcpy(&r, &v, sizeof r);
    return r;
}

/// The 128 non-negative fp8 e4m3 codes as bf16 bits, in four vectors for vpermi2w lookups.
struct Fp8Lut {
    __m512i t[4];
};
KVSCOPE_BF16_TARGET inline Fp8Lut fp8Lut() {
    Fp8Lut l;
    for (int i = 0; i < 4; ++i)
        l.t[i] = _mm512_loadu_si512(fp8ToBf16Table() + 32 * i);
    return l;
}

/// 32 fp8 e4m3 values -> bf16, exactly: the magnitude (7 bits) is looked up in the scalar table
/// with two vpermi2w (64 entries each) and a blend on bit 6; the sign bit moves to bit 15.
KVSCOPE_BF16_TARGET inline __m512i fp8x32ToBf16(const std::uint8_t* src, const Fp8Lut& lut) {
    const __m512i w =
        _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)));
    const __m512i lo = _mm512_permutex2var_epi16(lut.t[0], w, lut.t[1]);
    const __m512i hi = _mm512_permutex2var_epi16(lut.t[2], w, lut.t[3]);
    const __mmask32 upper = _mm512_test_epi16_mask(w, _mm512_set1_epi16(0x40));
    const __m512i sign = _mm512_slli_epi16(_mm512_and_si512(w, _mm512_set1_epi16(0x80)), 8);
    return _mm512_or_si512(_mm512_mask_blend_epi16(upper, lo, hi), sign);
}
#endif

} // namespace kvscope::gpu::detail::cpu
