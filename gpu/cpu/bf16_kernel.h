// The bf16 dot-product kernel: bf16 and fp8 KV (both with bf16 queries) on CPUs with
// AVX512_BF16, Q·K and P·V on vdpbf16ps. Design and figures: gpu/NOTES.md, "CPU kernel".
#pragma once

#include "gpu/backend.h"
#include "gpu/cpu/buffer.h"

#include <cstdint>
#include <vector>

namespace kvscope::gpu::detail::cpu {

struct SegmentBf16 {
    const std::uint16_t* q;     // [rows][keyDim] bf16 queries (unscaled)
    std::int64_t rows;          // query rows served by this KV stream
    const std::uint8_t* keys;   // token t at keys + t * keyRowBytes
    const std::uint8_t* values; // == keys for MLA (values are the first valueDim elements)
    std::int64_t keyRowBytes, valueRowBytes;
    std::int64_t t0, t1;
    KvDtype dtype;    // Bf16 or Fp8E4m3 (decoded to bf16 per tile, exactly)
    float scoreScale; // softmax scale * log2(e)
    float* out;       // [rows][valueDim], normalised
    float* lse;       // [rows], log2 domain
    // V in token pairs: tokens 2p and 2p + 1 at values + 2p * valueRowBytes as [valueDim][2]
    // (the order vdpbf16ps takes), from an even t0 over an even number of tokens. Only where
    // bf16PairedValues(rows, valueDim) says the kernel reads it; the bytes of a tile are the
    // same either way.
    bool valuesPaired = false;
    // Full tiles gathered from 8 sub-streams of the segment (row_map.h's gatherPlan) rather than
    // contiguous, by the streams that score in rows (bf16ScoresInRows); the engine times both
    // (CpuEngine::choosePlan).
    bool gathered = false;
};

struct ScratchBf16 {
    AlignedVector<std::uint16_t> kTile, vTile; // decoded/padded tiles when needed
    AlignedVector<float> acc, mRow, alpha;     // [rows][valueDim], [rows][16], [rows]
    AlignedVector<float> lVec;                 // [rows][16]
    AlignedVector<float> s;                    // [rows][tile] scaled scores, -inf past the end
    AlignedVector<std::uint32_t> p;            // [rows][tile / 2] bf16 probability pairs
    // Rows in lanes (rows a multiple of 16): mRow, lVec and alpha hold one value per row, s is
    // [rows / 16][tile][16] and p [tile / 2][rows]; qT is the queries as [rows / 8][keyDim /
    // 4][16], each 8 rows in half-lane order (lane 2r + j: row r's key pair 2 step + j). Half
    // lanes (8 rows): the same per-row state and qT, s is [tile / 2][8 rows x 2].
    AlignedVector<std::uint32_t> qT;
    // A chunk of a tile's V as [pair][chunk] bf16 pairs (pvTileInterleaved).
    AlignedVector<std::uint32_t> vT;
};

/// This CPU has AVX512_BF16 (and the AVX-512 subsets the kernel uses).
bool cpuHasBf16Dot();
/// The bf16 dot-product kernel serves bf16 and fp8 KV on AVX512_BF16 CPUs unless
/// KVSCOPE_CPU_KERNEL=fp32 forces the portable fp32 kernel (for comparisons and tests).
bool bf16DotEnabled();
/// Whether the kernel takes V in token pairs (SegmentBf16::valuesPaired) for a GQA stream of
/// `rows` query rows: the rows-in-lanes P·V of streams of 16k rows and of 8 rows (half lanes),
/// which otherwise interleaves every tile's V into scratch first. KVSCOPE_CPU_PAIRED_V=0 turns
/// it off (A/B).
bool bf16PairedValues(std::int64_t rows, std::int64_t valueDim);
/// KVSCOPE_CPU_PAIRED_V: on unless "0" (A/B); both kernels' paired-V rules (bf16PairedValues,
/// amxPairedValues) read it.
bool pairedValuesEnabled();
/// A segment with V in token pairs that a kernel can read: a GQA stream (V not K's first
/// columns) from an even t0 over an even number of tokens, so every pair is whole.
inline bool wholeValuePairs(const SegmentBf16& sg) {
    return sg.values != sg.keys && sg.t0 % 2 == 0 && (sg.t1 - sg.t0) % 2 == 0;
}
/// Whether a stream of `rows` query rows scores in rows, the path that reads SegmentBf16::gathered
/// (8 rows score in half lanes, 16k rows in lanes, both on contiguous tiles).
bool bf16ScoresInRows(std::int64_t rows);
/// Runs the kernel for key/value widths 64/64, 128/128, 256/256 or 576/512; false for other
/// widths, for paired values it does not take (or an odd t0 or token count with them), or when
/// this build has no bf16 kernel.
bool attendBf16(const SegmentBf16& sg, std::int64_t keyDim, std::int64_t valueDim, ScratchBf16& sc);
/// The first fp8 code whose vector conversion differs from the scalar table, -1 if none, -2
/// without the kernel.
int fp8VectorMismatch();

} // namespace kvscope::gpu::detail::cpu
