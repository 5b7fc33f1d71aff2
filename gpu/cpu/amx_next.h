// The AMX kernel's next-block memory work (NextBlock, nextPair, PairSpread) and the interleaved
// V layout it writes. Only for amx_kernel.cpp, where the AMX target attribute is defined.
#pragma once

#include "gpu/cpu/amx_tiles.h"
#include "gpu/cpu/bf16_simd.h"
#include "gpu/cpu/row_map.h"

#include <algorithm>
#include <cstdint>

#if KVSCOPE_HAVE_AMX_KERNEL

namespace kvscope::gpu::detail::cpu::amx {

/// Where token pair p's interleaved row goes in V tiles at vv: row p % 16 of its 32-token
/// chunk's tiles (tile t of the chunk at + t kTileB).
template <int DV> inline std::uint16_t* pairRow(std::uint16_t* vv, int p) {
    return vv + (p / 16) * (DV / 16) * kTileB + 32 * (p % 16);
}

/// Values 32b.. of a pair's two rows (x, y) interleaved into tiles 2b and 2b + 1 of its row d.
KVSCOPE_AMX_TARGET inline __attribute__((always_inline)) void storePair(std::uint16_t* d, int b,
                                                                        __m512i x, __m512i y) {
    _mm512_storeu_si512(d + (2 * b) * kTileB, _mm512_unpacklo_epi16(x, y));
    _mm512_storeu_si512(d + (2 * b + 1) * kTileB, _mm512_unpackhi_epi16(x, y));
}

/// The next block's V rows, the token pairs further ahead to prefetch, the pair range each
/// phase works through, and the buffer its interleaved V goes to. Why: the kernel reads a
/// block's K (tile loads) and V (the interleave) at its start and then computes for about as
/// long without a load, so from DRAM its time was its L2 time plus the memory time, or more
/// (NOTES.md, "tenth session"). Here every phase of the block (scores, each group's softmax and
/// P·V) takes its share of the next block's pairs: the pair's V rows are interleaved (demand
/// loads) and the K and V lines of the pair `lead` pairs later are prefetched, so the loads
/// reach the memory at an even rate, K and V in step, a short distance ahead of their use, as
/// the read ceiling's best kernels read (NOTES.md, "eleventh session").
/// Empty (pairs 0, vv null): no next block to work on.
struct NextBlock {
    RowMap k, v;
    std::uint16_t* vv = nullptr;
    int pairs = 0, phases = 1; // pairs of the block, split evenly over `phases` calls
    // Contiguous blocks: token t >= 0 of the next block is at k0 + t rowBytes (K) and
    // v0 + t rowBytes (V), up to `ahead` tokens. k0 null: gathered blocks (MLA), whose pairs'
    // K rows are prefetched instead.
    const std::uint8_t *k0 = nullptr, *v0 = nullptr;
    std::int64_t rowBytes = 0, ahead = 0;
    int lead = 0;
    int skip = 0; // phases before the first that gets pairs
    /// Phase ph's pairs [first, last).
    int first(int ph) const { return std::max(0, ph - skip) * pairs / (phases - skip); }
};

/// Pair p of the next block: its V rows interleaved into nb.vv (as interleaveV does for a full
/// bf16 block), and the K and V lines of pair p + nb.lead prefetched (gathered blocks: pair p's
/// K rows).
template <int DK, int DV> KVSCOPE_AMX_TARGET inline void nextPair(const NextBlock& nb, int p) {
    if (nb.vv) {
        std::uint16_t* d = pairRow<DV>(nb.vv, p);
        const std::uint8_t* a = nb.v.row(2 * p);
        for (int b = 0; b < DV / 32; ++b) // row 2p + 1 is a stride on
            storePair(d, b, _mm512_loadu_si512(a + 64 * b),
                      _mm512_loadu_si512(a + nb.v.stride + 64 * b));
    }
    const std::int64_t lines = (nb.rowBytes + 63) / 64;
    if (!nb.k0) { // gathered blocks (MLA): the pair's two K rows, for the next block's scores
        const char* k = reinterpret_cast<const char*>(nb.k.row(2 * p));
        for (std::int64_t l = 0; l < lines; ++l) {
            _mm_prefetch(k + 64 * l, _MM_HINT_T0);
            _mm_prefetch(k + nb.k.stride + 64 * l, _MM_HINT_T0);
        }
        return;
    }
    const std::int64_t t = 2 * std::int64_t(p + nb.lead);
    if (t + 2 > nb.ahead)
        return;
    const std::int64_t at = t * nb.rowBytes;
    // bf16: K into L2 (its tile loads come at the next block's scores, after this block's
    // traffic through L1: 0.97-0.98 of the time at g 4-16 against T0, paired), V into L1 for
    // the interleave `lead` pairs on. fp8 (both decoded at the next block's start): into L1
    // (T1 for K: 1.02-1.05).
    const char* k = reinterpret_cast<const char*>(nb.k0 + at);
    const char* v = reinterpret_cast<const char*>(nb.v0 + at);
    for (std::int64_t l = 0; l < 2 * lines; ++l) {
        if (nb.vv)
            _mm_prefetch(k + 64 * l, _MM_HINT_T1);
        else
            _mm_prefetch(k + 64 * l, _MM_HINT_T0);
        _mm_prefetch(v + 64 * l, _MM_HINT_T0);
    }
}

/// Calls nextPair for this phase's pairs of `next` spread over `iters` steps: step by step, a
/// running count issues a pair whenever its share is due (at most one per step where the phase
/// has no more pairs than steps).
struct PairSpread {
    int p = 0, np = 0, iters = 1, due = 0;
    PairSpread(const NextBlock& next, int phase, int steps)
        : p(next.first(phase)), np(next.first(phase + 1) - p), iters(steps) {}
    template <int DK, int DV> KVSCOPE_AMX_TARGET inline void step(const NextBlock& next) {
        for (due += np; due >= iters; due -= iters)
            nextPair<DK, DV>(next, p++);
    }
};

} // namespace kvscope::gpu::detail::cpu::amx

#endif // KVSCOPE_HAVE_AMX_KERNEL
