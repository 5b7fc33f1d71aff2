// The absorbed MLA decode kernel (latent 512 + rope 64) on mma.sync. Internal to gpu/; included
// through cuda_kernels.cuh.
#pragma once

#include "gpu/cuda_device.cuh"

namespace kvscope::gpu::cuda {

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

/// Copies the queries of heads 16·mTile .. +15 into shared memory (zero rows past h).
template <class Kv>
__device__ __forceinline__ void loadMlaQueries(DecodeParams p, std::uint8_t* qs, int b, int mTile) {
    using Tile = MlaTile<Kv>;
    constexpr int kDqk = Tile::kDqk;
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
}

/// Issues the cp.async copies of stage `tile` of the latent rows (zero-filled from nTok on)
/// into shared-memory buffer `dst`, and commits them as one group.
template <class Kv>
__device__ __forceinline__ void loadMlaStage(std::uint8_t* dst, const std::uint8_t* cache, int t0,
                                             int nTok, int tile) {
    using Tile = MlaTile<Kv>;
    for (int i = threadIdx.x; i < Tile::kTokens * Tile::kVecPerRow; i += kThreads) {
        const int row = i / Tile::kVecPerRow, col = i % Tile::kVecPerRow;
        const int tok = tile * Tile::kTokens + row;
        const bool valid = tok < nTok;
        const std::size_t off =
            valid ? (std::size_t(t0 + tok) * Tile::kDqk * Kv::kBytes + col * 16) : 0;
        cpAsync16(dst + row * Tile::kRowBytes + col * 16, cache + off, valid);
    }
    cpAsyncCommit();
}

/// Shared-memory areas of the MLA kernel: queries, two stages, P, per-warp row maxima and sums.
template <class Kv> struct MlaSmem {
    std::uint8_t* qs;
    std::uint8_t* stages;
    std::uint8_t* ps;
    float* redMax;
    float* redSum;
    __device__ __forceinline__ explicit MlaSmem(std::uint8_t* smem)
        : qs(smem), stages(qs + MlaTile<Kv>::kQBytes), ps(stages + 2 * MlaTile<Kv>::kStageBytes),
          redMax(reinterpret_cast<float*>(ps + MlaTile<Kv>::kPBytes)),
          redSum(redMax + kWarps * 16) {}
};

/// What one warp holds: its 128 output columns' accumulators (C fragments) for the 16 heads,
/// and each thread's rows gid and gid + 8: the running maximum and the full row sum (identical
/// in every warp: both are reduced across the block).
template <class Kv> struct MlaWarp {
    using Tile = MlaTile<Kv>;
    static constexpr bool kFp16 = Kv::kIsFp16;
    static constexpr int kN = Tile::kDvPerWarp / 8;
    int warp, gid, tig;
    float acc[kN][4];
    float mRow[2] = {-INFINITY, -INFINITY}, lRow[2] = {0.f, 0.f};

    __device__ __forceinline__ MlaWarp(int w, int lane) : warp(w), gid(lane / 4), tig(lane % 4) {
#pragma unroll
        for (int n = 0; n < kN; ++n)
            acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
    }

    /// The A operand (16 rows x 16 columns, row-major, 16-bit) at `base` with row stride
    /// `stride` bytes: one ldmatrix, lane l addressing row l%8 + ((l/8)%2)*8, column (l/16)*8.
    __device__ __forceinline__ void loadA(std::uint32_t (&a)[4], const std::uint8_t* base,
                                          int stride) const {
        const int lane = gid * 4 + tig;
        ldmatrixX4<false>(a, base + (lane % 8 + ((lane / 8) % 2) * 8) * stride + (lane / 16) * 16);
    }

    /// Raw scores of tokens 8·warp .. +7 of the stage (one n8 tile), 36 k-steps over 576 dims,
    /// two per pass: 16-bit KV loads both steps' K operands with one ldmatrix (lane l addresses
    /// token 8·warp + l%8, dims + (l/8)·8), fp8 converts pairs.
    __device__ __forceinline__ void scores(const std::uint8_t* cs, const std::uint8_t* qs,
                                           float (&s)[4]) const {
        s[0] = s[1] = s[2] = s[3] = 0.f;
        const int lane = gid * 4 + tig;
        const std::uint8_t* krow = cs + (warp * 8 + gid) * Tile::kRowBytes;
        const std::uint8_t* kmat = cs + (warp * 8 + lane % 8) * Tile::kRowBytes + (lane / 8) * 16;
#pragma unroll 2
        for (int kstep = 0; kstep < Tile::kDqk / 16; kstep += 2) {
            std::uint32_t kb[4];
            if constexpr (Kv::kBytes == 2) {
                ldmatrixX4<false>(kb, kmat + kstep * 16 * 2);
            } else {
#pragma unroll
                for (int h = 0; h < 4; ++h)
                    kb[h] = loadPair<Kv>(krow + (kstep * 16 + h * 8 + tig * 2) * Kv::kBytes);
            }
#pragma unroll
            for (int k2 = 0; k2 < 2; ++k2) {
                std::uint32_t a[4];
                loadA(a, qs + (kstep + k2) * 16 * 2, Tile::kQRowBytes);
                mma16816<kFp16>(s, a, kb[2 * k2], kb[2 * k2 + 1]);
            }
        }
    }

    /// Online softmax across the block (the stage's 32 tokens are spread over the warps):
    /// maxima and sums reduced through shared memory, P written there in the mma operand type,
    /// the accumulators rescaled. `tokBase`: the stage's first token; masked from nTok on.
    __device__ __forceinline__ void softmax(float (&s)[4], int tokBase, int nTok, float scaleLog2,
                                            const MlaSmem<Kv>& sm) {
        float rowMax[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int tok = tokBase + warp * 8 + tig * 2 + (e & 1);
            s[e] = tok < nTok ? s[e] * scaleLog2 : -INFINITY;
            rowMax[e >> 1] = fmaxf(rowMax[e >> 1], s[e]);
        }
        rowMax[0] = quadMax(rowMax[0]);
        rowMax[1] = quadMax(rowMax[1]);
        if (tig == 0) {
            sm.redMax[warp * 16 + gid] = rowMax[0];
            sm.redMax[warp * 16 + gid + 8] = rowMax[1];
        }
        __syncthreads();
        float scaleOld[2], mUse[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            float tileMax = -INFINITY;
#pragma unroll
            for (int w = 0; w < kWarps; ++w)
                tileMax = fmaxf(tileMax, sm.redMax[w * 16 + gid + 8 * r]);
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
        *reinterpret_cast<std::uint32_t*>(sm.ps + gid * Tile::kPRowBytes +
                                          (warp * 8 + tig * 2) * 2) = packPair<kFp16>(s[0], s[1]);
        *reinterpret_cast<std::uint32_t*>(sm.ps + (gid + 8) * Tile::kPRowBytes +
                                          (warp * 8 + tig * 2) * 2) = packPair<kFp16>(s[2], s[3]);
        rowSum[0] = quadSum(rowSum[0]);
        rowSum[1] = quadSum(rowSum[1]);
        if (tig == 0) {
            sm.redSum[warp * 16 + gid] = rowSum[0];
            sm.redSum[warp * 16 + gid + 8] = rowSum[1];
        }
        __syncthreads();
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            float tileSum = 0.f;
#pragma unroll
            for (int w = 0; w < kWarps; ++w)
                tileSum += sm.redSum[w * 16 + gid + 8 * r];
            lRow[r] = lRow[r] * scaleOld[r] + tileSum;
        }
        // Most stages leave every row maximum where it was (the same in every warp): skip the
        // multiplies by 1.
        if (__any_sync(0xffffffffu, scaleOld[0] != 1.f || scaleOld[1] != 1.f)) {
#pragma unroll
            for (int n = 0; n < kN; ++n) {
                acc[n][0] *= scaleOld[0];
                acc[n][1] *= scaleOld[0];
                acc[n][2] *= scaleOld[1];
                acc[n][3] *= scaleOld[1];
            }
        }
    }

    /// O[:, 128·warp ..] += P (16 x 32) · C[tokens, dims]: two k16 steps over the tokens.
    /// 16-bit KV: one transposed ldmatrix per two n tiles (lane l addresses token kstep·16 +
    /// ((l/8)%2)·8 + l%8, dims 128·warp + (n + l/16)·8); fp8: converted element pairs.
    __device__ __forceinline__ void accumulate(const std::uint8_t* cs, const std::uint8_t* ps) {
        const int lane = gid * 4 + tig;
#pragma unroll
        for (int kstep = 0; kstep < Tile::kTokens / 16; ++kstep) {
            std::uint32_t a[4];
            loadA(a, ps + kstep * 16 * 2, Tile::kPRowBytes);
            if constexpr (Kv::kBytes == 2) {
                const std::uint8_t* base =
                    cs + (kstep * 16 + ((lane / 8) % 2) * 8 + lane % 8) * Tile::kRowBytes +
                    (warp * Tile::kDvPerWarp + (lane / 16) * 8) * 2;
#pragma unroll
                for (int n = 0; n < kN; n += 2) {
                    std::uint32_t r[4];
                    ldmatrixX4<true>(r, base + n * 8 * 2);
                    mma16816<kFp16>(acc[n], a, r[0], r[1]);
                    mma16816<kFp16>(acc[n + 1], a, r[2], r[3]);
                }
                continue;
            }
            const int c = kstep * 16 + tig * 2;
            const std::uint8_t* v0 = cs + c * Tile::kRowBytes; // token kstep*16 + tig*2
#pragma unroll
            for (int n = 0; n < kN; ++n) {
                const int colBytes = (warp * Tile::kDvPerWarp + n * 8 + gid) * Kv::kBytes;
                const std::uint32_t vb0 =
                    loadColumnPair<Kv>(v0 + colBytes, v0 + Tile::kRowBytes + colBytes);
                const std::uint32_t vb1 = loadColumnPair<Kv>(v0 + 8 * Tile::kRowBytes + colBytes,
                                                             v0 + 9 * Tile::kRowBytes + colBytes);
                mma16816<kFp16>(acc[n], a, vb0, vb1);
            }
        }
    }

    /// Each warp owns distinct output columns: the output itself with one split, else the
    /// split's partial rows and (warp 0) their LSE.
    __device__ __forceinline__ void store(DecodeParams p, int split, int mTile, int b) const {
        const std::size_t rowsAll = std::size_t(p.batch) * p.qHeads;
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int head = mTile * 16 + gid + 8 * r;
            if (head >= p.qHeads)
                continue;
            const std::size_t row = std::size_t(b) * p.qHeads + head;
            const float inv = lRow[r] > 0.f ? 1.f / lRow[r] : 0.f;
#pragma unroll
            for (int n = 0; n < kN; ++n) {
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int c = warp * Tile::kDvPerWarp + n * 8 + tig * 2 + e;
                    const float val = acc[n][2 * r + e] * inv;
                    if (p.splits == 1)
                        storeActivation<kFp16>(p.out, row * Tile::kDv + c, val);
                    else
                        p.partialOut[(std::size_t(split) * rowsAll + row) * Tile::kDv + c] = val;
                }
            }
            if (p.splits > 1 && warp == 0 && tig == 0)
                p.partialLse[std::size_t(split) * rowsAll + row] =
                    lRow[r] > 0.f ? mRow[r] + __log2f(lRow[r]) : -INFINITY;
        }
    }
};

/// Grid (splits, ceil(h/16), B), 128 threads. A block serves 16 heads of one request over one
/// split of the latent cache: warp w scores tokens 8w..8w+7 of each stage (all 576 dims), the
/// probabilities go through shared memory, and warp w accumulates output columns 128w..128w+127.
template <class Kv> __global__ void __launch_bounds__(kThreads) mlaDecodeKernel(DecodeParams p) {
    using Tile = MlaTile<Kv>;
    extern __shared__ __align__(16) std::uint8_t smem[];
    const MlaSmem<Kv> sm(smem);
    const int split = blockIdx.x, mTile = blockIdx.y, b = blockIdx.z;
    MlaWarp<Kv> w(threadIdx.x / 32, threadIdx.x % 32);
    const int t0 = split * p.tokensPerSplit;
    const int t1 = min(p.context, t0 + p.tokensPerSplit);
    const int nTok = max(0, t1 - t0);
    const std::uint8_t* cache = p.k + std::size_t(b) * p.context * Tile::kDqk * Kv::kBytes;
    loadMlaQueries<Kv>(p, sm.qs, b, mTile);

    const int nTiles = (nTok + Tile::kTokens - 1) / Tile::kTokens;
    if (nTiles > 0)
        loadMlaStage<Kv>(sm.stages, cache, t0, nTok, 0);
    for (int tile = 0; tile < nTiles; ++tile) {
        if (tile + 1 < nTiles) {
            loadMlaStage<Kv>(sm.stages + ((tile + 1) & 1) * Tile::kStageBytes, cache, t0, nTok,
                             tile + 1);
            cpAsyncWait<1>();
        } else {
            cpAsyncWait<0>();
        }
        __syncthreads();
        const std::uint8_t* cs = sm.stages + (tile & 1) * Tile::kStageBytes;
        float s[4];
        w.scores(cs, sm.qs, s);
        w.softmax(s, tile * Tile::kTokens, nTok, p.scaleLog2, sm);
        w.accumulate(cs, sm.ps);
        __syncthreads(); // P, the reductions and the stage are rewritten next iteration
    }
    w.store(p, split, mTile, b);
}

} // namespace kvscope::gpu::cuda
