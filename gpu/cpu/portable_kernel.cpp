// The portable kernel (see portable_kernel.h). Per 32-token tile (gathered from 8 sub-streams of
// the segment, row_map.h; the last tokens in contiguous tiles), the K and V rows are decoded
// to fp32 once for all rows, then three phases run over all rows so independent rows overlap in
// the core: scores (W tokens per transpose tree), the online-softmax update (one max and one
// rescale per row and tile), and O = alpha O + P V with up to 8 output vectors of a row in
// registers per pass. Arithmetic is fp32 throughout (P is not rounded).
#include "gpu/cpu/portable_kernel.h"

#include "gpu/cpu/decode.h"
#include "gpu/cpu/row_map.h"
#include "gpu/cpu/simd.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace kvscope::gpu::detail::cpu {
namespace {

/// W floats, one vector register on the target the kernel is compiled for (16: AVX-512, 8:
/// AVX2, 4: SSE2 or any other CPU). One width per target, chosen at run time: a 16-float vector
/// compiled for AVX2 went through the stack and ran 5-8x slower than on AVX-512.
template <int W> struct Lanes {
    typedef float F __attribute__((vector_size(W * 4)));
    typedef std::int32_t I __attribute__((vector_size(W * 4)));
};

template <int W> KVSCOPE_INLINE typename Lanes<W>::F loadW(const float* p) {
    typename Lanes<W>::F v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
template <int W> KVSCOPE_INLINE void storeW(float* p, typename Lanes<W>::F v) {
    std::memcpy(p, &v, sizeof v);
}
template <int W> KVSCOPE_INLINE float hsumW(typename Lanes<W>::F v) {
    float s = 0;
    for (int i = 0; i < W; ++i)
        s += v[i];
    return s;
}

/// 2^x for x <= 0 on W lanes: x = n + f, f in (-1, 0], 2^f by a degree-7 Taylor polynomial
/// of e^(f ln 2) (relative error < 2e-6), 2^n added to the exponent bits. Inputs below -125
/// give a value below 2^-125, which the softmax sums treat as the zero it should be.
template <int W> KVSCOPE_INLINE typename Lanes<W>::F exp2NegW(typename Lanes<W>::F x) {
    using F = typename Lanes<W>::F;
    using I = typename Lanes<W>::I;
    const F lo = F{} - 125.0f;
    x = x < lo ? lo : x;
    const I n = __builtin_convertvector(x, I); // truncation: n >= x
    const F t = (x - __builtin_convertvector(n, F)) * 0.69314718056f;
    F p = F{} + 1.0f / 5040.0f;
    p = p * t + 1.0f / 720.0f;
    p = p * t + 1.0f / 120.0f;
    p = p * t + 1.0f / 24.0f;
    p = p * t + 1.0f / 6.0f;
    p = p * t + 0.5f;
    p = p * t + 1.0f;
    p = p * t + 1.0f;
    return (F)((I)p + (n << 23));
}

/// One level of the transpose-sum tree on W / h vectors (h = 1, 2, 4, ...): output i sums
/// inputs 2i and 2i+1 pairwise, block b of 2h lanes holding the sums of input 2i's two halves of
/// the block, then input 2i+1's. h is a template parameter so the masks are constants.
#if defined(__GNUC__) && !defined(__clang__)
template <int W, int H> KVSCOPE_INLINE void transposeLevel(typename Lanes<W>::F* v) {
    using I = typename Lanes<W>::I;
    I lo = {}, hi = {};
    for (int l = 0; l < W; ++l) {
        const int base = l / (2 * H) * 2 * H, j = l % (2 * H);
        lo[l] = j < H ? base + j : W + base + j - H;
        hi[l] = j < H ? base + H + j : W + base + j;
    }
    for (int i = 0; i < W / (2 * H); ++i)
        v[i] = __builtin_shuffle(v[2 * i], v[2 * i + 1], lo) +
               __builtin_shuffle(v[2 * i], v[2 * i + 1], hi);
    if constexpr (2 * H < W)
        transposeLevel<W, 2 * H>(v);
}
#endif

/// Lane i of the result is the sum of the W lanes of v[i] (v is overwritten): log2 W levels of
/// shuffles and adds instead of one horizontal sum per vector.
template <int W> KVSCOPE_INLINE typename Lanes<W>::F transposeSumW(typename Lanes<W>::F* v) {
#if defined(__GNUC__) && !defined(__clang__)
    transposeLevel<W, 1>(v);
    return v[0];
#else // no __builtin_shuffle: plain sums
    typename Lanes<W>::F r;
    for (int i = 0; i < W; ++i)
        r[i] = hsumW<W>(v[i]);
    return r;
#endif
}

/// q . k for W key rows (fp32, `stride` floats apart), keys `dk` wide: lane i is token i.
template <int W, int DK>
KVSCOPE_INLINE typename Lanes<W>::F scoresW(const float* q, const float* k, std::int64_t stride) {
    typename Lanes<W>::F part[W];
    for (int i = 0; i < W; ++i) {
        auto acc = loadW<W>(q) * loadW<W>(k + i * stride);
        for (int c = W; c < DK; c += W)
            acc += loadW<W>(q + c) * loadW<W>(k + i * stride + c);
        part[i] = acc;
    }
    return transposeSumW<W>(part);
}

/// Decodes n <= kTileTokens rows of `width` elements, row i read through `src` (contiguous or
/// gathered, row_map.h), into fp32 rows `width` apart.
KVSCOPE_INLINE void decodeTile(KvDtype dtype, const RowMap& src, std::int64_t n, std::int64_t width,
                               float* dst) {
    for (std::int64_t i = 0; i < n; ++i)
        decodeRow(dtype, src.row(int(i)), dst + i * width, width);
}

/// Scores of row r over the n valid tokens of the tile, then its online-softmax update: one
/// max and one rescale per row and tile; the probabilities go to sc.p.
template <int W, int DK>
KVSCOPE_INLINE void scoreSoftmaxRow(const float* qr, const float* kf, std::int64_t n,
                                    std::int64_t r, Scratch& sc) {
    using F = typename Lanes<W>::F;
    constexpr std::int64_t T = kTileTokens;
    F iota;
    for (int i = 0; i < W; ++i)
        iota[i] = float(i);
    const F minusInf = F{} - std::numeric_limits<float>::infinity();
    // Scores (q is pre-scaled by scale * log2 e), -inf past the end of the tile.
    F s[T / W];
    F mx = minusInf;
    for (int b = 0; b < T / W; ++b) {
        const F left = F{} + float(n - b * W);
        s[b] = b * W < n ? scoresW<W, DK>(qr, kf + b * W * DK, DK) : minusInf;
        s[b] = iota < left ? s[b] : minusInf;
        mx = mx > s[b] ? mx : s[b];
    }
    float tileMax = mx[0];
    for (int i = 1; i < W; ++i)
        tileMax = std::max(tileMax, mx[i]);
    float& m = sc.m[std::size_t(r)];
    const float mNew = std::max(m, tileMax);
    const float alpha = std::exp2(m - mNew); // 0 on the first tile
    m = mNew;
    F sum = F{};
    for (int b = 0; b < T / W; ++b) {
        const F left = F{} + float(n - b * W);
        const F pb = iota < left ? exp2NegW<W>(s[b] - mNew) : F{};
        storeW<W>(sc.p.data() + r * T + b * W, pb);
        sum += pb;
    }
    sc.alpha[std::size_t(r)] = alpha;
    sc.l[std::size_t(r)] = sc.l[std::size_t(r)] * alpha + hsumW<W>(sum);
}

/// O = alpha O + P V for row r, CB output vectors per pass.
template <int W, int DV>
KVSCOPE_INLINE void pvRow(const float* vf, std::int64_t vStride, std::int64_t n, std::int64_t r,
                          Scratch& sc) {
    using F = typename Lanes<W>::F;
    constexpr int NV = DV / W, CB = NV < 8 ? NV : 8; // output vectors, per P V pass
    const float* pr = sc.p.data() + r * kTileTokens;
    float* accRow = sc.acc.data() + r * DV;
    const float alpha = sc.alpha[std::size_t(r)];
    for (int cb = 0; cb < NV; cb += CB) {
        F o[CB];
        for (int j = 0; j < CB; ++j)
            o[j] = loadW<W>(accRow + (cb + j) * W) * alpha;
        for (std::int64_t i = 0; i < n; ++i) {
            const float pi = pr[i];
            const float* vr = vf + i * vStride + cb * W;
            for (int j = 0; j < CB; ++j)
                o[j] += pi * loadW<W>(vr + j * W);
        }
        for (int j = 0; j < CB; ++j)
            storeW<W>(accRow + (cb + j) * W, o[j]);
    }
}

/// Normalised outputs and log2-sum-exp of every row.
template <int DV> KVSCOPE_INLINE void finishRows(const Segment& sg, const Scratch& sc) {
    for (std::int64_t r = 0; r < sg.rows; ++r) {
        const float l = sc.l[std::size_t(r)];
        const float inv = l > 0 ? 1.0f / l : 0.0f;
        for (std::int64_t j = 0; j < DV; ++j)
            sg.out[r * DV + j] = sc.acc[std::size_t(r * DV + j)] * inv;
        sg.lse[r] =
            l > 0 ? sc.m[std::size_t(r)] + std::log2(l) : -std::numeric_limits<float>::infinity();
    }
}

/// DK, DV: key and value widths in floats.
template <int W, int DK, int DV>
KVSCOPE_INLINE void attendPortable(const Segment& sg, Scratch& sc) {
    constexpr std::int64_t T = kTileTokens;
    constexpr int NV = DV / W, CB = NV < 8 ? NV : 8;
    static_assert(DK % W == 0 && NV % CB == 0 && T % W == 0, "tile and pass shapes");
    const std::int64_t R = sg.rows;
    const bool shared = sg.values == sg.keys;
    sc.k.resize(std::size_t(T * DK));
    if (!shared)
        sc.v.resize(std::size_t(T * DV));
    sc.acc.assign(std::size_t(R * DV), 0.0f);
    sc.m.assign(std::size_t(R), -std::numeric_limits<float>::infinity());
    sc.l.assign(std::size_t(R), 0.0f);
    sc.p.resize(std::size_t(R * T));
    sc.alpha.resize(std::size_t(R));
    float* kf = sc.k.data();
    // Gathered tiles first (8 K and 8 V sub-streams in step, as the vdpbf16ps kernel reads:
    // row_map.h's gatherPlan), then the rest of the segment in contiguous tiles. Tile i <
    // gp.tiles is always full.
    const GatherPlan gp = gatherPlan(sg, int(T));
    for (std::int64_t i = 0; i < gp.count(sg); ++i) {
        const GatherPlan::Tile at = gp.tile(sg, i);
        const std::int64_t n = at.n;
        decodeTile(sg.dtype, at.k, n, DK, kf);
        std::fill(kf + n * DK, kf + T * DK, 0.0f); // rows past the end (their scores are masked)
        const float* vf = kf;
        std::int64_t vStride = DK;
        if (!shared) {
            decodeTile(sg.dtype, at.v, n, DV, sc.v.data());
            vf = sc.v.data();
            vStride = DV;
        }
        for (std::int64_t r = 0; r < R; ++r)
            scoreSoftmaxRow<W, DK>(sg.q + r * DK, kf, n, r, sc);
        for (std::int64_t r = 0; r < R; ++r)
            pvRow<W, DV>(vf, vStride, n, r, sc);
    }
    finishRows<DV>(sg, sc);
}

/// One entry point per vector width, each compiled for its instruction set (the kernel body is
/// inlined into it), instantiated for the widths this engine runs: GQA head dims 64/128/256
/// and MLA 576/512.
template <int W> struct PortableWidth;
#if defined(__GNUC__) && defined(__x86_64__)
#define KVSCOPE_PORTABLE_WIDTH(W, TARGET)                                                          \
    template <> struct PortableWidth<W> {                                                          \
        template <int DK, int DV>                                                                  \
        TARGET __attribute__((noinline)) static void run(const Segment& sg, Scratch& sc) {         \
            attendPortable<W, DK, DV>(sg, sc);                                                     \
        }                                                                                          \
    };
KVSCOPE_PORTABLE_WIDTH(16, KVSCOPE_AVX512_TARGET)
KVSCOPE_PORTABLE_WIDTH(8, __attribute__((target("avx2,fma"))))
KVSCOPE_PORTABLE_WIDTH(4, )
#undef KVSCOPE_PORTABLE_WIDTH
#else
template <> struct PortableWidth<4> {
    template <int DK, int DV> static void run(const Segment& sg, Scratch& sc) {
        attendPortable<4, DK, DV>(sg, sc);
    }
};
#endif

template <int W> PortableKernel portableKernelFor(std::int64_t keyDim, std::int64_t valueDim) {
    if (keyDim == 64 && valueDim == 64)
        return &PortableWidth<W>::template run<64, 64>;
    if (keyDim == 128 && valueDim == 128)
        return &PortableWidth<W>::template run<128, 128>;
    if (keyDim == 256 && valueDim == 256)
        return &PortableWidth<W>::template run<256, 256>;
    if (keyDim == 576 && valueDim == 512)
        return &PortableWidth<W>::template run<576, 512>;
    return nullptr;
}

} // namespace

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
#if defined(__GNUC__) && defined(__x86_64__)
    if (width == 16)
        return portableKernelFor<16>(keyDim, valueDim);
    if (width == 8)
        return portableKernelFor<8>(keyDim, valueDim);
#endif
    (void)width;
    return portableKernelFor<4>(keyDim, valueDim);
}

} // namespace kvscope::gpu::detail::cpu
