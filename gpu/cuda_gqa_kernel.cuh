// The GQA-family decode kernel (MHA to MQA) on mma.sync. Internal to gpu/; included through
// cuda_kernels.cuh. The kernel is a short driver over per-phase helpers (stage load, scores,
// online softmax, P·V, merge of the token ways); every helper is force-inlined, so the
// fragments stay in registers exactly as in one function body.
#pragma once

#include "gpu/cuda_device.cuh"

namespace kvscope::gpu::cuda {

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

/// One block's share of a KV stream: tokens [t0, t0 + nTok) of stream (b, kv head).
struct GqaSpan {
    const std::uint8_t* k;
    const std::uint8_t* v;
    int t0, nTok;
};

/// Issues the cp.async copies of stage `tile` (K and V rows, zero-filled past the span) into
/// shared-memory buffer `stage`, and commits them as one group.
template <int D, int MT, class Kv>
__device__ __forceinline__ void loadGqaStage(std::uint8_t* smem, const GqaSpan& sp, int tile,
                                             int stage) {
    using Tile = GqaTile<D, MT, Kv>;
    std::uint8_t* ks = smem + stage * Tile::kStageBytes;
    std::uint8_t* vs = ks + Tile::kTokens * Tile::kRowBytes;
    for (int i = threadIdx.x; i < Tile::kTokens * Tile::kVecPerRow; i += kThreads) {
        const int row = i / Tile::kVecPerRow, col = i % Tile::kVecPerRow;
        const int tok = tile * Tile::kTokens + row;
        const bool valid = tok < sp.nTok;
        const std::size_t off = valid ? (std::size_t(sp.t0 + tok) * D * Kv::kBytes + col * 16) : 0;
        cpAsync16(ks + row * Tile::kRowBytes + col * 16, sp.k + off, valid);
        cpAsync16(vs + row * Tile::kRowBytes + col * 16, sp.v + off, valid);
    }
    cpAsyncCommit();
}

/// What one warp holds for its M tiles: the query fragments (A operand), the output
/// accumulators (C fragments) and each thread's rows gid and gid + 8: running maximum and
/// partial sum (quad-summed at the end).
template <int D, int MT, class Kv> struct GqaWarp {
    using Tile = GqaTile<D, MT, Kv>;
    static constexpr int kM = Tile::kMtPerWarp;
    static constexpr bool kFp16 = Kv::kGqaMmaFp16; // mma operand type
    int gid, tig, way, mtBase; // mma groupID, threadID_in_group; token way, first M tile
    std::uint32_t qa[kM][D / 16][4];
    float acc[kM][D / 8][4];
    float mRow[kM][2], lRow[kM][2];

    __device__ __forceinline__ GqaWarp(int warp, int lane)
        : gid(lane / 4), tig(lane % 4), way(warp / Tile::kWarpMt), mtBase(warp % Tile::kWarpMt) {}

    /// Query fragments of rows mt·16 + gid (+8) of the group; zero past the group's rows.
    __device__ __forceinline__ void loadQueries(DecodeParams p, int b, int kvh) {
        const auto* q = reinterpret_cast<const std::uint16_t*>(p.q);
#pragma unroll
        for (int i = 0; i < kM; ++i) {
            const int mt = mtBase + i * Tile::kWarpMt;
            const int r0 = mt * 16 + gid, r1 = r0 + 8; // rows within the group
            const std::size_t row0 =
                (std::size_t(b) * p.qHeads + std::size_t(kvh) * p.group + r0) * D;
            const std::size_t row1 = row0 + 8 * D;
#pragma unroll
            for (int ks = 0; ks < D / 16; ++ks) {
                const int c = ks * 16 + tig * 2;
                auto pair = [&](bool valid, std::size_t at) -> std::uint32_t {
                    if (!valid)
                        return 0u;
                    const std::uint32_t bits = *reinterpret_cast<const std::uint32_t*>(q + at);
                    return kFp16 && !Kv::kIsFp16 ? bf16x2ToHalf2(bits) : bits;
                };
                qa[i][ks][0] = pair(r0 < p.group, row0 + c);
                qa[i][ks][1] = pair(r1 < p.group, row1 + c);
                qa[i][ks][2] = pair(r0 < p.group, row0 + c + 8);
                qa[i][ks][3] = pair(r1 < p.group, row1 + c + 8);
            }
        }
    }

    /// Empty rows: maxima -inf, sums and accumulators zero.
    __device__ __forceinline__ void reset() {
#pragma unroll
        for (int i = 0; i < kM; ++i) {
            mRow[i][0] = mRow[i][1] = -INFINITY;
            lRow[i][0] = lRow[i][1] = 0.f;
#pragma unroll
            for (int n = 0; n < D / 8; ++n)
                acc[i][n][0] = acc[i][n][1] = acc[i][n][2] = acc[i][n][3] = 0.f;
        }
    }

    /// The K operand of one k step (16 dims) for the chunk's two n8 tiles of 8 tokens:
    /// kb[n][0] dims kstep*16 + tig*2 (+1), kb[n][1] the same + 8, of token chunk*16 + n*8 +
    /// gid. 16-bit KV: one ldmatrix (lane l addresses token chunk*16 + (l/16)*8 + l%8, dims
    /// + ((l/8)%2)*8); fp8: pair loads converted to fp16.
    __device__ __forceinline__ void keyOperand(const std::uint8_t* ks, int chunk, int kstep,
                                               std::uint32_t (&kb)[2][2]) const {
        if constexpr (Kv::kBytes == 2) {
            const int lane = gid * 4 + tig;
            const std::uint8_t* row = ks +
                                      (chunk * 16 + (lane / 16) * 8 + lane % 8) * Tile::kRowBytes +
                                      (kstep * 16 + ((lane / 8) % 2) * 8) * 2;
            std::uint32_t r[4];
            ldmatrixX4<false>(r, row);
            kb[0][0] = r[0], kb[0][1] = r[1], kb[1][0] = r[2], kb[1][1] = r[3];
        } else {
#pragma unroll
            for (int n = 0; n < 2; ++n) {
                const std::uint8_t* row = ks + (chunk * 16 + n * 8 + gid) * Tile::kRowBytes;
                kb[n][0] = fp8x2ToHalf2(
                    *reinterpret_cast<const std::uint16_t*>(row + kstep * 16 + tig * 2));
                kb[n][1] = fp8x2ToHalf2(
                    *reinterpret_cast<const std::uint16_t*>(row + kstep * 16 + tig * 2 + 8));
            }
        }
    }

    /// Raw scores S = Q·K^T of 16-token chunk `chunk` of the stage: two n8 tiles of 8 tokens.
    __device__ __forceinline__ void scores(const std::uint8_t* ks, int chunk,
                                           float (&s)[kM][2][4]) const {
#pragma unroll
        for (int i = 0; i < kM; ++i)
#pragma unroll
            for (int n = 0; n < 2; ++n)
                s[i][n][0] = s[i][n][1] = s[i][n][2] = s[i][n][3] = 0.f;
#pragma unroll
        for (int kstep = 0; kstep < D / 16; ++kstep) {
            std::uint32_t kb[2][2];
            keyOperand(ks, chunk, kstep, kb);
#pragma unroll
            for (int i = 0; i < kM; ++i)
#pragma unroll
                for (int n = 0; n < 2; ++n)
                    mma16816<kFp16>(s[i][n], qa[i][kstep], kb[n][0], kb[n][1]);
        }
    }

    /// Online softmax of the chunk's raw scores (token of column 0: tokBase; masked from nTok
    /// on, which only the last chunk of a split needs): new row maxima (log2 domain), the
    /// accumulators rescaled, and P as the A operand of P·V (the C layout of two n8 tiles is the
    /// A layout of 16 rows x 16 tokens). The scale is applied to the two row maxima and folded
    /// into each exponent's FFMA; the row sums add P before it is rounded to the operand type,
    /// as FlashAttention does.
    __device__ __forceinline__ void softmax(float (&s)[kM][2][4], int tokBase, int nTok,
                                            float scaleLog2, std::uint32_t (&pa)[kM][4]) {
        const bool partial = tokBase + 16 > nTok; // the same in the whole warp
#pragma unroll
        for (int i = 0; i < kM; ++i) {
            float rowMax[2] = {-INFINITY, -INFINITY};
#pragma unroll
            for (int n = 0; n < 2; ++n)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    if (partial && tokBase + n * 8 + tig * 2 + (e & 1) >= nTok)
                        s[i][n][e] = -INFINITY;
                    rowMax[e >> 1] = fmaxf(rowMax[e >> 1], s[i][n][e]);
                }
            float scaleOld[2];
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const float mNew = fmaxf(mRow[i][r], quadMax(rowMax[r]) * scaleLog2);
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
                    const float pr = fastExp2(fmaf(s[i][n][e], scaleLog2, -rowMax[e >> 1]));
                    s[i][n][e] = pr;
                    rowSum[e >> 1] += pr;
                }
            lRow[i][0] = lRow[i][0] * scaleOld[0] + rowSum[0];
            lRow[i][1] = lRow[i][1] * scaleOld[1] + rowSum[1];
            // Most chunks leave every row maximum where it was: skip the D/2 multiplies by 1.
            if (__any_sync(0xffffffffu, scaleOld[0] != 1.f || scaleOld[1] != 1.f)) {
#pragma unroll
                for (int n = 0; n < D / 8; ++n) {
                    acc[i][n][0] *= scaleOld[0];
                    acc[i][n][1] *= scaleOld[0];
                    acc[i][n][2] *= scaleOld[1];
                    acc[i][n][3] *= scaleOld[1];
                }
            }
            pa[i][0] = packPair<kFp16>(s[i][0][0], s[i][0][1]);
            pa[i][1] = packPair<kFp16>(s[i][0][2], s[i][0][3]);
            pa[i][2] = packPair<kFp16>(s[i][1][0], s[i][1][1]);
            pa[i][3] = packPair<kFp16>(s[i][1][2], s[i][1][3]);
        }
    }

    /// O += P·V for the chunk: B(k = token, n = dim): tokens chunk*16 + tig*2 (+1, +8, +9),
    /// dim n*8 + gid. 16-bit KV: one transposed ldmatrix per two n tiles (lane l addresses
    /// token chunk*16 + ((l/8)%2)*8 + l%8, dims (n + l/16)*8); fp8: element pairs converted to
    /// fp16.
    __device__ __forceinline__ void accumulate(const std::uint8_t* vs, int chunk,
                                               const std::uint32_t (&pa)[kM][4]) {
        if constexpr (Kv::kBytes == 2) {
            const int lane = gid * 4 + tig;
            const std::uint8_t* base =
                vs + (chunk * 16 + ((lane / 8) % 2) * 8 + lane % 8) * Tile::kRowBytes +
                (lane / 16) * 8 * 2;
#pragma unroll
            for (int n = 0; n < D / 8; n += 2) {
                std::uint32_t r[4];
                ldmatrixX4<true>(r, base + n * 8 * 2);
#pragma unroll
                for (int i = 0; i < kM; ++i) {
                    mma16816<kFp16>(acc[i][n], pa[i], r[0], r[1]);
                    mma16816<kFp16>(acc[i][n + 1], pa[i], r[2], r[3]);
                }
            }
        } else {
            const std::uint8_t* v0 = vs + (chunk * 16 + tig * 2) * Tile::kRowBytes;
            auto column = [](const std::uint8_t* row0, const std::uint8_t* row1) {
                return fp8x2ToHalf2(std::uint16_t(*row0 | (std::uint16_t(*row1) << 8)));
            };
#pragma unroll
            for (int n = 0; n < D / 8; ++n) {
                const int col = n * 8 + gid;
                const std::uint32_t vb0 = column(v0 + col, v0 + Tile::kRowBytes + col);
                const std::uint32_t vb1 =
                    column(v0 + 8 * Tile::kRowBytes + col, v0 + 9 * Tile::kRowBytes + col);
#pragma unroll
                for (int i = 0; i < kM; ++i)
                    mma16816<kFp16>(acc[i][n], pa[i], vb0, vb1);
            }
        }
    }

    /// This warp's accumulators, maxima and sums into the merge area of shared memory:
    /// [way][row][D] acc, then m and l per (way, row).
    __device__ __forceinline__ void stash(std::uint8_t* smem) const {
        float* cAcc = reinterpret_cast<float*>(smem);
        float* cM = cAcc + Tile::kWays * MT * 16 * D;
        float* cL = cM + Tile::kWays * MT * 16;
#pragma unroll
        for (int i = 0; i < kM; ++i) {
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
    }
};

/// Merges the token ways stashed in shared memory (log-sum-exp weights) and writes the
/// group's rows: the output itself with one split, else the split's partial rows and LSE.
template <int D, int MT, class Kv>
__device__ __forceinline__ void mergeGqaWays(DecodeParams p, const std::uint8_t* smem, int split,
                                             int kvh, int b) {
    using Tile = GqaTile<D, MT, Kv>;
    const float* cAcc = reinterpret_cast<const float*>(smem);
    const float* cM = cAcc + Tile::kWays * MT * 16 * D;
    const float* cL = cM + Tile::kWays * MT * 16;
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
            storeActivation<Kv::kIsFp16>(p.out, row * D + c, val);
        } else {
            const std::size_t rowsAll = std::size_t(p.batch) * p.qHeads;
            p.partialOut[(std::size_t(split) * rowsAll + row) * D + c] = val;
            if (c == 0)
                p.partialLse[std::size_t(split) * rowsAll + row] =
                    l > 0.f ? mMax + __log2f(l) : -INFINITY;
        }
    }
}

/// Grid (splits, h_kv, B), 128 threads. Each block reads its (b, kv head, split) chunk of K and
/// V once into shared memory (cp.async, double-buffered) and serves all g query rows from it
/// with mma: S = Q·K^T (rows = heads), online softmax in registers, O += P·V.
template <int D, int MT, class Kv>
__global__ void __launch_bounds__(kThreads) gqaDecodeKernel(DecodeParams p) {
    using Tile = GqaTile<D, MT, Kv>;
    using Warp = GqaWarp<D, MT, Kv>;
    extern __shared__ __align__(16) std::uint8_t smem[];
    const int split = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
    Warp w(threadIdx.x / 32, threadIdx.x % 32);

    const int t0 = split * p.tokensPerSplit;
    const int t1 = min(p.context, t0 + p.tokensPerSplit);
    const std::size_t streamOffset =
        (std::size_t(b) * p.kvHeads + kvh) * std::size_t(p.context) * D * Kv::kBytes;
    const GqaSpan sp{p.k + streamOffset, p.v + streamOffset, t0, max(0, t1 - t0)};
    w.loadQueries(p, b, kvh);
    w.reset();

    const int nTiles = (sp.nTok + Tile::kTokens - 1) / Tile::kTokens;
    if (nTiles > 0)
        loadGqaStage<D, MT, Kv>(smem, sp, 0, 0);
    for (int tile = 0; tile < nTiles; ++tile) {
        if (tile + 1 < nTiles) {
            loadGqaStage<D, MT, Kv>(smem, sp, tile + 1, (tile + 1) & 1);
            cpAsyncWait<1>();
        } else {
            cpAsyncWait<0>();
        }
        __syncthreads();
        const std::uint8_t* ks = smem + (tile & 1) * Tile::kStageBytes;
        const std::uint8_t* vs = ks + Tile::kTokens * Tile::kRowBytes;
        for (int chunk = w.way; chunk < Tile::kChunks; chunk += Tile::kWays) {
            float s[Warp::kM][2][4];
            std::uint32_t pa[Warp::kM][4];
            w.scores(ks, chunk, s);
            w.softmax(s, tile * Tile::kTokens + chunk * 16, sp.nTok, p.scaleLog2, pa);
            w.accumulate(vs, chunk, pa);
        }
        __syncthreads(); // the stage is overwritten by the load issued next iteration
    }
    w.stash(smem);
    __syncthreads();
    mergeGqaWays<D, MT, Kv>(p, smem, split, kvh, b);
}

} // namespace kvscope::gpu::cuda
