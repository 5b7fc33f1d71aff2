#include "gpu/cpu/inputs.h"

#include "gpu/cpu/decode.h"
#include "gpu/cpu/simd.h"
#include "gpu/numerics.h"

namespace kvscope::gpu::detail::cpu {
namespace {

/// One loop per format so the bf16 and fp32 generators vectorise (64-bit multiplies in
/// AVX-512); it was a third of a `measure` run's time when the format switch sat inside the
/// per-element loop.
template <KvDtype D>
KVSCOPE_CLONES void fillInputsAs(std::uint8_t* dst, std::int64_t first, std::int64_t n,
                                 std::uint64_t seed, std::uint32_t tensor, float scale) {
    for (std::int64_t i = 0; i < n; ++i) {
        const float x = num::uniformInput(seed, tensor, std::uint64_t(first + i)) * scale;
        if constexpr (D == KvDtype::Bf16)
            reinterpret_cast<std::uint16_t*>(dst)[i] = num::floatToBf16(x);
        else if constexpr (D == KvDtype::Fp32)
            reinterpret_cast<float*>(dst)[i] = x;
        else
            encodeValue(D, x, dst + i * (D == KvDtype::Fp16 ? 2 : 1));
    }
}

template <class E>
void pairRowsAs(const std::uint8_t* src, std::uint8_t* dst, std::int64_t rows, std::int64_t width) {
    const E* in = reinterpret_cast<const E*>(src);
    E* out = reinterpret_cast<E*>(dst);
    for (std::int64_t p = 0; p < rows / 2; ++p, in += 2 * width, out += 2 * width)
        for (std::int64_t j = 0; j < width; ++j) {
            out[2 * j] = in[j];
            out[2 * j + 1] = in[width + j];
        }
}

} // namespace

void pairRows(const std::uint8_t* src, std::uint8_t* dst, std::int64_t rows, std::int64_t width,
              std::int64_t elementBytes) {
    if (elementBytes == 1)
        pairRowsAs<std::uint8_t>(src, dst, rows, width);
    else if (elementBytes == 2)
        pairRowsAs<std::uint16_t>(src, dst, rows, width);
    else
        pairRowsAs<std::uint32_t>(src, dst, rows, width);
}

void fillInputs(KvDtype dtype, std::uint8_t* dst, std::int64_t first, std::int64_t n,
                std::uint64_t seed, std::uint32_t tensor, float scale) {
    switch (dtype) {
    case KvDtype::Bf16:
        return fillInputsAs<KvDtype::Bf16>(dst, first, n, seed, tensor, scale);
    case KvDtype::Fp16:
        return fillInputsAs<KvDtype::Fp16>(dst, first, n, seed, tensor, scale);
    case KvDtype::Fp8E4m3:
        return fillInputsAs<KvDtype::Fp8E4m3>(dst, first, n, seed, tensor, scale);
    case KvDtype::Fp32:
        return fillInputsAs<KvDtype::Fp32>(dst, first, n, seed, tensor, scale);
    }
}

} // namespace kvscope::gpu::detail::cpu
