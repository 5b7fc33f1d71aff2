// AMX tile helpers shared by the AMX attention kernel and the tdpbf16ps peak chain: the tile
// configuration (palette 1, eight 16 x 64-byte tiles) and the tile operations whose tile
// numbers must be immediates, switched on a small index. Only for amx_kernel.cpp, where the
// AMX target attribute is defined.
#pragma once

#include "gpu/cpu/simd.h"

#include <cstdint>

#if KVSCOPE_HAVE_AMX_KERNEL

namespace kvscope::gpu::detail::cpu::amx {

constexpr int kTileB = 512; // bf16 elements of one 16 x 64-byte tile

/// Palette 1, all eight tiles 16 rows x 64 bytes (A: 16 x 32 bf16, B: 16 pairs x 16 columns,
/// C: 16 x 16 fp32).
struct alignas(64) TileConfig {
    std::uint8_t palette = 1, startRow = 0;
    std::uint8_t reserved[14] = {};
    std::uint16_t colsb[16] = {};
    std::uint8_t rows[16] = {};
};

KVSCOPE_AMX_TARGET inline void loadTileConfig() {
    TileConfig c;
    for (int i = 0; i < 8; ++i) {
        c.colsb[i] = 64;
        c.rows[i] = 16;
    }
    _tile_loadconfig(&c);
}

/// The attention kernel's tiles: 0, 1 score accumulators, 2 and 7 K (A), 3 Q^T (B) in the
/// score phase; 4, 5 output accumulators, 6 P (A), 3 and 7 V (B) in the P·V phase. The P·V
/// tiles with query rows (4, 5, 6) have `pvRows` rows: a product's time and an accumulator's
/// load and store shrink with its rows (16 rows 7.0 ns, 8 rows 5.8 ns per tdpbf16ps here).
KVSCOPE_AMX_TARGET inline void loadAttentionConfig(int pvRows) {
    TileConfig c;
    for (int i = 0; i < 8; ++i) {
        c.colsb[i] = 64;
        c.rows[i] = std::uint8_t(i == 4 || i == 5 || i == 6 ? pvRows : 16);
    }
    _tile_loadconfig(&c);
}

// The peak chain accumulates in tiles 0-3.
KVSCOPE_AMX_TARGET inline void zeroC(int j) {
    switch (j) {
    case 0:
        _tile_zero(0);
        break;
    case 1:
        _tile_zero(1);
        break;
    case 2:
        _tile_zero(2);
        break;
    default:
        _tile_zero(3);
        break;
    }
}
KVSCOPE_AMX_TARGET inline void storeC(int j, float* dst) {
    switch (j) {
    case 0:
        _tile_stored(0, dst, 64);
        break;
    case 1:
        _tile_stored(1, dst, 64);
        break;
    case 2:
        _tile_stored(2, dst, 64);
        break;
    default:
        _tile_stored(3, dst, 64);
        break;
    }
}
/// Lane i of row o[c] = row r[i]'s lane c (16 x 16 dwords).
KVSCOPE_AMX_TARGET inline void transpose16(__m512i r[16]) {
    __m512i t[16], u[16];
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; ++i) { // u[4i + j], 128-bit lane L: column 4L + j, rows 4i..4i+3
        u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int j = 0; j < 4; ++j) {
        const __m512i v = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x88);
        const __m512i w = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xdd);
        const __m512i v2 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x88);
        const __m512i w2 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xdd);
        r[j] = _mm512_shuffle_i32x4(v, v2, 0x88);
        r[8 + j] = _mm512_shuffle_i32x4(v, v2, 0xdd);
        r[4 + j] = _mm512_shuffle_i32x4(w, w2, 0x88);
        r[12 + j] = _mm512_shuffle_i32x4(w, w2, 0xdd);
    }
}

} // namespace kvscope::gpu::detail::cpu::amx

#endif
