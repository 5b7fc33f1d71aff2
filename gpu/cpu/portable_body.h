// The portable kernel's body, included by portable_kernel.cpp once per vector width (16: AVX-512,
// 8: AVX2 + FMA + F16C, 4: the default target), each time with KVSCOPE_PK_TARGET (the width's
// target attribute, or nothing) and KVSCOPE_PK_NS (a namespace for that copy) defined; both
// are undefined at the end. Every function carries the target, so GCC builds the vector code
// for the width's own instruction set: W-wide helpers compiled for the default target and
// inlined into an AVX-512 function built each broadcast as 16 masked broadcasts, and the wide
// layout's scores ran 1.4x slower. No include guard: one copy per inclusion, each in its own
// namespace inside an anonymous one, so the copies never meet at link time.
//
// Per 32-token tile (gathered from 8 sub-streams of the segment, row_map.h; the last tokens in
// contiguous tiles), three phases run over all rows so independent rows overlap in the core:
// scores, the online-softmax update, and O = alpha O + P V, several rows per pass. Two layouts:
// below kWideRows query rows the lanes hold key elements (W / SR tokens of SR rows per transpose
// tree, one softmax per row with a lazily moved reference maximum); from kWideRows rows on they
// hold query rows (Q^T once per segment, broadcast key elements, a lane-wise softmax). The narrow
// layout reads fp32 / fp16 / bf16 rows where they lie, converting as they load; the wide one
// decodes each K tile to fp32 once for all rows (fp32 V is read where it lies). Arithmetic is fp32
// throughout (P is not rounded).
#if !defined(KVSCOPE_PK_TARGET) || !defined(KVSCOPE_PK_NS)
#error "define KVSCOPE_PK_TARGET and KVSCOPE_PK_NS before including this header"
#endif

#include "gpu/cpu/decode.h"
#include "gpu/cpu/portable_kernel.h"
#include "gpu/cpu/row_map.h"
#include "gpu/cpu/simd.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#define KVSCOPE_PK_INLINE inline __attribute__((always_inline)) KVSCOPE_PK_TARGET

namespace kvscope::gpu::detail::cpu {
namespace {
namespace KVSCOPE_PK_NS {

#include "gpu/cpu/portable_simd.h"

/// The rows of one tile, wherever they are read from: the fp32 scratch the tile was decoded
/// into, or the KV cache itself, converted as it is loaded (readsKeysDirectly). Rows past the
/// tile's end repeat its last row (their scores are masked).
struct TileRows {
    const std::uint8_t* row[kTileTokens];
};
KVSCOPE_PK_INLINE void tileRows(const RowMap& src, std::int64_t n, TileRows& out) {
    for (int t = 0; t < int(kTileTokens); ++t)
        out.row[t] = src.row(t < n ? t : int(n) - 1);
}
KVSCOPE_PK_INLINE void scratchRows(const float* rows, std::int64_t width, TileRows& out) {
    for (int t = 0; t < int(kTileTokens); ++t)
        out.row[t] = reinterpret_cast<const std::uint8_t*>(rows + t * width);
}

/// W elements from c of a row stored as S (fp32, fp16, bf16 or fp8 e4m3) in fp32.
template <int W, KvDtype S>
KVSCOPE_PK_INLINE typename Lanes<W>::F loadRowW(const std::uint8_t* row, int c) {
    if constexpr (S == KvDtype::Fp32) {
        return loadW<W>(reinterpret_cast<const float*>(row) + c);
    } else if constexpr (S == KvDtype::Bf16) {
#if defined(__GNUC__) && defined(__x86_64__)
        if constexpr (W == 8 || W == 16)
            return bf16ToFloatW<W>(row + 2 * c);
#endif
        typedef std::uint16_t H __attribute__((vector_size(W * 2)));
        H h;
        std::memcpy(&h, row + 2 * c, sizeof h);
        const typename Lanes<W>::I bits = __builtin_convertvector(h, typename Lanes<W>::I) << 16;
        typename Lanes<W>::F f;
        std::memcpy(&f, &bits, sizeof f);
        return f;
    } else if constexpr (S == KvDtype::Fp8E4m3) {
        return fp8ToFloatW<W>(row + c);
    } else {
        static_assert(S == KvDtype::Fp16);
#if defined(__GNUC__) && defined(__x86_64__)
        return fp16ToFloatW<W>(reinterpret_cast<const std::uint16_t*>(row) + c);
#endif
    }
}

/// n rows of N elements stored as S, row i read through `src`, into fp32 rows N apart.
template <int W, int N, KvDtype S>
KVSCOPE_PK_INLINE void convertTile(const RowMap& src, std::int64_t n, float* dst) {
    for (std::int64_t i = 0; i < n; ++i) {
        const std::uint8_t* row = src.row(int(i));
        for (int c = 0; c < N; c += W)
            storeW<W>(dst + i * N + c, loadRowW<W, S>(row, c));
    }
}

/// Decodes n <= kTileTokens rows of N elements, row i read through `src` (contiguous or
/// gathered, row_map.h), into fp32 rows N apart: fp16, bf16, fp8 and fp32 W values at a time in
/// this width's instruction set (against a call per row to decode.h's decoder: fp16 K + V at
/// d 128 took 20-22 ns per token, more than the scores, softmax and P V of 4 query rows).
template <int W, int N>
KVSCOPE_PK_INLINE void decodeTile(KvDtype dtype, const RowMap& src, std::int64_t n, float* dst) {
    static_assert(N % W == 0, "row width");
    switch (dtype) {
    case KvDtype::Fp16:
        if constexpr (W >= 8) {
            convertTile<W, N, KvDtype::Fp16>(src, n, dst);
            return;
        }
        break;
    case KvDtype::Bf16:
        convertTile<W, N, KvDtype::Bf16>(src, n, dst);
        return;
    case KvDtype::Fp32:
        for (std::int64_t i = 0; i < n; ++i)
            std::memcpy(dst + i * N, src.row(int(i)), N * sizeof(float));
        return;
    case KvDtype::Fp8E4m3:
        convertTile<W, N, KvDtype::Fp8E4m3>(src, n, dst);
        return;
    }
    for (std::int64_t i = 0; i < n; ++i)
        decodeRow(dtype, src.row(int(i)), dst + i * N, N);
}

/// Where the wide layout starts: 16 rows at every width. At 8 lanes, 8-15 rows in the narrow
/// layout took 0.72-0.81 of the wide layout's time (kernel_ab, fp16 and fp32, g 8-12, MLA h 8)
/// and 16 rows the same (0.99); at 4 lanes 4-12 rows took 0.94-1.02; at 16 lanes 16 rows in the
/// narrow layout took 1.17.
constexpr std::int64_t kWideRows = 16;

/// Register blocking per width. Narrow layout (fewer than kWideRows query rows): SR rows x W / SR
/// tokens of scores per transpose tree (SR K and SR q vectors loaded per W-wide chunk of the
/// key, W FMAs on them). Wide layout (rows in lanes): TB2 tokens x 2 row vectors, or TB1
/// tokens x 1, of scores per pass over the key (one broadcast key element per token, 2 or 1
/// q^T loads). Both: PR rows x PC output vectors of P V per pass (PC V loads and PR broadcasts
/// per token for PR x PC FMAs). Fewer rows than a block take the next smaller block (4, 2, 1 /
/// 3, 2, 1), so one row does no extra work. The AVX2 and 4-wide targets have 16 registers.
template <int W> struct Blocking {
    static constexpr int SR = W >= 16 ? 4 : 2;
    static constexpr int TB2 = W >= 16 ? 8 : 4, TB1 = W >= 16 ? 16 : 8;
    static constexpr int PR = W >= 16 ? 3 : 2;
    static constexpr int PC = W >= 16 ? 8 : 4;
    // P V on fp32 V (read where it lies or decoded): PRL x PCL, so the PCL V vectors stay in
    // registers beside the accumulators and each is loaded once per token (3 x 8 left no room
    // for them: GCC folded every V load into each row's FMA, 27 loads per 24 FMAs). AVX2: 3 x 4,
    // 12 accumulators for its 2 FMA pipes of latency 4 (2 x 4 kept 8 chains and little else in
    // flight: bf16 g 16 0.88, fp16 g 32 0.82 of the time, NOTES.md "twenty-eighth session").
    static constexpr int PRL = W >= 16 ? 4 : 3;
    static constexpr int PCL = 4;
    /// Rows and output vectors of one P V pass on V stored as S.
    template <KvDtype S> static constexpr int pvRows() { return S == KvDtype::Fp32 ? PRL : PR; }
    template <KvDtype S> static constexpr int pvCols() { return S == KvDtype::Fp32 ? PCL : PC; }
};

/// Scores of RB query rows (from r0; row pointers clamped to the stream's rows) over W / RB
/// tokens of the tile from t0, into s[row][token]: RB x (W / RB) dot products summed in lanes,
/// then one transpose tree puts the sum of row r0 + r and token t0 + t in lane r·(W / RB) + t.
template <int W, int DK, int RB, KvDtype S>
KVSCOPE_PK_INLINE void scoreRows(const float* q, std::int64_t r0, std::int64_t nRows,
                                 const TileRows& k, int t0, float* s) {
    using F = typename Lanes<W>::F;
    constexpr int TB = W / RB;
    const float* qr[RB];
    for (int r = 0; r < RB; ++r)
        qr[r] = q + std::min<std::int64_t>(r0 + r, nRows - 1) * DK;
    F acc[W];
    for (int i = 0; i < W; ++i)
        acc[i] = F{};
    for (int c = 0; c < DK; c += W) {
        // One row, bf16 or fp8 rows (a conversion of 2-5 ops into temporaries): each key vector
        // converted where it is used. Loaded first, the 8 keys, 8 sums and q took 17 of AVX2's 16
        // registers, and GCC kept one sum on the stack (a store-to-load chain per step); bf16
        // g 1 from DRAM took 0.82 of the time (NOTES.md, "twenty-eighth session").
        if constexpr (RB == 1 && (S == KvDtype::Bf16 || S == KvDtype::Fp8E4m3)) {
            const F qv = loadW<W>(qr[0] + c);
            for (int t = 0; t < TB; ++t)
                acc[t] += qv * loadRowW<W, S>(k.row[t0 + t], c);
            continue;
        }
        F kv[TB];
        for (int t = 0; t < TB; ++t)
            kv[t] = loadRowW<W, S>(k.row[t0 + t], c);
        for (int r = 0; r < RB; ++r) {
            const F qv = loadW<W>(qr[r] + c);
            for (int t = 0; t < TB; ++t)
                acc[r * TB + t] += qv * kv[t];
        }
    }
    const F sums = transposeSumW<W>(acc);
    float lanes[W];
    storeW<W>(lanes, sums);
    for (int r = 0; r < RB && r0 + r < nRows; ++r)
        std::memcpy(s + (r0 + r) * kTileTokens + t0, lanes + r * TB, TB * sizeof(float));
}

/// Scores of every row over the tile into sc.s, RB rows at a time, then the smaller blocks.
/// Every call of scoreRows is a step of `next`, the next tile's prefetch.
template <int W, int DK, int RB, KvDtype S>
KVSCOPE_PK_INLINE std::int64_t scoreAllRows(const float* q, std::int64_t r0, std::int64_t nRows,
                                            const TileRows& k, float* s, SpreadTile& next) {
    for (; r0 + RB <= nRows; r0 += RB)
        for (int t0 = 0; t0 < int(kTileTokens); t0 += W / RB) {
            scoreRows<W, DK, RB, S>(q, r0, nRows, k, t0, s);
            next.step();
        }
    if constexpr (RB > 1)
        return scoreAllRows<W, DK, RB / 2, S>(q, r0, nRows, k, s, next);
    return r0;
}

/// Online-softmax update of row r over the n valid scores of the tile in sc.s (Partial: n < T,
/// the lanes past it masked): a rescale only when the reference maximum moves, and the row's sum
/// kept in W lanes (sc.lv) until the segment ends, so a tile does no horizontal reduction unless
/// the maximum moves; the probabilities go to sc.p.
template <int W, bool Partial>
KVSCOPE_PK_INLINE void softmaxRowOf(std::int64_t n, std::int64_t r, Scratch& sc) {
    using F = typename Lanes<W>::F;
    constexpr std::int64_t T = kTileTokens;
    F iota;
    for (int i = 0; i < W; ++i)
        iota[i] = float(i);
    const F minusInf = F{} - std::numeric_limits<float>::infinity();
    // Scores (q is pre-scaled by scale * log2 e), -inf past the end of the tile.
    F s[T / W];
    F mx = minusInf;
    for (int b = 0; b < T / W; ++b) {
        s[b] = loadW<W>(sc.s.data() + r * T + b * W);
        if constexpr (Partial)
            s[b] = iota < splatW<W>(float(n - b * W)) ? s[b] : minusInf;
        mx = mx > s[b] ? mx : s[b];
    }
    // The reference maximum moves only when the tile passes it by more than kRescaleLog2
    // (lazy rescaling, as the AMX kernel: exact, since the sum uses the same reference and the
    // end divides it out; weights stay <= 2^kRescaleLog2), so most tiles skip the exp2.
    float& m = sc.m[std::size_t(r)];
    float* lv = sc.lv.data() + r * W;
    F sum = loadW<W>(lv);
    float alpha = 1.0f;
    if (anyGreaterW<W>(mx, m + kRescaleLog2)) {
        const float tileMax = hmaxW<W>(mx);
        alpha = std::exp2(m - tileMax); // 0 on the first tile
        m = tileMax;
        sum *= alpha;
    }
    const float mNew = m;
    for (int b = 0; b < T / W; ++b) {
        F pb = exp2NegW<W>(s[b] - mNew);
        if constexpr (Partial)
            pb = iota < splatW<W>(float(n - b * W)) ? pb : F{};
        storeW<W>(sc.p.data() + r * T + b * W, pb);
        sum += pb;
    }
    storeW<W>(lv, sum);
    sc.alpha[std::size_t(r)] = alpha;
}

/// Wide layout, for streams with at least kWideRows query rows: Q transposed once per segment
/// (qt[c][r], rows padded with zeros to rPad, a multiple of W), scores and probabilities
/// token-major with the rows in lanes (s[t][r]), so the scores need no transpose tree and the
/// softmax is lane-wise over tokens, one row per lane.
template <int DK>
KVSCOPE_PK_INLINE void transposeQ(const Segment& sg, std::int64_t rPad, Scratch& sc) {
    sc.qt.assign(std::size_t(DK * rPad), 0.0f);
    for (std::int64_t r = 0; r < sg.rows; ++r)
        for (std::int64_t c = 0; c < DK; ++c)
            sc.qt[std::size_t(c * rPad + r)] = sg.q[r * DK + c];
}

/// s[t][r] for tokens [t0, t0 + TB) and the RV row vectors from v0: each q^T vector, loaded
/// once per key element, feeds TB tokens' broadcast key elements.
template <int W, int DK, int RV, int TB>
KVSCOPE_PK_INLINE void scoreTokensWide(const float* kf, const float* qt, std::int64_t rPad, int v0,
                                       int t0, float* s) {
    using F = typename Lanes<W>::F;
    F acc[TB][RV];
    for (int t = 0; t < TB; ++t)
        for (int v = 0; v < RV; ++v)
            acc[t][v] = F{};
    for (int c = 0; c < DK; ++c) {
        F qv[RV];
        for (int v = 0; v < RV; ++v)
            qv[v] = loadW<W>(qt + c * rPad + (v0 + v) * W);
        for (int t = 0; t < TB; ++t) {
            const F kb = splatW<W>(kf[(t0 + t) * DK + c]);
            for (int v = 0; v < RV; ++v)
                acc[t][v] += kb * qv[v];
        }
    }
    for (int t = 0; t < TB; ++t)
        for (int v = 0; v < RV; ++v)
            storeW<W>(s + (t0 + t) * rPad + (v0 + v) * W, acc[t][v]);
}

/// Scores of the whole tile in the wide layout: two row vectors per pass, then one. Every call
/// of scoreTokensWide is a step of `next`, the next tile's prefetch.
template <int W, int DK>
KVSCOPE_PK_INLINE void scoreTileWide(const float* kf, const float* qt, std::int64_t rPad, float* s,
                                     SpreadTile& next) {
    constexpr int T = int(kTileTokens), TB2 = Blocking<W>::TB2, TB1 = Blocking<W>::TB1;
    const int vectors = int(rPad / W);
    int v0 = 0;
    for (; v0 + 2 <= vectors; v0 += 2)
        for (int t0 = 0; t0 < T; t0 += TB2) {
            scoreTokensWide<W, DK, 2, TB2>(kf, qt, rPad, v0, t0, s);
            next.step();
        }
    if (v0 < vectors)
        for (int t0 = 0; t0 < T; t0 += TB1) {
            scoreTokensWide<W, DK, 1, TB1>(kf, qt, rPad, v0, t0, s);
            next.step();
        }
}

/// Online-softmax update of the W rows of row vector v over the tile's n valid tokens, lane-wise
/// (the same arithmetic as softmaxRow, one row per lane): probabilities to sc.p, token-major.
/// Padded rows score 0 against zero queries, so every lane stays finite.
template <int W>
KVSCOPE_PK_INLINE void softmaxWide(std::int64_t n, std::int64_t rPad, int v, Scratch& sc) {
    using F = typename Lanes<W>::F;
    const float* s = sc.s.data() + v * W;
    F mx = F{} - std::numeric_limits<float>::infinity();
    for (std::int64_t t = 0; t < n; ++t) {
        const F x = loadW<W>(s + t * rPad);
        mx = mx > x ? mx : x;
    }
    const F m = loadW<W>(sc.m.data() + v * W);
    const F mNew = m > mx ? m : mx;
    const F alpha = exp2NegW<W>(m - mNew); // ~2^-125 on the first tile: acc and l are 0
    F sum = F{};
    float* p = sc.p.data() + v * W;
    for (std::int64_t t = 0; t < n; ++t) {
        const F pt = exp2NegW<W>(loadW<W>(s + t * rPad) - mNew);
        storeW<W>(p + t * rPad, pt);
        sum += pt;
    }
    storeW<W>(sc.m.data() + v * W, mNew);
    storeW<W>(sc.alpha.data() + v * W, alpha);
    storeW<W>(sc.l.data() + v * W, loadW<W>(sc.l.data() + v * W) * alpha + sum);
}

/// Output vectors per P V pass over DV columns of V stored as S.
template <int W, int DV, KvDtype S> constexpr int pvPassCols() {
    constexpr int NV = DV / W, PC = Blocking<W>::template pvCols<S>();
    static_assert(NV % (NV < PC ? NV : PC) == 0, "P V pass shape");
    return NV < PC ? NV : PC;
}

/// O = alpha O + P V for RB rows from r0, PC output vectors per pass: each V vector loaded once
/// feeds RB rows' accumulators. Row r's probability of token i is sc.p[r·PROW + i·pTok] (PROW 1
/// in the wide layout, the tile in the narrow one: a constant, so the RB broadcasts are one
/// pointer and fixed offsets). Every token of every pass is a step of `next`, the next tile's
/// prefetch (row_map.h's SpreadTile): with the prefetches only in a row block's first pass, fp32
/// V (two passes of 4 at d 128) ran 6-16% slower from DRAM at g 4-8 though faster in L2.
template <int W, int DV, int RB, KvDtype S, int PROW>
KVSCOPE_PK_INLINE void pvRows(const TileRows& v, std::int64_t n, std::int64_t r0, std::int64_t pTok,
                              Scratch& sc, SpreadTile& next) {
    using F = typename Lanes<W>::F;
    constexpr int NV = DV / W, PC = pvPassCols<W, DV, S>();
    const float* p0 = sc.p.data() + r0 * PROW;
    float* acc0 = sc.acc.data() + r0 * DV;
    float alpha[RB];
    for (int r = 0; r < RB; ++r)
        alpha[r] = sc.alpha[std::size_t(r0 + r)];
    for (int cb = 0; cb < NV; cb += PC) {
        F o[RB][PC];
        for (int r = 0; r < RB; ++r)
            for (int j = 0; j < PC; ++j)
                o[r][j] = loadW<W>(acc0 + r * DV + (cb + j) * W) * alpha[r];
        // The block's first element of each V row: the PC loads are then fixed offsets from it
        // (with (cb + j) W as offsets GCC kept PC of them in registers it had to spill).
        const std::int64_t colBytes = std::int64_t(cb) * W * kvBytesPerElement(S);
        const float* pi = p0;
        for (std::int64_t i = 0; i < n; ++i, pi += pTok) {
            F p[RB];
            for (int r = 0; r < RB; ++r)
                p[r] = splatW<W>(pi[r * PROW]);
            const std::uint8_t* vr = v.row[i] + colBytes;
#if defined(__GNUC__)
            // vr in a register of its own, the PC loads at fixed offsets from it: else GCC adds
            // colBytes + j W as PC loop-invariant indices, spills them and, with AVX2's 16
            // registers, one V vector too (fp32 V at g 16: 24% of the samples on an FMA reading
            // it back from the stack).
            asm("" : "+r"(vr));
#endif
            next.step();
            for (int j = 0; j < PC; ++j) {
                const F vj = loadRowW<W, S>(vr, j * W);
                for (int r = 0; r < RB; ++r)
                    o[r][j] += p[r] * vj;
            }
        }
        for (int r = 0; r < RB; ++r)
            for (int j = 0; j < PC; ++j)
                storeW<W>(acc0 + r * DV + (cb + j) * W, o[r][j]);
    }
}

/// The block after RB rows in pvRowsFrom: 4 after more, then 2, then 1.
constexpr int nextPvBlock(int rb) {
    return rb > 4 ? 4 : rb - 1 > 2 ? 2 : rb - 1;
}

/// P V for every row from r0, RB rows at a time, then the remaining rows in smaller blocks.
template <int W, int DV, int RB, KvDtype S, int PROW>
KVSCOPE_PK_INLINE void pvRowsFrom(const TileRows& v, std::int64_t n, std::int64_t r0,
                                  std::int64_t nRows, std::int64_t pTok, Scratch& sc,
                                  SpreadTile& next) {
    // Blocks of 3 leave the last 4 rows to two blocks of 2, not 3 + 1: a single row keeps only
    // PC accumulator chains in flight.
    for (; r0 + RB <= nRows && !(RB == 3 && nRows - r0 == 4); r0 += RB)
        pvRows<W, DV, RB, S, PROW>(v, n, r0, pTok, sc, next);
    if constexpr (RB > 1)
        if (r0 < nRows)
            pvRowsFrom<W, DV, nextPvBlock(RB), S, PROW>(v, n, r0, nRows, pTok, sc, next);
}

/// Normalised outputs and log2-sum-exp of every row.
template <int DV> KVSCOPE_PK_INLINE void finishRows(const Segment& sg, const Scratch& sc) {
    for (std::int64_t r = 0; r < sg.rows; ++r) {
        const float l = sc.l[std::size_t(r)];
        const float inv = l > 0 ? 1.0f / l : 0.0f;
        for (std::int64_t j = 0; j < DV; ++j)
            sg.out[r * DV + j] = sc.acc[std::size_t(r * DV + j)] * inv;
        sg.lse[r] =
            l > 0 ? sc.m[std::size_t(r)] + std::log2(l) : -std::numeric_limits<float>::infinity();
    }
}

/// One tile in the narrow layout, K and V rows stored as S: scores, softmax per row, P V.
template <int W, int DK, int DV, KvDtype S>
KVSCOPE_PK_INLINE void narrowTile(const Segment& sg, const TileRows& k, const TileRows& v,
                                  std::int64_t n, Scratch& sc, SpreadTile& next) {
    const std::int64_t R = sg.rows;
    scoreAllRows<W, DK, Blocking<W>::SR, S>(sg.q, 0, R, k, sc.s.data(), next);
    for (std::int64_t r = 0; r < R; ++r)
        if (n == kTileTokens)
            softmaxRowOf<W, false>(n, r, sc);
        else
            softmaxRowOf<W, true>(n, r, sc);
    pvRowsFrom<W, DV, Blocking<W>::template pvRows<S>(), S, int(kTileTokens)>(v, n, 0, R, 1, sc,
                                                                              next);
}

/// One tile in the wide layout: K decoded into kf, V fp32 (decoded or in the cache).
template <int W, int DK, int DV>
KVSCOPE_PK_INLINE void wideTile(const float* kf, const TileRows& v, std::int64_t n, std::int64_t R,
                                std::int64_t rPad, Scratch& sc, SpreadTile& next) {
    scoreTileWide<W, DK>(kf, sc.qt.data(), rPad, sc.s.data(), next);
    for (int vec = 0; vec < int(rPad / W); ++vec)
        softmaxWide<W>(n, rPad, vec, sc);
    pvRowsFrom<W, DV, Blocking<W>::PRL, KvDtype::Fp32, 1>(v, n, 0, R, rPad, sc, next);
}

/// Whether a stream's K (V) rows are read from the cache itself rather than from a tile decoded
/// into fp32 scratch. The narrow layout: always for fp32 (decoding is a copy), fp16 and bf16
/// (converting as they load, once per pass of 4 rows over K and of 3 over V, cost less than a
/// store and a reload: paired, fp16 from DRAM, g 4 0.73, g 6 0.78-0.79, g 8 0.87-0.93, g 12
/// 0.92-0.99 of the decoded tile's time). The wide layout: fp32 V rows (one row pointer per token
/// of a P V pass), never K: its scores broadcast from 8-16 rows per key element, and through a
/// row table GCC reloads every row pointer per element (16 pointer loads per 16 FMAs at g 16),
/// where a decoded tile is one base and constant offsets. fp8 (fp8ToFloatW, 5 ops per 8 values on
/// AVX2 against vcvtph2ps's one) only below 4 rows: from 4 rows on the 2-row score passes decode
/// K more than once (paired on the AVX2 host of NOTES.md, "twenty-eighth session", decoded tile
/// against direct: g 4 0.98, g 8 0.79, g 12 0.72).
template <int W> KVSCOPE_PK_INLINE bool readsKeysDirectly(const Segment& sg, bool wide) {
    return !wide &&
           (sg.dtype == KvDtype::Fp32 || sg.dtype == KvDtype::Bf16 ||
            (sg.dtype == KvDtype::Fp8E4m3 && sg.rows < 4) || (sg.dtype == KvDtype::Fp16 && W >= 8));
}
template <int W> KVSCOPE_PK_INLINE bool readsValuesDirectly(const Segment& sg, bool wide) {
    return readsKeysDirectly<W>(sg, wide) || (wide && sg.dtype == KvDtype::Fp32);
}

/// DK, DV: key and value widths in floats.
template <int W, int DK, int DV>
KVSCOPE_PK_INLINE void attendPortable(const Segment& sg, Scratch& sc) {
    constexpr std::int64_t T = kTileTokens;
    static_assert(DK % W == 0 && DV % W == 0 && T % W == 0, "tile and pass shapes");
    const std::int64_t R = sg.rows;
    const bool shared = sg.values == sg.keys;
    // Rows in lanes from kWideRows rows on; below that the lanes hold key elements (narrow
    // layout).
    const bool wide = R >= kWideRows;
    const bool kDirect = readsKeysDirectly<W>(sg, wide);
    const bool vDirect = readsValuesDirectly<W>(sg, wide);
    const std::int64_t rPad = wide ? (R + W - 1) / W * W : R;
    sc.k.resize(std::size_t(T * DK));
    if (!shared)
        sc.v.resize(std::size_t(T * DV));
    sc.acc.assign(std::size_t(R * DV), 0.0f);
    sc.m.assign(std::size_t(rPad), -std::numeric_limits<float>::infinity());
    sc.l.assign(std::size_t(rPad), 0.0f);
    if (!wide)
        sc.lv.assign(std::size_t(R * W), 0.0f);
    sc.s.resize(std::size_t(rPad * T));
    sc.p.resize(std::size_t(rPad * T));
    sc.alpha.resize(std::size_t(rPad));
    if (wide)
        transposeQ<DK>(sg, rPad, sc);
    float* kf = sc.k.data();
    // The next tile prefetched over this one's scores and P V (row_map.h's SpreadTile), the tiles
    // contiguous or gathered as the engine chose. Contiguous paired against gathered with the
    // prefetch over the P V only, from DRAM on the AMD host of NOTES.md ("sixteenth session"):
    // fp16 g 1 0.88, g 4 0.92, g 8 0.99, g 16 1.01, g 32 1.04; fp32 g 1 0.95, g 8 0.96, g 16 1.00.
    const GatherPlan gp =
        sg.gathered ? gatherPlan(sg, int(T)) : GatherPlan::contiguous(int(T), kGatherShift);
    SpreadTile next;
    TileRows kr, vr;
    for (std::int64_t i = 0; i < gp.count(sg); ++i) {
        const GatherPlan::Tile at = gp.tile(sg, i);
        const std::int64_t n = at.n;
        if (kDirect) {
            tileRows(at.k, n, kr);
        } else {
            decodeTile<W, DK>(sg.dtype, at.k, n, kf);
            std::fill(kf + n * DK, kf + T * DK, 0.0f); // rows past the end: scores masked
            scratchRows(kf, DK, kr);
        }
        if (vDirect) {
            tileRows(shared ? at.k : at.v, n, vr); // MLA: V is the latent's first DV elements
        } else if (shared) {
            vr = kr;
        } else {
            decodeTile<W, DV>(sg.dtype, at.v, n, sc.v.data());
            scratchRows(sc.v.data(), DV, vr);
        }
        next.begin(gp.next(sg, i), int(T));
        if (wide)
            wideTile<W, DK, DV>(kf, vr, n, R, rPad, sc, next);
        else
            switch (kDirect ? sg.dtype : KvDtype::Fp32) { // K and V both direct or not
            case KvDtype::Fp16:
                if constexpr (W >= 8)
                    narrowTile<W, DK, DV, KvDtype::Fp16>(sg, kr, vr, n, sc, next);
                break;
            case KvDtype::Bf16:
                narrowTile<W, DK, DV, KvDtype::Bf16>(sg, kr, vr, n, sc, next);
                break;
            case KvDtype::Fp8E4m3:
                narrowTile<W, DK, DV, KvDtype::Fp8E4m3>(sg, kr, vr, n, sc, next);
                break;
            default:
                narrowTile<W, DK, DV, KvDtype::Fp32>(sg, kr, vr, n, sc, next);
                break;
            }
        next.finish();
    }
    if (!wide)
        for (std::int64_t r = 0; r < R; ++r)
            sc.l[std::size_t(r)] = hsumW<W>(loadW<W>(sc.lv.data() + r * W));
    finishRows<DV>(sg, sc);
}

template <int W, int DK, int DV>
KVSCOPE_PK_TARGET __attribute__((noinline)) void runPortable(const Segment& sg, Scratch& sc) {
    attendPortable<W, DK, DV>(sg, sc);
}

/// The first of the 256 fp8 e4m3 codes that fp8ToFloatW decodes to other bits than
/// num::fp8e4m3ToFloat, or -1.
template <int W> KVSCOPE_PK_TARGET __attribute__((noinline)) int fp8DecodeMismatch() {
    alignas(64) std::uint8_t codes[256];
    for (int i = 0; i < 256; ++i)
        codes[i] = std::uint8_t(i);
    for (int i = 0; i < 256; i += W) {
        float lanes[W];
        storeW<W>(lanes, fp8ToFloatW<W>(codes + i));
        for (int j = 0; j < W; ++j) {
            const float want = num::fp8e4m3ToFloat(codes[i + j]);
            if (std::memcmp(&lanes[j], &want, sizeof want) != 0)
                return i + j;
        }
    }
    return -1;
}

template <int W> PortableKernel portableKernelFor(std::int64_t keyDim, std::int64_t valueDim) {
    if (keyDim == 64 && valueDim == 64)
        return &runPortable<W, 64, 64>;
    if (keyDim == 128 && valueDim == 128)
        return &runPortable<W, 128, 128>;
    if (keyDim == 256 && valueDim == 256)
        return &runPortable<W, 256, 256>;
    if (keyDim == 576 && valueDim == 512)
        return &runPortable<W, 576, 512>;
    return nullptr;
}

} // namespace KVSCOPE_PK_NS
} // namespace
} // namespace kvscope::gpu::detail::cpu

#undef KVSCOPE_PK_INLINE
#undef KVSCOPE_PK_TARGET
#undef KVSCOPE_PK_NS
