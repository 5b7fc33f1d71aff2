// The x86 intrinsics and the target attributes the CPU kernels share. No -march anywhere:
// kernels carry their instruction set in __attribute__((target)) or target_clones and are
// picked at run time, so the binary stays portable.
#pragma once

#if defined(__x86_64__)
// GCC 12's AVX-512 headers start masked intrinsics from _mm512_undefined_*() and warn about it
// once inlined at -O3 (GCC bug 105593, fixed in 12.3/13): a false positive inside the header.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__) && defined(__linux__)
#define KVSCOPE_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
/// The bf16 dot-product kernel (vdpbf16ps) and everything it inlines.
#define KVSCOPE_HAVE_BF16_KERNEL 1
#define KVSCOPE_BF16_TARGET                                                                        \
    __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma,avx2")))
#else
#define KVSCOPE_CLONES
#define KVSCOPE_HAVE_BF16_KERNEL 0
#endif

#if defined(__GNUC__) && defined(__x86_64__)
#define KVSCOPE_AVX512_TARGET __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma")))
#endif

#define KVSCOPE_INLINE inline __attribute__((always_inline))

namespace kvscope::gpu::detail::cpu {
/// The online softmax of the AMX kernel, of the bf16 kernel's rows and of the portable kernel's
/// narrow layout moves its reference maximum only when a tile's maximum passes it by more than
/// this (log2 units; FlashAttention-4's lazy rescaling: exact, since the sum uses the same
/// reference and the end divides it out): weights stay <= 256, far inside fp32 and bf16 range,
/// and most tiles need neither the maximum's reduction nor alpha's exp2.
constexpr float kRescaleLog2 = 8.0f;
} // namespace kvscope::gpu::detail::cpu
