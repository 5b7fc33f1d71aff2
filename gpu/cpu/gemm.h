// The decode step's GEMM, Y[b][n] = sum_k X[b][k] W[n][k] (X and W bf16, Y fp32): work item =
// kGemmRowsPerItem weight rows for every batch row; vdpbf16ps with 16 fp32 accumulators where
// the CPU has AVX512_BF16, else fp32 FMA on decoded bf16 through target_clones.
#pragma once

#include <cstdint>

namespace kvscope::gpu::detail::cpu {

struct GemmArgs {
    const std::uint16_t* x; // [B][K]
    const std::uint16_t* w; // [N][K]
    float* y;               // [B][N]
    std::int64_t B, N, K;
};

constexpr std::int64_t kGemmRowsPerItem = 4; // weight rows per work item

/// Rows [n0, n0 + kGemmRowsPerItem) of Y (fewer at the end), vdpbf16ps if `bf16` (and this build
/// has the kernel), else the portable loop.
void gemmItem(const GemmArgs& a, std::int64_t n0, bool bf16);

} // namespace kvscope::gpu::detail::cpu
