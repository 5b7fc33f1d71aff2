// Decode-attention kernels for Hopper (sm_90, portable PTX): GQA family and absorbed MLA with
// tensor cores (mma.sync m16n8k16, fp32 accumulation) across the query rows that share a KV
// stream, split-KV with a log-sum-exp combine, fp8 e4m3 KV dequantised in registers.
// Internal to gpu/; included by cuda_backend.cu only. Device helpers: cuda_device.cuh; the
// kernels: cuda_gqa_kernel.cuh and cuda_mla_kernel.cuh; here the split combine and the input
// fill (the read-ceiling kernels are in cuda_ceilings.cu).
#pragma once

#include "gpu/cuda_device.cuh"
#include "gpu/cuda_gqa_kernel.cuh"
#include "gpu/cuda_mla_kernel.cuh"

namespace kvscope::gpu::cuda {

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

// --- Input generation ----------------------------------------------------------------------------
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

} // namespace kvscope::gpu::cuda
