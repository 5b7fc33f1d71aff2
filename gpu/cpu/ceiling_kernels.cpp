#include "gpu/cpu/ceiling_kernels.h"

#include "gpu/cpu/amx_kernel.h"
#include "gpu/cpu/bf16_kernel.h"
#include "gpu/cpu/simd.h"

#include <cstring>

namespace kvscope::gpu::detail::cpu {
namespace {

template <int W> struct Vec { typedef float F __attribute__((vector_size(W * 4))); };

/// S streams (equal parts of the buffer read side by side), U cache lines per stream and step
/// (one accumulator each, up to 16 shared round robin), prefetch PF bytes ahead with locality
/// LOC (3: T0, 0: NTA; PF 0: no prefetch). A line is W-float vectors summed first, so the
/// accumulators stay in registers at every width. 16 and 32 streams are the gathered pattern (8
/// or 16 K and as many V sub-streams, row_map.h), which read faster than 8 on the Intel VM; 2
/// streams 2-8 KiB ahead the contiguous tiles and blocks the kernels read now.
template <int W, int S, int U, int PF, int LOC>
KVSCOPE_INLINE float readBody(const std::uint8_t* p, std::int64_t bytes) {
    using F = typename Vec<W>::F;
    constexpr int V = 64 / (W * 4); // vectors per line
    constexpr int A = S * U < 16 ? S * U : 16;
    constexpr std::int64_t step = 64 * U;
    const std::int64_t per = bytes / S / step * step;
    F acc[A];
    for (int a = 0; a < A; ++a)
        acc[a] = F{};
    for (std::int64_t i = 0; i < per; i += step)
        for (int s = 0; s < S; ++s)
            for (int u = 0; u < U; ++u) {
                const std::uint8_t* q = p + s * per + i + 64 * u;
                F line;
                std::memcpy(&line, q, sizeof line);
                for (int v = 1; v < V; ++v) {
                    F x;
                    std::memcpy(&x, q + v * W * 4, sizeof x);
                    line += x;
                }
                acc[(s * U + u) % A] += line;
                if constexpr (PF > 0)
                    __builtin_prefetch(q + PF, 0, LOC);
            }
    F total = F{};
    for (int a = 0; a < A; ++a)
        total += acc[a];
    float r = 0;
    for (int l = 0; l < W; ++l)
        r += total[l];
    return r;
}

/// C independent chains of a*x+b on W lanes: FLOPs per iteration 2 * C * W.
template <int W, int C> KVSCOPE_INLINE float fmaBody(std::int64_t iterations, float seed) {
    using F = typename Vec<W>::F;
    F acc[C];
    for (int c = 0; c < C; ++c)
        acc[c] = F{} + (seed + float(c) * 1e-3f);
    const F a = F{} + 0.999999f, b = F{} + 1e-7f;
    for (std::int64_t it = 0; it < iterations; ++it)
        for (int c = 0; c < C; ++c)
            acc[c] = acc[c] * a + b;
    F s = F{};
    for (int c = 0; c < C; ++c)
        s += acc[c];
    float r = 0;
    for (int l = 0; l < W; ++l)
        r += s[l];
    return r;
}

/// One entry point per width, compiled for its instruction set.
template <int W> struct Width;
#if defined(__GNUC__) && defined(__x86_64__)
#define KVSCOPE_CEILING_WIDTH(W, TARGET)                                                           \
    template <> struct Width<W> {                                                                  \
        template <int S, int U, int PF, int LOC>                                                   \
        TARGET __attribute__((noinline)) static float read(const std::uint8_t* p,                  \
                                                           std::int64_t bytes) {                   \
            return readBody<W, S, U, PF, LOC>(p, bytes);                                           \
        }                                                                                          \
        template <int C>                                                                           \
        TARGET __attribute__((noinline)) static float fma(std::int64_t it, float seed) {           \
            return fmaBody<W, C>(it, seed);                                                        \
        }                                                                                          \
    };
KVSCOPE_CEILING_WIDTH(16, KVSCOPE_AVX512_TARGET)
KVSCOPE_CEILING_WIDTH(8, __attribute__((target("avx2,fma"))))
KVSCOPE_CEILING_WIDTH(4, )
#undef KVSCOPE_CEILING_WIDTH
#else
template <> struct Width<4> {
    template <int S, int U, int PF, int LOC>
    static float read(const std::uint8_t* p, std::int64_t bytes) {
        return readBody<4, S, U, PF, LOC>(p, bytes);
    }
    template <int C> static float fma(std::int64_t it, float seed) {
        return fmaBody<4, C>(it, seed);
    }
};
#endif

const char* widthName(int w) {
    return w == 16 ? "avx512" : w == 8 ? "avx2" : "vec4";
}

template <int W, int S, int U, int PF = 0, int LOC = 3> void addRead(std::vector<ReadKernel>& out) {
    std::string name =
        std::string("read-") + widthName(W) + "-s" + std::to_string(S) + "-u" + std::to_string(U);
    if (PF > 0)
        name += "-pf" + std::to_string(PF) + (LOC == 0 ? "-nta" : "-t0");
    out.push_back({name, &Width<W>::template read<S, U, PF, LOC>, PF > 0});
}

/// The widths this CPU runs, widest first.
std::vector<int> cpuWidths() {
    std::vector<int> w;
#if defined(__GNUC__) && defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        w.push_back(16);
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        w.push_back(8);
#endif
    w.push_back(4);
    return w;
}

#if KVSCOPE_HAVE_BF16_KERNEL
KVSCOPE_BF16_TARGET inline __m512bh asBh(__m512i v) {
    __m512bh r;
    std::memcpy(&r, &v, sizeof r);
    return r;
}

/// C independent vdpbf16ps chains (latency ~6, two per cycle on Zen 4/5 and Sapphire Rapids):
/// 64 FLOPs per instruction (16 lanes x 2 products x multiply and add).
template <int C>
KVSCOPE_BF16_TARGET __attribute__((noinline)) float bf16DotBody(std::int64_t iterations,
                                                                float seed) {
    __m512 acc[C];
    for (int c = 0; c < C; ++c)
        acc[c] = _mm512_set1_ps(seed + float(c) * 1e-3f);
    const __m512i a = _mm512_set1_epi32(0x3f803f80); // (1.0, 1.0) in bf16
    __m512i b = _mm512_set1_epi32(0x33d633d6);       // ~1e-7 in bf16
    for (std::int64_t it = 0; it < iterations; ++it) {
        for (int c = 0; c < C; ++c)
            acc[c] = _mm512_dpbf16_ps(acc[c], asBh(a), asBh(b));
        __asm__ volatile("" : "+v"(b)); // keeps the loop from being folded
    }
    __m512 s = acc[0];
    for (int c = 1; c < C; ++c)
        s = _mm512_add_ps(s, acc[c]);
    return _mm512_reduce_add_ps(s);
}
#endif

template <int W, int C> void addFma(std::vector<ComputeKernel>& out) {
    out.push_back({std::string("fma-") + widthName(W) + "-c" + std::to_string(C),
                   &Width<W>::template fma<C>, 2.0 * C * W, ComputeUnit::Fma, W});
}

} // namespace

std::vector<ReadKernel> readKernelFamily() {
    std::vector<ReadKernel> f;
    for (int w : cpuWidths()) {
#if defined(__GNUC__) && defined(__x86_64__)
        if (w == 16) {
            addRead<16, 1, 2>(f), addRead<16, 1, 4>(f), addRead<16, 2, 1>(f);
            addRead<16, 2, 2>(f), addRead<16, 2, 4>(f), addRead<16, 4, 1>(f);
            addRead<16, 4, 2>(f), addRead<16, 4, 4>(f), addRead<16, 8, 1>(f);
            addRead<16, 8, 2>(f), addRead<16, 16, 2>(f), addRead<16, 16, 4>(f);
            addRead<16, 32, 2>(f), addRead<16, 32, 4>(f);
            addRead<16, 2, 2, 512>(f), addRead<16, 2, 2, 2048>(f), addRead<16, 2, 2, 8192>(f);
            addRead<16, 4, 2, 512>(f), addRead<16, 4, 2, 2048>(f), addRead<16, 4, 2, 8192>(f);
            addRead<16, 2, 2, 2048, 0>(f), addRead<16, 4, 2, 2048, 0>(f);
            // The gathered pattern: 8 K and 8 V sub-streams, the next tile (1 KiB of each at
            // d 128 bf16) prefetched while this one is read.
            addRead<16, 16, 2, 1024>(f), addRead<16, 16, 4, 1024>(f), addRead<16, 8, 2, 1024>(f);
        } else if (w == 8) {
            addRead<8, 2, 2>(f), addRead<8, 4, 2>(f), addRead<8, 2, 2, 2048>(f);
        } else
#endif
        {
            addRead<4, 2, 2>(f), addRead<4, 4, 1>(f);
        }
    }
    return f;
}

std::vector<ComputeKernel> computeKernelFamily() {
    std::vector<ComputeKernel> f;
    for (int w : cpuWidths()) {
#if defined(__GNUC__) && defined(__x86_64__)
        if (w == 16) {
            addFma<16, 8>(f), addFma<16, 12>(f), addFma<16, 16>(f);
        } else if (w == 8) {
            addFma<8, 8>(f), addFma<8, 12>(f);
        } else
#endif
        {
            addFma<4, 8>(f);
        }
    }
#if KVSCOPE_HAVE_BF16_KERNEL
    if (cpuHasBf16Dot())
        for (auto [c, fn] : {std::pair{8, &bf16DotBody<8>}, std::pair{12, &bf16DotBody<12>},
                             std::pair{16, &bf16DotBody<16>}})
            f.push_back({"vdpbf16ps-c" + std::to_string(c), fn, 64.0 * c, ComputeUnit::Bf16Dot});
#endif
    // 4 independent 16 x 16 x 32 tile products per iteration (2 FLOPs per multiply-add).
    if (cpuHasAmx())
        f.push_back({"tdpbf16ps-c4", &amxDotChain, 4.0 * 16 * 16 * 32 * 2, ComputeUnit::Amx});
    return f;
}

} // namespace kvscope::gpu::detail::cpu
