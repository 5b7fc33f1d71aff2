// Where a CPU kernel reads the K and V rows of a tile: contiguous, or gathered from 16
// sub-streams of the segment (RowMap, GatherPlan). Plain C++, no intrinsics: the bf16, AMX and
// portable kernels share it, and the portable kernel builds for any x86-64 or other CPU.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace kvscope::gpu::detail::cpu {

/// Where the K or V rows of a tile (the bf16 and portable kernels' 32 tokens) or a block (the
/// AMX kernel's 32 or 64) live: row r at base + (r / 16) posStride + (r % 16) stride, so every 16
/// rows are evenly strided (one tile load, one score call).
/// - Contiguous rows: posStride = 16 stride.
/// - Gathered (see gatherPlan): row r is token (r / 16) of this tile in sub-stream r % 16 of the
///   segment, so each 16-row load reads 16 streams in step. The softmax does not depend on the
///   order of the tokens, only on each score meeting its own V row, and both maps agree.
struct RowMap {
    const std::uint8_t* base = nullptr;
    std::int64_t stride = 0, posStride = 0;
    const std::uint8_t* row(int r) const { return base + (r >> 4) * posStride + (r & 15) * stride; }
    static RowMap contiguous(const std::uint8_t* p, std::int64_t rowBytes) {
        return {p, rowBytes, 16 * rowBytes};
    }
};

/// The gathered part of a segment, for tiles of `tileRows` tokens (a multiple of 16): 16
/// sub-streams of subLen = tileRows / 16 x tiles tokens each, side by side from t0; tile i
/// takes tokens [i tileRows / 16, (i + 1) tileRows / 16) of every sub-stream. The tokens from
/// t0 + 16 subLen on (fewer than tileRows) are read as contiguous tiles. Why: a tile from one
/// place reads two streams (K and V) per thread, and on the Intel VM of NOTES.md ("seventh
/// session") reading the same bytes as 16 K + 16 V streams in step took 0.65-0.80 of the time
/// of 2 (one core's L2 streamer keeps many streams in flight, one stream's prefetch runs
/// dry while the core computes). KVSCOPE_CPU_GATHER=0 reads every tile contiguously (A/B).
struct GatherPlan {
    std::int64_t tiles = 0, subLen = 0;
    template <class Seg> RowMap keys(const Seg& sg, std::int64_t i, int tileRows) const {
        return {sg.keys + (sg.t0 + i * (tileRows / 16)) * sg.keyRowBytes, subLen * sg.keyRowBytes,
                sg.keyRowBytes};
    }
    template <class Seg> RowMap values(const Seg& sg, std::int64_t i, int tileRows) const {
        return {sg.values + (sg.t0 + i * (tileRows / 16)) * sg.valueRowBytes,
                subLen * sg.valueRowBytes, sg.valueRowBytes};
    }
    template <class Seg> std::int64_t tailStart(const Seg& sg) const { return sg.t0 + 16 * subLen; }
};
inline bool gatherEnabled() {
    static const bool on = [] {
        const char* e = std::getenv("KVSCOPE_CPU_GATHER");
        return !(e && std::strcmp(e, "0") == 0);
    }();
    return on;
}
template <class Seg> inline GatherPlan gatherPlan(const Seg& sg, int tileRows) {
    GatherPlan g;
    if (!gatherEnabled())
        return g;
    g.tiles = (sg.t1 - sg.t0) / tileRows;
    g.subLen = g.tiles * (tileRows / 16);
    return g;
}

} // namespace kvscope::gpu::detail::cpu
