#include "gpu/cpu/step_reference.h"

#include "gpu/cpu/decode.h"
#include "gpu/numerics.h"

#include <cmath>

namespace kvscope::gpu::detail::cpu {

std::vector<double> referenceMatvec(const std::uint16_t* w, const std::vector<double>& in,
                                    std::int64_t N, std::int64_t K) {
    std::vector<double> out(std::size_t(N), 0.0);
    for (std::int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (std::int64_t k = 0; k < K; ++k)
            acc += double(num::bf16ToFloat(w[n * K + k])) * in[std::size_t(k)];
        out[std::size_t(n)] = acc;
    }
    return out;
}

std::vector<double> referenceRmsNorm(const std::uint16_t* g, const double* in, std::int64_t d) {
    double ss = 0;
    for (std::int64_t i = 0; i < d; ++i)
        ss += in[i] * in[i];
    const double r = 1.0 / std::sqrt(ss / double(d) + 1e-5);
    std::vector<double> out(static_cast<std::size_t>(d));
    for (std::int64_t i = 0; i < d; ++i)
        out[std::size_t(i)] = in[i] * r * double(num::bf16ToFloat(g[i]));
    return out;
}

double referenceStoredKv(KvDtype dt, double v) {
    if (dt == KvDtype::Fp32)
        return v;
    std::uint8_t buf[4];
    encodeValue(dt, float(v), buf);
    return decodeValue(dt, buf);
}

} // namespace kvscope::gpu::detail::cpu
