// The bf16 dot-product kernel (see bf16_kernel.h). Every product of two bf16 values is exact
// in fp32 and accumulates in fp32, so Q·K is as exact as the fp32 path; the probabilities are
// rounded to bf16 for P·V (as the CUDA kernels do) and the softmax sums use the rounded values,
// so the output stays a convex combination of the values.
// Per 32-token tile: K is read once for all query rows of the group, the 16 partial dot
// products of one row are reduced by a transpose tree (no horizontal sums), there is one
// max/rescale per row and tile, and V rows are interleaved in token pairs in registers so that
// vdpbf16ps sums two tokens per lane. Output columns come out permuted by the interleave (lane
// 4L + j of the low/high half holds column 8L + j / 8L + 4 + j of each 32-column chunk) and are
// put back in order at the end of the segment. Streams of a multiple of 16 rows (GQA g 16 and 32,
// MLA) keep the rows in lanes instead, no transposes: each 16-row block scores as two 8-row
// halves that share every 64-bit key broadcast; streams of 8 rows in half lanes (8 rows x 2 key
// pairs per vector, a 64-bit key broadcast).
#include "gpu/cpu/bf16_kernel.h"

#include "gpu/cpu/bf16_lanes.h"
#include "gpu/cpu/bf16_simd.h"
#include "gpu/cpu/row_map.h"
#include "gpu/cpu/simd.h"
#include "gpu/cpu/switches.h"
#include "gpu/numerics.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

namespace kvscope::gpu::detail::cpu {

/// Streams of 8 rows score and softmax in half lanes (scoresHalf, softmaxHalf) unless
/// KVSCOPE_CPU_HALF=0 (A/B): against the transposed scores, paired on the AMD host (NOTES.md,
/// "seventeenth session"): bf16 g 8 0.87 in L2, 0.90 from DRAM; fp8 g 8 0.92; MLA h 8 0.94.
inline bool halfLanesEnabled() {
    static const bool on = cpuSwitchOn("KVSCOPE_CPU_HALF");
    return on;
}

#if KVSCOPE_HAVE_BF16_KERNEL
namespace {

/// Sums of 16 vectors: lane i of the result is the sum of the 16 lanes of v[i].
KVSCOPE_BF16_TARGET inline __attribute__((always_inline)) __m512 transposeSum16(__m512 v[16]) {
    __m512 a[8], b[4], c[2];
    for (int i = 0; i < 8; ++i) // per 128-bit lane: v2i parts at 0 and 2, v2i+1 parts at 1 and 3
        a[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]),
                             _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
    for (int i = 0; i < 4; ++i) { // per 128-bit lane: v4i .. v4i+3 (add as floats)
        const __m512d x = _mm512_castps_pd(a[2 * i]), y = _mm512_castps_pd(a[2 * i + 1]);
        b[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)),
                             _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
    }
    for (int i = 0; i < 2; ++i)
        c[i] = _mm512_add_ps(_mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0x88),
                             _mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0xdd));
    return _mm512_add_ps(_mm512_shuffle_f32x4(c[0], c[1], 0x88),
                         _mm512_shuffle_f32x4(c[0], c[1], 0xdd));
}

/// O[r..r+RB) = alpha * O + P V over `pairs` token pairs of the tile. V rows 2p and 2p+1 are
/// interleaved in registers (vpunpckl/hwd) so vdpbf16ps adds two tokens per lane; each pass
/// keeps RB rows x CB output vectors in registers and shares every V load and shuffle among
/// the RB rows. (Interleaving through a scratch tile instead cost ~1.6x at g = 1..2: the
/// stores and reloads, and 4-deep accumulator chains.)
/// Every token pair of every pass is a step of `next`, the next tile's prefetch. One pointer is
/// bumped per pair: over the whole tile when its rows are contiguous, within each group of the
/// RowMap when they are gathered (RowMap::row once per group). Through RowMap::row for every
/// pair (a shift, a mask and two multiplies) GCC ran out of general registers in the 4 x 4 pass
/// and kept pointers in xmm registers; K / V in L2, one thread: g 2 0.97, g 8 0.91, g 16 0.92
/// of the time (and again when gathered tiles brought RowMap::row back, NOTES.md "twenty-sixth
/// session").
/// Lanes: the probabilities are [pair][rows] (softmaxLanes, softmaxHalf; pairStep = rows), else
/// [row][pair] (pairStep 1).
template <int RB, int DV, bool Lanes, bool Gathered>
KVSCOPE_BF16_TARGET inline void pvBlock(ScratchBf16& sc, std::int64_t r, std::int64_t pairStep,
                                        const RowMap& v, int pairs, SpreadTile& next) {
    const std::int64_t stride = v.stride; // read once, not through v in the loop
    constexpr int NVC = DV / 16;
    constexpr int CB = 16 / RB < NVC ? 16 / RB : NVC; // output vectors per pass (even)
    constexpr std::int64_t rowStep = Lanes ? 1 : kBf16Tile / 2;
    float* acc = sc.acc.data();
    for (int cb = 0; cb < NVC; cb += CB) {
        __m512 o[RB][CB];
        for (int rb = 0; rb < RB; ++rb) {
            const __m512 al = _mm512_set1_ps(sc.alpha[std::size_t(r + rb)]);
            for (int j = 0; j < CB; ++j)
                o[rb][j] = _mm512_mul_ps(_mm512_loadu_ps(acc + (r + rb) * DV + (cb + j) * 16), al);
        }
        const std::uint32_t* p = sc.p.data() + r * rowStep;
        const std::uint8_t* a = v.base + cb * 32;
        for (int pr = 0; pr < pairs; ++pr, p += pairStep, a += 2 * stride) {
            if constexpr (Gathered)
                if (pr > 0 && (2 * pr & (v.group() - 1)) == 0) // the next sub-stream's rows
                    a = v.row(2 * pr) + cb * 32;
            const std::uint8_t* b = a + stride; // row 2pr + 1 (a pair never spans two groups)
            next.step<Lanes>(); // rows-in-lanes tiles are contiguous, and so their next ones
            __m512i bc[RB];
            for (int rb = 0; rb < RB; ++rb)
                bc[rb] = _mm512_set1_epi32(int(p[rb * rowStep]));
            for (int c = 0; c < CB / 2; ++c) {
                const __m512i x = _mm512_loadu_si512(a + c * 64);
                const __m512i y = _mm512_loadu_si512(b + c * 64);
                const __m512i lo = _mm512_unpacklo_epi16(x, y), hi = _mm512_unpackhi_epi16(x, y);
                for (int rb = 0; rb < RB; ++rb) {
                    o[rb][2 * c] = _mm512_dpbf16_ps(o[rb][2 * c], asBh(bc[rb]), asBh(lo));
                    o[rb][2 * c + 1] = _mm512_dpbf16_ps(o[rb][2 * c + 1], asBh(bc[rb]), asBh(hi));
                }
            }
        }
        for (int rb = 0; rb < RB; ++rb)
            for (int j = 0; j < CB; ++j)
                _mm512_storeu_ps(acc + (r + rb) * DV + (cb + j) * 16, o[rb][j]);
    }
}

/// O += P V for all R rows of the tile, in passes of 4, 2 and 1 rows (8 first for values over 256
/// wide, MLA: half the unpacks per vdpbf16ps, MLA h 16 0.95-0.97, h 32 0.93 of the time from
/// DRAM; g 8 not faster; NOTES.md, "twentieth session").
template <int DV, bool Lanes, bool Gathered>
KVSCOPE_BF16_TARGET inline void pvRows(ScratchBf16& sc, std::int64_t R, std::int64_t pairStep,
                                       const RowMap& v, int pairs, SpreadTile& next) {
    std::int64_t r = 0;
    if constexpr (Lanes && DV > 256)
        for (; r + 8 <= R; r += 8)
            pvBlock<8, DV, Lanes, Gathered>(sc, r, pairStep, v, pairs, next);
    for (; r + 4 <= R; r += 4)
        pvBlock<4, DV, Lanes, Gathered>(sc, r, pairStep, v, pairs, next);
    for (; r + 2 <= R; r += 2)
        pvBlock<2, DV, Lanes, Gathered>(sc, r, pairStep, v, pairs, next);
    for (; r < R; ++r)
        pvBlock<1, DV, Lanes, Gathered>(sc, r, pairStep, v, pairs, next);
}

/// pvRows in a function of its own, for MLA's 512-wide V: inlined into attendBf16Impl, its 8-row
/// passes spilled V rows through the stack (h 16 1.16x the time in L2; out of line 1.00x of the
/// kernel before gathered tiles), while the GQA row kernels ran 1.05-1.12x slower out of line
/// (NOTES.md, "twenty-sixth session").
template <int DV, bool Lanes, bool Gathered>
KVSCOPE_BF16_TARGET __attribute__((noinline)) void
pvRowsApart(ScratchBf16& sc, std::int64_t R, std::int64_t pairStep, const RowMap& v, int pairs,
            SpreadTile& next) {
    pvRows<DV, Lanes, Gathered>(sc, R, pairStep, v, pairs, next);
}

/// Every lane = the maximum of the 16 lanes.
KVSCOPE_BF16_TARGET inline __m512 broadcastMax(__m512 x) {
    x = _mm512_max_ps(x, _mm512_shuffle_f32x4(x, x, 0x4e));
    x = _mm512_max_ps(x, _mm512_shuffle_f32x4(x, x, 0xb1));
    x = _mm512_max_ps(x, _mm512_permute_ps(x, 0x4e));
    return _mm512_max_ps(x, _mm512_permute_ps(x, 0xb1));
}

// The two score routines stay out of line: inlined into the row loop, GCC interleaved and
// spilled their 16 accumulators and g 1..16 ran 1.1-1.8x slower (measured, NOTES.md).

/// q . k for 16 key rows, 8 at k, k + stride, ... and 8 at k8, k8 + stride, ...: lane i is
/// token i (unscaled).
template <int DK>
KVSCOPE_BF16_TARGET __attribute__((noinline)) __m512
scores16(const std::uint16_t* qr, const std::uint8_t* k, const std::uint8_t* k8,
         std::int64_t stride) {
    auto rowAt = [&](int i) { return (i < 8 ? k : k8 - 8 * stride) + i * stride; };
    constexpr int NKC = DK / 32;
    __m512 part[16];
    if constexpr (NKC <= 8) {
        __m512i q[NKC];
        for (int c = 0; c < NKC; ++c)
            q[c] = _mm512_loadu_si512(qr + c * 32);
        for (int i = 0; i < 16; ++i) {
            __m512 acc = _mm512_setzero_ps();
            for (int c = 0; c < NKC; ++c)
                acc =
                    _mm512_dpbf16_ps(acc, asBh(q[c]), asBh(_mm512_loadu_si512(rowAt(i) + c * 64)));
            part[i] = acc;
        }
    } else {
        for (int i = 0; i < 16; ++i)
            part[i] = _mm512_setzero_ps();
        for (int c = 0; c < NKC; ++c) {
            const __m512i q = _mm512_loadu_si512(qr + c * 32);
            for (int i = 0; i < 16; ++i)
                part[i] =
                    _mm512_dpbf16_ps(part[i], asBh(q), asBh(_mm512_loadu_si512(rowAt(i) + c * 64)));
        }
    }
    return transposeSum16(part);
}

/// Two query rows against 8 key rows, unscaled: lanes 0-7 are row a's tokens, lanes 8-15 row
/// b's. Every K load serves both rows (half the loads of two scores16 calls).
template <int DK>
KVSCOPE_BF16_TARGET __attribute__((noinline)) __m512
scores8x2(const std::uint16_t* qa, const std::uint16_t* qb, const std::uint8_t* k,
          std::int64_t stride) {
    constexpr int NKC = DK / 32;
    __m512 part[16];
    for (int i = 0; i < 16; ++i)
        part[i] = _mm512_setzero_ps();
    if constexpr (NKC <= 4) { // both rows' query chunks stay in registers
        __m512i q0[NKC], q1[NKC];
        for (int c = 0; c < NKC; ++c) {
            q0[c] = _mm512_loadu_si512(qa + c * 32);
            q1[c] = _mm512_loadu_si512(qb + c * 32);
        }
        for (int i = 0; i < 8; ++i)
            for (int c = 0; c < NKC; ++c) {
                const __m512i kc = _mm512_loadu_si512(k + i * stride + c * 64);
                part[i] = _mm512_dpbf16_ps(part[i], asBh(q0[c]), asBh(kc));
                part[8 + i] = _mm512_dpbf16_ps(part[8 + i], asBh(q1[c]), asBh(kc));
            }
    } else {
        for (int c = 0; c < NKC; ++c) {
            const __m512i q0 = _mm512_loadu_si512(qa + c * 32);
            const __m512i q1 = _mm512_loadu_si512(qb + c * 32);
            for (int i = 0; i < 8; ++i) {
                const __m512i kc = _mm512_loadu_si512(k + i * stride + c * 64);
                part[i] = _mm512_dpbf16_ps(part[i], asBh(q0), asBh(kc));
                part[8 + i] = _mm512_dpbf16_ps(part[8 + i], asBh(q1), asBh(kc));
            }
        }
    }
    return transposeSum16(part);
}

/// Online-softmax update of SR consecutive rows from their tile scores (sc.s): the running
/// reference max (moved lazily: only when the tile passes it by more than kRescaleLog2, so most
/// tiles need neither the max's reduction nor alpha's exp2), the rescale alpha of the old
/// accumulators, bf16 probability pairs, and the sum of exactly those rounded probabilities.
/// Several rows per call so their exp chains overlap.
template <int SR>
KVSCOPE_BF16_TARGET inline void softmaxRows(ScratchBf16& sc, std::int64_t r0, __mmask16 valid0,
                                            __mmask16 valid1) {
    constexpr int T = int(kBf16Tile);
    for (int i = 0; i < SR; ++i) {
        const std::int64_t r = r0 + i;
        const __m512 s0 = _mm512_loadu_ps(sc.s.data() + r * T);
        const __m512 s1 = _mm512_loadu_ps(sc.s.data() + r * T + 16);
        float* mRow = sc.mRow.data() + r * 16; // the reference max in every lane
        const __m512 mOld = _mm512_loadu_ps(mRow);
        const __m512 top = _mm512_max_ps(s0, s1);
        __m512 mNew = mOld;
        float* l = sc.lVec.data() + r * 16;
        __m512 sum = _mm512_loadu_ps(l);
        float alpha = 1.0f;
        if (_mm512_cmp_ps_mask(top, _mm512_add_ps(mOld, _mm512_set1_ps(kRescaleLog2)),
                               _CMP_GT_OQ)) {
            mNew = _mm512_max_ps(mOld, broadcastMax(top));
            _mm512_storeu_ps(mRow, mNew);
            const __m512 a = exp2Neg512(_mm512_sub_ps(mOld, mNew)); // ~0 on the first tile
            alpha = _mm512_cvtss_f32(a);
            sum = _mm512_mul_ps(sum, a);
        }
        sc.alpha[std::size_t(r)] = alpha;
        const __m512 p0 = _mm512_maskz_mov_ps(valid0, exp2Bf16Weights512(_mm512_sub_ps(s0, mNew)));
        const __m512 p1 = _mm512_maskz_mov_ps(valid1, exp2Bf16Weights512(_mm512_sub_ps(s1, mNew)));
        // bf16 pairs (token 2k low, 2k+1 high) and the same rounded values for the sum.
        const __m512bh pb = _mm512_cvtne2ps_pbh(p1, p0);
        __m512i pbits;
        std::memcpy(&pbits, &pb, sizeof pbits);
        _mm512_storeu_si512(sc.p.data() + r * T / 2, pbits);
        _mm512_storeu_ps(l, addBf16Pairs(sum, pb));
    }
}

/// Scaled scores with -inf past the end of the tile.
KVSCOPE_BF16_TARGET inline __m512 keepScaled(__m512 scale, __mmask16 valid, __m512 raw) {
    return _mm512_mask_mov_ps(_mm512_set1_ps(-std::numeric_limits<float>::infinity()), valid,
                              _mm512_mul_ps(raw, scale));
}

/// A tile's K and V rows as bf16: straight from the cache when possible (a full bf16 tile),
/// else decoded or zero-padded into scratch (never reading past the segment).
template <int DK, int DV>
KVSCOPE_BF16_TARGET inline TileRows tileRows(const SegmentBf16& sg, TileRows tr, int n,
                                             Fp8Decoder dec, ScratchBf16& sc) {
    constexpr int T = int(kBf16Tile);
    const bool fp8 = sg.dtype != KvDtype::Bf16;
    if (!fp8 && n == T)
        return tr;
    sc.kTile.resize(std::size_t(T * DK));
    stageRows(tr.k, n, T, DK, fp8, dec, sc.kTile.data());
    tr.k = RowMap::contiguous(reinterpret_cast<const std::uint8_t*>(sc.kTile.data()), DK * 2,
                              kGatherShift);
    if (sg.values == sg.keys) {
        tr.v = tr.k;
    } else {
        sc.vTile.resize(std::size_t(T * DV));
        stageRows(tr.v, n, T, DV, fp8, dec, sc.vTile.data());
        tr.v = RowMap::contiguous(reinterpret_cast<const std::uint8_t*>(sc.vTile.data()), DV * 2,
                                  kGatherShift);
    }
    return tr;
}

/// Scaled scores of every row of the stream over the tile into sc.s, two rows per K load. Every
/// score call is a step of `next`, the next tile's prefetch.
template <int DK>
KVSCOPE_BF16_TARGET inline void scoreTile(const SegmentBf16& sg, const TileRows& tr,
                                          __mmask16 valid0, __mmask16 valid1, ScratchBf16& sc,
                                          SpreadTile& next) {
    constexpr int T = int(kBf16Tile);
    const std::int64_t R = sg.rows;
    const __m512 scale = _mm512_set1_ps(sg.scoreScale);
    float* s = sc.s.data();
    std::int64_t r = 0;
    for (; r + 2 <= R; r += 2) {
        const std::uint16_t* qa = sg.q + r * DK;
        __m512 h[4]; // tokens 8j..8j+7: row r in lanes 0-7, row r+1 in lanes 8-15
        for (int j = 0; j < 4; ++j) {
            h[j] = scores8x2<DK>(qa, qa + DK, tr.k.row(8 * j), tr.k.stride);
            next.step();
        }
        _mm512_storeu_ps(s + r * T,
                         keepScaled(scale, valid0, _mm512_shuffle_f32x4(h[0], h[1], 0x44)));
        _mm512_storeu_ps(s + r * T + 16,
                         keepScaled(scale, valid1, _mm512_shuffle_f32x4(h[2], h[3], 0x44)));
        _mm512_storeu_ps(s + r * T + T,
                         keepScaled(scale, valid0, _mm512_shuffle_f32x4(h[0], h[1], 0xee)));
        _mm512_storeu_ps(s + r * T + T + 16,
                         keepScaled(scale, valid1, _mm512_shuffle_f32x4(h[2], h[3], 0xee)));
    }
    if (r < R) {
        const std::uint16_t* qr = sg.q + r * DK;
        _mm512_storeu_ps(
            s + r * T,
            keepScaled(scale, valid0, scores16<DK>(qr, tr.k.row(0), tr.k.row(8), tr.k.stride)));
        _mm512_storeu_ps(s + r * T + 16,
                         valid1
                             ? keepScaled(scale, valid1,
                                          scores16<DK>(qr, tr.k.row(16), tr.k.row(24), tr.k.stride))
                             : _mm512_set1_ps(-std::numeric_limits<float>::infinity()));
        next.step();
        next.step();
    }
}

/// Normalise and undo the interleave's column order (V read in token pairs left the columns in
/// order). Lanes: one running max and sum per row, else 16 partial sums and the max in every
/// lane.
template <int DV, bool Lanes>
KVSCOPE_BF16_TARGET inline void finishRows(const SegmentBf16& sg, const ScratchBf16& sc) {
    constexpr std::int64_t perRow = Lanes ? 1 : 16;
    for (std::int64_t r = 0; r < sg.rows; ++r) {
        const float l = Lanes ? sc.lVec[std::size_t(r)]
                              : _mm512_reduce_add_ps(_mm512_loadu_ps(sc.lVec.data() + r * 16));
        const float inv = l > 0 ? 1.0f / l : 0.0f;
        const float* a = sc.acc.data() + r * DV;
        float* o = sg.out + r * DV;
        if (sg.valuesPaired)
            for (int c = 0; c < DV; ++c)
                o[c] = a[c] * inv;
        else
            for (int c = 0; c < DV / 32; ++c)
                for (int half = 0; half < 2; ++half)
                    for (int lane = 0; lane < 16; ++lane)
                        o[c * 32 + 8 * (lane / 4) + 4 * half + lane % 4] =
                            a[(2 * c + half) * 16 + lane] * inv;
        sg.lse[r] = l > 0 ? sc.mRow[std::size_t(r * perRow)] + std::log2(l)
                          : -std::numeric_limits<float>::infinity();
    }
}

/// DK, DV: key and value widths in elements (multiples of 32). Per 32-token tile, three phases
/// over all rows of the stream, so independent rows overlap in the core: scores (two rows per
/// K load, or with Lanes two 8-row halves per 64-bit key broadcast), the online-softmax update,
/// then O += P V (four rows per V load, eight for MLA's wide values). The next tile is prefetched
/// over the scores and the P·V of this one (row_map.h's SpreadTile). Streams in lanes read
/// contiguous tiles; streams scored in rows read them contiguous or gathered from 8 sub-streams
/// (sg.gathered), as the engine found faster. Contiguous paired against gathered with the
/// prefetch in the first P·V pass (the AMD host of NOTES.md, "sixteenth session", 16384-token
/// segments from DRAM, 2 threads): bf16 g 1 0.71, g 2 0.83, g 4 0.69, g 8 0.72-0.76, g 16 0.82;
/// fp8 g 1 0.82, g 8 0.90 of the time; on the Intel host ("twenty-fourth session") gathered won.
template <int DK, int DV, bool Lanes, bool InterleavedV, bool Half = false>
KVSCOPE_BF16_TARGET void attendBf16Impl(const SegmentBf16& sg, ScratchBf16& sc) {
    static_assert(!Half || Lanes, "half lanes keep the per-row state of rows in lanes");
    constexpr int T = int(kBf16Tile);
    const std::int64_t R = sg.rows;
    const std::int64_t perRow = Lanes ? 1 : 16;
    sc.acc.assign(std::size_t(R * DV), 0.0f);
    sc.mRow.assign(std::size_t(R * perRow), -std::numeric_limits<float>::infinity());
    sc.alpha.resize(std::size_t(R));
    sc.lVec.assign(std::size_t(R * perRow), 0.0f);
    sc.s.resize(std::size_t(R * T));
    sc.p.resize(std::size_t(R * T / 2));
    if constexpr (Lanes) // rows in lanes and half lanes
        transposeQueries<DK>(sg, sc);
    const Fp8Decoder dec = sg.dtype != KvDtype::Bf16 ? fp8Decoder() : Fp8Decoder::Table;
    const GatherPlan gp =
        !Lanes && sg.gathered ? gatherPlan(sg, T) : GatherPlan::contiguous(T, kGatherShift);
    SpreadTile next;
    for (std::int64_t i = 0; i < gp.count(sg); ++i) {
        const GatherPlan::Tile at = gp.tile(sg, i);
        const int n = at.n;
        const TileRows tr = tileRows<DK, DV>(sg, {at.k, at.v}, n, dec, sc);
        next.begin(gp.next(sg, i), T);
        std::int64_t r = 0;
        if constexpr (Half) {
            scoreTileHalf<DK>(tr, sc, next);
            softmaxHalf(sg, sc, n);
        } else if constexpr (Lanes) {
            scoreTileLanes<DK>(sg, tr, sc, next);
            softmaxLanes(sg, sc, n);
        } else {
            const __mmask16 valid0 = n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1u);
            const __mmask16 valid1 = n <= 16   ? __mmask16(0)
                                     : n >= 32 ? __mmask16(0xffff)
                                               : __mmask16((1u << (n - 16)) - 1u);
            scoreTile<DK>(sg, tr, valid0, valid1, sc, next);
            for (; r + 2 <= R; r += 2)
                softmaxRows<2>(sc, r, valid0, valid1);
            if (r < R)
                softmaxRows<1>(sc, r, valid0, valid1);
        }
        const int pairs = (n + 1) / 2;
        const std::int64_t pairStep = Lanes ? R : 1;
        if constexpr (InterleavedV) {
            pvTileInterleaved<DV>(sg, sc, tr.v, pairs, next);
        } else if (!Lanes && !tr.v.contiguousRows()) {
            pvRows<DV, Lanes, true>(sc, R, pairStep, tr.v, pairs, next);
        } else if constexpr (DV > 256) {
            pvRowsApart<DV, Lanes, false>(sc, R, pairStep, tr.v, pairs, next);
        } else {
            pvRows<DV, Lanes, false>(sc, R, pairStep, tr.v, pairs, next);
        }
        next.finish();
    }
    finishRows<DV, Lanes>(sg, sc);
}

/// Whether a rows-in-lanes stream (rows a multiple of 16) runs P·V from V interleaved once per
/// chunk (pvTileInterleaved) rather than pvBlock, which interleaves in registers once per pass of
/// four rows and reads MLA's 512-wide V straight from the K tile. Paired against pvBlock (the AMD
/// host of NOTES.md, "seventeenth session", B / A, with 24-position row-in-lanes blocks): GQA g 16
/// 0.89 in L2, 0.98 from DRAM; g 32 0.86 / 0.92; fp8 g 16 0.97 from DRAM; MLA h 16 1.05 / 1.19,
/// h 128 0.95 / 0.93; the 4 x 96 register blocks then bought g 16 0.94-0.96 in L2, fp8 g 16 0.92,
/// MLA h 128 0.95 and kept MLA h 16 behind pvBlock (1.05). Streams of 8 rows (half lanes) take
/// the same P·V for V up to 256 wide (attendBf16): 4 x 96 register blocks load 0.42 values or
/// weights per vdpbf16ps against pvBlock's 0.75. With V in token pairs, paired from DRAM against
/// pvBlock (NOTES.md, "twenty-seventh session"): bf16 g 8 0.86-0.90, fp8 g 8 0.97; with V
/// interleaved into scratch per tile (KVSCOPE_CPU_PAIRED_V=0, or an odd context) 1.07.
constexpr bool interleavedValues(std::int64_t rows, std::int64_t valueDim) {
    return valueDim <= 256 || rows >= 128;
}

/// The first fp8 code that either vector decoder (the vpermi2w table one, and the VBMI one
/// where the CPU has it) converts differently from the scalar table, or -1.
KVSCOPE_BF16_TARGET int fp8VectorMismatchImpl() {
    alignas(64) std::uint8_t codes[256];
    for (int i = 0; i < 256; ++i)
        codes[i] = std::uint8_t(i);
    alignas(64) std::uint16_t table[256], vbmi[256];
    fp8RowsToBf16Table(codes, 256, 1, 256, table);
    if (cpuHasVbmi())
        fp8RowsToBf16Vbmi(codes, 256, 1, 256, vbmi);
    else
        std::memcpy(vbmi, fp8ToBf16Table(), sizeof vbmi);
    for (int i = 0; i < 256; ++i)
        if (table[i] != fp8ToBf16Table()[i] || vbmi[i] != fp8ToBf16Table()[i])
            return i;
    return -1;
}

} // namespace

bool attendBf16(const SegmentBf16& sg, std::int64_t keyDim, std::int64_t valueDim,
                ScratchBf16& sc) {
    if (sg.valuesPaired && (!bf16PairedValues(sg.rows, valueDim) || !wholeValuePairs(sg)))
        return false;
#define KVSCOPE_BF16_CASE(K, V)                                                                    \
    if (keyDim == K && valueDim == V) {                                                            \
        if (bf16ScoresInRows(sg.rows))                                                             \
            attendBf16Impl<K, V, false, false>(sg, sc);                                            \
        else if (sg.rows % 16 != 0) /* 8 rows in half lanes; P·V in lanes to V 256 */             \
            attendBf16Impl<K, V, true, interleavedValues(8, V), true>(sg, sc);                     \
        else if (interleavedValues(sg.rows, V))                                                    \
            attendBf16Impl<K, V, true, true>(sg, sc);                                              \
        else                                                                                       \
            attendBf16Impl<K, V, true, false>(sg, sc);                                             \
        return true;                                                                               \
    }
    KVSCOPE_BF16_CASE(64, 64)
    KVSCOPE_BF16_CASE(128, 128)
    KVSCOPE_BF16_CASE(256, 256)
    KVSCOPE_BF16_CASE(576, 512)
#undef KVSCOPE_BF16_CASE
    return false;
}

bool cpuHasBf16Dot() {
    return __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

int fp8VectorMismatch() {
    return cpuHasBf16Dot() ? fp8VectorMismatchImpl() : -2;
}
#else
bool attendBf16(const SegmentBf16&, std::int64_t, std::int64_t, ScratchBf16&) {
    return false;
}
bool cpuHasBf16Dot() {
    return false;
}
int fp8VectorMismatch() {
    return -2;
}
#endif

bool bf16ScoresInRows(std::int64_t rows) {
    return rows % 16 != 0 && !(rows == 8 && halfLanesEnabled());
}

bool pairedValuesEnabled() {
    static const bool on = cpuSwitchOn("KVSCOPE_CPU_PAIRED_V");
    return on;
}

bool bf16PairedValues(std::int64_t rows, std::int64_t valueDim) {
    return pairedValuesEnabled() && rows > 0 && !bf16ScoresInRows(rows) && valueDim <= 256;
}

bool bf16DotEnabled() {
    const char* force = std::getenv("KVSCOPE_CPU_KERNEL");
    return cpuHasBf16Dot() && !(force && std::string(force) == "fp32");
}

} // namespace kvscope::gpu::detail::cpu
