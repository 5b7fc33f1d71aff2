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

} // namespace kvscope::gpu::cuda
