// Storage formats and the input generator, shared bit-for-bit by the CPU backend, the CUDA
// kernels (compiled by nvcc) and the double-precision reference. Internal to gpu/; CUDA-free
// unless compiled by nvcc, in which case the functions are also __device__.
//
// Every function here is exact integer/float arithmetic with one IEEE rounding at most, so
// host and device produce identical bits: a kernel's inputs can be regenerated on the host
// element by element for the reference, without copying gigabytes back.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define KVSCOPE_HD __host__ __device__ __forceinline__
#else
#define KVSCOPE_HD inline
#endif

namespace kvscope::gpu::num {

KVSCOPE_HD float bitsToFloat(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
#endif
}
KVSCOPE_HD std::uint32_t floatToBits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
#endif
}

// --- bf16: the top half of a float -------------------------------------------------------------
KVSCOPE_HD float bf16ToFloat(std::uint16_t h) {
    return bitsToFloat(std::uint32_t(h) << 16);
}
/// Round to nearest even; inputs are finite (the generator never makes NaN or Inf).
KVSCOPE_HD std::uint16_t floatToBf16(float f) {
    std::uint32_t u = floatToBits(f);
    u += 0x7fffu + ((u >> 16) & 1u);
    return std::uint16_t(u >> 16);
}

// --- fp16 (IEEE binary16): 1-5-10, bias 15 -----------------------------------------------------
/// Branch-free (vectorisable) decode of finite halves; subnormals are built from the integer
/// mantissa so no float denormal ever appears (they are slow on some CPUs).
KVSCOPE_HD float fp16ToFloat(std::uint16_t h) {
    const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
    const std::uint32_t em = h & 0x7fffu;
    const float normal = bitsToFloat((em << 13) + ((127u - 15u) << 23));
    const float subnormal = float(em & 0x3ffu) * 5.9604644775390625e-8f; // 2^-24
    const float mag = em >= 0x400u ? normal : subnormal;
    return bitsToFloat(floatToBits(mag) | sign);
}
/// Round to nearest even, saturating to the largest finite half (65504).
KVSCOPE_HD std::uint16_t floatToFp16(float f) {
    const std::uint32_t u = floatToBits(f);
    const std::uint16_t sign = std::uint16_t((u >> 16) & 0x8000u);
    const std::uint32_t a = u & 0x7fffffffu;
    if (a >= 0x477ff000u) // >= 65520 rounds past the largest finite half
        return std::uint16_t(sign | 0x7bffu);
    if (a < 0x38800000u) { // below 2^-14: subnormal half, quantum 2^-24
        // a float in [0, 2^-14) times 2^24 is exact; round the integer part to nearest even.
        const float scaled = bitsToFloat(a) * 16777216.0f;
        std::uint32_t m = std::uint32_t(scaled);
        const float frac = scaled - float(m);
        if (frac > 0.5f || (frac == 0.5f && (m & 1u)))
            ++m;
        return std::uint16_t(sign | m); // m == 0x400 is the smallest normal: still correct bits
    }
    // Normal: rebias the exponent, round the 13 dropped mantissa bits to nearest even.
    std::uint32_t r = a - ((127u - 15u) << 23);
    r += 0x0fffu + ((r >> 13) & 1u);
    return std::uint16_t(sign | (r >> 13));
}

// --- fp8 e4m3 (OCP "fn" variant: no infinities, 0x7f/0xff are NaN, max 448), bias 7 -----------
KVSCOPE_HD float fp8e4m3ToFloat(std::uint8_t x) {
    const std::uint32_t sign = std::uint32_t(x & 0x80u) << 24;
    const std::uint32_t em = x & 0x7fu;
    const float normal = bitsToFloat((em << 20) + ((127u - 7u) << 23));
    const float subnormal = float(em & 0x7u) * 0.001953125f; // 2^-9
    const float mag = em >= 0x8u ? normal : subnormal;
    return bitsToFloat(floatToBits(mag) | sign);
}
/// Round to nearest even, saturating to +-448 (what fp8 KV-cache writers do).
KVSCOPE_HD std::uint8_t floatToFp8e4m3(float f) {
    const std::uint32_t u = floatToBits(f);
    const std::uint8_t sign = std::uint8_t((u >> 24) & 0x80u);
    const std::uint32_t a = u & 0x7fffffffu;
    if (a >= 0x43e00000u) // >= 448
        return std::uint8_t(sign | 0x7eu);
    if (a < 0x3c800000u) { // below 2^-6: subnormal, quantum 2^-9
        const float scaled = bitsToFloat(a) * 512.0f;
        std::uint32_t m = std::uint32_t(scaled);
        const float frac = scaled - float(m);
        if (frac > 0.5f || (frac == 0.5f && (m & 1u)))
            ++m;
        return std::uint8_t(sign | m);
    }
    std::uint32_t r = a - ((127u - 7u) << 23);
    r += 0x7ffffu + ((r >> 20) & 1u);
    std::uint32_t bits = r >> 20;
    if (bits > 0x7eu) // rounding up past 448 saturates
        bits = 0x7eu;
    return std::uint8_t(sign | bits);
}

// --- The input generator -----------------------------------------------------------------------
/// Tensor ids mixed into the generator key.
enum Tensor : std::uint32_t { kQuery = 1, kKey = 2, kValue = 3, kLatent = 4 };

KVSCOPE_HD std::uint64_t mix64(std::uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/// Uniform in [-1, 1) with 24 random bits, a pure function of (seed, tensor, index). Both
/// steps are exact in float, so host and device agree bit for bit.
KVSCOPE_HD float uniformInput(std::uint64_t seed, std::uint32_t tensor, std::uint64_t index) {
    const std::uint64_t h = mix64(seed ^ mix64((std::uint64_t(tensor) << 56) ^ index));
    const float u = float(std::uint32_t(h >> 40)) * 1.1920928955078125e-7f; // [0, 2)
    return u - 1.0f;
}
/// Queries are scaled by 3 so that scores have a standard deviation near 1 (a softmax that is
/// neither flat nor one-hot).
constexpr float kQueryScale = 3.0f;

} // namespace kvscope::gpu::num
