// Where a CPU kernel reads the K and V rows of a tile: contiguous, or gathered from 8 or 16
// sub-streams of the segment (RowMap, GatherPlan). Plain C++, no intrinsics: the bf16, AMX and
// portable kernels share it, and the portable kernel builds for any x86-64 or other CPU.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

/// Forces the prefetch helpers into the kernels' loops: a call there spills every vector
/// accumulator (all zmm registers are caller-saved), which took the vdpbf16ps kernel's P·V to
/// 1.3x its time when LineBatch::issue grew past GCC's inlining limit.
#if defined(__GNUC__)
#define KVSCOPE_ALWAYS_INLINE __attribute__((always_inline))
#else
#define KVSCOPE_ALWAYS_INLINE
#endif

namespace kvscope::gpu::detail::cpu {

/// Where the K or V rows of a tile (the bf16 and portable kernels' 32 tokens) or a block (the
/// AMX kernel's 32 or 64) live, in groups of G = 2^shift rows: row r at base + (r / G) posStride
/// + (r % G) stride, so every G rows are evenly strided (one AMX tile load at G 16, one score
/// call at G 8).
/// - Contiguous rows: posStride = G stride.
/// - Gathered (see gatherPlan): row r is token (r / G) of this tile in sub-stream r % G of the
///   segment, so each G-row load reads G streams in step. The softmax does not depend on the
///   order of the tokens, only on each score meeting its own V row, and both maps agree.
/// G 16 for the AMX kernel (a tile load takes 16 evenly strided rows), 8 for the others.
struct RowMap {
    const std::uint8_t* base = nullptr;
    std::int64_t stride = 0, posStride = 0;
    int shift = 4;
    const std::uint8_t* row(int r) const {
        return base + (r >> shift) * posStride + (r & ((1 << shift) - 1)) * stride;
    }
    int group() const { return 1 << shift; }
    /// Every row `stride` bytes after the one before (the groups back to back).
    bool contiguousRows() const { return posStride == group() * stride; }
    static RowMap contiguous(const std::uint8_t* p, std::int64_t rowBytes, int shift) {
        return {p, rowBytes, (std::int64_t(1) << shift) * rowBytes, shift};
    }
};

/// Prefetches the line at p into L1 (prefetcht0). Always inlined: GCC 12 takes an out-of-line
/// function whose only effect is __builtin_prefetch for a pure one and deletes its calls. Not an
/// asm statement any more: a volatile asm in the P·V loop kept SpreadTile's counters in memory
/// and had MLA h 16 spill its V rows through the stack (in L2 1.16-1.20x the time of the kernel
/// before gathered tiles, 1.03x with the builtin; NOTES.md, "twenty-sixth session").
KVSCOPE_ALWAYS_INLINE inline void prefetchL1(const void* p) {
    __builtin_prefetch(p, 0, 3);
}

/// The next tile's K and V, for a kernel to prefetch into L1 while this tile computes
/// (SpreadTile): the next tile's loads then reach the memory at an even rate, instead of in a
/// burst at its start that the hardware prefetchers had not run ahead of (NOTES.md, "eleventh
/// session"). Each of K and V is `lines` cache lines in 2^shift runs (a contiguous tile: one run
/// from its base; a gathered one: a run per sub-stream, runStride bytes apart), taken round the
/// runs: line q is line q >> shift of run q & (2^shift - 1), so a prefetch batch touches every
/// sub-stream in step, as the tile's loads will. Empty (lines 0): nothing to prefetch.
struct NextTile {
    const std::uint8_t *k = nullptr, *v = nullptr;
    int lines = 0;       // cache lines of the tile's K, and of its V
    bool shared = false; // V is K's first columns (MLA): its lines are K's
    int shift = 0;       // 2^shift runs
    std::int64_t kRunStride = 0, vRunStride = 0;
    KVSCOPE_ALWAYS_INLINE const std::uint8_t* kLine(int q) const {
        return k + (q & ((1 << shift) - 1)) * kRunStride + std::int64_t(q >> shift) * 64;
    }
    KVSCOPE_ALWAYS_INLINE const std::uint8_t* vLine(int q) const {
        return v + (q & ((1 << shift) - 1)) * vRunStride + std::int64_t(q >> shift) * 64;
    }
};

/// Some of the next tile's cache lines, handed to one compute call that prefetches two of them
/// per iteration of its loop (issue(it) for it < n), so they reach the memory at the rate of its
/// work rather than in a burst between calls: iteration it takes line pair first + it (a K and a
/// V line, or two K lines when V is K's). A contiguous tile's pairs are a + it step and
/// b + it step, one add each; only a gathered tile's go through NextTile's run arithmetic. Why:
/// computed through NextTile for every tile, the address arithmetic inside the score and P·V
/// loops took the AMD host's vdpbf16ps kernel from DRAM to 1.29-1.48x its time at g 8-32 (NOTES.md,
/// "twenty-sixth session").
struct LineBatch {
    const std::uint8_t *a = nullptr, *b = nullptr;
    std::int64_t step = 0;
    const NextTile* gathered = nullptr; // the tile, when its lines go round its runs
    int first = 0, n = 0;
    /// The two lines of iteration it.
    KVSCOPE_ALWAYS_INLINE const std::uint8_t* lineA(int it) const {
        if (!gathered)
            return a + it * step;
        return gathered->kLine(gathered->shared ? 2 * (first + it) : first + it);
    }
    KVSCOPE_ALWAYS_INLINE const std::uint8_t* lineB(int it) const {
        if (!gathered)
            return b + it * step;
        return gathered->shared ? gathered->kLine(2 * (first + it) + 1)
                                : gathered->vLine(first + it);
    }
    KVSCOPE_ALWAYS_INLINE void issue(int it) const {
        if (it < n) {
            prefetchL1(lineA(it));
            prefetchL1(lineB(it));
        }
    }
    /// issue() for the calls that only ever read contiguous tiles (the rows-in-lanes and
    /// half-lane scores and P·V; attendBf16Impl gives them GatherPlan::contiguous): without the
    /// gathered test in their unrolled loops, g 16 in L2 took 0.95x the time (NOTES.md,
    /// "twenty-sixth session").
    KVSCOPE_ALWAYS_INLINE void issueContiguous(int it) const {
        if (it < n) {
            prefetchL1(a + it * step);
            prefetchL1(b + it * step);
        }
    }
};

/// The next tile's lines prefetched evenly over all of this tile's work, scores and P·V, two at a
/// time (a line pair: a K and a V line, or two K lines when V is K's), counted in units of work: a
/// kernel calls step() at each small unit (a score call, a P·V token step), which prefetches that
/// unit's pairs at once, or take(u, batch) before a call of u loop iterations, which hands up to
/// u pairs to the call (LineBatch), and finish() at the end of the tile. The units are counted as
/// they happen and set the rate for the next tile (the full tiles of a segment all do the same
/// work), so a kernel needs no formula for its count; the first tile prefetches a token per
/// unit. Why every phase: prefetches issued in one phase (the first P·V pass) wait for line fill
/// buffers in a burst while the compute stands still, and the next tile's loads then follow this
/// tile's compute instead of overlapping it (NOTES.md, "fourteenth session" and "sixteenth
/// session"). Why inside the calls: the rows-in-lanes tiles make 9 calls for 128 pairs at g 16,
/// and their bursts of 32 prefetches were most of the tile loop's time from DRAM (NOTES.md,
/// "twentieth session").
struct SpreadTile {
    NextTile next;
    int pairs = 0, pair = 0;        // line pairs of the next tile, handed out
    int units = 0, lastUnits = 0;   // work of this tile so far, of the last one
    std::int64_t due = 0, rate = 0; // pairs due and pairs per unit, in 1/65536
    void begin(const NextTile& nt, int tileTokens) {
        next = nt;
        pairs = nt.shared ? (nt.lines + 1) / 2 : nt.lines;
        pair = units = 0;
        due = 0;
        const int perToken = tileTokens > 0 ? (pairs + tileTokens - 1) / tileTokens : 0;
        rate = lastUnits > 0 ? ((std::int64_t(pairs) << 16) + lastUnits - 1) / lastUnits
                             : std::int64_t(perToken) << 16;
    }
    /// Contiguous: the caller only ever runs with contiguous next tiles (the rows-in-lanes
    /// tiles), so the gathered path stays out of its loop (MLA h 16 in L2 took 1.12x the time
    /// with it, NOTES.md "twenty-sixth session").
    template <bool Contiguous = false> KVSCOPE_ALWAYS_INLINE void step() {
        ++units;
        due += rate;
        if ((due >> 16) > pair)
            prefetchUpTo<Contiguous>(int(std::min<std::int64_t>(pairs, due >> 16)));
    }
    void take(int u, LineBatch& b) {
        units += u;
        due += rate * u;
        b = upTo(int(std::min<std::int64_t>({std::int64_t(pairs), due >> 16, pair + u})));
    }
    void finish() {
        prefetchUpTo(pairs);
        lastUnits = units;
    }

private:
    /// The pairs from `pair` to `end`, prefetched now.
    template <bool Contiguous = false> KVSCOPE_ALWAYS_INLINE void prefetchUpTo(int end) {
        const LineBatch b = upTo<Contiguous>(end);
        if (!Contiguous && b.gathered)
            for (int i = 0; i < b.n; ++i)
                b.issue(i);
        else
            for (int i = 0; i < b.n; ++i)
                b.issueContiguous(i);
    }
    /// The pairs from `pair` to `end`, handed out.
    template <bool Contiguous = false> KVSCOPE_ALWAYS_INLINE LineBatch upTo(int end) {
        LineBatch b;
        b.first = pair;
        b.n = std::max(0, end - pair);
        if (!Contiguous && next.shift > 0) {
            b.gathered = &next;
        } else if (next.shared) {
            b.a = next.k + 128 * std::int64_t(pair);
            b.b = b.a + 64;
            b.step = 128;
        } else {
            b.a = next.k + 64 * std::int64_t(pair);
            b.b = next.v + 64 * std::int64_t(pair);
            b.step = 64;
        }
        pair += b.n;
        return b;
    }
};

/// Rows per group of a RowMap, as a shift: 8 for the vdpbf16ps and portable kernels (their score
/// calls take 8 or 16 rows, P·V pairs of rows; when they read gathered tiles, 8 sub-streams
/// against 16 took g 1 0.93-0.96, g 2 0.91-0.95, fp8 g 1 0.72-0.90 of the time from DRAM,
/// NOTES.md "seventh session"), 16 for the AMX kernel (kAmxGatherShift: a tile load takes 16
/// evenly strided rows).
constexpr int kGatherShift = 3;
constexpr int kAmxGatherShift = 4;

/// The gathered part of a segment, for tiles of `tileRows` tokens (a multiple of G = 2^shift):
/// G sub-streams of subLen = tileRows / G x tiles tokens each, side by side from t0; tile i takes
/// tokens [i tileRows / G, (i + 1) tileRows / G) of every sub-stream. The tokens from
/// t0 + G subLen on (fewer than tileRows) are read as contiguous tiles. Why: a tile from one
/// place reads two streams (K and V) per thread, and on the Intel VM of NOTES.md ("seventh
/// session") reading the same bytes as G K + G V streams in step took 0.65-0.74 (G 8) or 0.80
/// (G 16) of the time of 2 (one core's L2 streamer keeps many streams in flight, one stream's
/// prefetch runs dry while the core computes). The AMX kernel's MLA blocks read this way, its GQA
/// blocks contiguously; the vdpbf16ps row streams and the portable kernel read either, as the
/// engine found faster for the point (on the AMD host of "sixteenth session" 16 streams per
/// thread read slower than 2-4; on the Intel host gathered bf16 g 1 took 0.84 of contiguous's
/// time, "twenty-fourth session"). KVSCOPE_CPU_GATHER: gatherForced below.
struct GatherPlan {
    std::int64_t tiles = 0, subLen = 0;      // gathered tiles, tokens per sub-stream
    int tileRows = 32, shift = kGatherShift; // 2^shift sub-streams

    /// Tile i's K and V rows and its valid rows n: gathered (always full) for i < tiles, then
    /// contiguous from t0 + 2^shift subLen on (the last one maybe partial).
    struct Tile {
        RowMap k, v;
        int n = 0;
    };
    template <class Seg> Tile tile(const Seg& sg, std::int64_t i) const {
        const std::int64_t per = tileRows >> shift; // tokens of each sub-stream per tile
        if (i < tiles)
            return {{sg.keys + (sg.t0 + i * per) * sg.keyRowBytes, subLen * sg.keyRowBytes,
                     sg.keyRowBytes, shift},
                    {sg.values + (sg.t0 + i * per) * sg.valueRowBytes, subLen * sg.valueRowBytes,
                     sg.valueRowBytes, shift},
                    tileRows};
        const std::int64_t t = tailStart(sg) + (i - tiles) * tileRows;
        return {RowMap::contiguous(sg.keys + t * sg.keyRowBytes, sg.keyRowBytes, shift),
                RowMap::contiguous(sg.values + t * sg.valueRowBytes, sg.valueRowBytes, shift),
                int(std::min<std::int64_t>(tileRows, sg.t1 - t))};
    }
    /// Tiles of the segment, gathered and contiguous.
    template <class Seg> std::int64_t count(const Seg& sg) const {
        return tiles + (sg.t1 - tailStart(sg) + tileRows - 1) / tileRows;
    }
    template <class Seg> std::int64_t tailStart(const Seg& sg) const {
        return sg.t0 + (std::int64_t(1) << shift) * subLen;
    }
    /// Tile i + 1 to prefetch while tile i is computed: only where both are full (a partial
    /// tile is staged row by row). A gathered tile is prefetched as its 2^shift runs, a
    /// contiguous one as one run.
    template <class Seg> NextTile next(const Seg& sg, std::int64_t i) const {
        if (i + 1 >= count(sg) || tile(sg, i).n != tileRows)
            return {};
        const Tile t = tile(sg, i + 1);
        if (t.n != tileRows)
            return {};
        const std::int64_t bytes = tileRows * std::max(sg.keyRowBytes, sg.valueRowBytes);
        NextTile nt{t.k.base, t.v.base, int((bytes + 63) / 64), sg.values == sg.keys};
        if (i + 1 < tiles) {
            nt.shift = shift;
            nt.kRunStride = t.k.stride;
            nt.vRunStride = t.v.stride;
        }
        return nt;
    }
    /// Every tile contiguous.
    static GatherPlan contiguous(int tileRows, int shift) {
        GatherPlan g;
        g.tileRows = tileRows;
        g.shift = shift;
        return g;
    }
};
/// KVSCOPE_CPU_GATHER: "0" reads every tile and block contiguously (the AMX kernel's MLA blocks
/// too), "1" makes the vdpbf16ps row kernels and the portable kernel gather without the engine's
/// trial (CpuEngine::choosePlan); unset: the AMX kernel's MLA blocks gather, and the engine
/// times both plans for the others. -1 when unset.
inline int gatherForced() {
    const char* e = std::getenv("KVSCOPE_CPU_GATHER"); // read each time: tests set it per row
    return e ? int(std::strcmp(e, "0") != 0) : -1;
}
inline bool gatherEnabled() {
    return gatherForced() != 0;
}
/// Gathered tiles for the segment (then its contiguous tail).
template <class Seg>
inline GatherPlan gatherPlan(const Seg& sg, int tileRows, int shift = kGatherShift) {
    GatherPlan g = GatherPlan::contiguous(tileRows, shift);
    g.tiles = (sg.t1 - sg.t0) / tileRows;
    g.subLen = g.tiles * (tileRows >> shift);
    return g;
}

} // namespace kvscope::gpu::detail::cpu
