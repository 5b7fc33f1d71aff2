// The AMX kernel (see amx_kernel.h). Per block of 32 tokens (64 for MLA and above 16 query
// rows) of one KV stream:
//  1. Scores transposed, S^T = K Q^T: the A operand is 16 K rows straight from the cache
//     (32 key elements each), the B operand Q^T in pairs, prepared once per segment; each K
//     tile serves up to 16 query rows per tdpbf16ps, so K is read once for the whole group.
//     The 16 x 16 fp32 result has a token per row and the query rows in lanes, so the online
//     softmax needs no horizontal operation: the block maximum is a lane-wise max over tokens.
//  2. Softmax per 16 query rows against a reference maximum that is raised only when the block
//     maximum passes it by more than kRescaleLog2 (FlashAttention-4's lazy rescaling: exact,
//     since the sum uses the same reference and the final normalisation divides it out; the
//     weights stay <= 2^kRescaleLog2). P rounded to bf16 and the sum taken over the rounded
//     values (the output stays a convex combination of the weights used). Token pairs are
//     packed per lane and a 16 x 16 dword transpose turns them into the A operand of P·V.
//  3. O += P V with the accumulators as tiles in memory: each output tile is loaded, summed
//     over the block's 32-token chunks in a tile register and stored back; no vector merge.
//     V rows of a token pair are interleaved with vpunpckl/hwd (one uop each) into the B
//     layout, so the output columns come out permuted within each 32-column chunk (lane
//     4L + j of tile 2c / 2c+1 is column 32c + 8L + j / 32c + 8L + 4 + j) and are put back at
//     the end. fp8 V is decoded in the same pass (64 values per step with AVX512_VBMI, else
//     32; bf16_simd.h). V stored in token pairs (SegmentBf16::valuesPaired) needs no
//     interleave: a pair's row is already B tile rows in column order, so bf16 tiles are loaded
//     from the cache and fp8 is decoded straight into them.
//  4. The next block's memory work runs inside this block's compute, spread over every phase
//     (NextBlock), so the loads reach the memory at an even rate and overlap the tile and
//     vector work instead of stalling the block's start. GQA blocks are contiguous: bf16
//     interleaves the next block's V pairs and prefetches the K and V lines of the next pair
//     (K and V two streams in step, 512 bytes ahead each at d 128); fp8 prefetches the
//     next block's pairs, which it decodes at that block's start. MLA reads gathered blocks
//     and prefetches the next one's K rows over its softmax and P·V.
// bf16 x bf16 products are exact in fp32 and accumulate in fp32, as in the other kernels.
#include "gpu/cpu/amx_kernel.h"

#include "gpu/cpu/bf16_simd.h"
#include "gpu/cpu/switches.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#if KVSCOPE_HAVE_BF16_KERNEL && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define KVSCOPE_HAVE_AMX_KERNEL 1
#define KVSCOPE_AMX_TARGET                                                                         \
    __attribute__((                                                                                \
        target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma,avx2,amx-tile,amx-bf16")))
#define KVSCOPE_AMX_VBMI_TARGET                                                                    \
    __attribute__((target(                                                                         \
        "avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma,avx2,amx-tile,amx-bf16,avx512vbmi")))
#else
#define KVSCOPE_HAVE_AMX_KERNEL 0
#endif

#include "gpu/cpu/amx_next.h"
#include "gpu/cpu/amx_tiles.h"

namespace kvscope::gpu::detail::cpu {

#if KVSCOPE_HAVE_AMX_KERNEL
namespace {

using namespace amx;

/// Tokens per block: 32 (two score tiles, one P·V chunk), 64 for more than one group of 16 query
/// rows, whose accumulator tiles are then loaded and stored once per two chunks, and 128 for
/// MLA, whose 32 accumulator tiles per group (32 KiB, in L2 with the block's 64 KiB of V pairs)
/// then go through memory once per four chunks. CPU-time bench (NOTES.md, "sixth session"): g 8
/// 32 tokens 20.7, 64 30, 128 28 ns per token; g 32 with the next block's loads spread over the
/// block ("tenth session"), 64 / 32 tokens: 0.86-0.88 of the time, in L2 and from DRAM; MLA
/// ("thirteenth session") 128 / 64 tokens: h 16 0.91 (bf16) and 0.92 (fp8) of the time in L2,
/// 0.97-0.99 from DRAM, h 128 0.97; 256 tokens 1.16 from DRAM.
constexpr int blockTokens(int valueDim, int groups) {
    return valueDim >= 512 ? 128 : groups > 1 ? 64 : 32;
}

/// Q^T as B tiles: tile (grp, c) row k, lane n = (q[16 grp + n][32c + 2k], [.. + 1]), a 16 x 16
/// dword transpose of each group's chunk; query rows past the stream's are zero.
template <int DK>
KVSCOPE_AMX_TARGET void prepareQ(const SegmentBf16& sg, int groups, ScratchAmx& sc) {
    constexpr int NKC = DK / 32;
    sc.qt.resize(std::size_t(groups * NKC * kTileB));
    for (int grp = 0; grp < groups; ++grp)
        for (int c = 0; c < NKC; ++c) {
            __m512i x[16]; // x[n]: query row 16 grp + n's dwords (pairs) 16c.. of the chunk
            for (int n = 0; n < 16; ++n)
                x[n] = grp * 16 + n < sg.rows
                           ? _mm512_loadu_si512(sg.q + (grp * 16 + n) * std::int64_t(DK) + 32 * c)
                           : _mm512_setzero_si512();
            transpose16(x); // x[k] lane n: row n's pair k
            std::uint16_t* d = sc.qt.data() + (grp * NKC + c) * kTileB;
            for (int k = 0; k < 16; ++k)
                _mm512_storeu_si512(d + 32 * k, x[k]);
        }
}

/// Raises the reference maximum of the lanes `up` to the block maximum, and rescales their
/// accumulators and sums (the segment's first block, rarely after).
template <int DV>
KVSCOPE_AMX_TARGET void raiseMax(int grp, __m512 blockMax, __mmask16 up, ScratchAmx& sc) {
    float* m = sc.m.data() + grp * 16;
    const __m512 mOld = _mm512_loadu_ps(m);
    const __m512 mNew = _mm512_mask_mov_ps(mOld, up, blockMax);
    _mm512_storeu_ps(m, mNew);
    alignas(64) float alpha[16]; // 1 where the maximum stays, ~0 on the first block
    _mm512_store_ps(
        alpha, _mm512_mask_mov_ps(_mm512_set1_ps(1.0f), up, exp2Neg512(_mm512_sub_ps(mOld, mNew))));
    float* l = sc.l.data() + grp * 16;
    _mm512_storeu_ps(l, _mm512_mul_ps(_mm512_loadu_ps(l), _mm512_load_ps(alpha)));
    // Lanes raised from -inf (the segment's first block) have no sum and no accumulator yet.
    const __mmask16 fromNone = _mm512_cmp_ps_mask(
        mOld, _mm512_set1_ps(-std::numeric_limits<float>::infinity()), _CMP_EQ_OQ);
    if ((up & ~fromNone) == 0)
        return;
    float* acc = sc.acc.data() + grp * (DV / 16) * 256;
    for (int b = 0; b < DV / 16; ++b)
        for (int r = 0; r < 16; ++r) {
            float* a = acc + b * 256 + 16 * r;
            _mm512_storeu_ps(a, _mm512_mul_ps(_mm512_loadu_ps(a), _mm512_set1_ps(alpha[r])));
        }
}

/// Raw scores of the block's n <= 32 tokens for every group into sc.st (token rows of 16
/// lanes): two 16-token accumulators share each Q^T tile; the two K tiles alternate so a load
/// does not wait for the product reading the other. Groups go in pairs where there are two
/// (more than 16 query rows: every tile is 16 rows then), so each K tile is loaded once for 32
/// query rows: accumulators 0, 1 and 4, 5, Q^T tiles 3 and 6. Phase 0 of the next block's
/// pairs is spread over the key chunks.
template <int DK, int DV>
KVSCOPE_AMX_TARGET __attribute__((noinline)) void scoreBlock(const RowMap& k, int groups, int block,
                                                             ScratchAmx& sc, const NextBlock next) {
    constexpr int NKC = DK / 32;
    auto qt = [&](int grp, int c) { return sc.qt.data() + (grp * NKC + c) * kTileB; };
    auto st = [&](int grp, int h) { return sc.st.data() + (grp * block + h) * 16; };
    PairSpread spread(next, 0, (groups + 1) / 2 * (block / 32) * NKC);
    int grp = 0;
    for (; grp + 2 <= groups; grp += 2)
        for (int h = 0; h < block; h += 32) {
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(4);
            _tile_zero(5);
            for (int c = 0; c < NKC; ++c) {
                spread.step<DK, DV>(next);
                _tile_loadd(3, qt(grp, c), 64);
                _tile_loadd(6, qt(grp + 1, c), 64);
                _tile_loadd(2, k.row(h) + c * 64, k.stride);
                _tile_dpbf16ps(0, 2, 3);
                _tile_dpbf16ps(4, 2, 6);
                _tile_loadd(7, k.row(h + 16) + c * 64, k.stride);
                _tile_dpbf16ps(1, 7, 3);
                _tile_dpbf16ps(5, 7, 6);
            }
            _tile_stored(0, st(grp, h), 64);
            _tile_stored(1, st(grp, h) + 256, 64);
            _tile_stored(4, st(grp + 1, h), 64);
            _tile_stored(5, st(grp + 1, h) + 256, 64);
        }
    for (; grp < groups; ++grp)
        for (int h = 0; h < block; h += 32) {
            _tile_zero(0);
            _tile_zero(1);
            for (int c = 0; c < NKC; ++c) {
                spread.step<DK, DV>(next);
                _tile_loadd(3, qt(grp, c), 64);
                _tile_loadd(2, k.row(h) + c * 64, k.stride);
                _tile_dpbf16ps(0, 2, 3);
                _tile_loadd(7, k.row(h + 16) + c * 64, k.stride);
                _tile_dpbf16ps(1, 7, 3);
            }
            _tile_stored(0, st(grp, h), 64);
            _tile_stored(1, st(grp, h) + 256, 64);
        }
}

/// Online softmax of one group over the block: bf16 probabilities as the P·V A tiles (sc.pa)
/// against the reference maximum, and the sum of the rounded values. The block maximum is
/// taken in the same pass as the weights (one max per vector instead of a load and a max in a
/// pass of its own): where it passed the reference by more than kRescaleLog2 (always on the
/// segment's first block, rarely after), the reference is raised and the block done again.
template <int DK, int DV>
KVSCOPE_AMX_TARGET __attribute__((noinline)) void
softmaxBlock(int grp, int n, int block, float scale, ScratchAmx& sc, const NextBlock next) {
    // This phase's share of the next block's pairs, at most one per token pair below (a phase
    // never has more pairs than the loop has iterations), issued on the first pass only.
    // `next` is a copy, so the compiler keeps its fields in registers across the stores.
    PairSpread spread(next, 2 * grp + 1, 16 * ((n + 31) / 32));
    const float* st = sc.st.data() + grp * block * 16;
    float* m = sc.m.data() + grp * 16;
    const __m512 vs = _mm512_set1_ps(scale);
    const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    if (m[0] == -std::numeric_limits<float>::infinity()) { // the segment's first block
        __m512 mx = ninf;
        for (int t = 0; t < n; ++t)
            mx = _mm512_max_ps(mx, _mm512_loadu_ps(st + 16 * t));
        raiseMax<DV>(grp, _mm512_mul_ps(mx, vs), 0xffff, sc);
    }
    for (bool first = true;; first = false) {
        const __m512 mRef = _mm512_loadu_ps(m);
        __m512 sum[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()}, top = ninf; // top: max exponent
        for (int c = 0; 32 * c < n; ++c) {
            __m512i x[16]; // token pair 16c + i: (p[2i], p[2i + 1]) of every query row
            for (int i = 0; i < 16; ++i) {
                if (first)
                    spread.step<DK, DV>(next);
                const int t = 32 * c + 2 * i;
                __m512 p0 = _mm512_setzero_ps(), p1 = p0;
                if (t < n) {
                    const __m512 e = _mm512_fmsub_ps(_mm512_loadu_ps(st + 16 * t), vs, mRef);
                    top = _mm512_max_ps(top, e);
                    p0 = exp2Bf16Weights512(e);
                }
                if (t + 1 < n) {
                    const __m512 e = _mm512_fmsub_ps(_mm512_loadu_ps(st + 16 * t + 16), vs, mRef);
                    top = _mm512_max_ps(top, e);
                    p1 = exp2Bf16Weights512(e);
                }
                x[i] = bf16LanePairs(p0, p1);
                sum[i & 1] = addBf16Pairs(sum[i & 1], asBh(x[i])); // the rounded weights
            }
            transpose16(x); // x[r] = query row r's 32 probabilities, in token order
            std::uint16_t* pa = sc.pa.data() + (grp * (block / 32) + c) * kTileB;
            for (int r = 0; r < 16; ++r)
                _mm512_storeu_si512(pa + 32 * r, x[r]);
        }
        const __mmask16 up = _mm512_cmp_ps_mask(top, _mm512_set1_ps(kRescaleLog2), _CMP_GT_OQ);
        if (!up) {
            float* l = sc.l.data() + grp * 16;
            _mm512_storeu_ps(l, _mm512_add_ps(_mm512_loadu_ps(l), _mm512_add_ps(sum[0], sum[1])));
            return;
        }
        raiseMax<DV>(grp, _mm512_add_ps(top, mRef), up, sc); // the raised lanes' top is ~0 now
    }
}

/// 32 values of V row `row` from column 32b: bf16 loaded, fp8 decoded; zero past n.
KVSCOPE_AMX_TARGET inline __m512i vChunk(const RowMap& v, int row, int n, int b, bool fp8,
                                         const Fp8Lut& lut) {
    if (row >= n)
        return _mm512_setzero_si512();
    return fp8 ? fp8x32ToBf16(v.row(row) + 32 * b, lut) : _mm512_loadu_si512(v.row(row) + 64 * b);
}

/// Zero V pairs from `pairs` to the end of the last 16-pair chunk.
template <int DV> inline void zeroMissingPairs(int pairs, std::uint16_t* vv) {
    for (int p = pairs; p < 16 * ((pairs + 15) / 16); ++p)
        for (int b = 0; b < DV / 16; ++b)
            std::memset(pairRow<DV>(vv, p) + b * kTileB, 0, 64);
}

/// V rows of each token pair interleaved into B tiles (columns permuted as in the header):
/// tile (c, 2b) row i, lane 4L + j = (v[32c + 2i][32b + 8L + j], v[32c + 2i + 1][..]); tile
/// (c, 2b + 1) the same for column 32b + 8L + 4 + j. Pairs past n are zero.
template <int DV>
KVSCOPE_AMX_TARGET __attribute__((noinline)) void interleaveV(const RowMap& v, int n, bool fp8,
                                                              std::uint16_t* vv) {
    const Fp8Lut lut = fp8Lut();
    const int pairs = (n + 1) / 2;
    for (int p = 0; p < pairs; ++p) {
        std::uint16_t* d = pairRow<DV>(vv, p);
        const bool full = 2 * p + 1 < n;
        for (int b = 0; b < DV / 32; ++b) {
            __m512i x, y;
            if (full && !fp8) {
                x = _mm512_loadu_si512(v.row(2 * p) + 64 * b);
                y = _mm512_loadu_si512(v.row(2 * p) + v.stride + 64 * b); // row 2p + 1
            } else {
                x = vChunk(v, 2 * p, n, b, fp8, lut);
                y = vChunk(v, 2 * p + 1, n, b, fp8, lut);
            }
            storePair(d, b, x, y);
        }
    }
    zeroMissingPairs<DV>(pairs, vv);
}

/// interleaveV for fp8 V with the VBMI decoder: the two rows of a pair are decoded 64 values
/// at a time and interleaved in registers. Against decoding V into a scratch tile first and
/// interleaving that (CPU time, one thread, d 128, S 2048 in L2, paired passes, median
/// ratios): g 4-16 0.80-0.99 in 23 of 24 processes (one 1.12), g 32 0.87-0.92 (NOTES.md).
/// Only called where the CPU has VBMI (as every AMX CPU so far: Sapphire Rapids on).
template <int DV>
KVSCOPE_AMX_VBMI_TARGET __attribute__((noinline)) void interleaveVFp8Vbmi(const RowMap& v, int n,
                                                                          std::uint16_t* vv) {
    static_assert(DV % 64 == 0);
    const Fp8VbmiLut lut = fp8VbmiLut();
    const int pairs = (n + 1) / 2;
    for (int p = 0; p < pairs; ++p) {
        std::uint16_t* d = pairRow<DV>(vv, p);
        const std::uint8_t* a = v.row(2 * p);
        const bool full = 2 * p + 1 < n;
        for (int b = 0; b < DV / 64; ++b) {
            __m512i x[2], y[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
            fp8x64ToBf16Vbmi(_mm512_loadu_si512(a + 64 * b), lut, x[0], x[1]);
            if (full)
                fp8x64ToBf16Vbmi(_mm512_loadu_si512(a + v.stride + 64 * b), lut, y[0], y[1]);
            for (int h = 0; h < 2; ++h)
                storePair(d, 2 * b + h, x[h], y[h]);
        }
    }
    zeroMissingPairs<DV>(pairs, vv);
}

/// Where a block's V tiles are: tile b of 32-token chunk c at base + c chunkStep + b tileStep
/// (bytes), its 16 rows (token pairs) `stride` bytes apart.
struct VTiles {
    const std::uint8_t* base;
    std::int64_t stride, chunkStep, tileStep;
    const std::uint8_t* tile(int c, int b) const { return base + c * chunkStep + b * tileStep; }
    /// Interleaved by interleaveV into vv (tile-major, columns permuted).
    template <int DV> static VTiles interleaved(const std::uint16_t* vv) {
        return {reinterpret_cast<const std::uint8_t*>(vv), 64, (DV / 16) * kTileB * 2, kTileB * 2};
    }
    /// Token pairs as SegmentBf16::valuesPaired stores them, pair p at base + p pairBytes: a
    /// pair's bf16 row is 16-column B tile rows side by side, in column order.
    static VTiles pairs(const void* base, std::int64_t pairBytes) {
        return {static_cast<const std::uint8_t*>(base), pairBytes, 16 * pairBytes, 64};
    }
};

/// A block of n tokens (even) of V stored in token pairs (SegmentBf16::valuesPaired): a full
/// bf16 block is read where it is; fp8 is decoded and a partial block copied into vv, pairs
/// past n zero to the end of their 32-token chunk.
template <int DV>
KVSCOPE_AMX_TARGET VTiles pairedTiles(const RowMap& v, int n, int block, bool fp8, Fp8Decoder dec,
                                      std::uint16_t* vv) {
    const std::int64_t pairBytes = 2 * v.stride;
    if (!fp8 && n == block)
        return VTiles::pairs(v.row(0), pairBytes);
    const int pairs = n / 2, padded = 16 * ((pairs + 15) / 16);
    if (fp8) {
        stageFp8Rows(v.row(0), pairBytes, pairs, padded, 2 * DV, vv, dec);
    } else {
        std::memcpy(vv, v.row(0), std::size_t(pairs) * 4 * DV);
        std::memset(vv + std::ptrdiff_t(pairs) * 2 * DV, 0, std::size_t(padded - pairs) * 4 * DV);
    }
    return VTiles::pairs(vv, 4 * DV);
}

/// acc += P V for one group over the block's chunks of 32 tokens (V tiles at vt): two output
/// tiles per pass, loaded from and stored back to sc.acc, summed over the chunks in tile
/// registers.
template <int DK, int DV>
KVSCOPE_AMX_TARGET __attribute__((noinline)) void
pvBlock(int grp, int chunks, int block, const VTiles vt, ScratchAmx& sc, const NextBlock next) {
    constexpr int NB = DV / 16;
    // This phase's share of the next block's pairs, a few per pair of output tiles.
    PairSpread spread(next, 2 * grp + 2, NB / 2);
    float* acc = sc.acc.data() + grp * NB * 256;
    const std::uint16_t* pa = sc.pa.data() + grp * (block / 32) * kTileB;
    for (int b = 0; b < NB; b += 2) {
        _tile_loadd(4, acc + b * 256, 64);
        _tile_loadd(5, acc + (b + 1) * 256, 64);
        for (int c = 0; c < chunks; ++c) {
            _tile_loadd(6, pa + c * kTileB, 64);
            _tile_loadd(3, vt.tile(c, b), vt.stride);
            _tile_dpbf16ps(4, 6, 3);
            _tile_loadd(7, vt.tile(c, b + 1), vt.stride);
            _tile_dpbf16ps(5, 6, 7);
        }
        spread.step<DK, DV>(next);
        _tile_stored(4, acc + b * 256, 64);
        _tile_stored(5, acc + (b + 1) * 256, 64);
    }
}

/// Normalise, undo the interleave's column order, and the log2-sum-exp per row.
/// With V read as token pairs (`paired`) the columns are in order: tile b lane j is column 16b + j.
template <int DV>
KVSCOPE_AMX_TARGET void finishRows(const SegmentBf16& sg, const ScratchAmx& sc, bool paired) {
    // Output columns 32c + 8q + s come from tile 2c (s < 4) or 2c + 1 (s >= 4), lane 4q + s % 4.
    alignas(64) static constexpr std::int32_t kLo[16] = {0, 1, 2, 3, 16, 17, 18, 19,
                                                         4, 5, 6, 7, 20, 21, 22, 23};
    alignas(64) static constexpr std::int32_t kHi[16] = {8,  9,  10, 11, 24, 25, 26, 27,
                                                         12, 13, 14, 15, 28, 29, 30, 31};
    alignas(64) static constexpr std::int32_t kInOrderLo[16] = {0, 1, 2,  3,  4,  5,  6,  7,
                                                                8, 9, 10, 11, 12, 13, 14, 15};
    alignas(64) static constexpr std::int32_t kInOrderHi[16] = {16, 17, 18, 19, 20, 21, 22, 23,
                                                                24, 25, 26, 27, 28, 29, 30, 31};
    const __m512i lo = _mm512_load_si512(paired ? kInOrderLo : kLo),
                  hi = _mm512_load_si512(paired ? kInOrderHi : kHi);
    for (int r = 0; r < int(sg.rows); ++r) {
        const int grp = r / 16, lane = r % 16;
        const float l = sc.l[std::size_t(r)];
        const __m512 inv = _mm512_set1_ps(l > 0 ? 1.0f / l : 0.0f);
        const float* a = sc.acc.data() + grp * (DV / 16) * 256 + 16 * lane;
        float* o = sg.out + r * std::int64_t(DV);
        for (int c = 0; c < DV / 32; ++c) {
            const __m512 t0 = _mm512_loadu_ps(a + 2 * c * 256),
                         t1 = _mm512_loadu_ps(a + (2 * c + 1) * 256);
            _mm512_storeu_ps(o + 32 * c, _mm512_mul_ps(_mm512_permutex2var_ps(t0, lo, t1), inv));
            _mm512_storeu_ps(o + 32 * c + 16,
                             _mm512_mul_ps(_mm512_permutex2var_ps(t0, hi, t1), inv));
        }
        sg.lse[r] =
            l > 0 ? sc.m[std::size_t(r)] + std::log2(l) : -std::numeric_limits<float>::infinity();
    }
}

/// KVSCOPE_CPU_SPREAD=0 keeps every block's memory work at its start (A/B).
bool spreadEnabled() {
    static const bool on = cpuSwitchOn("KVSCOPE_CPU_SPREAD");
    return on;
}

/// Block i + 1's work to spread over block i, or none (empty): at the last block and for a
/// partial block (padded at its start by interleaveV or pairedTiles). bf16 GQA (`vv`): its V pairs
/// are interleaved into vv, and with contiguous blocks the pairs `lead` ahead are prefetched: 512
/// bytes ahead on each of the K and V streams (one pair at d 128), as the read ceiling's best
/// kernel on the Intel host prefetches. Against 2048 bytes, A / B from DRAM (NOTES.md,
/// "twenty-fifth session"): g 4 0.92-0.94, g 8 0.91-0.95, g 16 0.95-0.96 (the 2048-byte control
/// 0.97-0.99). fp8 or paired V (no vv: the block is decoded at its start or its tiles loaded where
/// they are): the pairs themselves are prefetched. MLA (gathered): the pairs' K rows are
/// prefetched, over the softmax and P·V only (with the scores' share too it ran 1.05-1.10x the
/// time).
NextBlock nextBlock(const SegmentBf16& sg, const GatherPlan& gp, std::int64_t i, int block,
                    int groups, std::uint16_t* vv) {
    if (i + 1 >= gp.count(sg))
        return {};
    const auto next = gp.tile(sg, i + 1);
    if (next.n != block)
        return {};
    NextBlock nb{next.k, next.v, vv, block / 2, 2 * groups + 1};
    nb.rowBytes = sg.keyRowBytes;
    if (sg.values == sg.keys) {
        nb.skip = 1;
    } else if (i + 1 >= gp.tiles) {
        const std::int64_t t = gp.tailStart(sg) + (i + 1 - gp.tiles) * block;
        nb.k0 = sg.keys + t * sg.keyRowBytes;
        nb.v0 = sg.values + t * sg.valueRowBytes;
        nb.ahead = sg.t1 - t;
        nb.lead = vv ? std::max<int>(1, int(512 / (2 * sg.keyRowBytes))) : 0;
    }
    return nb;
}

template <int DK, int DV>
KVSCOPE_AMX_TARGET void attendAmxImpl(const SegmentBf16& sg, ScratchAmx& sc) {
    const int R = int(sg.rows);
    const int groups = (R + 15) / 16;
    const bool fp8 = sg.dtype != KvDtype::Bf16, mla = sg.values == sg.keys;
    const Fp8Decoder dec = fp8 ? fp8Decoder() : Fp8Decoder::Table;
    // fp8 GQA V is decoded while it is interleaved: 64 values per step with VBMI
    // (interleaveVFp8Vbmi), else 32 (interleaveV). MLA's V is the staged K.
    const bool vbmiV = fp8 && !mla && dec == Fp8Decoder::Vbmi;
    prepareQ<DK>(sg, groups, sc);
    const int kBlock = blockTokens(DV, groups);
    sc.kTile.resize(std::size_t(kBlock * DK));
    const std::size_t vvSize = std::size_t(kBlock / 32 * DV / 16 * kTileB);
    sc.vv.resize(2 * vvSize);
    sc.pa.resize(std::size_t(groups * kBlock / 32 * kTileB));
    sc.st.resize(std::size_t(groups * kBlock * 16));
    sc.acc.assign(std::size_t(groups * 16 * DV), 0.0f);
    sc.m.assign(std::size_t(groups * 16), -std::numeric_limits<float>::infinity());
    sc.l.assign(std::size_t(groups * 16), 0.0f);
    loadAttentionConfig(groups == 1 ? R : 16);
    // The next block's V is interleaved during this one where it needs no decode or padding,
    // into the other half of sc.vv. The half is picked by index: with the halves as two vector
    // members swapped per block, the kernel ran 1.3-1.7x slower in L2 on the Intel VM whenever
    // the two members were declared next to each other (the code differed only in member
    // offsets; the cause was not found).
    const bool spread = spreadEnabled();
    int cur = 0;         // this block's V is half `cur` of sc.vv
    bool vReady = false; // and already interleaved there
    // GQA blocks are contiguous where the next block's loads are spread: K and V are two
    // streams read in step, each a short prefetch distance ahead (NextBlock). MLA, or with
    // KVSCOPE_CPU_SPREAD=0: gathered blocks first (16 K and 16 V streams in step, row_map.h's
    // gatherPlan), then the rest of the segment in contiguous blocks.
    // V in token pairs (GQA only): contiguous blocks, so a pair's rows stay together.
    const bool paired = sg.valuesPaired;
    const GatherPlan gp = (spread && !mla) || paired || !gatherEnabled()
                              ? GatherPlan::contiguous(kBlock, kAmxGatherShift)
                              : gatherPlan(sg, kBlock, kAmxGatherShift);
    for (std::int64_t i = 0; i < gp.count(sg); ++i) {
        auto [k, v, n] = gp.tile(sg, i);
        bool vFp8 = fp8;
        if (fp8 || n < kBlock) { // decode, or pad so no tile reads past the segment
            stageRows(k, n, kBlock, DK, fp8, dec, sc.kTile.data());
            k = RowMap::contiguous(reinterpret_cast<const std::uint8_t*>(sc.kTile.data()), DK * 2,
                                   kAmxGatherShift);
            if (mla) { // V is the decoded latent's first DV elements
                v = k;
                vFp8 = false;
            }
        }
        std::uint16_t* vv = sc.vv.data() + cur * vvSize;
        VTiles vt = VTiles::interleaved<DV>(vv);
        if (paired)
            vt = pairedTiles<DV>(v, n, kBlock, fp8, dec, vv);
        else if (!vReady && vbmiV)
            interleaveVFp8Vbmi<DV>(v, n, vv);
        else if (!vReady)
            interleaveV<DV>(v, n, vFp8, vv);
        const NextBlock nb =
            spread ? nextBlock(sg, gp, i, kBlock, groups,
                               fp8 || paired ? nullptr : sc.vv.data() + (1 - cur) * vvSize)
                   : NextBlock{};
        scoreBlock<DK, DV>(k, groups, kBlock, sc, nb);
        vReady = nb.vv != nullptr;
        for (int grp = 0; grp < groups; ++grp) {
            softmaxBlock<DK, DV>(grp, n, kBlock, sg.scoreScale, sc, nb);
            pvBlock<DK, DV>(grp, (n + 31) / 32, kBlock, vt, sc, nb);
        }
        if (vReady)
            cur = 1 - cur;
    }
    _tile_release();
    finishRows<DV>(sg, sc, paired);
}

KVSCOPE_AMX_TARGET float amxDotChainImpl(std::int64_t iterations, float seed) {
    alignas(64) std::uint16_t a[kTileB], b[kTileB];
    const std::uint16_t one = 0x3f80, tiny = std::uint16_t(num::floatToBits(seed * 1e-7f) >> 16);
    std::fill(a, a + kTileB, one);
    std::fill(b, b + kTileB, tiny);
    loadTileConfig();
    for (int j = 0; j < 4; ++j)
        zeroC(j);
    _tile_loadd(4, a, 64);
    _tile_loadd(5, b, 64);
    _tile_loadd(6, b, 64);
    _tile_loadd(7, a, 64);
    for (std::int64_t it = 0; it < iterations; ++it) {
        _tile_dpbf16ps(0, 4, 5);
        _tile_dpbf16ps(1, 4, 6);
        _tile_dpbf16ps(2, 7, 5);
        _tile_dpbf16ps(3, 7, 6);
    }
    alignas(64) float c[4][256];
    for (int j = 0; j < 4; ++j)
        storeC(j, c[j]);
    _tile_release();
    return c[0][0] + c[1][17] + c[2][34] + c[3][255];
}

bool requestTileData() {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return false;
    const bool amx = (d >> 22 & 1u) && (d >> 24 & 1u); // AMX-BF16, AMX-TILE
    constexpr long kReqXcompPerm = 0x1023,
                   kXfeatureTileData = 18; // linux/arch/x86/include/uapi/asm/prctl.h
    return amx && cpuHasBf16Dot() && syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureTileData) == 0;
}

} // namespace

bool cpuHasAmx() {
    static const bool ok = requestTileData();
    return ok;
}

bool attendAmx(const SegmentBf16& sg, std::int64_t keyDim, std::int64_t valueDim, ScratchAmx& sc) {
    if (!cpuHasAmx()) // also asks Linux for the tile state before the first tile instruction
        return false;
    if (sg.valuesPaired && !wholeValuePairs(sg))
        return false;
#define KVSCOPE_AMX_CASE(K, V)                                                                     \
    if (keyDim == K && valueDim == V) {                                                            \
        attendAmxImpl<K, V>(sg, sc);                                                               \
        return true;                                                                               \
    }
    KVSCOPE_AMX_CASE(64, 64)
    KVSCOPE_AMX_CASE(128, 128)
    KVSCOPE_AMX_CASE(256, 256)
    KVSCOPE_AMX_CASE(576, 512)
#undef KVSCOPE_AMX_CASE
    return false;
}

float amxDotChain(std::int64_t iterations, float seed) {
    return cpuHasAmx() ? amxDotChainImpl(iterations, seed) : 0.0f;
}
#else
bool cpuHasAmx() {
    return false;
}
bool attendAmx(const SegmentBf16&, std::int64_t, std::int64_t, ScratchAmx&) {
    return false;
}
float amxDotChain(std::int64_t, float) {
    return 0.0f;
}
#endif

bool amxEnabled() {
    const char* force = std::getenv("KVSCOPE_CPU_KERNEL");
    const std::string f = force ? force : "";
    return f != "fp32" && f != "bf16dot" && cpuHasAmx();
}

bool amxPairedValues(std::int64_t rows, KvDtype dtype) {
    return pairedValuesEnabled() && (dtype == KvDtype::Fp8E4m3 || rows >= 32);
}

bool amxServes(std::int64_t rows, KvDtype dtype) {
    const char* force = std::getenv("KVSCOPE_CPU_KERNEL");
    return amxEnabled() && (rows >= amxMinRows(dtype) || (force && std::string(force) == "amx"));
}

} // namespace kvscope::gpu::detail::cpu
