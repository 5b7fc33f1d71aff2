// The vdpbf16ps kernel's phases for streams of many query rows (bf16_kernel.cpp includes this
// file, nothing else): rows in lanes for streams of a multiple of 16 rows (GQA g 16 and 32, MLA),
// half lanes for streams of 8, and P·V from V interleaved once per chunk. Design and figures:
// gpu/NOTES.md, "seventeenth session".
#pragma once

#include "gpu/cpu/bf16_kernel.h"
#include "gpu/cpu/bf16_simd.h"
#include "gpu/cpu/row_map.h"
#include "gpu/cpu/simd.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

namespace kvscope::gpu::detail::cpu {

constexpr std::int64_t kBf16Tile = 32; // tokens per tile: two 16-lane score vectors per row

/// A tile's K and V rows: in the cache, or staged as bf16 in scratch (tileRows).
struct TileRows {
    RowMap k, v;
};

#if KVSCOPE_HAVE_BF16_KERNEL
// Rows in lanes, for streams of a multiple of 16 rows (GQA g 16 and 32, MLA): lane l of a score
// vector is row 16b + l, so no transpose is needed and the tile's max per row is a vmaxps over
// its tokens. The scores are computed in half lanes (two key pairs of 8 rows per vector, one
// 64-bit key broadcast serving both halves of the block) and summed into rows in lanes.

/// The queries as [rows / 8][DK / 4][16] words, every 8 rows in half-lane order: lane 2r + par of
/// step st is row r's key pair 2 st + par, so one broadcast 64-bit key word (the pairs 2 st and
/// 2 st + 1 of a token) meets both, and every vdpbf16ps adds 4 products for each of 8 rows. A
/// 16-row block's two halves share each key broadcast (scoresLanes); a stream of 8 rows scores in
/// half lanes (scoresHalf). Once per segment.
template <int DK> inline void transposeQueries(const SegmentBf16& sg, ScratchBf16& sc) {
    sc.qT.resize(std::size_t(sg.rows * DK / 2));
    for (std::int64_t h = 0; h < sg.rows / 8; ++h)
        for (int st = 0; st < DK / 4; ++st)
            for (int l = 0; l < 16; ++l)
                std::memcpy(&sc.qT[std::size_t((h * DK / 4 + st) * 16 + l)],
                            sg.q + (8 * h + l / 2) * DK + 2 * (2 * st + l % 2), 4);
}

/// Lane indices that pick the even (odd) lanes of two vectors: lanes 0-7 from the first, 8-15
/// from the second. Adding the two picks sums each half-lane row's pair of partial dot products.
alignas(64) inline constexpr std::int32_t kEvenLanes[16] = {0,  2,  4,  6,  8,  10, 12, 14,
                                                            16, 18, 20, 22, 24, 26, 28, 30};
alignas(64) inline constexpr std::int32_t kOddLanes[16] = {1,  3,  5,  7,  9,  11, 13, 15,
                                                           17, 19, 21, 23, 25, 27, 29, 31};

/// A key row's 8 bytes at p (two bf16 pairs), broadcast into every lane pair.
KVSCOPE_BF16_TARGET inline __attribute__((always_inline)) __m512bh keyWord(const std::uint8_t* p) {
    std::int64_t w;
    std::memcpy(&w, p, 8);
    return asBh(_mm512_set1_epi64(w));
}

/// Token t's probabilities from its unscaled scores s[16t..], rows in lanes; 0 past the tile's n.
/// The weights are rounded to bf16 next, so the degree-3 exp2 (7.5e-5) does instead of the
/// degree-7 one the fp32 rescale factors keep.
KVSCOPE_BF16_TARGET inline __m512 probLanes(const float* s, int t, int n, __m512 scale,
                                            __m512 mNew) {
    if (t >= n)
        return _mm512_setzero_ps();
    return exp2Bf16Weights512(_mm512_fmsub_ps(_mm512_loadu_ps(s + 16 * t), scale, mNew));
}

/// Loop iterations of one score call (for its share of the prefetch): halfDots takes one 8-byte
/// key word of every token per iteration, keyDots two.
template <int DK> constexpr int kHalfDotIterations = DK / 4;
template <int DK> constexpr int kKeyDotIterations = DK / 8;

/// dot[t] = the half-lane dot products (transposeQueries) of the TB key rows at k, k + stride, ...
/// with the 8 rows qT. Two accumulators per token (even and odd steps): TB 12 keeps 24 chains.
/// Each of the kKeyDotIterations iterations prefetches a pair of `pf`'s lines. The unroll pragmas
/// keep the accumulators in registers: with the prefetch's asm statement in the loop GCC no
/// longer unrolled the token loops by itself, and spilled them (g 16 took 1.25x the time in L2).
template <int DK, int TB>
KVSCOPE_BF16_TARGET inline __attribute__((always_inline)) void
keyDots(const std::uint32_t* qT, const std::uint8_t* k, std::int64_t stride, __m512 (&dot)[TB],
        const LineBatch& pf) {
    const std::uint8_t* kt[TB];
#pragma GCC unroll 16
    for (int t = 0; t < TB; ++t)
        kt[t] = k + t * stride;
    __m512 ev[TB], od[TB];
#pragma GCC unroll 16
    for (int t = 0; t < TB; ++t)
        ev[t] = od[t] = _mm512_setzero_ps();
    for (int st = 0; st < DK / 4; st += 2) {
        const __m512bh q0 = asBh(_mm512_loadu_si512(qT + st * 16));
        const __m512bh q1 = asBh(_mm512_loadu_si512(qT + st * 16 + 16));
        pf.issueContiguous(st / 2);
#pragma GCC unroll 16
        for (int t = 0; t < TB; ++t) {
            ev[t] = _mm512_dpbf16_ps(ev[t], q0, keyWord(kt[t] + 8 * st));
            od[t] = _mm512_dpbf16_ps(od[t], q1, keyWord(kt[t] + 8 * st + 8));
        }
    }
#pragma GCC unroll 16
    for (int t = 0; t < TB; ++t)
        dot[t] = _mm512_add_ps(ev[t], od[t]);
}

/// a[t], b[t] = the half-lane dot products (transposeQueries) of the TB key rows at k, k + stride,
/// ... with the two 8-row halves qA and qB of a 16-row block: each 64-bit key broadcast feeds
/// both halves' vdpbf16ps, and the 2 TB accumulators are the chains (TB 12: 24). Each of the
/// kHalfDotIterations iterations prefetches a pair of `pf`'s lines (unrolled as in keyDots).
template <int DK, int TB>
KVSCOPE_BF16_TARGET inline __attribute__((always_inline)) void
halfDots(const std::uint32_t* qA, const std::uint32_t* qB, const std::uint8_t* k,
         std::int64_t stride, __m512 (&a)[TB], __m512 (&b)[TB], const LineBatch& pf) {
    const std::uint8_t* kt[TB];
#pragma GCC unroll 16
    for (int t = 0; t < TB; ++t) {
        kt[t] = k + t * stride;
        a[t] = b[t] = _mm512_setzero_ps();
    }
    for (int st = 0; st < DK / 4; ++st) {
        const __m512bh qa = asBh(_mm512_loadu_si512(qA + st * 16));
        const __m512bh qb = asBh(_mm512_loadu_si512(qB + st * 16));
        pf.issueContiguous(st);
#pragma GCC unroll 16
        for (int t = 0; t < TB; ++t) {
            const __m512bh kw = keyWord(kt[t] + 8 * st);
            a[t] = _mm512_dpbf16_ps(a[t], qa, kw);
            b[t] = _mm512_dpbf16_ps(b[t], qb, kw);
        }
    }
}

/// Unscaled scores of 16 rows (qT: the block's two halves, transposeQueries) against the TB key
/// rows at k, k + stride, ...: out[16t + l] = q[l] . k[t], rows in lanes. One 64-bit key
/// broadcast per two vdpbf16ps: with one 32-bit broadcast per vdpbf16ps (rows in lanes from the
/// start) the loads held the loop to 0.82 of the vdpbf16ps chain rate on L1-resident keys, and
/// sharing each broadcast between two vdpbf16ps took it to 1.2-1.3x that (NOTES.md, "twentieth
/// session"). The halves' partial sums come together in two permutes and an add per token.
template <int DK, int TB>
KVSCOPE_BF16_TARGET __attribute__((noinline)) void
scoresLanes(const std::uint32_t* qT, const std::uint8_t* k, std::int64_t stride, float* out,
            const LineBatch& pf) {
    __m512 a[TB], b[TB];
    halfDots<DK, TB>(qT, qT + DK / 4 * 16, k, stride, a, b, pf);
    const __m512i ie = _mm512_load_si512(kEvenLanes), io = _mm512_load_si512(kOddLanes);
#pragma GCC unroll 16
    for (int t = 0; t < TB; ++t)
        _mm512_storeu_ps(out + 16 * t, _mm512_add_ps(_mm512_permutex2var_ps(a[t], ie, b[t]),
                                                     _mm512_permutex2var_ps(a[t], io, b[t])));
}

/// Unscaled scores of every row over the tile into sc.s ([rows / 16][tile][16]); every call
/// prefetches its share of `next`. MLA's key tile (576 wide, 36 KiB at bf16) is also its value
/// tile and has to stay in L1 until the P·V: its score calls are a step of `next` each, so
/// nearly all of the next tile comes in during the P·V (in the calls, MLA h 16 took 1.14x the
/// time from DRAM; NOTES.md, "twentieth session").
template <int DK>
KVSCOPE_BF16_TARGET inline void scoreTileLanes(const SegmentBf16& sg, const TileRows& tr,
                                               ScratchBf16& sc, SpreadTile& next) {
    constexpr int T = int(kBf16Tile);
    LineBatch pf;
    for (std::int64_t b = 0; b < sg.rows / 16; ++b)
        for (int j = 0; j < T; j += 12) {
            if constexpr (DK > 256)
                next.step();
            else
                next.take(kHalfDotIterations<DK>, pf);
            if (j + 12 <= T)
                scoresLanes<DK, 12>(sc.qT.data() + b * DK / 2 * 16, tr.k.row(j), tr.k.stride,
                                    sc.s.data() + (b * T + j) * 16, pf);
            else
                scoresLanes<DK, 8>(sc.qT.data() + b * DK / 2 * 16, tr.k.row(j), tr.k.stride,
                                   sc.s.data() + (b * T + j) * 16, pf);
        }
}

/// The online-softmax update of every row from the first n tokens' scores, rows in lanes: as
/// softmaxRows (scaled max, alpha, bf16 probability pairs and the sum of the rounded values), the
/// pairs stored as [pair][rows] for pvBlock's broadcasts.
KVSCOPE_BF16_TARGET inline void softmaxLanes(const SegmentBf16& sg, ScratchBf16& sc, int n) {
    constexpr int T = int(kBf16Tile);
    const __m512 scale = _mm512_set1_ps(sg.scoreScale);
    const __m512 zero = _mm512_setzero_ps();
    for (std::int64_t b = 0; b < sg.rows / 16; ++b) {
        const float* s = sc.s.data() + b * T * 16;
        __m512 tileMax = _mm512_loadu_ps(s), max1 = tileMax; // two chains
        int t = 1;
        for (; t + 1 < n; t += 2) {
            tileMax = _mm512_max_ps(tileMax, _mm512_loadu_ps(s + 16 * t));
            max1 = _mm512_max_ps(max1, _mm512_loadu_ps(s + 16 * t + 16));
        }
        if (t < n)
            tileMax = _mm512_max_ps(tileMax, _mm512_loadu_ps(s + 16 * t));
        tileMax = _mm512_max_ps(tileMax, max1);
        float* mRow = sc.mRow.data() + b * 16;
        const __m512 mOld = _mm512_loadu_ps(mRow);
        const __m512 mNew = _mm512_max_ps(mOld, _mm512_mul_ps(tileMax, scale));
        _mm512_storeu_ps(mRow, mNew);
        const __m512 alpha = exp2Neg512(_mm512_sub_ps(mOld, mNew)); // ~0 on the first tile
        _mm512_storeu_ps(sc.alpha.data() + b * 16, alpha);
        __m512 sums[2] = {zero, zero}; // the rounded weights, two chains
        for (int pr = 0; pr < T / 2; ++pr) {
            const __m512i pbits = bf16LanePairs(probLanes(s, 2 * pr, n, scale, mNew),
                                                probLanes(s, 2 * pr + 1, n, scale, mNew));
            _mm512_storeu_si512(sc.p.data() + pr * sg.rows + b * 16, pbits);
            sums[pr % 2] = addBf16Pairs(sums[pr % 2], asBh(pbits));
        }
        const __m512 sum = _mm512_add_ps(sums[0], sums[1]);
        float* l = sc.lVec.data() + b * 16;
        _mm512_storeu_ps(l, _mm512_fmadd_ps(_mm512_loadu_ps(l), alpha, sum));
    }
}

// Streams of 8 rows ("half lanes"): a vector holds 8 rows x 2, the queries in half-lane order
// (transposeQueries). No transposes; a pair-add per token at the end.

/// Unscaled scores of the 8 rows against the TB (even) key rows at k, k + stride, ...: out[16u +
/// l] = q[l % 8] . k[2u + l / 8], token pairs as [8 rows | 8 rows]. Two accumulators per token
/// (even and odd steps): TB 12 keeps 24 chains.
template <int DK, int TB>
KVSCOPE_BF16_TARGET __attribute__((noinline)) void
scoresHalf(const std::uint32_t* qT, const std::uint8_t* k, std::int64_t stride, float* out,
           const LineBatch& pf) {
    static_assert(TB % 2 == 0 && DK % 8 == 0);
    __m512 dot[TB];
    keyDots<DK, TB>(qT, k, stride, dot, pf);
    const __m512i ie = _mm512_load_si512(kEvenLanes), io = _mm512_load_si512(kOddLanes);
    for (int t = 0; t < TB; t += 2)
        _mm512_storeu_ps(out + 8 * t,
                         _mm512_add_ps(_mm512_permutex2var_ps(dot[t], ie, dot[t + 1]),
                                       _mm512_permutex2var_ps(dot[t], io, dot[t + 1])));
}

/// Unscaled scores of the 8 rows over the tile into sc.s ([pair][16]); every call prefetches its
/// share of `next`.
template <int DK>
KVSCOPE_BF16_TARGET inline void scoreTileHalf(const TileRows& tr, ScratchBf16& sc,
                                              SpreadTile& next) {
    constexpr int T = int(kBf16Tile);
    LineBatch pf;
    for (int j = 0; j < T; j += 12) {
        next.take(kKeyDotIterations<DK>, pf);
        if (j + 12 <= T)
            scoresHalf<DK, 12>(sc.qT.data(), tr.k.row(j), tr.k.stride, sc.s.data() + j * 8, pf);
        else
            scoresHalf<DK, 8>(sc.qT.data(), tr.k.row(j), tr.k.stride, sc.s.data() + j * 8, pf);
    }
}

/// A token pair's probabilities from its unscaled scores s[0..16) (8 rows x 2), 0 where invalid.
KVSCOPE_BF16_TARGET inline __m512 probHalf(const float* s, __mmask16 valid, __m512 scale,
                                           __m512 mNew) {
    return _mm512_maskz_mov_ps(
        valid, exp2Bf16Weights512(_mm512_fmsub_ps(_mm512_loadu_ps(s), scale, mNew)));
}

/// The online-softmax update of the 8 rows from the first n tokens' scores (sc.s as [pair][8 rows
/// x 2]): as softmaxLanes, a vector per token pair; the pairs stored as [pair][8 rows].
KVSCOPE_BF16_TARGET inline void softmaxHalf(const SegmentBf16& sg, ScratchBf16& sc, int n) {
    constexpr int T = int(kBf16Tile);
    const __m512 scale = _mm512_set1_ps(sg.scoreScale);
    // Per 256-bit half (token pair u, then u + 1): row r's words r (token 2u) and 8 + r (2u + 1).
    alignas(64) static constexpr std::uint16_t kOrder[32] = {
        0,  8,  1,  9,  2,  10, 3,  11, 4,  12, 5,  13, 6,  14, 7,  15,
        16, 24, 17, 25, 18, 26, 19, 27, 20, 28, 21, 29, 22, 30, 23, 31};
    const __m512i interleave = _mm512_load_si512(kOrder);
    const auto valid = [n](int u) {
        return __mmask16((2 * u < n ? 0x00ffu : 0u) | (2 * u + 1 < n ? 0xff00u : 0u));
    };
    __m512 m = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    for (int u = 0; 2 * u < n; ++u)
        m = _mm512_mask_max_ps(m, valid(u), m, _mm512_loadu_ps(sc.s.data() + 16 * u));
    m = _mm512_max_ps(m, _mm512_shuffle_f32x4(m, m, 0x4e)); // both halves: the row max
    const __m512 mOld = _mm512_broadcast_f32x8(_mm256_loadu_ps(sc.mRow.data()));
    const __m512 mNew = _mm512_max_ps(mOld, _mm512_mul_ps(m, scale));
    _mm256_storeu_ps(sc.mRow.data(), _mm512_castps512_ps256(mNew));
    const __m512 alpha = exp2Neg512(_mm512_sub_ps(mOld, mNew)); // ~0 on the first tile
    _mm256_storeu_ps(sc.alpha.data(), _mm512_castps512_ps256(alpha));
    __m512 sum = _mm512_setzero_ps();
    for (int u = 0; u < T / 2; u += 2) {
        const __m512bh pb =
            _mm512_cvtne2ps_pbh(probHalf(sc.s.data() + 16 * u + 16, valid(u + 1), scale, mNew),
                                probHalf(sc.s.data() + 16 * u, valid(u), scale, mNew));
        __m512i pbits;
        std::memcpy(&pbits, &pb, sizeof pbits);
        pbits = _mm512_permutexvar_epi16(interleave, pbits);
        _mm512_storeu_si512(sc.p.data() + 8 * u, pbits);
        sum = addBf16Pairs(sum, asBh(pbits));
    }
    sum = _mm512_add_ps(sum, _mm512_shuffle_f32x4(sum, sum, 0x4e));
    const __m256 l = _mm256_loadu_ps(sc.lVec.data());
    _mm256_storeu_ps(sc.lVec.data(), _mm256_fmadd_ps(l, _mm512_castps512_ps256(alpha),
                                                     _mm512_castps512_ps256(sum)));
}

/// Value positions interleaved per chunk for the rows-in-lanes P·V: one register block of 6
/// vectors.
constexpr int kLanesChunk = 96;

/// Columns [c0, c0 + w) of the tile's V rows 2pr and 2pr + 1 interleaved into bf16 pairs, sc.vT
/// [pair][w] (w a multiple of 32): pvBlock's unpacks, once per tile instead of once per pass.
/// Position 32c + 16h + 4L + j holds column 32c + 8L + 4h + j (finishRows puts the columns back
/// in order).
KVSCOPE_BF16_TARGET inline void interleaveValues(ScratchBf16& sc, const std::uint8_t* v0,
                                                 std::int64_t stride, int c0, int w, int pairs) {
    std::uint32_t* d = sc.vT.data();
    v0 += 2 * c0;
    for (int pr = 0; pr < pairs; ++pr, v0 += 2 * stride, d += w)
        for (int c = 0; c < w / 32; ++c) {
            const __m512i x = _mm512_loadu_si512(v0 + c * 64);
            const __m512i y = _mm512_loadu_si512(v0 + stride + c * 64);
            _mm512_storeu_si512(d + 32 * c, _mm512_unpacklo_epi16(x, y));
            _mm512_storeu_si512(d + 32 * c + 16, _mm512_unpackhi_epi16(x, y));
        }
}

/// O += P V for R rows and 16C value positions from the interleaved V (sc.vT): per token pair C
/// value vectors loaded and one probability pair per row broadcast, R x C vdpbf16ps. A load per
/// vdpbf16ps (a value pair broadcast into each, rows in lanes) held them to about 0.8 of the
/// chain ceiling's rate; one per two reaches it (NOTES.md, "seventeenth session"). The unroll
/// pragmas keep the accumulators in registers (GCC peels at most 16 iterations by itself).
template <int R, int C>
KVSCOPE_BF16_TARGET __attribute__((noinline)) void
pvRegs(float* acc, std::int64_t accStride, const float* alpha, const std::uint32_t* p,
       std::int64_t pairStep, const std::uint32_t* vT, std::int64_t vStep, int pairs,
       const LineBatch& pf) {
    __m512 o[R][C];
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
        const __m512 al = _mm512_set1_ps(alpha[i]);
#pragma GCC unroll 8
        for (int j = 0; j < C; ++j)
            o[i][j] = _mm512_mul_ps(_mm512_loadu_ps(acc + i * accStride + 16 * j), al);
    }
    for (int pr = 0; pr < pairs; ++pr, p += pairStep, vT += vStep) {
        __m512bh v[C];
#pragma GCC unroll 8
        for (int j = 0; j < C; ++j)
            v[j] = asBh(_mm512_loadu_si512(vT + 16 * j));
        pf.issueContiguous(pr);
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) {
            const __m512bh b = asBh(_mm512_set1_epi32(int(p[i])));
#pragma GCC unroll 8
            for (int j = 0; j < C; ++j)
                o[i][j] = _mm512_dpbf16_ps(o[i][j], v[j], b);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
        for (int j = 0; j < C; ++j)
            _mm512_storeu_ps(acc + i * accStride + 16 * j, o[i][j]);
}

/// O += P V for every row of a rows-in-lanes or half-lane stream (weights as [pair][rows]): per
/// chunk of kLanesChunk value positions, the chunk's V pairs interleaved once (small enough to stay
/// in L1 beside MLA's 576-wide K tile), then register blocks of 4 rows x 96 positions (a
/// 64-position rest: 4 x 64, a 32-position one: 8 x 32), 16-24 chains each; every block prefetches
/// its share of `next`, a line pair per token pair. V already in token pairs (sg.valuesPaired) is
/// read in place, in column order.
template <int DV>
KVSCOPE_BF16_TARGET inline void pvTileInterleaved(const SegmentBf16& sg, ScratchBf16& sc,
                                                  const RowMap& v, int pairs, SpreadTile& next) {
    static_assert(DV % 32 == 0);
    sc.vT.resize(std::size_t(kBf16Tile / 2 * kLanesChunk));
    LineBatch pf;
    for (int c0 = 0; c0 < DV; c0 += kLanesChunk) {
        const int w = std::min(kLanesChunk, DV - c0);
        const std::uint32_t* vT = sc.vT.data();
        std::int64_t vStep = w;
        if (sg.valuesPaired) {
            vT = reinterpret_cast<const std::uint32_t*>(v.base) + c0;
            vStep = DV;
        } else {
            interleaveValues(sc, v.base, v.stride, c0, w, pairs);
        }
        for (std::int64_t r = 0; r < sg.rows;) {
            float* acc = sc.acc.data() + r * DV + c0;
            const float* alpha = sc.alpha.data() + r;
            const std::uint32_t* p = sc.p.data() + r;
            next.take(pairs, pf);
            if (w == 96) {
                pvRegs<4, 6>(acc, DV, alpha, p, sg.rows, vT, vStep, pairs, pf);
                r += 4;
            } else if (w == 64) {
                pvRegs<4, 4>(acc, DV, alpha, p, sg.rows, vT, vStep, pairs, pf);
                r += 4;
            } else {
                pvRegs<8, 2>(acc, DV, alpha, p, sg.rows, vT, vStep, pairs, pf);
                r += 8;
            }
        }
    }
}

#endif // KVSCOPE_HAVE_BF16_KERNEL

} // namespace kvscope::gpu::detail::cpu
