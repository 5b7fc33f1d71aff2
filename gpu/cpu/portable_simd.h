// The portable kernel's W-wide vector helpers (loads, splats, reductions, exp2, the
// transpose-sum tree, the fp16 decode), included by portable_body.h inside its per-width
// namespace, after KVSCOPE_PK_INLINE (always_inline plus the width's target) is defined: like
// the body, one copy per width, each built for that width's instruction set. No include guard.
#if !defined(KVSCOPE_PK_INLINE)
#error "include portable_simd.h only from portable_body.h"
#endif

/// W floats, one vector register on the target the kernel is compiled for (16: AVX-512, 8:
/// AVX2, 4: SSE2 or any other CPU). One width per target, chosen at run time: a 16-float vector
/// compiled for AVX2 went through the stack and ran 5-8x slower than on AVX-512.
template <int W> struct Lanes {
    typedef float F __attribute__((vector_size(W * 4)));
    typedef std::int32_t I __attribute__((vector_size(W * 4)));
};

template <int W> KVSCOPE_PK_INLINE typename Lanes<W>::F loadW(const float* p) {
    typename Lanes<W>::F v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
template <int W> KVSCOPE_PK_INLINE void storeW(float* p, typename Lanes<W>::F v) {
    std::memcpy(p, &v, sizeof v);
}
/// x in every lane: one broadcast load. (F{} + x stays an add and a register broadcast on the
/// shuffle port the FMAs share, since 0 + x is not x for x = -0; a lane-by-lane fill becomes
/// 16 masked broadcasts.)
template <int W> KVSCOPE_PK_INLINE typename Lanes<W>::F splatW(float x) {
    return x - typename Lanes<W>::F{}; // x - +0 is x for every x: folded to the broadcast
}
/// The sum (Max false) or maximum of the W lanes: log2 W levels of shuffle and op on GCC (not a
/// chain of W dependent scalar ops per row and tile), a scalar loop elsewhere.
template <int W, bool Max> KVSCOPE_PK_INLINE float reduceW(typename Lanes<W>::F v) {
#if defined(__GNUC__) && !defined(__clang__)
    using I = typename Lanes<W>::I;
    for (int h = W / 2; h >= 1; h /= 2) {
        I swap = {};
        for (int l = 0; l < W; ++l)
            swap[l] = l ^ h;
        const typename Lanes<W>::F u = __builtin_shuffle(v, swap);
        if constexpr (Max)
            v = v > u ? v : u;
        else
            v = v + u;
    }
    return v[0];
#else
    float x = v[0];
    for (int i = 1; i < W; ++i)
        x = Max ? std::max(x, float(v[i])) : x + v[i];
    return x;
#endif
}
template <int W> KVSCOPE_PK_INLINE float hsumW(typename Lanes<W>::F v) {
    return reduceW<W, false>(v);
}
template <int W> KVSCOPE_PK_INLINE float hmaxW(typename Lanes<W>::F v) {
    return reduceW<W, true>(v);
}

/// Whether any lane of v is greater than x: a compare and a mask test, not the log2 W levels of
/// a reduction.
template <int W> KVSCOPE_PK_INLINE bool anyGreaterW(typename Lanes<W>::F v, float x) {
#if defined(__GNUC__) && defined(__x86_64__)
    if constexpr (W == 16)
        return _mm512_cmp_ps_mask(__m512(v), _mm512_set1_ps(x), _CMP_GT_OQ) != 0;
    else if constexpr (W == 8)
        return _mm256_movemask_ps(_mm256_cmp_ps(__m256(v), _mm256_set1_ps(x), _CMP_GT_OQ)) != 0;
    else
        return _mm_movemask_ps(_mm_cmpgt_ps(__m128(v), _mm_set1_ps(x))) != 0;
#else
    for (int i = 0; i < W; ++i)
        if (v[i] > x)
            return true;
    return false;
#endif
}

/// 2^x for x <= kRescaleLog2 (8) on W lanes: x = n + f, n truncated toward zero so f in (-1, 1),
/// 2^f by a degree-7 Taylor polynomial of e^(f ln 2) (relative error < 2e-6), 2^n added to the
/// exponent bits. Inputs below -125 give a value below 2^-125, which the softmax sums treat as
/// the zero it should be.
template <int W> KVSCOPE_PK_INLINE typename Lanes<W>::F exp2NegW(typename Lanes<W>::F x) {
    using F = typename Lanes<W>::F;
    using I = typename Lanes<W>::I;
    const F lo = F{} - 125.0f;
    x = x < lo ? lo : x;
    const I n = __builtin_convertvector(x, I); // truncation: n >= x
    const F t = (x - __builtin_convertvector(n, F)) * 0.69314718056f;
    F p = F{} + 1.0f / 5040.0f;
    p = p * t + 1.0f / 720.0f;
    p = p * t + 1.0f / 120.0f;
    p = p * t + 1.0f / 24.0f;
    p = p * t + 1.0f / 6.0f;
    p = p * t + 0.5f;
    p = p * t + 1.0f;
    p = p * t + 1.0f;
    return (F)((I)p + (n << 23));
}

/// One level of the transpose-sum tree on W / h vectors (h = 1, 2, 4, ...): output i sums
/// inputs 2i and 2i+1 pairwise, block b of 2h lanes holding the sums of input 2i's two halves of
/// the block, then input 2i+1's. h is a template parameter so the masks are constants.
#if defined(__GNUC__) && !defined(__clang__)
template <int W, int H> KVSCOPE_PK_INLINE void transposeLevel(typename Lanes<W>::F* v) {
    using I = typename Lanes<W>::I;
    I lo = {}, hi = {};
    for (int l = 0; l < W; ++l) {
        const int base = l / (2 * H) * 2 * H, j = l % (2 * H);
        lo[l] = j < H ? base + j : W + base + j - H;
        hi[l] = j < H ? base + H + j : W + base + j;
    }
    for (int i = 0; i < W / (2 * H); ++i)
        v[i] = __builtin_shuffle(v[2 * i], v[2 * i + 1], lo) +
               __builtin_shuffle(v[2 * i], v[2 * i + 1], hi);
    if constexpr (2 * H < W)
        transposeLevel<W, 2 * H>(v);
}
#endif

/// Lane i of the result is the sum of the W lanes of v[i] (v is overwritten): log2 W levels of
/// shuffles and adds instead of one horizontal sum per vector.
template <int W> KVSCOPE_PK_INLINE typename Lanes<W>::F transposeSumW(typename Lanes<W>::F* v) {
#if defined(__GNUC__) && !defined(__clang__)
    transposeLevel<W, 1>(v);
    return v[0];
#else // no __builtin_shuffle: plain sums
    typename Lanes<W>::F r;
    for (int i = 0; i < W; ++i)
        r[i] = hsumW<W>(v[i]);
    return r;
#endif
}

/// fp16 -> fp32 of W values with vcvtph2ps (exact for every fp16 value, subnormals included);
/// only instantiated for the AVX-512 and AVX2 (+ F16C) widths.
#if defined(__GNUC__) && defined(__x86_64__)
template <int W> KVSCOPE_PK_INLINE typename Lanes<W>::F fp16ToFloatW(const std::uint16_t* p) {
    typename Lanes<W>::F v;
    if constexpr (W == 16) {
        const __m512 r = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
        std::memcpy(&v, &r, sizeof v);
    } else {
        static_assert(W == 8);
        const __m256 r = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        std::memcpy(&v, &r, sizeof v);
    }
    return v;
}
#endif
