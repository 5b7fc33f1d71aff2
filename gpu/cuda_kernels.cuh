// Decode-attention kernels for Hopper (sm_90, portable PTX): GQA family and absorbed MLA with
// tensor cores (mma.sync m16n8k16, fp32 accumulation) across the query rows that share a KV
// stream, split-KV with a log-sum-exp combine, fp8 e4m3 KV dequantised in registers.
// Internal to gpu/; included by cuda_backend.cu only. Device helpers: cuda_device.cuh; the MLA
// kernel: cuda_mla_kernel.cuh.
#pragma once

#include "gpu/cuda_device.cuh"
#include "gpu/cuda_mla_kernel.cuh"

namespace kvscope::gpu::cuda {

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
