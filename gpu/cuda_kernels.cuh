// Decode-attention kernels for Hopper (sm_90, portable PTX): GQA family and absorbed MLA with
// tensor cores (mma.sync m16n8k16, fp32 accumulation) across the query rows that share a KV
// stream, split-KV with a log-sum-exp combine, fp8 e4m3 KV dequantised in registers.
// Internal to gpu/; included by cuda_backend.cu only.
#pragma once

#include "gpu/numerics.h"

#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

namespace kvscope::gpu::cuda {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;

// --- Element types
// ---------------------------------------------------------------------------------
/// Storage tags: the KV element (Kv) and the tensor-core operand type (Mma) it is converted to.
struct Bf16Kv {
    static constexpr int kBytes = 2;
    static constexpr bool kIsFp16 = false;
};
struct Fp16Kv {
    static constexpr int kBytes = 2;
    static constexpr bool kIsFp16 = true;
};
struct Fp8Kv { // e4m3, dequantised to bf16 (exact: 3 mantissa bits, exponents fit)
    static constexpr int kBytes = 1;
    static constexpr bool kIsFp16 = false;
};

/// Two consecutive elements of one row (K operand): packed 2 x mma type, low element first.
template <class Kv> __device__ __forceinline__ std::uint32_t loadPair(const std::uint8_t* p);
template <> __device__ __forceinline__ std::uint32_t loadPair<Bf16Kv>(const std::uint8_t* p) {
    return *reinterpret_cast<const std::uint32_t*>(p);
}
template <> __device__ __forceinline__ std::uint32_t loadPair<Fp16Kv>(const std::uint8_t* p) {
    return *reinterpret_cast<const std::uint32_t*>(p);
}
__device__ __forceinline__ std::uint32_t fp8x2ToBf16x2(std::uint16_t two) {
    const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(two), __NV_E4M3);
    const float2 f = __half22float2(__half2(h));
    const __nv_bfloat162 b = __floats2bfloat162_rn(f.x, f.y); // exact for e4m3 values
    return *reinterpret_cast<const std::uint32_t*>(&b);
}
template <> __device__ __forceinline__ std::uint32_t loadPair<Fp8Kv>(const std::uint8_t* p) {
    return fp8x2ToBf16x2(*reinterpret_cast<const std::uint16_t*>(p));
}

/// One element from each of two rows (V operand, k-major): low = row0.
template <class Kv>
__device__ __forceinline__ std::uint32_t loadColumnPair(const std::uint8_t* row0,
                                                        const std::uint8_t* row1);
template <>
__device__ __forceinline__ std::uint32_t loadColumnPair<Bf16Kv>(const std::uint8_t* row0,
                                                                const std::uint8_t* row1) {
    return std::uint32_t(*reinterpret_cast<const std::uint16_t*>(row0)) |
           (std::uint32_t(*reinterpret_cast<const std::uint16_t*>(row1)) << 16);
}
template <>
__device__ __forceinline__ std::uint32_t loadColumnPair<Fp16Kv>(const std::uint8_t* row0,
                                                                const std::uint8_t* row1) {
    return loadColumnPair<Bf16Kv>(row0, row1);
}
template <>
__device__ __forceinline__ std::uint32_t loadColumnPair<Fp8Kv>(const std::uint8_t* row0,
                                                               const std::uint8_t* row1) {
    return fp8x2ToBf16x2(std::uint16_t(*row0 | (std::uint16_t(*row1) << 8)));
}

/// Packs two fp32 values as the mma operand type (round to nearest).
template <bool kFp16> __device__ __forceinline__ std::uint32_t packPair(float lo, float hi) {
    if constexpr (kFp16) {
        const __half2 h = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<const std::uint32_t*>(&h);
    } else {
        const __nv_bfloat162 b = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<const std::uint32_t*>(&b);
    }
}

/// A probability rounded to the mma operand type and back: the row sums add exactly the weights
/// the P·V product uses, so the output is their convex combination (as the CPU kernel does).
template <bool kFp16> __device__ __forceinline__ float roundToOperand(float x) {
    if constexpr (kFp16)
        return __half2float(__float2half_rn(x));
    else
        return __bfloat162float(__float2bfloat16_rn(x));
}

/// Activation (query/output) element: bf16, or fp16 when the KV is fp16.
template <bool kFp16>
__device__ __forceinline__ void storeActivation(void* out, std::int64_t i, float x) {
    if constexpr (kFp16)
        reinterpret_cast<__half*>(out)[i] = __float2half_rn(x);
    else
        reinterpret_cast<__nv_bfloat16*>(out)[i] = __float2bfloat16_rn(x);
}

/// D = A(16x16, row) * B(16x8, col) + D, fp32 accumulators.
template <bool kFp16>
__device__ __forceinline__ void mma16816(float (&d)[4], const std::uint32_t (&a)[4],
                                         std::uint32_t b0, std::uint32_t b1) {
    if constexpr (kFp16) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    } else {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
}

__device__ __forceinline__ float fastExp2(float x) { // ex2.approx(-inf) = +0
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/// 16-byte global -> shared copy; src_bytes 0 zero-fills (tokens past the end).
__device__ __forceinline__ void cpAsync16(void* smem, const void* gmem, bool valid) {
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    const int bytes = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(bytes));
}
__device__ __forceinline__ void cpAsyncCommit() {
    asm volatile("cp.async.commit_group;\n" ::);
}
template <int N> __device__ __forceinline__ void cpAsyncWait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ float quadMax(float x) {
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
    return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quadSum(float x) {
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// --- Parameters
// ------------------------------------------------------------------------------------
struct DecodeParams {
    const void* q;         ///< [B][h][dq] activation type
    const std::uint8_t* k; ///< GQA: [B][h_kv][S][d]; MLA: latent cache [B][S][r + d_rope]
    const std::uint8_t* v; ///< GQA: [B][h_kv][S][d]; MLA: unused
    void* out;             ///< [B][h][dv] activation type (when splits == 1)
    float* partialOut;     ///< [splits][B][h][dv] normalised per split (when splits > 1)
    float* partialLse;     ///< [splits][B][h], log2 domain
    int batch, qHeads, kvHeads, group, context, splits, tokensPerSplit;
    float scaleLog2; ///< softmax scale * log2(e)
};

// --- GQA family
// ------------------------------------------------------------------------------------
/// Tile constants of the GQA kernel for head dim D and MT 16-row M tiles (g <= 16·MT).
template <int D, int MT, class Kv> struct GqaTile {
    static constexpr int kTokens = D == 256 ? 32 : 64;    ///< tokens per shared-memory stage
    static constexpr int kChunks = kTokens / 16;          ///< 16-token chunks per stage
    static constexpr int kRowBytes = D * Kv::kBytes + 16; ///< +16: conflict-free fragment loads
    static constexpr int kStageBytes = 2 * kTokens * kRowBytes; ///< K and V
    static constexpr int kWarpMt = MT < kWarps ? MT : kWarps;   ///< M tiles covered at once
    static constexpr int kMtPerWarp = MT / kWarpMt;             ///< M tiles per warp
    static constexpr int kWays = kWarps / kWarpMt;              ///< warps splitting the tokens
    static constexpr int kVecPerRow = D * Kv::kBytes / 16;
    static constexpr int kCombineBytes = kWays * MT * 16 * (D + 2) * 4;
    static constexpr int kSmemBytes =
        2 * kStageBytes > kCombineBytes ? 2 * kStageBytes : kCombineBytes;
    static_assert(D % 16 == 0 && (D * Kv::kBytes) % 16 == 0, "head dim must fill 16-byte vectors");
    static_assert(MT == 1 || MT == 2 || MT == 4 || MT == 8, "M tiles: 1, 2, 4 or 8");
    static_assert(kTokens % 16 == 0 && kWarpMt * kWays == kWarps, "warp layout");
    static_assert(kMtPerWarp * kWarpMt == MT, "M tiles split evenly over warps");
    static_assert(kSmemBytes <= 227 * 1024, "shared memory per block on sm_90");
};

/// Grid (splits, h_kv, B), 128 threads. Each block reads its (b, kv head, split) chunk of K and
/// V once into shared memory (cp.async, double-buffered) and serves all g query rows from it
/// with mma: S = Q·K^T (rows = heads), online softmax in registers, O += P·V.
template <int D, int MT, class Kv>
__global__ void __launch_bounds__(kThreads) gqaDecodeKernel(DecodeParams p) {
    using Tile = GqaTile<D, MT, Kv>;
    constexpr bool kFp16 = Kv::kIsFp16;
    extern __shared__ __align__(16) std::uint8_t smem[];
    const int split = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int gid = lane / 4, tig = lane % 4; // mma groupID and threadID_in_group
    const int way = warp / Tile::kWarpMt, mtBase = warp % Tile::kWarpMt;

    const int t0 = split * p.tokensPerSplit;
    const int t1 = min(p.context, t0 + p.tokensPerSplit);
    const int nTok = max(0, t1 - t0);
    const std::size_t streamOffset =
        (std::size_t(b) * p.kvHeads + kvh) * std::size_t(p.context) * D * Kv::kBytes;
    const std::uint8_t* kBase = p.k + streamOffset;
    const std::uint8_t* vBase = p.v + streamOffset;

    // Query fragments (A operand) for this warp's M tiles, kept in registers.
    std::uint32_t qa[Tile::kMtPerWarp][D / 16][4];
    const auto* q = reinterpret_cast<const std::uint16_t*>(p.q);
#pragma unroll
    for (int i = 0; i < Tile::kMtPerWarp; ++i) {
        const int mt = mtBase + i * Tile::kWarpMt;
        const int r0 = mt * 16 + gid, r1 = r0 + 8; // rows within the group
        const std::size_t row0 = (std::size_t(b) * p.qHeads + std::size_t(kvh) * p.group + r0) * D;
        const std::size_t row1 = row0 + 8 * D;
#pragma unroll
        for (int ks = 0; ks < D / 16; ++ks) {
            const int c = ks * 16 + tig * 2;
            auto pair = [&](bool valid, std::size_t at) -> std::uint32_t {
                return valid ? *reinterpret_cast<const std::uint32_t*>(q + at) : 0u;
            };
            qa[i][ks][0] = pair(r0 < p.group, row0 + c);
            qa[i][ks][1] = pair(r1 < p.group, row1 + c);
            qa[i][ks][2] = pair(r0 < p.group, row0 + c + 8);
            qa[i][ks][3] = pair(r1 < p.group, row1 + c + 8);
        }
    }

    float acc[Tile::kMtPerWarp][D / 8][4];
    float mRow[Tile::kMtPerWarp][2], lRow[Tile::kMtPerWarp][2];
#pragma unroll
    for (int i = 0; i < Tile::kMtPerWarp; ++i) {
        mRow[i][0] = mRow[i][1] = -INFINITY;
        lRow[i][0] = lRow[i][1] = 0.f;
#pragma unroll
        for (int n = 0; n < D / 8; ++n)
            acc[i][n][0] = acc[i][n][1] = acc[i][n][2] = acc[i][n][3] = 0.f;
    }

    auto loadStage = [&](int tile, int stage) {
        std::uint8_t* ks = smem + stage * Tile::kStageBytes;
        std::uint8_t* vs = ks + Tile::kTokens * Tile::kRowBytes;
        for (int i = threadIdx.x; i < Tile::kTokens * Tile::kVecPerRow; i += kThreads) {
            const int row = i / Tile::kVecPerRow, col = i % Tile::kVecPerRow;
            const int tok = tile * Tile::kTokens + row;
            const bool valid = tok < nTok;
            const std::size_t off = valid ? (std::size_t(t0 + tok) * D * Kv::kBytes + col * 16) : 0;
            cpAsync16(ks + row * Tile::kRowBytes + col * 16, kBase + off, valid);
            cpAsync16(vs + row * Tile::kRowBytes + col * 16, vBase + off, valid);
        }
        cpAsyncCommit();
    };

    const int nTiles = (nTok + Tile::kTokens - 1) / Tile::kTokens;
    if (nTiles > 0)
        loadStage(0, 0);
    for (int tile = 0; tile < nTiles; ++tile) {
        if (tile + 1 < nTiles) {
            loadStage(tile + 1, (tile + 1) & 1);
            cpAsyncWait<1>();
        } else {
            cpAsyncWait<0>();
        }
        __syncthreads();
        const std::uint8_t* ks = smem + (tile & 1) * Tile::kStageBytes;
        const std::uint8_t* vs = ks + Tile::kTokens * Tile::kRowBytes;
        for (int chunk = way; chunk < Tile::kChunks; chunk += Tile::kWays) {
            const int tokBase = tile * Tile::kTokens + chunk * 16; // token of score column 0
            // Scores: two n8 tiles of 8 tokens each.
            float s[Tile::kMtPerWarp][2][4];
#pragma unroll
            for (int i = 0; i < Tile::kMtPerWarp; ++i)
#pragma unroll
                for (int n = 0; n < 2; ++n)
                    s[i][n][0] = s[i][n][1] = s[i][n][2] = s[i][n][3] = 0.f;
#pragma unroll
            for (int kstep = 0; kstep < D / 16; ++kstep) {
                std::uint32_t kb[2][2];
#pragma unroll
                for (int n = 0; n < 2; ++n) {
                    // B(k = dim, n = token): token chunk*16 + n*8 + gid, dims kstep*16 + tig*2 (+8)
                    const std::uint8_t* row = ks + (chunk * 16 + n * 8 + gid) * Tile::kRowBytes;
                    kb[n][0] = loadPair<Kv>(row + (kstep * 16 + tig * 2) * Kv::kBytes);
                    kb[n][1] = loadPair<Kv>(row + (kstep * 16 + tig * 2 + 8) * Kv::kBytes);
                }
#pragma unroll
                for (int i = 0; i < Tile::kMtPerWarp; ++i)
#pragma unroll
                    for (int n = 0; n < 2; ++n)
                        mma16816<kFp16>(s[i][n], qa[i][kstep], kb[n][0], kb[n][1]);
            }
            // Online softmax per row; each thread holds rows gid (elements 0,1) and gid+8 (2,3).
            std::uint32_t pa[Tile::kMtPerWarp][4];
#pragma unroll
            for (int i = 0; i < Tile::kMtPerWarp; ++i) {
                float rowMax[2] = {-INFINITY, -INFINITY};
#pragma unroll
                for (int n = 0; n < 2; ++n)
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int tok = tokBase + n * 8 + tig * 2 + (e & 1);
                        float x = s[i][n][e] * p.scaleLog2;
                        if (tok >= nTok)
                            x = -INFINITY;
                        s[i][n][e] = x;
                        rowMax[e >> 1] = fmaxf(rowMax[e >> 1], x);
                    }
                float scaleOld[2];
#pragma unroll
                for (int r = 0; r < 2; ++r) {
                    const float mNew = fmaxf(mRow[i][r], quadMax(rowMax[r]));
                    const float mUse = mNew == -INFINITY ? 0.f : mNew;
                    scaleOld[r] = fastExp2(mRow[i][r] - mUse);
                    mRow[i][r] = mNew;
                    rowMax[r] = mUse;
                }
                float rowSum[2] = {0.f, 0.f};
#pragma unroll
                for (int n = 0; n < 2; ++n)
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const float pr =
                            roundToOperand<kFp16>(fastExp2(s[i][n][e] - rowMax[e >> 1]));
                        s[i][n][e] = pr;
                        rowSum[e >> 1] += pr;
                    }
                lRow[i][0] = lRow[i][0] * scaleOld[0] +
                             rowSum[0]; // per-thread partial; quad-summed at the end
                lRow[i][1] = lRow[i][1] * scaleOld[1] + rowSum[1];
#pragma unroll
                for (int n = 0; n < D / 8; ++n) {
                    acc[i][n][0] *= scaleOld[0];
                    acc[i][n][1] *= scaleOld[0];
                    acc[i][n][2] *= scaleOld[1];
                    acc[i][n][3] *= scaleOld[1];
                }
                // P as the A operand (16 rows x 16 tokens): C layout of two n8 tiles = A layout.
                pa[i][0] = packPair<kFp16>(s[i][0][0], s[i][0][1]);
                pa[i][1] = packPair<kFp16>(s[i][0][2], s[i][0][3]);
                pa[i][2] = packPair<kFp16>(s[i][1][0], s[i][1][1]);
                pa[i][3] = packPair<kFp16>(s[i][1][2], s[i][1][3]);
            }
            // O += P·V: B(k = token, n = dim): tokens chunk*16 + tig*2 (+1, +8, +9), dim n*8 + gid.
            const std::uint8_t* v0 = vs + (chunk * 16 + tig * 2) * Tile::kRowBytes;
#pragma unroll
            for (int n = 0; n < D / 8; ++n) {
                const int colBytes = (n * 8 + gid) * Kv::kBytes;
                const std::uint32_t vb0 =
                    loadColumnPair<Kv>(v0 + colBytes, v0 + Tile::kRowBytes + colBytes);
                const std::uint32_t vb1 = loadColumnPair<Kv>(v0 + 8 * Tile::kRowBytes + colBytes,
                                                             v0 + 9 * Tile::kRowBytes + colBytes);
#pragma unroll
                for (int i = 0; i < Tile::kMtPerWarp; ++i)
                    mma16816<kFp16>(acc[i][n], pa[i], vb0, vb1);
            }
        }
        __syncthreads(); // the stage is overwritten by the load issued next iteration
    }

    // Merge the token ways through shared memory: [way][row][D] acc, then m and l per row.
    float* cAcc = reinterpret_cast<float*>(smem);
    float* cM = cAcc + Tile::kWays * MT * 16 * D;
    float* cL = cM + Tile::kWays * MT * 16;
#pragma unroll
    for (int i = 0; i < Tile::kMtPerWarp; ++i) {
        const int mt = mtBase + i * Tile::kWarpMt;
        const int r0 = mt * 16 + gid;
        const float l0 = quadSum(lRow[i][0]), l1 = quadSum(lRow[i][1]);
        float* base = cAcc + (way * MT * 16) * D;
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
            const int c = n * 8 + tig * 2;
            base[r0 * D + c] = acc[i][n][0];
            base[r0 * D + c + 1] = acc[i][n][1];
            base[(r0 + 8) * D + c] = acc[i][n][2];
            base[(r0 + 8) * D + c + 1] = acc[i][n][3];
        }
        if (tig == 0) {
            cM[way * MT * 16 + r0] = mRow[i][0];
            cM[way * MT * 16 + r0 + 8] = mRow[i][1];
            cL[way * MT * 16 + r0] = l0;
            cL[way * MT * 16 + r0 + 8] = l1;
        }
    }
    __syncthreads();
    const int rows = min(p.group, MT * 16);
    for (int idx = threadIdx.x; idx < rows * D; idx += kThreads) {
        const int r = idx / D, c = idx % D;
        float mMax = -INFINITY;
#pragma unroll
        for (int w = 0; w < Tile::kWays; ++w)
            mMax = fmaxf(mMax, cM[w * MT * 16 + r]);
        float l = 0.f, o = 0.f;
        if (mMax != -INFINITY) {
#pragma unroll
            for (int w = 0; w < Tile::kWays; ++w) {
                const float wt = fastExp2(cM[w * MT * 16 + r] - mMax);
                l += wt * cL[w * MT * 16 + r];
                o += wt * cAcc[(w * MT * 16 + r) * D + c];
            }
        }
        const float val = l > 0.f ? o / l : 0.f;
        const std::size_t row = std::size_t(b) * p.qHeads + std::size_t(kvh) * p.group + r;
        if (p.splits == 1) {
            storeActivation<kFp16>(p.out, row * D + c, val);
        } else {
            const std::size_t rowsAll = std::size_t(p.batch) * p.qHeads;
            p.partialOut[(std::size_t(split) * rowsAll + row) * D + c] = val;
            if (c == 0)
                p.partialLse[std::size_t(split) * rowsAll + row] =
                    l > 0.f ? mMax + __log2f(l) : -INFINITY;
        }
    }
}

// --- Absorbed MLA
// ---------------------------------------------------------------------------------
/// Latent width 512 + RoPE 64 (DeepSeek-V2/V3, Kimi-K2); the values are the first 512.
template <class Kv> struct MlaTile {
    static constexpr int kDqk = 576, kDv = 512;
    static constexpr int kTokens = 32; ///< tokens per stage: 8 per warp for the scores
    static constexpr int kRowBytes = kDqk * Kv::kBytes + 16;
    static constexpr int kStageBytes = kTokens * kRowBytes;
    static constexpr int kQRowBytes = kDqk * 2 + 16; ///< queries are 16-bit
    static constexpr int kQBytes = 16 * kQRowBytes;
    static constexpr int kPRowBytes = kTokens * 2 + 16;
    static constexpr int kPBytes = 16 * kPRowBytes;
    static constexpr int kRedBytes = 2 * kWarps * 16 * 4;
    static constexpr int kSmemBytes = kQBytes + 2 * kStageBytes + kPBytes + kRedBytes;
    static constexpr int kVecPerRow = kDqk * Kv::kBytes / 16;
    static constexpr int kDvPerWarp = kDv / kWarps; ///< output columns each warp owns
    static_assert(kTokens == 8 * kWarps, "one n8 score tile per warp");
    static_assert(kDvPerWarp % 8 == 0 && kDqk % 16 == 0, "mma tiling");
    static_assert(kSmemBytes <= 227 * 1024, "shared memory per block on sm_90");
};

/// Grid (splits, ceil(h/16), B), 128 threads. A block serves 16 heads of one request over one
/// split of the latent cache: warp w scores tokens 8w..8w+7 of each stage (all 576 dims), the
/// probabilities go through shared memory, and warp w accumulates output columns 128w..128w+127.
template <class Kv> __global__ void __launch_bounds__(kThreads) mlaDecodeKernel(DecodeParams p) {
    using Tile = MlaTile<Kv>;
    constexpr bool kFp16 = Kv::kIsFp16;
    constexpr int kDqk = Tile::kDqk, kDv = Tile::kDv;
    extern __shared__ __align__(16) std::uint8_t smem[];
    std::uint8_t* qs = smem;
    std::uint8_t* stages = qs + Tile::kQBytes;
    std::uint8_t* ps = stages + 2 * Tile::kStageBytes;
    float* redMax = reinterpret_cast<float*>(ps + Tile::kPBytes);
    float* redSum = redMax + kWarps * 16;

    const int split = blockIdx.x, mTile = blockIdx.y, b = blockIdx.z;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int gid = lane / 4, tig = lane % 4;
    const int t0 = split * p.tokensPerSplit;
    const int t1 = min(p.context, t0 + p.tokensPerSplit);
    const int nTok = max(0, t1 - t0);
    const std::uint8_t* cache = p.k + std::size_t(b) * p.context * kDqk * Kv::kBytes;

    // Queries of heads 16·mTile .. +15 into shared memory (zero rows past h).
    for (int i = threadIdx.x; i < 16 * (kDqk * 2 / 16); i += kThreads) {
        const int r = i / (kDqk * 2 / 16), col = i % (kDqk * 2 / 16);
        const int head = mTile * 16 + r;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (head < p.qHeads)
            v = *reinterpret_cast<const uint4*>(reinterpret_cast<const std::uint8_t*>(p.q) +
                                                (std::size_t(b) * p.qHeads + head) * kDqk * 2 +
                                                col * 16);
        *reinterpret_cast<uint4*>(qs + r * Tile::kQRowBytes + col * 16) = v;
    }

    auto loadStage = [&](int tile, int stage) {
        std::uint8_t* dst = stages + stage * Tile::kStageBytes;
        for (int i = threadIdx.x; i < Tile::kTokens * Tile::kVecPerRow; i += kThreads) {
            const int row = i / Tile::kVecPerRow, col = i % Tile::kVecPerRow;
            const int tok = tile * Tile::kTokens + row;
            const bool valid = tok < nTok;
            const std::size_t off =
                valid ? (std::size_t(t0 + tok) * kDqk * Kv::kBytes + col * 16) : 0;
            cpAsync16(dst + row * Tile::kRowBytes + col * 16, cache + off, valid);
        }
        cpAsyncCommit();
    };

    float acc[Tile::kDvPerWarp / 8][4];
#pragma unroll
    for (int n = 0; n < Tile::kDvPerWarp / 8; ++n)
        acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
    float mRow[2] = {-INFINITY, -INFINITY}, lRow[2] = {0.f, 0.f};

    const int nTiles = (nTok + Tile::kTokens - 1) / Tile::kTokens;
    if (nTiles > 0)
        loadStage(0, 0);
    for (int tile = 0; tile < nTiles; ++tile) {
        if (tile + 1 < nTiles) {
            loadStage(tile + 1, (tile + 1) & 1);
            cpAsyncWait<1>();
        } else {
            cpAsyncWait<0>();
        }
        __syncthreads();
        const std::uint8_t* cs = stages + (tile & 1) * Tile::kStageBytes;
        // Scores for tokens 8·warp .. +7 (one n8 tile), 36 k-steps over 576 dims.
        float s[4] = {0.f, 0.f, 0.f, 0.f};
        const std::uint8_t* krow = cs + (warp * 8 + gid) * Tile::kRowBytes;
        const std::uint8_t* q0 = qs + gid * Tile::kQRowBytes;
        const std::uint8_t* q1 = q0 + 8 * Tile::kQRowBytes;
#pragma unroll 4
        for (int kstep = 0; kstep < kDqk / 16; ++kstep) {
            const int c = kstep * 16 + tig * 2;
            const std::uint32_t a[4] = {*reinterpret_cast<const std::uint32_t*>(q0 + c * 2),
                                        *reinterpret_cast<const std::uint32_t*>(q1 + c * 2),
                                        *reinterpret_cast<const std::uint32_t*>(q0 + (c + 8) * 2),
                                        *reinterpret_cast<const std::uint32_t*>(q1 + (c + 8) * 2)};
            mma16816<kFp16>(s, a, loadPair<Kv>(krow + c * Kv::kBytes),
                            loadPair<Kv>(krow + (c + 8) * Kv::kBytes));
        }
        float rowMax[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int tok = tile * Tile::kTokens + warp * 8 + tig * 2 + (e & 1);
            s[e] = tok < nTok ? s[e] * p.scaleLog2 : -INFINITY;
            rowMax[e >> 1] = fmaxf(rowMax[e >> 1], s[e]);
        }
        rowMax[0] = quadMax(rowMax[0]);
        rowMax[1] = quadMax(rowMax[1]);
        if (tig == 0) {
            redMax[warp * 16 + gid] = rowMax[0];
            redMax[warp * 16 + gid + 8] = rowMax[1];
        }
        __syncthreads();
        float scaleOld[2], mUse[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            float tileMax = -INFINITY;
#pragma unroll
            for (int w = 0; w < kWarps; ++w)
                tileMax = fmaxf(tileMax, redMax[w * 16 + gid + 8 * r]);
            const float mNew = fmaxf(mRow[r], tileMax); // identical in every warp
            mUse[r] = mNew == -INFINITY ? 0.f : mNew;
            scaleOld[r] = fastExp2(mRow[r] - mUse[r]);
            mRow[r] = mNew;
        }
        float rowSum[2] = {0.f, 0.f};
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            s[e] = roundToOperand<kFp16>(fastExp2(s[e] - mUse[e >> 1]));
            rowSum[e >> 1] += s[e];
        }
        // P (16 heads x 32 tokens) to shared memory in the mma operand type.
        *reinterpret_cast<std::uint32_t*>(ps + gid * Tile::kPRowBytes + (warp * 8 + tig * 2) * 2) =
            packPair<kFp16>(s[0], s[1]);
        *reinterpret_cast<std::uint32_t*>(ps + (gid + 8) * Tile::kPRowBytes +
                                          (warp * 8 + tig * 2) * 2) = packPair<kFp16>(s[2], s[3]);
        rowSum[0] = quadSum(rowSum[0]);
        rowSum[1] = quadSum(rowSum[1]);
        if (tig == 0) {
            redSum[warp * 16 + gid] = rowSum[0];
            redSum[warp * 16 + gid + 8] = rowSum[1];
        }
        __syncthreads();
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            float tileSum = 0.f;
#pragma unroll
            for (int w = 0; w < kWarps; ++w)
                tileSum += redSum[w * 16 + gid + 8 * r];
            lRow[r] = lRow[r] * scaleOld[r] + tileSum; // full row sum, identical in every warp
        }
#pragma unroll
        for (int n = 0; n < Tile::kDvPerWarp / 8; ++n) {
            acc[n][0] *= scaleOld[0];
            acc[n][1] *= scaleOld[0];
            acc[n][2] *= scaleOld[1];
            acc[n][3] *= scaleOld[1];
        }
        // O[:, 128·warp ..] += P (16 x 32) · C[tokens, dims]: two k16 steps over the tokens.
#pragma unroll
        for (int kstep = 0; kstep < Tile::kTokens / 16; ++kstep) {
            const int c = kstep * 16 + tig * 2;
            const std::uint32_t a[4] = {
                *reinterpret_cast<const std::uint32_t*>(ps + gid * Tile::kPRowBytes + c * 2),
                *reinterpret_cast<const std::uint32_t*>(ps + (gid + 8) * Tile::kPRowBytes + c * 2),
                *reinterpret_cast<const std::uint32_t*>(ps + gid * Tile::kPRowBytes + (c + 8) * 2),
                *reinterpret_cast<const std::uint32_t*>(ps + (gid + 8) * Tile::kPRowBytes +
                                                        (c + 8) * 2)};
            const std::uint8_t* v0 = cs + c * Tile::kRowBytes; // token kstep*16 + tig*2
#pragma unroll
            for (int n = 0; n < Tile::kDvPerWarp / 8; ++n) {
                const int colBytes = (warp * Tile::kDvPerWarp + n * 8 + gid) * Kv::kBytes;
                const std::uint32_t vb0 =
                    loadColumnPair<Kv>(v0 + colBytes, v0 + Tile::kRowBytes + colBytes);
                const std::uint32_t vb1 = loadColumnPair<Kv>(v0 + 8 * Tile::kRowBytes + colBytes,
                                                             v0 + 9 * Tile::kRowBytes + colBytes);
                mma16816<kFp16>(acc[n], a, vb0, vb1);
            }
        }
        __syncthreads(); // P, the reductions and the stage are rewritten next iteration
    }

    // Each warp owns distinct output columns: write them directly.
    const std::size_t rowsAll = std::size_t(p.batch) * p.qHeads;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const int head = mTile * 16 + gid + 8 * r;
        if (head >= p.qHeads)
            continue;
        const std::size_t row = std::size_t(b) * p.qHeads + head;
        const float inv = lRow[r] > 0.f ? 1.f / lRow[r] : 0.f;
#pragma unroll
        for (int n = 0; n < Tile::kDvPerWarp / 8; ++n) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int c = warp * Tile::kDvPerWarp + n * 8 + tig * 2 + e;
                const float val = acc[n][2 * r + e] * inv;
                if (p.splits == 1)
                    storeActivation<kFp16>(p.out, row * kDv + c, val);
                else
                    p.partialOut[(std::size_t(split) * rowsAll + row) * kDv + c] = val;
            }
        }
        if (p.splits > 1 && warp == 0 && tig == 0)
            p.partialLse[std::size_t(split) * rowsAll + row] =
                lRow[r] > 0.f ? mRow[r] + __log2f(lRow[r]) : -INFINITY;
    }
}

// --- Split combine -------------------------------------------------------------------------------
/// One block per output row: out = Σ_s 2^{lse_s} o_s / Σ_s 2^{lse_s}.
template <bool kFp16> __global__ void combineKernel(DecodeParams p, int dv) {
    const std::size_t row = blockIdx.x;
    const std::size_t rowsAll = std::size_t(p.batch) * p.qHeads;
    float mMax = -INFINITY;
    for (int s = 0; s < p.splits; ++s)
        mMax = fmaxf(mMax, p.partialLse[s * rowsAll + row]);
    float wsum = 0.f;
    for (int s = 0; s < p.splits; ++s) {
        const float lse = p.partialLse[s * rowsAll + row];
        wsum += mMax == -INFINITY ? 0.f : fastExp2(lse - mMax);
    }
    for (int c = threadIdx.x; c < dv; c += blockDim.x) {
        float o = 0.f;
        if (wsum > 0.f)
            for (int s = 0; s < p.splits; ++s)
                o += fastExp2(p.partialLse[s * rowsAll + row] - mMax) *
                     p.partialOut[(s * rowsAll + row) * dv + c];
        storeActivation<kFp16>(p.out, row * dv + c, wsum > 0.f ? o / wsum : 0.f);
    }
}

// --- Input generation and ceilings
// ------------------------------------------------------------------
/// Fills n elements with num::uniformInput(seed, tensor, i) * scale in a storage format
/// (0 bf16, 1 fp16, 2 fp8 e4m3, 3 fp32): the same bits the host reference regenerates.
__global__ void fillKernel(std::uint8_t* dst, std::size_t n, int format, std::uint64_t seed,
                           std::uint32_t tensor, float scale) {
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * blockDim.x) {
        const float x = num::uniformInput(seed, tensor, i) * scale;
        switch (format) {
        case 0:
            reinterpret_cast<std::uint16_t*>(dst)[i] = num::floatToBf16(x);
            break;
        case 1:
            reinterpret_cast<std::uint16_t*>(dst)[i] = num::floatToFp16(x);
            break;
        case 2:
            dst[i] = num::floatToFp8e4m3(x);
            break;
        default:
            reinterpret_cast<float*>(dst)[i] = x;
            break;
        }
    }
}

/// Reads n 16-byte vectors, four independent loads in flight per thread.
__global__ void readBandwidthKernel(const uint4* __restrict__ src, std::size_t n, unsigned* sink) {
    const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
    std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
    uint4 x = make_uint4(0, 0, 0, 0);
    for (; i + 3 * stride < n; i += 4 * stride) {
        const uint4 a = __ldcs(src + i), b = __ldcs(src + i + stride),
                    c = __ldcs(src + i + 2 * stride), d = __ldcs(src + i + 3 * stride);
        x.x ^= a.x ^ b.x ^ c.x ^ d.x;
        x.y ^= a.y ^ b.y ^ c.y ^ d.y;
        x.z ^= a.z ^ b.z ^ c.z ^ d.z;
        x.w ^= a.w ^ b.w ^ c.w ^ d.w;
    }
    for (; i < n; i += stride) {
        const uint4 a = __ldcs(src + i);
        x.x ^= a.x;
        x.y ^= a.y;
        x.z ^= a.z;
        x.w ^= a.w;
    }
    if ((x.x ^ x.y ^ x.z ^ x.w) == 0x9e3779b9u) // practically never: keeps the loads alive
        sink[0] = x.x;
}

} // namespace kvscope::gpu::cuda
