// Pieces of the decode step's fp64 reference (selfCheckStep): a bf16-weight mat-vec, RMSNorm,
// and the new token's K/V as the cache stores it.
#pragma once

#include "gpu/backend.h"

#include <cstdint>
#include <vector>

namespace kvscope::gpu::detail::cpu {

/// out[n] = sum_k w[n][k] in[k], w bf16 [N][K], in double.
std::vector<double> referenceMatvec(const std::uint16_t* w, const std::vector<double>& in,
                                    std::int64_t N, std::int64_t K);
/// in * rsqrt(mean(in^2) + 1e-5) * g (Llama's rms_norm_eps), g bf16 [d].
std::vector<double> referenceRmsNorm(const std::uint16_t* g, const double* in, std::int64_t d);
/// The new token's K/V element as the cache stores it: the reference keeps it in double except
/// for the cache's own storage rounding (bf16 of a bf16 value is exact).
double referenceStoredKv(KvDtype dt, double v);

} // namespace kvscope::gpu::detail::cpu
