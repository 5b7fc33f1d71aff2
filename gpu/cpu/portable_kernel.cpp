// The portable kernel's dispatch (see portable_kernel.h) and its 4-wide instantiation, built for
// the default target; the AVX2 and AVX-512 ones are portable_avx2.cpp and portable_avx512.cpp.
#define KVSCOPE_PK_TARGET
#include "gpu/cpu/portable_body.h"

#include <cstdlib>

namespace kvscope::gpu::detail::cpu {

PortableKernel portableKernelVec4(std::int64_t keyDim, std::int64_t valueDim) {
    return portableKernelFor<4>(keyDim, valueDim);
}

int portableWidth() {
    int w = 4;
#if defined(__GNUC__) && defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        w = 16;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        w = 8;
#endif
    if (const char* force = std::getenv("KVSCOPE_CPU_VECTOR")) {
        const int f = std::atoi(force);
        if ((f == 4 || f == 8 || f == 16) && f <= w)
            w = f;
    }
    return w;
}

PortableKernel portableKernel(int width, std::int64_t keyDim, std::int64_t valueDim) {
    PortableKernel k = nullptr;
    if (width == 16)
        k = portableKernelAvx512(keyDim, valueDim);
    else if (width == 8)
        k = portableKernelAvx2(keyDim, valueDim);
    return k ? k : portableKernelVec4(keyDim, valueDim);
}

} // namespace kvscope::gpu::detail::cpu
