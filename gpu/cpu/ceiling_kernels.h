// The loops the CPU ceilings are timed on: reads of a buffer, fp32 FMA chains, vdpbf16ps
// chains. Each returns a value derived from all it did, so nothing can be optimised away.
#pragma once

#include <cstdint>

namespace kvscope::gpu::detail::cpu {

/// Sum of p[0..n) with 64 independent lanes (one sequential stream).
float sumRegion(const float* p, std::int64_t n);
/// sumRegion over 4 equal parts read side by side (4 sequential streams).
float sumStreams(const float* p, std::int64_t n);
/// 16 lanes x 8 independent chains of a*x+y, `iterations` times: 256 FLOPs per iteration.
float fmaLoop(std::int64_t iterations, float seed);
/// 12 independent vdpbf16ps chains; 0 without the bf16 kernel.
float bf16DotLoop(std::int64_t iterations, float seed);
/// FLOPs per iteration of bf16DotLoop (0 without the bf16 kernel).
double bf16DotLoopFlops();

} // namespace kvscope::gpu::detail::cpu
