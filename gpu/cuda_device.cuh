// Device building blocks of the decode kernels: KV element types and their pair loads, operand
// packing, mma.sync m16n8k16, exp2, cp.async, quad reductions, the launch parameters.
// Internal to gpu/; included through cuda_kernels.cuh.
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
/// Storage tags: the KV element's bytes, whether the activations (queries, outputs) are fp16
/// (else bf16), and whether the GQA kernel's mma operands are fp16 (else bf16).
struct Bf16Kv {
    static constexpr int kBytes = 2;
    static constexpr bool kIsFp16 = false;
    static constexpr bool kGqaMmaFp16 = false;
};
struct Fp16Kv {
    static constexpr int kBytes = 2;
    static constexpr bool kIsFp16 = true;
    static constexpr bool kGqaMmaFp16 = true;
};
/// e4m3 with bf16 activations. The MLA kernel dequantises to bf16; the GQA kernel to fp16, one
/// cvt per pair instead of four (both exact: 3 mantissa bits, exponents fit), with the queries
/// converted from bf16 to fp16 once per block (exact for the generated inputs, |q| << 65504).
struct Fp8Kv {
    static constexpr int kBytes = 1;
    static constexpr bool kIsFp16 = false;
    static constexpr bool kGqaMmaFp16 = true;
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
/// Two fp8 e4m3 codes (low first) as an fp16x2 operand: one cvt, exact.
__device__ __forceinline__ std::uint32_t fp8x2ToHalf2(std::uint16_t two) {
    const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(two), __NV_E4M3);
    return std::uint32_t(h.x) | (std::uint32_t(h.y) << 16);
}
/// A bf16x2 pair as fp16x2 (round to nearest; exact for values fp16 holds).
__device__ __forceinline__ std::uint32_t bf16x2ToHalf2(std::uint32_t bits) {
    const __nv_bfloat162 b = *reinterpret_cast<const __nv_bfloat162*>(&bits);
    const __half2 h = __float22half2_rn(__bfloat1622float2(b));
    return *reinterpret_cast<const std::uint32_t*>(&h);
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

/// Four 8x8 matrices of 16-bit elements from shared memory (lanes 8m..8m+7 give the row
/// addresses of matrix m). Plain: lane l receives row l/4, columns 2(l%4) and 2(l%4)+1 of each
/// matrix, the B-operand layout of a row-major [n][k] tile; transposed: rows 2(l%4) and
/// 2(l%4)+1 of column l/4, the B-operand layout of a row-major [k][n] tile.
template <bool kTrans>
__device__ __forceinline__ void ldmatrixX4(std::uint32_t (&r)[4], const void* rowAddress) {
    const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(rowAddress));
    if constexpr (kTrans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(a));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(a));
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

} // namespace kvscope::gpu::cuda
