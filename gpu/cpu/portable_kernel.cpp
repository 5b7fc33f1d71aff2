// The portable kernel's dispatch (see portable_kernel.h) and its three builds of
// portable_body.h: AVX-512 (16 floats per vector), AVX2 + FMA (8; F16C for the fp16 decode,
// which every AVX2 CPU has: x86-64-v3), and the default target (4).
#include "gpu/cpu/simd.h"

#include <cstdlib>

#if defined(__GNUC__) && defined(__x86_64__)
#define KVSCOPE_PK_TARGET KVSCOPE_AVX512_TARGET
#define KVSCOPE_PK_NS w16
#include "gpu/cpu/portable_body.h"
#define KVSCOPE_PK_TARGET __attribute__((target("avx2,fma,f16c")))
#define KVSCOPE_PK_NS w8
#include "gpu/cpu/portable_body.h"
#endif
#define KVSCOPE_PK_TARGET
#define KVSCOPE_PK_NS w4
#include "gpu/cpu/portable_body.h"

namespace kvscope::gpu::detail::cpu {

namespace {

/// The widest vector width this CPU runs (16 with AVX-512 F/DQ/VL, 8 with AVX2 and FMA, else 4).
int cpuWidth() {
#if defined(__GNUC__) && defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        return 16;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return 8;
#endif
    return 4;
}

} // namespace

int portableWidth() {
    int w = cpuWidth();
    if (const char* force = std::getenv("KVSCOPE_CPU_VECTOR")) {
        const int f = std::atoi(force);
        if ((f == 4 || f == 8 || f == 16) && f <= w)
            w = f;
    }
    return w;
}

PortableKernel portableKernel(int width, std::int64_t keyDim, std::int64_t valueDim) {
#if defined(__GNUC__) && defined(__x86_64__)
    if (width == 16)
        return w16::portableKernelFor<16>(keyDim, valueDim);
    if (width == 8)
        return w8::portableKernelFor<8>(keyDim, valueDim);
#endif
    (void)width;
    return w4::portableKernelFor<4>(keyDim, valueDim);
}

int portableFp8Mismatch(int width) {
    if ((width != 4 && width != 8 && width != 16) || width > cpuWidth())
        return -2;
#if defined(__GNUC__) && defined(__x86_64__)
    if (width == 16)
        return w16::fp8DecodeMismatch<16>();
    if (width == 8)
        return w8::fp8DecodeMismatch<8>();
#endif
    return w4::fp8DecodeMismatch<4>();
}

} // namespace kvscope::gpu::detail::cpu
