// The portable kernel's W-wide vector helpers (loads, splats, reductions, exp2, the
// transpose-sum tree, the fp16 and fp8 decodes), included by portable_body.h inside its per-width
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

/// bf16 -> fp32 of W values at p: one zero-extending load (vpmovzxwd) and a shift. GCC 12 built
/// __builtin_convertvector of 8 uint16 for AVX2 as two 128-bit vpmovzxwd, a byte shift and an
/// insert, and this kernel's P V on bf16 V spent most of its time on them.
#if defined(__GNUC__) && defined(__x86_64__)
template <int W> KVSCOPE_PK_INLINE typename Lanes<W>::F bf16ToFloatW(const std::uint8_t* p) {
    typename Lanes<W>::F v;
    if constexpr (W == 16) {
        const __m512i r = _mm512_slli_epi32(
            _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16);
        std::memcpy(&v, &r, sizeof v);
    } else {
        static_assert(W == 8);
        const __m256i r = _mm256_slli_epi32(
            _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16);
        std::memcpy(&v, &r, sizeof v);
    }
    return v;
}
#endif

/// fp8 e4m3 -> fp32 of W values at p, exactly as num::fp8e4m3ToFloat (every one of the 256 codes,
/// 0x7f / 0xff included, which the reference reads as +-480). With F16C (the AVX-512 and AVX2
/// widths): the code's magnitude shifted to bits 7..13 is an fp16 whose exponent is the code's
/// less 8 (bias 15 against 7), subnormals included, so vcvtph2ps and a multiply by 2^8 give the
/// value; the sign-extended byte carries the sign to bit 15 and bit 14 is cleared. Three integer
/// ops per 8 or 16 values, no table: a scalar decode per element left the kernel at a few % of
/// the read ceiling. Elsewhere the reference's arithmetic on W lanes.
template <int W> KVSCOPE_PK_INLINE typename Lanes<W>::F fp8ToFloatW(const std::uint8_t* p) {
    typename Lanes<W>::F v;
#if defined(__GNUC__) && defined(__x86_64__)
    if constexpr (W == 16 || W == 8) {
        const __m128i c = W == 16 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(p))
                                  : _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
        if constexpr (W == 16) {
            const __m256i h = _mm256_and_si256(_mm256_slli_epi16(_mm256_cvtepi8_epi16(c), 7),
                                               _mm256_set1_epi16(std::int16_t(0xbf80)));
            const __m512 r = _mm512_mul_ps(_mm512_cvtph_ps(h), _mm512_set1_ps(256.0f));
            std::memcpy(&v, &r, sizeof v);
        } else {
            const __m128i h = _mm_and_si128(_mm_slli_epi16(_mm_cvtepi8_epi16(c), 7),
                                            _mm_set1_epi16(std::int16_t(0xbf80)));
            const __m256 r = _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.0f));
            std::memcpy(&v, &r, sizeof v);
        }
        return v;
    }
#endif
    using I = typename Lanes<W>::I;
    typedef std::uint8_t B __attribute__((vector_size(W)));
    B b;
    std::memcpy(&b, p, sizeof b);
    const I x = __builtin_convertvector(b, I);
    const I em = x & 0x7f;
    const I normal = (em << 20) + ((127 - 7) << 23);
    const typename Lanes<W>::F sub =
        __builtin_convertvector(em & 7, typename Lanes<W>::F) * 0.001953125f; // 2^-9
    I subBits;
    std::memcpy(&subBits, &sub, sizeof subBits);
    const I bits = (em >= 8 ? normal : subBits) | ((x & 0x80) << 24);
    std::memcpy(&v, &bits, sizeof v);
    return v;
}
