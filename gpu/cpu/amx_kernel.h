// The AMX kernel: bf16 and fp8 KV (bf16 queries) on CPUs with AMX-BF16, both products on the
// tile unit (tdpbf16ps): every query row of a KV stream (the g heads of a GQA group, every
// head of an MLA batch row) shares each K/V tile. Design and figures: gpu/NOTES.md, "AMX".
#pragma once

#include "gpu/cpu/bf16_kernel.h"
#include "gpu/cpu/buffer.h"

#include <cstdint>
#include <vector>

namespace kvscope::gpu::detail::cpu {

struct ScratchAmx {
    AlignedVector<std::uint16_t> qt;    // [groups][key chunks][16][32] Q^T tiles (pairs)
    AlignedVector<std::uint16_t> kTile; // [block][keyDim] staged / decoded K
    AlignedVector<std::uint16_t> vv;    // [2][block / 32][valueDim / 16][16][32] V in token pairs:
                                        // this block's and the next one's (paired V decoded or
                                        // padded: [block / 2][2 valueDim])
    AlignedVector<std::uint16_t> pa;    // [groups][block / 32][16][32] bf16 probabilities
    AlignedVector<float> st;            // [groups][block][16] raw scores, query rows in lanes
    AlignedVector<float> acc;           // [groups][valueDim / 16][16][16] output tiles
    AlignedVector<float> m, l;          // [groups][16] reference max, sum
};

/// AMX-BF16 is present and Linux granted this process the tile data state.
bool cpuHasAmx();
/// The AMX kernel serves bf16 and fp8 KV where the CPU has it unless KVSCOPE_CPU_KERNEL is
/// "bf16dot" (the vdpbf16ps kernel) or "fp32" (the portable kernel).
bool amxEnabled();
/// Query rows per KV stream from which the AMX kernel beats the vdpbf16ps one: its cost per
/// token is nearly flat up to 16 rows (a tile's width), the vdpbf16ps kernel's grows with the
/// rows. CPU-time bench, d 128, K/V in L2, ns per token AMX / vdpbf16ps (NOTES.md, "sixth
/// session"): g 1 30 / 10, g 2 17-22 / 17-20, g 4 20-22 / 31-38, g 8 18.5 / 61, g 32 43 / 252.
/// From DRAM with gathered rows (the vdpbf16ps kernel reads 8 + 8 streams, the AMX one 16 + 16;
/// "seventh session", paired, 2 threads, time per token vdpbf16ps / AMX): bf16 g 4 0.75-0.87,
/// g 6 1.20, g 8 1.41-1.47; fp8 (decoded once per tile for all rows) g 4 1.11, g 8 2.0. Since
/// the AMX kernel reads contiguous blocks a short prefetch distance ahead ("eleventh session";
/// time over a 2-stream read of the same bytes, 2 threads from DRAM): bf16 g 3 AMX 1.13 /
/// vdpbf16ps 1.14, g 4 1.17 / 1.35. Since fp8 reads V in token pairs (amxPairedValues; Intel
/// host, "twenty-fifth session", time over a 2-stream read, 2 threads from DRAM, in alternation,
/// AMX / vdpbf16ps): fp8 g 1 1.27 / 1.18-1.30, g 2 1.20-1.43 / 1.59-1.72, g 3 1.20-1.36 /
/// 1.83-2.17; bf16 g 2 0.96-1.01 / 1.01-1.03, g 3 0.92-0.98 / 1.07-1.15. `measure` (Llama-3-8B
/// fp8, alternate runs, MHA): AMX 63 / 61%, vdpbf16ps 60 / 56%. So fp8 runs on AMX at every row
/// count, bf16 from 3 rows.
constexpr std::int64_t amxMinRows(KvDtype dtype) {
    return dtype == KvDtype::Fp8E4m3 ? 1 : 3;
}
/// The AMX kernel runs a stream of `rows` query rows of `dtype` KV: AMX enabled and rows >=
/// amxMinRows(dtype), or any rows under KVSCOPE_CPU_KERNEL=amx (tests cover its small-group
/// paths that way).
bool amxServes(std::int64_t rows, KvDtype dtype);
/// Whether the engine stores V in token pairs (SegmentBf16::valuesPaired) for the AMX kernel's
/// GQA streams of `rows` query rows of `dtype`: its V tiles are then loaded where the pairs are
/// (bf16) or decoded without an interleave (fp8). Paired B / A against the interleave, time
/// over 4096-token segments from DRAM, 2 threads (NOTES.md, "twenty-fifth session"): fp8 g 4
/// 0.91, g 8 0.86-0.88, g 16 0.87, g 32 0.99-1.03; bf16 g 32 0.90-0.94, g 64 0.94, g 128 1.00,
/// but g 4-16 1.04-1.07 (faster in L2, slower from DRAM, whatever the prefetch hints); fp8 g 2
/// 0.82-0.91, g 3 0.86-0.92. So fp8 at every row count and bf16 from 32 rows.
/// KVSCOPE_CPU_PAIRED_V=0 turns it off (A/B).
bool amxPairedValues(std::int64_t rows, KvDtype dtype);
/// Same segment contract as attendBf16 (widths 64/64, 128/128, 256/256, 576/512); paired V
/// (GQA, from an even t0 over an even token count) at any rows.
bool attendAmx(const SegmentBf16& sg, std::int64_t keyDim, std::int64_t valueDim, ScratchAmx& sc);
/// `iterations` steps of 4 independent tdpbf16ps (16 x 16 x 32 each) on one thread: the AMX
/// peak chain for the ceilings. Returns a value derived from the accumulators; 0 without AMX.
float amxDotChain(std::int64_t iterations, float seed);

} // namespace kvscope::gpu::detail::cpu
