// The portable kernel for 8 floats per vector, built for AVX2 + FMA (+ F16C) (portable_body.h).
#include "gpu/cpu/simd.h"

#if defined(__GNUC__) && defined(__x86_64__)
// F16C for the fp16 decode: every AVX2 CPU has it (x86-64-v3).
#define KVSCOPE_PK_TARGET __attribute__((target("avx2,fma,f16c")))
#include "gpu/cpu/portable_body.h"

namespace kvscope::gpu::detail::cpu {
PortableKernel portableKernelAvx2(std::int64_t keyDim, std::int64_t valueDim) {
    return portableKernelFor<8>(keyDim, valueDim);
}
} // namespace kvscope::gpu::detail::cpu
#else
#include "gpu/cpu/portable_kernel.h"

namespace kvscope::gpu::detail::cpu {
PortableKernel portableKernelAvx2(std::int64_t, std::int64_t) {
    return nullptr;
}
} // namespace kvscope::gpu::detail::cpu
#endif
