// The portable kernel for 16 floats per vector, built for AVX-512 (F, DQ, VL) (portable_body.h).
#include "gpu/cpu/simd.h"

#if defined(__GNUC__) && defined(__x86_64__)
#define KVSCOPE_PK_TARGET KVSCOPE_AVX512_TARGET
#include "gpu/cpu/portable_body.h"

namespace kvscope::gpu::detail::cpu {
PortableKernel portableKernelAvx512(std::int64_t keyDim, std::int64_t valueDim) {
    return portableKernelFor<16>(keyDim, valueDim);
}
} // namespace kvscope::gpu::detail::cpu
#else
#include "gpu/cpu/portable_kernel.h"

namespace kvscope::gpu::detail::cpu {
PortableKernel portableKernelAvx512(std::int64_t, std::int64_t) {
    return nullptr;
}
} // namespace kvscope::gpu::detail::cpu
#endif
