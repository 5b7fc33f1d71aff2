// The loops the CPU ceilings are timed on, as families (the ceiling is the maximum over a
// family, as the Empirical Roofline Toolkit takes it): reads of a buffer with 1-8 streams per
// thread, 1-4 cache lines per stream and step, every vector width the CPU has, software
// prefetch at several distances with T0 or NTA hints; fp32 FMA chains per vector width; and
// vdpbf16ps and tdpbf16ps (AMX) chains. Each returns a value derived from all it read or computed,
// so nothing can be optimised away.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvscope::gpu::detail::cpu {

/// Reads `bytes` at p (64-byte aligned, a multiple of kReadGranule); returns their sum.
using ReadFn = float (*)(const std::uint8_t* p, std::int64_t bytes);
constexpr std::int64_t kReadGranule = 64 * 1024;

struct ReadKernel {
    std::string name; ///< e.g. "read-avx512-s4-u2-pf2048-t0"
    ReadFn fn = nullptr;
    bool prefetches = false; ///< software prefetch (not useful on cache-resident data)
};

/// The read kernels this CPU can run.
std::vector<ReadKernel> readKernelFamily();

/// `iterations` steps of independent multiply-add (or dot-product) chains on one thread.
using ComputeFn = float (*)(std::int64_t iterations, float seed);

/// The arithmetic unit a chain kernel times: fp32 FMA (fp16/fp32 KV, and every dtype on CPUs
/// without AVX512_BF16), vdpbf16ps (the bf16/fp8 kernel without AMX), the AMX tile unit.
enum class ComputeUnit { Fma, Bf16Dot, Amx };

struct ComputeKernel {
    std::string name; ///< e.g. "fma-avx512-c12"
    ComputeFn fn = nullptr;
    double flopsPerIteration = 0;
    ComputeUnit unit = ComputeUnit::Fma;
    int width = 0; ///< fp32 lanes of an FMA chain's vectors (16, 8, 4); 0 for the other units
};

/// fp32 FMA chains per vector width, vdpbf16ps chains where the CPU has AVX512_BF16, and a
/// tdpbf16ps chain where it has AMX-BF16.
std::vector<ComputeKernel> computeKernelFamily();

} // namespace kvscope::gpu::detail::cpu
