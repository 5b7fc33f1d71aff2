// The AMX kernel (see amx_kernel.h). Per block of 32 or 64 tokens of one KV stream:
//  1. Scores transposed, S^T = K Q^T: the A operand is 16 K rows straight from the cache
//     (32 key elements each), the B operand Q^T in pairs, prepared once per segment; each K
//     tile serves up to 16 query rows per tdpbf16ps, so K is read once for the whole group.
//     The 16 x 16 fp32 result has a token per row and the query rows in lanes, so the online
//     softmax needs no horizontal operation: the block maximum is a lane-wise max over tokens.
//  2. Softmax per 16 query rows: exp2 by the same polynomial as the vdpbf16ps kernel, P rounded
//     to bf16 and the sum taken over the rounded values (the output stays a convex combination
//     of the weights used). Token pairs are packed per lane and a 16 x 16 dword transpose turns
//     them into the A operand of P·V (query rows x 32 tokens).
//  3. O += P V: V rows of a token pair interleaved (vpermt2w) into the B layout once per block
//     for every query row; each output tile (16 rows x 16 columns) is summed over the block in
//     a tile register, then merged as acc = alpha * acc + tile with AVX-512.
// bf16 x bf16 products are exact in fp32 and accumulate in fp32, as in the other kernels.
#include "gpu/cpu/amx_kernel.h"

#include "gpu/cpu/bf16_simd.h"

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
#else
#define KVSCOPE_HAVE_AMX_KERNEL 0
#endif

namespace kvscope::gpu::detail::cpu {

#if KVSCOPE_HAVE_AMX_KERNEL
namespace {

// Tokens per block: 32 for up to 16 query rows (the block's K, V and interleaved V, 24 KB at
// d 128, stay in L1), 64 for more (each output tile then sums two 32-token steps before its
// merge). CPU-time bench, ns per token at 32 / 64: g 1 34 / 43, g 8 38 / 45, g 16 46 / 48,
// g 32 101 / 77 (NOTES.md, "AMX").
int blockTokens(int groups) {
    return groups >= 2 ? 64 : 32;
}
constexpr int kTileB = 512; // bf16 elements of one 16 x 64-byte tile

/// Palette 1, all eight tiles 16 rows x 64 bytes (A: 16 x 32 bf16, B: 16 pairs x 16 columns,
/// C: 16 x 16 fp32).
struct alignas(64) TileConfig {
    std::uint8_t palette = 1, startRow = 0;
    std::uint8_t reserved[14] = {};
    std::uint16_t colsb[16] = {};
    std::uint8_t rows[16] = {};
};

KVSCOPE_AMX_TARGET void loadTileConfig() {
    TileConfig c;
    for (int i = 0; i < 8; ++i) {
        c.colsb[i] = 64;
        c.rows[i] = 16;
    }
    _tile_loadconfig(&c);
}

// Tile numbers are immediates: tiles 0-3 accumulate, 4 holds A, 5 and 6 alternate as B.
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
/// C_j += A (tile 4) x B, with B loaded from b (64-byte rows) into tile 5 or 6 by j's parity.
KVSCOPE_AMX_TARGET inline void dpC(int j, const void* b) {
    switch (j) {
    case 0:
        _tile_loadd(5, b, 64);
        _tile_dpbf16ps(0, 4, 5);
        break;
    case 1:
        _tile_loadd(6, b, 64);
        _tile_dpbf16ps(1, 4, 6);
        break;
    case 2:
        _tile_loadd(5, b, 64);
        _tile_dpbf16ps(2, 4, 5);
        break;
    default:
        _tile_loadd(6, b, 64);
        _tile_dpbf16ps(3, 4, 6);
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

/// n <= block token rows (bf16 copied, fp8 decoded exactly) into a block-row tile whose rows
/// past n are zero. width is a multiple of 32.
KVSCOPE_AMX_TARGET __attribute__((noinline)) void stageBlock(const std::uint8_t* src,
                                                             std::int64_t stride, int n, int block,
                                                             int width, bool fp8,
                                                             std::uint16_t* dst) {
    std::memset(dst + std::ptrdiff_t(n) * width, 0, std::size_t((block - n) * width) * 2);
    if (!fp8) {
        for (int i = 0; i < n; ++i)
            std::memcpy(dst + i * width, src + i * stride, std::size_t(width) * 2);
        return;
    }
    const Fp8Lut lut = fp8Lut();
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < width; j += 32)
            _mm512_storeu_si512(dst + i * width + j, fp8x32ToBf16(src + i * stride + j, lut));
}

/// Q^T as B tiles: tile (grp, c) row k, lane n = (q[16 grp + n][32c + 2k], [.. + 1]); query rows
/// past the stream's are zero.
template <int DK> void prepareQ(const SegmentBf16& sg, int groups, ScratchAmx& sc) {
    constexpr int NKC = DK / 32;
    sc.qt.assign(std::size_t(groups * NKC * kTileB), 0);
    for (int grp = 0; grp < groups; ++grp)
        for (int n = 0; n < 16 && grp * 16 + n < sg.rows; ++n) {
            const std::uint16_t* q = sg.q + (grp * 16 + n) * std::int64_t(DK);
            for (int c = 0; c < NKC; ++c)
                for (int k = 0; k < 16; ++k) {
                    std::uint16_t* d = sc.qt.data() + (grp * NKC + c) * kTileB + k * 32 + 2 * n;
                    d[0] = q[32 * c + 2 * k];
                    d[1] = q[32 * c + 2 * k + 1];
                }
        }
}

/// C_j += A x B (tile 5), with A loaded from a (rows `stride` apart) into tile 4 or 6 by j's
/// parity, so the next load does not wait for the previous product.
KVSCOPE_AMX_TARGET inline void dpA(int j, const void* a, std::int64_t stride) {
    switch (j) {
    case 0:
        _tile_loadd(4, a, stride);
        _tile_dpbf16ps(0, 4, 5);
        break;
    case 1:
        _tile_loadd(6, a, stride);
        _tile_dpbf16ps(1, 6, 5);
        break;
    case 2:
        _tile_loadd(4, a, stride);
        _tile_dpbf16ps(2, 4, 5);
        break;
    default:
        _tile_loadd(6, a, stride);
        _tile_dpbf16ps(3, 6, 5);
        break;
    }
}

/// Raw scores of the block's n tokens for every group into sc.st (token rows of 16 lanes).
/// Four 16-token tiles accumulate side by side and share each Q^T tile: a single accumulator
/// would chain the key chunks' tdpbf16ps on its latency.
template <int DK>
KVSCOPE_AMX_TARGET __attribute__((noinline)) void scoreBlock(const std::uint8_t* k, std::int64_t ks,
                                                             int n, int groups, ScratchAmx& sc) {
    constexpr int NKC = DK / 32;
    for (int grp = 0; grp < groups; ++grp)
        for (int i0 = 0; 16 * i0 < n; i0 += 4) {
            const int tiles = std::min(4, (n - 16 * i0 + 15) / 16);
            for (int j = 0; j < tiles; ++j)
                zeroC(j);
            for (int c = 0; c < NKC; ++c) {
                _tile_loadd(5, sc.qt.data() + (grp * NKC + c) * kTileB, 64);
                for (int j = 0; j < tiles; ++j)
                    dpA(j, k + 16 * (i0 + j) * ks + c * 64, ks);
            }
            for (int j = 0; j < tiles; ++j)
                storeC(j, sc.st.data() + (grp * sc.block + 16 * (i0 + j)) * 16);
        }
}

/// Online softmax of one group over the block: new max, alpha, bf16 probabilities as the P·V
/// A tiles (sc.pa), and the sum of the rounded values.
KVSCOPE_AMX_TARGET __attribute__((noinline)) void softmaxBlock(int grp, int n, float scale,
                                                               ScratchAmx& sc) {
    const float* st = sc.st.data() + grp * sc.block * 16;
    const __m512 vs = _mm512_set1_ps(scale);
    __m512 mx = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    for (int t = 0; t < n; ++t)
        mx = _mm512_max_ps(mx, _mm512_loadu_ps(st + 16 * t));
    const __m512 mOld = _mm512_loadu_ps(sc.m.data() + grp * 16);
    const __m512 mNew = _mm512_max_ps(mOld, _mm512_mul_ps(mx, vs));
    const __m512 alpha = exp2Neg512(_mm512_sub_ps(mOld, mNew)); // ~0 on the first block
    _mm512_storeu_ps(sc.m.data() + grp * 16, mNew);
    _mm512_storeu_ps(sc.alpha.data() + grp * 16, alpha);
    alignas(64) static constexpr std::uint16_t kPairIdx[32] = {
        0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
        8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    const __m512i pairIdx = _mm512_load_si512(kPairIdx);
    const __m512i hiMask = _mm512_set1_epi32(int(0xffff0000u));
    __m512 sum = _mm512_setzero_ps();
    for (int c = 0; 32 * c < n; ++c) {
        __m512i x[16]; // token pair 16c + i: (p[2i], p[2i + 1]) of every query row
        for (int i = 0; i < 16; ++i) {
            const int t = 32 * c + 2 * i;
            const __m512 p0 =
                t < n ? exp2Neg512(_mm512_fmsub_ps(_mm512_loadu_ps(st + 16 * t), vs, mNew))
                      : _mm512_setzero_ps();
            const __m512 p1 =
                t + 1 < n ? exp2Neg512(_mm512_fmsub_ps(_mm512_loadu_ps(st + 16 * t + 16), vs, mNew))
                          : _mm512_setzero_ps();
            const __m512bh pb = _mm512_cvtne2ps_pbh(p1, p0);
            __m512i bits;
            std::memcpy(&bits, &pb, sizeof bits);
            x[i] = _mm512_permutexvar_epi16(pairIdx, bits);
            sum = _mm512_add_ps(sum,
                                _mm512_add_ps(_mm512_castsi512_ps(_mm512_slli_epi32(x[i], 16)),
                                              _mm512_castsi512_ps(_mm512_and_si512(x[i], hiMask))));
        }
        transpose16(x); // x[r] = query row r's 32 probabilities, in token order
        std::uint16_t* pa = sc.pa.data() + (grp * (sc.block / 32) + c) * kTileB;
        for (int r = 0; r < 16; ++r)
            _mm512_storeu_si512(pa + 32 * r, x[r]);
    }
    float* l = sc.l.data() + grp * 16;
    _mm512_storeu_ps(l, _mm512_fmadd_ps(_mm512_loadu_ps(l), alpha, sum));
}

/// V rows of each token pair interleaved into B tiles: tile (c, b) row i, lane j =
/// (v[32c + 2i][16b + j], v[32c + 2i + 1][16b + j]).
template <int DV>
KVSCOPE_AMX_TARGET __attribute__((noinline)) void
interleaveV(const std::uint8_t* v, std::int64_t vs, int n, ScratchAmx& sc) {
    alignas(64) static constexpr std::uint16_t kLo[32] = {
        0, 32, 1, 33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
        8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
    const __m512i lo = _mm512_load_si512(kLo);
    const __m512i hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
    for (int c = 0; 32 * c < n; ++c)
        for (int i = 0; i < 16; ++i) {
            const std::uint8_t* a = v + (32 * c + 2 * i) * vs;
            std::uint16_t* d = sc.vv.data() + c * (DV / 16) * kTileB + 32 * i;
            for (int b = 0; b < DV / 32; ++b) {
                const __m512i x = _mm512_loadu_si512(a + 64 * b);
                const __m512i y = _mm512_loadu_si512(a + vs + 64 * b);
                _mm512_storeu_si512(d + (2 * b) * kTileB, _mm512_permutex2var_epi16(x, lo, y));
                _mm512_storeu_si512(d + (2 * b + 1) * kTileB, _mm512_permutex2var_epi16(x, hi, y));
            }
        }
}

/// acc = alpha * acc + P V for one group: four output tiles per pass, summed over the block in
/// tile registers.
template <int DV>
KVSCOPE_AMX_TARGET __attribute__((noinline)) void pvBlock(int grp, int rows, int n,
                                                          ScratchAmx& sc) {
    constexpr int NB = DV / 16;
    const int chunks = (n + 31) / 32;
    for (int b0 = 0; b0 < NB; b0 += 4) {
        for (int j = 0; j < 4; ++j)
            zeroC(j);
        for (int c = 0; c < chunks; ++c) {
            _tile_loadd(4, sc.pa.data() + (grp * (sc.block / 32) + c) * kTileB, 64);
            for (int j = 0; j < 4; ++j)
                dpC(j, sc.vv.data() + (c * NB + b0 + j) * kTileB);
        }
        for (int j = 0; j < 4; ++j)
            storeC(j, sc.cTmp.data() + j * 256);
        for (int r = 0; r < rows; ++r) {
            const __m512 al = _mm512_set1_ps(sc.alpha[std::size_t(grp * 16 + r)]);
            float* a = sc.acc.data() + (grp * 16 + r) * std::int64_t(DV) + b0 * 16;
            for (int j = 0; j < 4; ++j)
                _mm512_storeu_ps(a + 16 * j, _mm512_fmadd_ps(_mm512_loadu_ps(a + 16 * j), al,
                                                             _mm512_loadu_ps(sc.cTmp.data() +
                                                                             j * 256 + 16 * r)));
        }
    }
}

template <int DK, int DV>
KVSCOPE_AMX_TARGET void attendAmxImpl(const SegmentBf16& sg, ScratchAmx& sc) {
    const int R = int(sg.rows);
    const int groups = (R + 15) / 16;
    const bool fp8 = sg.dtype != KvDtype::Bf16, mla = sg.values == sg.keys;
    prepareQ<DK>(sg, groups, sc);
    const int kBlock = blockTokens(groups);
    sc.block = kBlock;
    sc.kTile.resize(std::size_t(kBlock * DK));
    sc.vTile.resize(std::size_t(kBlock * DV));
    sc.vv.resize(std::size_t(kBlock / 32 * DV / 16 * kTileB));
    sc.pa.resize(std::size_t(groups * kBlock / 32 * kTileB));
    sc.st.resize(std::size_t(groups * kBlock * 16));
    sc.acc.assign(std::size_t(groups * 16 * DV), 0.0f);
    sc.m.assign(std::size_t(groups * 16), -std::numeric_limits<float>::infinity());
    sc.l.assign(std::size_t(groups * 16), 0.0f);
    sc.alpha.resize(std::size_t(groups * 16));
    sc.cTmp.resize(4 * 256);
    loadTileConfig();
    for (std::int64_t t = sg.t0; t < sg.t1; t += kBlock) {
        const int n = int(std::min<std::int64_t>(kBlock, sg.t1 - t));
        const std::uint8_t* k = sg.keys + t * sg.keyRowBytes;
        const std::uint8_t* v = sg.values + t * sg.valueRowBytes;
        std::int64_t ks = sg.keyRowBytes, vs = sg.valueRowBytes;
        if (fp8 || n < kBlock) { // decode, or pad so no tile reads past the segment
            stageBlock(k, ks, n, kBlock, DK, fp8, sc.kTile.data());
            k = reinterpret_cast<const std::uint8_t*>(sc.kTile.data());
            ks = DK * 2;
            if (mla) {
                v = k;
                vs = ks;
            } else {
                stageBlock(v, vs, n, kBlock, DV, fp8, sc.vTile.data());
                v = reinterpret_cast<const std::uint8_t*>(sc.vTile.data());
                vs = DV * 2;
            }
        }
        scoreBlock<DK>(k, ks, n, groups, sc);
        interleaveV<DV>(v, vs, n, sc);
        for (int grp = 0; grp < groups; ++grp) {
            softmaxBlock(grp, n, sg.scoreScale, sc);
            pvBlock<DV>(grp, std::min(16, R - 16 * grp), n, sc);
        }
    }
    _tile_release();
    for (int r = 0; r < R; ++r) {
        const float l = sc.l[std::size_t(r)];
        const float inv = l > 0 ? 1.0f / l : 0.0f;
        const float* a = sc.acc.data() + r * std::int64_t(DV);
        for (int j = 0; j < DV; ++j)
            sg.out[r * std::int64_t(DV) + j] = a[j] * inv;
        sg.lse[r] =
            l > 0 ? sc.m[std::size_t(r)] + std::log2(l) : -std::numeric_limits<float>::infinity();
    }
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

bool amxServes(std::int64_t rows) {
    const char* force = std::getenv("KVSCOPE_CPU_KERNEL");
    return amxEnabled() && (rows >= kAmxMinRows || (force && std::string(force) == "amx"));
}

} // namespace kvscope::gpu::detail::cpu
