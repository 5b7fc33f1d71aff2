// The step's GEMM kernels (see gemm.h).
#include "gpu/cpu/gemm.h"

#include "gpu/cpu/simd.h"
#include "gpu/numerics.h"

#include <algorithm>
#include <array>
#include <vector>

namespace kvscope::gpu::detail::cpu {
namespace {

/// Rows [n0, n0 + 4) (fewer at the end) for every batch row. Portable: fp32 FMA on the decoded
/// bf16 values (GCC vectorises the inner loop per target clone).
KVSCOPE_CLONES void gemmItemPortable(const GemmArgs& a, std::int64_t n0) {
    const std::int64_t n1 = std::min(a.N, n0 + kGemmRowsPerItem);
    for (std::int64_t b = 0; b < a.B; ++b) {
        const std::uint16_t* x = a.x + b * a.K;
        for (std::int64_t n = n0; n < n1; ++n) {
            const std::uint16_t* w = a.w + n * a.K;
            float acc[16] = {};
            std::int64_t k = 0;
            for (; k + 16 <= a.K; k += 16)
                for (int j = 0; j < 16; ++j)
                    acc[j] += num::bitsToFloat(std::uint32_t(w[k + j]) << 16) *
                              num::bitsToFloat(std::uint32_t(x[k + j]) << 16);
            float s = 0;
            for (int j = 0; j < 16; ++j)
                s += acc[j];
            for (; k < a.K; ++k)
                s += num::bf16ToFloat(w[k]) * num::bf16ToFloat(x[k]);
            a.y[b * a.N + n] = s;
        }
    }
}

#if KVSCOPE_HAVE_BF16_KERNEL
KVSCOPE_BF16_TARGET inline __m512bh bhLoad(const std::uint16_t* p, __mmask32 m) {
    const __m512i v = _mm512_maskz_loadu_epi16(m, p);
    __m512bh r;
    std::memcpy(&r, &v, sizeof r);
    return r;
}

/// RB batch rows x 4 weight rows over K in [k0, k1), in steps of 32 bf16 pairs (masked tail);
/// the partial sums live in acc[(b0 + i) * 4 + j] across K chunks.
template <int RB>
KVSCOPE_BF16_TARGET inline void gemmBlockBf16(const GemmArgs& a, std::int64_t n0, int nr,
                                              std::int64_t b0, std::int64_t k0, std::int64_t k1,
                                              float* part) {
    __m512 acc[RB][4];
    for (int i = 0; i < RB; ++i)
        for (int j = 0; j < 4; ++j)
            acc[i][j] = _mm512_loadu_ps(part + ((b0 + i) * 4 + j) * 16);
    const std::uint16_t* wr[4];
    for (int j = 0; j < 4; ++j)
        wr[j] = a.w + (n0 + std::min(j, nr - 1)) * a.K;
    for (std::int64_t k = k0; k < k1; k += 32) {
        const __mmask32 m =
            k1 - k >= 32 ? __mmask32(0xffffffffu) : __mmask32((1u << (k1 - k)) - 1u);
        __m512bh wv[4];
        for (int j = 0; j < 4; ++j)
            wv[j] = bhLoad(wr[j] + k, m);
        for (int i = 0; i < RB; ++i) {
            const __m512bh xv = bhLoad(a.x + (b0 + i) * a.K + k, m);
            for (int j = 0; j < 4; ++j)
                acc[i][j] = _mm512_dpbf16_ps(acc[i][j], xv, wv[j]);
        }
    }
    for (int i = 0; i < RB; ++i)
        for (int j = 0; j < 4; ++j)
            _mm512_storeu_ps(part + ((b0 + i) * 4 + j) * 16, acc[i][j]);
}

/// K is walked in chunks of 1024 so that the chunk of the 4 weight rows (8 KB) and of the
/// batch's inputs stay in L1/L2 while every batch block reuses them; at B = 1 this is one
/// pass over the rows.
constexpr std::int64_t kKChunk = 1024;

KVSCOPE_BF16_TARGET void gemmItemBf16(const GemmArgs& a, std::int64_t n0) {
    const int nr = int(std::min<std::int64_t>(kGemmRowsPerItem, a.N - n0));
    thread_local std::vector<float> part; // [B][4] partial-sum vectors of 16 floats
    part.assign(std::size_t(a.B * 4 * 16), 0.0f);
    for (std::int64_t k0 = 0; k0 < a.K; k0 += kKChunk) {
        const std::int64_t k1 = std::min(a.K, k0 + kKChunk);
        std::int64_t b = 0;
        for (; b + 4 <= a.B; b += 4)
            gemmBlockBf16<4>(a, n0, nr, b, k0, k1, part.data());
        switch (a.B - b) {
        case 3:
            gemmBlockBf16<3>(a, n0, nr, b, k0, k1, part.data());
            break;
        case 2:
            gemmBlockBf16<2>(a, n0, nr, b, k0, k1, part.data());
            break;
        case 1:
            gemmBlockBf16<1>(a, n0, nr, b, k0, k1, part.data());
            break;
        default:
            break;
        }
    }
    for (std::int64_t b = 0; b < a.B; ++b)
        for (int j = 0; j < nr; ++j)
            a.y[b * a.N + n0 + j] =
                _mm512_reduce_add_ps(_mm512_loadu_ps(part.data() + (b * 4 + j) * 16));
}
#endif

} // namespace

void gemmItem(const GemmArgs& a, std::int64_t n0, bool bf16) {
#if KVSCOPE_HAVE_BF16_KERNEL
    if (bf16) {
        gemmItemBf16(a, n0);
        return;
    }
#endif
    (void)bf16;
    gemmItemPortable(a, n0);
}

} // namespace kvscope::gpu::detail::cpu
