// CPU engine: the same decode math as the CUDA kernels (GQA family and absorbed MLA), split
// over KV chunks on a std::thread pool and merged by log-sum-exp. Two kernels: bf16/fp8 KV on
// vdpbf16ps where the CPU has AVX512_BF16, and a portable fp32 kernel on GCC vector types, one
// instantiation per vector width (AVX-512, AVX2+FMA, 4-wide) picked at run time. No -march:
// the binary stays portable. Design and figures: gpu/NOTES.md.
#include "gpu/engine.h"
#include "gpu/numerics.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <mutex>
#include <new>
#include <thread>
#include <type_traits>
#include <unistd.h>

#if defined(__x86_64__)
// GCC 12's AVX-512 headers start masked intrinsics from _mm512_undefined_*() and warn about it
// once inlined at -O3 (GCC bug 105593, fixed in 12.3/13): a false positive inside the header.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__) && defined(__linux__)
#define KVSCOPE_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define KVSCOPE_CLONES
#endif

namespace kvscope::gpu::detail {
namespace {

// --- A small persistent thread pool -------------------------------------------------------------
class ThreadPool {
public:
    explicit ThreadPool(unsigned threads) {
        for (unsigned i = 1; i < threads; ++i)
            workers_.emplace_back([this] { workerLoop(); });
    }
    ~ThreadPool() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        for (auto& t : workers_)
            t.join();
    }
    unsigned size() const { return unsigned(workers_.size()) + 1; }

    /// Runs fn(i) for i in [0, n) on every thread (the caller included); returns when done.
    void parallelFor(std::int64_t n, const std::function<void(std::int64_t)>& fn) {
        if (n <= 0)
            return;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            job_ = &fn;
            count_ = n;
            next_.store(0);
            busy_ = unsigned(workers_.size());
            ++generation_;
        }
        wake_.notify_all();
        drain();
        std::unique_lock<std::mutex> lock(mutex_);
        done_.wait(lock, [this] { return busy_ == 0; });
        job_ = nullptr;
    }

private:
    void drain() {
        for (std::int64_t i; (i = next_.fetch_add(1)) < count_;)
            (*job_)(i);
    }
    void workerLoop() {
        std::uint64_t seen = 0;
        for (;;) {
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
                if (stop_)
                    return;
                seen = generation_;
            }
            drain();
            {
                std::lock_guard<std::mutex> lock(mutex_);
                if (--busy_ == 0)
                    done_.notify_one();
            }
        }
    }

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    const std::function<void(std::int64_t)>* job_ = nullptr;
    std::int64_t count_ = 0;
    std::atomic<std::int64_t> next_{0};
    unsigned busy_ = 0;
    std::uint64_t generation_ = 0;
    bool stop_ = false;
};

// --- Aligned byte buffers ---------------------------------------------------------------------
struct Buffer {
    std::uint8_t* data = nullptr;
    std::size_t bytes = 0;
    Buffer() = default;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    Buffer(Buffer&& o) noexcept : data(o.data), bytes(o.bytes) { o.data = nullptr, o.bytes = 0; }
    Buffer& operator=(Buffer&& o) noexcept {
        if (this != &o) {
            free();
            data = o.data;
            bytes = o.bytes;
            o.data = nullptr;
            o.bytes = 0;
        }
        return *this;
    }
    ~Buffer() { free(); }
    void free() {
        if (data)
            ::operator delete(data, std::align_val_t(64), std::nothrow);
        data = nullptr;
        bytes = 0;
    }
    bool allocate(std::size_t n) {
        data = static_cast<std::uint8_t*>(
            ::operator new(n ? n : 64, std::align_val_t(64), std::nothrow));
        bytes = data ? n : 0;
        return data != nullptr;
    }
};

// --- Decoding storage formats into fp32 (vectorisable, branch-free) ----------------------------
using Fp16RowDecoder = void (*)(const std::uint16_t*, float*, std::int64_t);

void fp16RowScalar(const std::uint16_t* s, float* dst, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i)
        dst[i] = num::fp16ToFloat(s[i]);
}
#if defined(__GNUC__) && defined(__x86_64__)
// vcvtph2ps is exact for every fp16 value (subnormals included), as num::fp16ToFloat is; GCC
// does not vectorise the bit-twiddling version (it was ~75% of the fp16 decode time).
__attribute__((target("avx512f"))) void fp16RowAvx512(const std::uint16_t* s, float* dst,
                                                      std::int64_t n) {
    std::int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(
            dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i))));
    fp16RowScalar(s + i, dst + i, n - i);
}
__attribute__((target("avx,f16c"))) void fp16RowF16c(const std::uint16_t* s, float* dst,
                                                     std::int64_t n) {
    std::int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i,
                         _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
    fp16RowScalar(s + i, dst + i, n - i);
}
#endif

/// The fastest exact fp16 -> fp32 row decoder this CPU runs.
Fp16RowDecoder fp16RowDecoder() {
    static const Fp16RowDecoder chosen = [] {
#if defined(__GNUC__) && defined(__x86_64__)
        if (__builtin_cpu_supports("avx512f"))
            return &fp16RowAvx512;
        // F16C comes with every AVX2 CPU (x86-64-v3); clang's __builtin_cpu_supports has no
        // "f16c" string.
        if (__builtin_cpu_supports("avx2"))
            return &fp16RowF16c;
#endif
        return &fp16RowScalar;
    }();
    return chosen;
}

inline void decodeRow(KvDtype dtype, const std::uint8_t* src, float* dst, std::int64_t n) {
    switch (dtype) {
    case KvDtype::Bf16: {
        const auto* s = reinterpret_cast<const std::uint16_t*>(src);
        for (std::int64_t i = 0; i < n; ++i)
            dst[i] = num::bf16ToFloat(s[i]);
        break;
    }
    case KvDtype::Fp16:
        fp16RowDecoder()(reinterpret_cast<const std::uint16_t*>(src), dst, n);
        break;
    case KvDtype::Fp8E4m3:
        for (std::int64_t i = 0; i < n; ++i)
            dst[i] = num::fp8e4m3ToFloat(src[i]);
        break;
    case KvDtype::Fp32:
        std::memcpy(dst, src, std::size_t(n) * sizeof(float));
        break;
    }
}

inline void encodeValue(KvDtype dtype, float x, std::uint8_t* dst) {
    switch (dtype) {
    case KvDtype::Bf16: {
        const std::uint16_t b = num::floatToBf16(x);
        std::memcpy(dst, &b, 2);
        break;
    }
    case KvDtype::Fp16: {
        const std::uint16_t b = num::floatToFp16(x);
        std::memcpy(dst, &b, 2);
        break;
    }
    case KvDtype::Fp8E4m3:
        *dst = num::floatToFp8e4m3(x);
        break;
    case KvDtype::Fp32:
        std::memcpy(dst, &x, 4);
        break;
    }
}

inline float decodeValue(KvDtype dtype, const std::uint8_t* src) {
    float out;
    decodeRow(dtype, src, &out, 1);
    return out;
}

KvDtype activationType(KvDtype kv) {
    return kv == KvDtype::Fp32 ? KvDtype::Fp32
                               : (kv == KvDtype::Fp16 ? KvDtype::Fp16 : KvDtype::Bf16);
}

// --- The portable kernel: fp16/fp32 KV, and every KV dtype on CPUs without AVX512_BF16 -------
constexpr std::int64_t kTileTokens = 32;

/// W floats, one vector register on the target the kernel is compiled for (16: AVX-512, 8:
/// AVX2, 4: SSE2 or any other CPU). One width per target, chosen at run time: a 16-float vector
/// compiled for AVX2 went through the stack and ran 5-8x slower than on AVX-512.
template <int W> struct Lanes {
    typedef float F __attribute__((vector_size(W * 4)));
    typedef std::int32_t I __attribute__((vector_size(W * 4)));
};
#define KVSCOPE_INLINE inline __attribute__((always_inline))

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

/// Online-softmax attention of `rows` query rows (each keyDim wide, pre-scaled by
/// log2(e)·scale) over tokens [t0, t1) of one KV stream. Values are the first valueDim
/// elements of the value rows (MLA: of the key rows themselves). Writes the normalised output
/// and the per-row log2-sum-exp.
struct Segment {
    const float* q; // [rows][keyDim]
    std::int64_t rows, keyDim, valueDim;
    const std::uint8_t* keys; // token t at keys + t * keyRowBytes
    const std::uint8_t* values;
    std::int64_t keyRowBytes, valueRowBytes;
    std::int64_t t0, t1;
    KvDtype dtype;
    float* out; // [rows][valueDim], normalised
    float* lse; // [rows], log2 domain
};

struct Scratch {
    std::vector<float> k, v;     // the tile's K and V rows in fp32
    std::vector<float> acc;      // [rows][valueDim]
    std::vector<float> m, l;     // running max and sum per row
    std::vector<float> p, alpha; // [rows][tile] probabilities, [rows] rescale of this tile
};

/// DK, DV: key and value widths in floats. Per 32-token tile, the K and V rows are decoded to
/// fp32 once for all rows, then three phases run over all rows so independent rows overlap in
/// the core: scores (W tokens per transpose tree), the online-softmax update (one max and one
/// rescale per row and tile), and O = alpha O + P V with up to 8 output vectors of a row in
/// registers per pass. Arithmetic is fp32 throughout (P is not rounded).
template <int W, int DK, int DV>
KVSCOPE_INLINE void attendPortable(const Segment& sg, Scratch& sc) {
    using F = typename Lanes<W>::F;
    constexpr std::int64_t T = kTileTokens;
    constexpr int NV = DV / W, CB = NV < 8 ? NV : 8; // output vectors, per P V pass
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
    F iota;
    for (int i = 0; i < W; ++i)
        iota[i] = float(i);
    const F minusInf = F{} - std::numeric_limits<float>::infinity();
    for (std::int64_t t = sg.t0; t < sg.t1; t += T) {
        const std::int64_t n = std::min(T, sg.t1 - t);
        for (std::int64_t i = 0; i < n; ++i)
            decodeRow(sg.dtype, sg.keys + (t + i) * sg.keyRowBytes, kf + i * DK, DK);
        std::fill(kf + n * DK, kf + T * DK, 0.0f); // rows past the end (their scores are masked)
        const float* vf = kf;
        std::int64_t vStride = DK;
        if (!shared) {
            for (std::int64_t i = 0; i < n; ++i)
                decodeRow(sg.dtype, sg.values + (t + i) * sg.valueRowBytes, sc.v.data() + i * DV,
                          DV);
            vf = sc.v.data();
            vStride = DV;
        }
        for (std::int64_t r = 0; r < R; ++r) {
            // Scores (q is pre-scaled by scale * log2 e), -inf past the end of the tile.
            const float* qr = sg.q + r * DK;
            F s[T / W];
            F mx = minusInf;
            for (int b = 0; b < T / W; ++b) {
                const F left = F{} + float(n - b * W);
                s[b] = b * W < n ? scoresW<W, DK>(qr, kf + b * W * DK, DK) : minusInf;
                s[b] = iota < left ? s[b] : minusInf;
                mx = mx > s[b] ? mx : s[b];
            }
            // Online softmax: one max and one rescale per row and tile.
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
        // O = alpha O + P V, CB output vectors of one row per pass.
        for (std::int64_t r = 0; r < R; ++r) {
            const float* pr = sc.p.data() + r * T;
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
    }
    for (std::int64_t r = 0; r < R; ++r) {
        const float l = sc.l[std::size_t(r)];
        const float inv = l > 0 ? 1.0f / l : 0.0f;
        for (std::int64_t j = 0; j < DV; ++j)
            sg.out[r * DV + j] = sc.acc[std::size_t(r * DV + j)] * inv;
        sg.lse[r] =
            l > 0 ? sc.m[std::size_t(r)] + std::log2(l) : -std::numeric_limits<float>::infinity();
    }
}

/// One entry point per vector width, each compiled for its instruction set (the kernel body is
/// inlined into it), instantiated for the widths this engine runs: GQA head dims 64/128/256
/// and MLA 576/512.
using PortableKernel = void (*)(const Segment&, Scratch&);
template <int W> struct PortableWidth;
#if defined(__GNUC__) && defined(__x86_64__)
#define KVSCOPE_PORTABLE_WIDTH(W, TARGET)                                                          \
    template <> struct PortableWidth<W> {                                                          \
        template <int DK, int DV>                                                                  \
        TARGET __attribute__((noinline)) static void run(const Segment& sg, Scratch& sc) {         \
            attendPortable<W, DK, DV>(sg, sc);                                                     \
        }                                                                                          \
    };
KVSCOPE_PORTABLE_WIDTH(16, __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma"))))
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

/// The vector width of the portable kernel on this CPU: 16 with AVX-512, 8 with AVX2 and FMA,
/// else 4. KVSCOPE_CPU_VECTOR=4|8|16 narrows it (tests run every width the CPU can).
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

// --- bf16 dot-product kernel (AVX-512 BF16: vdpbf16ps) -----------------------------------------
// bf16 and fp8 KV (both with bf16 queries) on CPUs that have AVX512_BF16. Every product of two
// bf16 values is exact in fp32 and accumulates in fp32, so Q·K is as exact as the fp32 path;
// the probabilities are rounded to bf16 for P·V (as the CUDA kernels do) and the softmax sums
// use the rounded values, so the output stays a convex combination of the values.
// Per tile of 16 tokens: K is read once for all query rows of the group, the 16 partial dot
// products of one row are reduced by a transpose tree (3 ops per token, no horizontal sums),
// there is one max/rescale per row and tile, and V rows are interleaved in token pairs once per
// tile so that vdpbf16ps sums two tokens per lane. Output columns come out permuted by the
// interleave (lane 4L + j of the low/high half holds column 8L + j / 8L + 4 + j of each
// 32-column chunk) and are put back in order at the end of the segment.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__) && defined(__linux__)
#define KVSCOPE_HAVE_BF16_KERNEL 1
#define KVSCOPE_BF16_TARGET                                                                        \
    __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma,avx2")))

struct SegmentBf16 {
    const std::uint16_t* q;     // [rows][keyDim] bf16 queries (unscaled)
    std::int64_t rows;          // query rows served by this KV stream
    const std::uint8_t* keys;   // token t at keys + t * keyRowBytes
    const std::uint8_t* values; // == keys for MLA (values are the first valueDim elements)
    std::int64_t keyRowBytes, valueRowBytes;
    std::int64_t t0, t1;
    KvDtype dtype;    // Bf16 or Fp8E4m3 (decoded to bf16 per tile, exactly)
    float scoreScale; // softmax scale * log2(e)
    float* out;       // [rows][valueDim], normalised
    float* lse;       // [rows], log2 domain
};

struct ScratchBf16 {
    std::vector<std::uint16_t> kTile, vTile; // decoded/padded tiles when needed
    std::vector<float> acc, mRow, alpha;     // [rows][valueDim], [rows][16], [rows]
    std::vector<float> lVec;                 // [rows][16]
    std::vector<float> s;                    // [rows][tile] scaled scores, -inf past the end
    std::vector<std::uint32_t> p;            // [rows][tile / 2] bf16 probability pairs
};

/// fp8 e4m3 -> bf16 bits, exact (3 mantissa bits and exponents 2^-9..2^8 fit in bf16).
const std::uint16_t* fp8ToBf16Table() {
    static const auto table = [] {
        std::array<std::uint16_t, 256> t{};
        for (int i = 0; i < 256; ++i)
            t[std::size_t(i)] =
                std::uint16_t(num::floatToBits(num::fp8e4m3ToFloat(std::uint8_t(i))) >> 16);
        return t;
    }();
    return table.data();
}

/// Sums of 16 vectors: lane i of the result is the sum of the 16 lanes of v[i].
KVSCOPE_BF16_TARGET inline __attribute__((always_inline)) __m512 transposeSum16(__m512 v[16]) {
    __m512 a[8], b[4], c[2];
    for (int i = 0; i < 8; ++i) // per 128-bit lane: v2i parts at 0 and 2, v2i+1 parts at 1 and 3
        a[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]),
                             _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
    for (int i = 0; i < 4; ++i) { // per 128-bit lane: v4i .. v4i+3 (add as floats)
        const __m512d x = _mm512_castps_pd(a[2 * i]), y = _mm512_castps_pd(a[2 * i + 1]);
        b[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)),
                             _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
    }
    for (int i = 0; i < 2; ++i)
        c[i] = _mm512_add_ps(_mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0x88),
                             _mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0xdd));
    return _mm512_add_ps(_mm512_shuffle_f32x4(c[0], c[1], 0x88),
                         _mm512_shuffle_f32x4(c[0], c[1], 0xdd));
}

/// 2^x for x <= 0 (as exp2NegW): degree-7 polynomial, then scalef by the integer part.
KVSCOPE_BF16_TARGET inline __m512 exp2Neg512(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-125.0f));
    const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m512 t = _mm512_mul_ps(_mm512_sub_ps(x, n), _mm512_set1_ps(0.69314718056f));
    __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

KVSCOPE_BF16_TARGET inline __m512bh asBh(__m512i v) {
    __m512bh r;
    std::memcpy(&r, &v, sizeof r);
    return r;
}

constexpr std::int64_t kBf16Tile = 32; // tokens per tile: two 16-lane score vectors per row

/// The 128 non-negative fp8 e4m3 codes as bf16 bits, in four vectors for vpermi2w lookups.
struct Fp8Lut {
    __m512i t[4];
};
KVSCOPE_BF16_TARGET inline Fp8Lut fp8Lut() {
    Fp8Lut l;
    for (int i = 0; i < 4; ++i)
        l.t[i] = _mm512_loadu_si512(fp8ToBf16Table() + 32 * i);
    return l;
}

/// 32 fp8 e4m3 values -> bf16, exactly: the magnitude (7 bits) is looked up in the scalar table
/// with two vpermi2w (64 entries each) and a blend on bit 6; the sign bit moves to bit 15.
KVSCOPE_BF16_TARGET inline __m512i fp8x32ToBf16(const std::uint8_t* src, const Fp8Lut& lut) {
    const __m512i w =
        _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)));
    const __m512i lo = _mm512_permutex2var_epi16(lut.t[0], w, lut.t[1]);
    const __m512i hi = _mm512_permutex2var_epi16(lut.t[2], w, lut.t[3]);
    const __mmask32 upper = _mm512_test_epi16_mask(w, _mm512_set1_epi16(0x40));
    const __m512i sign = _mm512_slli_epi16(_mm512_and_si512(w, _mm512_set1_epi16(0x80)), 8);
    return _mm512_or_si512(_mm512_mask_blend_epi16(upper, lo, hi), sign);
}

/// Copies (bf16) or decodes (fp8) n <= kBf16Tile token rows into a kBf16Tile-row tile whose
/// rows past n are zero. width is a multiple of 32.
KVSCOPE_BF16_TARGET void stageTile(const std::uint8_t* src, std::int64_t srcStride, int n,
                                   int width, bool fp8, std::vector<std::uint16_t>& dst) {
    dst.resize(std::size_t(kBf16Tile * width));
    std::fill(dst.begin() + std::ptrdiff_t(n) * width, dst.end(), std::uint16_t(0));
    if (!fp8) {
        for (int i = 0; i < n; ++i)
            std::memcpy(dst.data() + i * width, src + i * srcStride, std::size_t(width) * 2);
        return;
    }
    const Fp8Lut lut = fp8Lut();
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < width; j += 32)
            _mm512_storeu_si512(dst.data() + i * width + j,
                                fp8x32ToBf16(src + i * srcStride + j, lut));
}

/// O[r..r+RB) = alpha * O + P V over `pairs` token pairs of the tile. V rows 2p and 2p+1 are
/// interleaved in registers (vpunpckl/hwd) so vdpbf16ps adds two tokens per lane; each pass
/// keeps RB rows x CB output vectors in registers and shares every V load and shuffle among
/// the RB rows. (Interleaving through a scratch tile instead cost ~1.6x at g = 1..2: the
/// stores and reloads, and 4-deep accumulator chains.)
template <int RB, int DV>
KVSCOPE_BF16_TARGET inline void pvBlock(ScratchBf16& sc, std::int64_t r, const std::uint8_t* v,
                                        std::int64_t stride, int pairs) {
    constexpr int NVC = DV / 16;
    constexpr int CB = 16 / RB < NVC ? 16 / RB : NVC; // output vectors per pass (even)
    float* acc = sc.acc.data();
    const std::uint32_t* p = sc.p.data();
    for (int cb = 0; cb < NVC; cb += CB) {
        __m512 o[RB][CB];
        for (int rb = 0; rb < RB; ++rb) {
            const __m512 al = _mm512_set1_ps(sc.alpha[std::size_t(r + rb)]);
            for (int j = 0; j < CB; ++j)
                o[rb][j] = _mm512_mul_ps(_mm512_loadu_ps(acc + (r + rb) * DV + (cb + j) * 16), al);
        }
        for (int pr = 0; pr < pairs; ++pr) {
            const std::uint8_t* a = v + (2 * pr) * stride + cb * 32;
            const std::uint8_t* b = a + stride;
            __m512i bc[RB];
            for (int rb = 0; rb < RB; ++rb)
                bc[rb] = _mm512_set1_epi32(int(p[std::size_t((r + rb) * kBf16Tile / 2 + pr)]));
            for (int c = 0; c < CB / 2; ++c) {
                const __m512i x = _mm512_loadu_si512(a + c * 64);
                const __m512i y = _mm512_loadu_si512(b + c * 64);
                const __m512i lo = _mm512_unpacklo_epi16(x, y), hi = _mm512_unpackhi_epi16(x, y);
                for (int rb = 0; rb < RB; ++rb) {
                    o[rb][2 * c] = _mm512_dpbf16_ps(o[rb][2 * c], asBh(bc[rb]), asBh(lo));
                    o[rb][2 * c + 1] = _mm512_dpbf16_ps(o[rb][2 * c + 1], asBh(bc[rb]), asBh(hi));
                }
            }
        }
        for (int rb = 0; rb < RB; ++rb)
            for (int j = 0; j < CB; ++j)
                _mm512_storeu_ps(acc + (r + rb) * DV + (cb + j) * 16, o[rb][j]);
    }
}

/// Every lane = the maximum of the 16 lanes.
KVSCOPE_BF16_TARGET inline __m512 broadcastMax(__m512 x) {
    x = _mm512_max_ps(x, _mm512_shuffle_f32x4(x, x, 0x4e));
    x = _mm512_max_ps(x, _mm512_shuffle_f32x4(x, x, 0xb1));
    x = _mm512_max_ps(x, _mm512_permute_ps(x, 0x4e));
    return _mm512_max_ps(x, _mm512_permute_ps(x, 0xb1));
}

// The two score routines stay out of line: inlined into the row loop, GCC interleaved and
// spilled their 16 accumulators and g 1..16 ran 1.1-1.8x slower (measured, NOTES.md).

/// q . k for the 16 key rows at k, k + stride, ...: lane i is token i (unscaled).
template <int DK>
KVSCOPE_BF16_TARGET __attribute__((noinline)) __m512
scores16(const std::uint16_t* qr, const std::uint8_t* k, std::int64_t stride) {
    constexpr int NKC = DK / 32;
    __m512 part[16];
    if constexpr (NKC <= 8) {
        __m512i q[NKC];
        for (int c = 0; c < NKC; ++c)
            q[c] = _mm512_loadu_si512(qr + c * 32);
        for (int i = 0; i < 16; ++i) {
            __m512 acc = _mm512_setzero_ps();
            for (int c = 0; c < NKC; ++c)
                acc = _mm512_dpbf16_ps(acc, asBh(q[c]),
                                       asBh(_mm512_loadu_si512(k + i * stride + c * 64)));
            part[i] = acc;
        }
    } else {
        for (int i = 0; i < 16; ++i)
            part[i] = _mm512_setzero_ps();
        for (int c = 0; c < NKC; ++c) {
            const __m512i q = _mm512_loadu_si512(qr + c * 32);
            for (int i = 0; i < 16; ++i)
                part[i] = _mm512_dpbf16_ps(part[i], asBh(q),
                                           asBh(_mm512_loadu_si512(k + i * stride + c * 64)));
        }
    }
    return transposeSum16(part);
}

/// Two query rows against 8 key rows, unscaled: lanes 0-7 are row a's tokens, lanes 8-15 row
/// b's. Every K load serves both rows (half the loads of two scores16 calls).
template <int DK>
KVSCOPE_BF16_TARGET __attribute__((noinline)) __m512
scores8x2(const std::uint16_t* qa, const std::uint16_t* qb, const std::uint8_t* k,
          std::int64_t stride) {
    constexpr int NKC = DK / 32;
    __m512 part[16];
    for (int i = 0; i < 16; ++i)
        part[i] = _mm512_setzero_ps();
    if constexpr (NKC <= 4) { // both rows' query chunks stay in registers
        __m512i q0[NKC], q1[NKC];
        for (int c = 0; c < NKC; ++c) {
            q0[c] = _mm512_loadu_si512(qa + c * 32);
            q1[c] = _mm512_loadu_si512(qb + c * 32);
        }
        for (int i = 0; i < 8; ++i)
            for (int c = 0; c < NKC; ++c) {
                const __m512i kc = _mm512_loadu_si512(k + i * stride + c * 64);
                part[i] = _mm512_dpbf16_ps(part[i], asBh(q0[c]), asBh(kc));
                part[8 + i] = _mm512_dpbf16_ps(part[8 + i], asBh(q1[c]), asBh(kc));
            }
    } else {
        for (int c = 0; c < NKC; ++c) {
            const __m512i q0 = _mm512_loadu_si512(qa + c * 32);
            const __m512i q1 = _mm512_loadu_si512(qb + c * 32);
            for (int i = 0; i < 8; ++i) {
                const __m512i kc = _mm512_loadu_si512(k + i * stride + c * 64);
                part[i] = _mm512_dpbf16_ps(part[i], asBh(q0), asBh(kc));
                part[8 + i] = _mm512_dpbf16_ps(part[8 + i], asBh(q1), asBh(kc));
            }
        }
    }
    return transposeSum16(part);
}

/// Online-softmax update of SR consecutive rows from their tile scores (sc.s): new running max,
/// the rescale alpha of the old accumulators, bf16 probability pairs, and the sum of exactly
/// those rounded probabilities. Several rows per call so their exp chains overlap.
template <int SR>
KVSCOPE_BF16_TARGET inline void softmaxRows(ScratchBf16& sc, std::int64_t r0, __mmask16 valid0,
                                            __mmask16 valid1) {
    constexpr int T = int(kBf16Tile);
    for (int i = 0; i < SR; ++i) {
        const std::int64_t r = r0 + i;
        const __m512 s0 = _mm512_loadu_ps(sc.s.data() + r * T);
        const __m512 s1 = _mm512_loadu_ps(sc.s.data() + r * T + 16);
        float* mRow = sc.mRow.data() + r * 16; // the running max in every lane
        const __m512 mOld = _mm512_loadu_ps(mRow);
        const __m512 mNew = _mm512_max_ps(mOld, broadcastMax(_mm512_max_ps(s0, s1)));
        _mm512_storeu_ps(mRow, mNew);
        const __m512 alpha = exp2Neg512(_mm512_sub_ps(mOld, mNew)); // ~0 on the first tile
        sc.alpha[std::size_t(r)] = _mm512_cvtss_f32(alpha);
        const __m512 p0 = _mm512_maskz_mov_ps(valid0, exp2Neg512(_mm512_sub_ps(s0, mNew)));
        const __m512 p1 = _mm512_maskz_mov_ps(valid1, exp2Neg512(_mm512_sub_ps(s1, mNew)));
        // bf16 pairs (token 2k low, 2k+1 high) and the same rounded values for the sum.
        const __m512bh pb = _mm512_cvtne2ps_pbh(p1, p0);
        __m512i pbits;
        std::memcpy(&pbits, &pb, sizeof pbits);
        _mm512_storeu_si512(sc.p.data() + r * T / 2, pbits);
        const __m512 lo = _mm512_castsi512_ps(_mm512_slli_epi32(pbits, 16));
        const __m512 hi =
            _mm512_castsi512_ps(_mm512_and_si512(pbits, _mm512_set1_epi32(int(0xffff0000u))));
        float* l = sc.lVec.data() + r * 16;
        _mm512_storeu_ps(l, _mm512_fmadd_ps(_mm512_loadu_ps(l), alpha, _mm512_add_ps(lo, hi)));
    }
}

/// Scaled scores with -inf past the end of the tile.
KVSCOPE_BF16_TARGET inline __m512 keepScaled(__m512 scale, __mmask16 valid, __m512 raw) {
    return _mm512_mask_mov_ps(_mm512_set1_ps(-std::numeric_limits<float>::infinity()), valid,
                              _mm512_mul_ps(raw, scale));
}

/// DK, DV: key and value widths in elements (multiples of 32). Per 32-token tile, three phases
/// over all rows of the stream, so independent rows overlap in the core: scores (two rows per
/// K load), the online-softmax update, then O += P V (four rows per V load).
template <int DK, int DV>
KVSCOPE_BF16_TARGET void attendBf16(const SegmentBf16& sg, ScratchBf16& sc) {
    constexpr int T = int(kBf16Tile);
    const std::int64_t R = sg.rows;
    const bool shared = sg.values == sg.keys;
    const bool fp8 = sg.dtype != KvDtype::Bf16;
    sc.acc.assign(std::size_t(R * DV), 0.0f);
    sc.mRow.assign(std::size_t(R * 16), -std::numeric_limits<float>::infinity());
    sc.alpha.resize(std::size_t(R));
    sc.lVec.assign(std::size_t(R * 16), 0.0f);
    sc.s.resize(std::size_t(R * T));
    sc.p.resize(std::size_t(R * T / 2));
    const __m512 scale = _mm512_set1_ps(sg.scoreScale);
    const __m512 minusInf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    for (std::int64_t t = sg.t0; t < sg.t1; t += T) {
        const int n = int(std::min<std::int64_t>(T, sg.t1 - t));
        // K (and V) tile as bf16 rows: straight from the cache when possible, else decoded or
        // zero-padded into scratch (never reading past the segment).
        const std::uint8_t* kBase = sg.keys + t * sg.keyRowBytes;
        std::int64_t kStride = sg.keyRowBytes;
        const std::uint8_t* vBase = sg.values + t * sg.valueRowBytes;
        std::int64_t vStride = sg.valueRowBytes;
        if (fp8 || n < T) {
            stageTile(kBase, sg.keyRowBytes, n, DK, fp8, sc.kTile);
            kBase = reinterpret_cast<const std::uint8_t*>(sc.kTile.data());
            kStride = DK * 2;
            if (shared) {
                vBase = kBase;
                vStride = kStride;
            } else {
                stageTile(vBase, sg.valueRowBytes, n, DV, fp8, sc.vTile);
                vBase = reinterpret_cast<const std::uint8_t*>(sc.vTile.data());
                vStride = DV * 2;
            }
        }
        // No software prefetch: the hardware streamers follow the K and V streams. Bursts of
        // 2 x 128 prefetches per tile, 2-8 tiles ahead, cost 1.4-1.9x; next-tile prefetches
        // spread over the score calls (T0/T2/NTA, 1-4 tiles ahead) changed nothing (NOTES.md).
        const __mmask16 valid0 = n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1u);
        const __mmask16 valid1 = n <= 16   ? __mmask16(0)
                                 : n >= 32 ? __mmask16(0xffff)
                                           : __mmask16((1u << (n - 16)) - 1u);
        float* s = sc.s.data();
        std::int64_t r = 0;
        for (; r + 2 <= R; r += 2) {
            const std::uint16_t* qa = sg.q + r * DK;
            __m512 h[4]; // tokens 8j..8j+7: row r in lanes 0-7, row r+1 in lanes 8-15
            for (int j = 0; j < 4; ++j)
                h[j] = scores8x2<DK>(qa, qa + DK, kBase + 8 * j * kStride, kStride);
            _mm512_storeu_ps(s + r * T,
                             keepScaled(scale, valid0, _mm512_shuffle_f32x4(h[0], h[1], 0x44)));
            _mm512_storeu_ps(s + r * T + 16,
                             keepScaled(scale, valid1, _mm512_shuffle_f32x4(h[2], h[3], 0x44)));
            _mm512_storeu_ps(s + r * T + T,
                             keepScaled(scale, valid0, _mm512_shuffle_f32x4(h[0], h[1], 0xee)));
            _mm512_storeu_ps(s + r * T + T + 16,
                             keepScaled(scale, valid1, _mm512_shuffle_f32x4(h[2], h[3], 0xee)));
        }
        if (r < R) {
            const std::uint16_t* qr = sg.q + r * DK;
            _mm512_storeu_ps(s + r * T,
                             keepScaled(scale, valid0, scores16<DK>(qr, kBase, kStride)));
            _mm512_storeu_ps(
                s + r * T + 16,
                valid1 ? keepScaled(scale, valid1, scores16<DK>(qr, kBase + 16 * kStride, kStride))
                       : minusInf);
        }
        for (r = 0; r + 2 <= R; r += 2)
            softmaxRows<2>(sc, r, valid0, valid1);
        if (r < R)
            softmaxRows<1>(sc, r, valid0, valid1);
        const int pairs = (n + 1) / 2;
        for (r = 0; r + 4 <= R; r += 4)
            pvBlock<4, DV>(sc, r, vBase, vStride, pairs);
        for (; r + 2 <= R; r += 2)
            pvBlock<2, DV>(sc, r, vBase, vStride, pairs);
        for (; r < R; ++r)
            pvBlock<1, DV>(sc, r, vBase, vStride, pairs);
    }
    // Normalise and undo the interleave's column order.
    for (std::int64_t r = 0; r < R; ++r) {
        const float l = _mm512_reduce_add_ps(_mm512_loadu_ps(sc.lVec.data() + r * 16));
        const float inv = l > 0 ? 1.0f / l : 0.0f;
        const float* a = sc.acc.data() + r * DV;
        float* o = sg.out + r * DV;
        for (int c = 0; c < DV / 32; ++c)
            for (int half = 0; half < 2; ++half)
                for (int lane = 0; lane < 16; ++lane)
                    o[c * 32 + 8 * (lane / 4) + 4 * half + lane % 4] =
                        a[(2 * c + half) * 16 + lane] * inv;
        sg.lse[r] = l > 0 ? sc.mRow[std::size_t(r * 16)] + std::log2(l)
                          : -std::numeric_limits<float>::infinity();
    }
}

bool dispatchAttendBf16(const SegmentBf16& sg, std::int64_t keyDim, std::int64_t valueDim,
                        ScratchBf16& sc) {
#define KVSCOPE_BF16_CASE(K, V)                                                                    \
    if (keyDim == K && valueDim == V) {                                                            \
        attendBf16<K, V>(sg, sc);                                                                  \
        return true;                                                                               \
    }
    KVSCOPE_BF16_CASE(64, 64)
    KVSCOPE_BF16_CASE(128, 128)
    KVSCOPE_BF16_CASE(256, 256)
    KVSCOPE_BF16_CASE(576, 512)
#undef KVSCOPE_BF16_CASE
    return false;
}

/// The first fp8 code whose vector conversion differs from the scalar table, or -1.
KVSCOPE_BF16_TARGET int fp8VectorMismatchImpl() {
    alignas(64) std::uint8_t codes[256];
    for (int i = 0; i < 256; ++i)
        codes[i] = std::uint8_t(i);
    const Fp8Lut lut = fp8Lut();
    alignas(64) std::uint16_t out[256];
    for (int j = 0; j < 256; j += 32)
        _mm512_storeu_si512(out + j, fp8x32ToBf16(codes + j, lut));
    for (int i = 0; i < 256; ++i)
        if (out[i] != fp8ToBf16Table()[i])
            return i;
    return -1;
}

/// 12 independent vdpbf16ps chains (latency ~6, two per cycle on Zen 4/5): the peak of the bf16
/// dot-product kernel, 64 FLOPs per instruction.
KVSCOPE_BF16_TARGET float bf16DotLoop(std::int64_t iterations, float seed) {
    constexpr int kChains = 12;
    __m512 acc[kChains];
    for (int c = 0; c < kChains; ++c)
        acc[c] = _mm512_set1_ps(seed + float(c) * 1e-3f);
    const __m512i a = _mm512_set1_epi32(0x3f803f80); // (1.0, 1.0) in bf16
    __m512i b = _mm512_set1_epi32(0x33d633d6);       // ~1e-7 in bf16
    for (std::int64_t it = 0; it < iterations; ++it) {
        for (int c = 0; c < kChains; ++c)
            acc[c] = _mm512_dpbf16_ps(acc[c], asBh(a), asBh(b));
        __asm__ volatile("" : "+v"(b)); // keeps the loop from being folded
    }
    __m512 s = acc[0];
    for (int c = 1; c < kChains; ++c)
        s = _mm512_add_ps(s, acc[c]);
    return _mm512_reduce_add_ps(s);
}
constexpr double kBf16DotLoopFlops = 12 * 16 * 2 * 2; // per iteration

bool cpuHasBf16Dot() {
    return __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}
#else
bool cpuHasBf16Dot() {
    return false;
}
float bf16DotLoop(std::int64_t, float) {
    return 0;
}
constexpr double kBf16DotLoopFlops = 0;
#endif

/// The bf16 dot-product kernel serves bf16 and fp8 KV on AVX512_BF16 CPUs unless
/// KVSCOPE_CPU_KERNEL=fp32 forces the portable fp32 kernel (for comparisons and tests).
bool bf16DotEnabled() {
    const char* force = std::getenv("KVSCOPE_CPU_KERNEL");
    return cpuHasBf16Dot() && !(force && std::string(force) == "fp32");
}

// --- Input generation ----------------------------------------------------------------------------
/// Elements [first, first + n) of one input tensor in its storage format. One loop per format so
/// the bf16 and fp32 generators vectorise (64-bit multiplies in AVX-512); it was a third of a
/// `measure` run's time when the format switch sat inside the per-element loop.
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

// --- Ceilings ------------------------------------------------------------------------------------
KVSCOPE_CLONES
float sumRegion(const float* p, std::int64_t n) {
    float lanes[64] = {};
    std::int64_t i = 0;
    for (; i + 64 <= n; i += 64)
        for (int l = 0; l < 64; ++l)
            lanes[l] += p[i + l];
    float s = 0;
    for (; i < n; ++i)
        s += p[i];
    for (float x : lanes)
        s += x;
    return s;
}

/// sumRegion over 4 equal parts read side by side (4 sequential streams per thread, as the
/// decode kernel reads 2 per thread (K and V) or more): one stream per core leaves the hardware
/// prefetchers short of memory-level parallelism and understated the bandwidth by ~1.7x.
KVSCOPE_CLONES
float sumStreams(const float* p, std::int64_t n) {
    constexpr int kStreams = 4;
    const std::int64_t per = n / kStreams / 64 * 64;
    float lanes[kStreams][32] = {};
    for (std::int64_t i = 0; i < per; i += 32)
        for (int st = 0; st < kStreams; ++st)
            for (int l = 0; l < 32; ++l)
                lanes[st][l] += p[st * per + i + l];
    float s = sumRegion(p + kStreams * per, n - kStreams * per);
    for (auto& row : lanes)
        for (float x : row)
            s += x;
    return s;
}

/// 16 lanes x 8 independent chains of a*x+y: FMA-bound on any vector width up to 512 bits.
KVSCOPE_CLONES
float fmaLoop(std::int64_t iterations, float seed) {
    float acc[8][16];
    for (int c = 0; c < 8; ++c)
        for (int l = 0; l < 16; ++l)
            acc[c][l] = seed + float(c * 16 + l) * 1e-3f;
    const float a = 0.999999f, b = 1e-7f;
    for (std::int64_t it = 0; it < iterations; ++it)
        for (int c = 0; c < 8; ++c)
            for (int l = 0; l < 16; ++l)
                acc[c][l] = acc[c][l] * a + b;
    float s = 0;
    for (int c = 0; c < 8; ++c)
        for (int l = 0; l < 16; ++l)
            s += acc[c][l];
    return s;
}

std::int64_t parseCacheSize(const std::string& text) {
    std::int64_t v = 0;
    std::size_t i = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9')
        v = v * 10 + (text[i++] - '0');
    if (i < text.size() && (text[i] == 'K' || text[i] == 'k'))
        v <<= 10;
    else if (i < text.size() && (text[i] == 'M' || text[i] == 'm'))
        v <<= 20;
    return v;
}

/// Largest cache level of cpu0 from sysfs, 0 when unreadable.
std::int64_t lastLevelCacheBytes() {
    std::int64_t best = 0;
    int bestLevel = 0;
    for (int idx = 0; idx < 16; ++idx) {
        const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx);
        std::ifstream lf(dir + "/level"), sf(dir + "/size");
        if (!lf || !sf)
            continue;
        int level = 0;
        std::string size;
        lf >> level;
        sf >> size;
        if (level >= bestLevel) {
            bestLevel = level;
            best = parseCacheSize(size);
        }
    }
    return best;
}

std::string cpuModelName() {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("model name", 0) == 0) {
            auto c = line.find(':');
            if (c != std::string::npos)
                return line.substr(line.find_first_not_of(' ', c + 1));
        }
    return "CPU";
}

double medianOf(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

// --- The engine
// ------------------------------------------------------------------------------------
class CpuEngine final : public Engine {
public:
    CpuEngine()
        : pool_(std::max(1u, std::thread::hardware_concurrency())), llc_(lastLevelCacheBytes()) {}

    std::string backendName() const override { return "cpu"; }

    std::vector<DeviceInfo> devices() const override {
        DeviceInfo d;
        d.name = cpuModelName();
        const long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
        d.memoryBytes = pages > 0 && pageSize > 0 ? std::int64_t(pages) * pageSize : 0;
        d.lastCacheBytes = llc_;
        d.multiprocessors = int(pool_.size());
        return {d};
    }

    std::string supports(const DecodeShape& s) const override {
        if (s.kind == Attention::Mla && (s.kvLoraRank != 512 || s.ropeDim != 64))
            return "unsupported MLA widths r=" + std::to_string(s.kvLoraRank) +
                   ", d_rope=" + std::to_string(s.ropeDim) +
                   " (the kernels are built for 512 + 64)";
        return {};
    }

    std::int64_t cacheBytes() const override { return llc_ > 0 ? llc_ : (32ll << 20); }

    std::int64_t memoryBudgetBytes() const override {
        const long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
        const std::int64_t phys =
            pages > 0 && pageSize > 0 ? std::int64_t(pages) * pageSize : (8ll << 30);
        return std::min<std::int64_t>(phys / 4, 8ll << 30);
    }

    Ceilings measureCeilings(const Progress& progress) override {
        Ceilings c;
        const unsigned threads = pool_.size();
        // Read bandwidth: 8x the last-level cache (256 MiB when unknown), within 64 MiB..1 GiB.
        const std::int64_t bytes =
            std::clamp<std::int64_t>(llc_ > 0 ? 8 * llc_ : (256ll << 20), 64ll << 20, 1ll << 30);
        const std::int64_t n = bytes / std::int64_t(sizeof(float));
        Buffer buf;
        if (!buf.allocate(std::size_t(bytes))) {
            c.error =
                "out of memory allocating the " + std::to_string(bytes >> 20) + " MiB read buffer";
            return c;
        }
        float* p = reinterpret_cast<float*>(buf.data);
        const std::int64_t parts = threads;
        const std::int64_t per = (n + parts - 1) / parts;
        pool_.parallelFor(parts, [&](std::int64_t t) { // first touch by the reading threads
            const std::int64_t b = t * per, e = std::min(n, b + per);
            for (std::int64_t i = b; i < e; ++i)
                p[i] = num::uniformInput(7, 9, std::uint64_t(i));
        });
        if (progress && !progress(0.2, "cpu read bandwidth")) {
            c.error = "cancelled";
            return c;
        }
        std::vector<float> sink(static_cast<std::size_t>(parts), 0.0f);
        // Median wall time of `reps` runs of perThread(t) on every thread (t < parts); each
        // adds its result to sink[t] so the work cannot be optimised away.
        auto medianSeconds = [&](int reps, const std::function<float(std::int64_t)>& perThread) {
            std::vector<double> times;
            for (int rep = 0; rep < reps; ++rep) {
                const auto t0 = std::chrono::steady_clock::now();
                pool_.parallelFor(parts,
                                  [&](std::int64_t t) { sink[std::size_t(t)] += perThread(t); });
                times.push_back(
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
            }
            return medianOf(times);
        };
        const double readSeconds = medianSeconds(7, [&](std::int64_t t) {
            const std::int64_t b = t * per, e = std::min(n, b + per);
            return sumStreams(p + b, e - b);
        });
        c.readBytesPerSecond = double(bytes) / readSeconds;
        c.readKernel = "sum of fp32 over " + std::to_string(bytes >> 20) + " MiB on " +
                       std::to_string(threads) + " threads, median of 7";
        if (progress && !progress(0.6, "cpu fma peak")) {
            c.error = "cancelled";
            return c;
        }
        // FMA peak: every thread runs independent multiply-add chains.
        const std::int64_t iters = 2'000'000;
        const double flops = double(iters) * 8 * 16 * 2 * threads;
        const double peak =
            flops / medianSeconds(5, [&](std::int64_t t) { return fmaLoop(iters, float(t)); });
        for (KvDtype d : {KvDtype::Bf16, KvDtype::Fp16, KvDtype::Fp8E4m3, KvDtype::Fp32})
            c.peakFlopPerSecond[std::string(dtypeName(d))] = peak;
        c.peakKernel = "fp32 multiply-add chains on " + std::to_string(threads) + " threads";
        if (bf16DotEnabled()) {
            // bf16 and fp8 KV run on vdpbf16ps (two products per lane): their roof is its peak.
            const double dot =
                double(iters) * kBf16DotLoopFlops * threads /
                medianSeconds(5, [&](std::int64_t t) { return bf16DotLoop(iters, float(t)); });
            for (KvDtype d : {KvDtype::Bf16, KvDtype::Fp8E4m3})
                c.peakFlopPerSecond[std::string(dtypeName(d))] = dot;
            c.peakKernel += " for fp16/fp32 KV; vdpbf16ps chains for bf16/fp8 KV";
        } else {
            c.peakKernel += " (every KV dtype is computed in fp32 on this CPU)";
        }
        volatile float keep = sink[0];
        (void)keep;
        c.ok = true;
        if (progress)
            progress(1.0, "cpu ceilings done");
        return c;
    }

    std::string prepare(const DecodeShape& s, int sets, std::uint64_t seed) override {
        release();
        shape_ = s;
        seed_ = seed;
        const KvDtype act = activationType(s.dtype);
        const std::int64_t kb = kvBytesPerElement(s.dtype), ab = activationBytesPerElement(s.dtype);
        const std::int64_t dq = s.queryDim();
        const std::int64_t qElems = s.batch * s.qHeads * dq;
        const std::int64_t kvElems = s.kind == Attention::Mla
                                         ? s.batch * s.context * dq
                                         : s.batch * s.kvHeads * s.context * s.headDim;
        // Splits: enough work items to keep every thread busy, at least 256 tokens each.
        const std::int64_t streams = s.kind == Attention::Mla ? s.batch : s.batch * s.kvHeads;
        const std::int64_t want = 4 * std::int64_t(pool_.size());
        // The bf16 dot-product kernel: bf16 or fp8 KV (bf16 queries) on AVX512_BF16 CPUs.
        // Both kernels are built for the same widths (GQA 64/128/256, MLA 576/512).
        width_ = portableWidth();
        portable_ = portableKernel(width_, dq, s.valueDim());
        if (!portable_)
            return "unsupported key/value widths " + std::to_string(dq) + "/" +
                   std::to_string(s.valueDim()) + " for the CPU kernels";
        bf16Dot_ = bf16DotEnabled() && (s.dtype == KvDtype::Bf16 || s.dtype == KvDtype::Fp8E4m3);
        splits_ = int(std::clamp<std::int64_t>((want + streams - 1) / streams, 1,
                                               std::clamp<std::int64_t>(s.context / 256, 1, 256)));
        // Input buffers: the previous shape's where they are large enough (their pages are
        // already mapped: fresh ones page-faulted through a quarter of a sweep), then the spares
        // left over are freed before anything new is allocated.
        std::vector<Buffer*> wanted;
        std::vector<std::size_t> wantBytes;
        sets_.resize(std::size_t(sets));
        for (InputSet& in : sets_) {
            wanted.insert(wanted.end(), {&in.q, &in.k});
            wantBytes.insert(wantBytes.end(),
                             {std::size_t(qElems * ab), std::size_t(kvElems * kb)});
            if (s.kind == Attention::Gqa) {
                wanted.push_back(&in.v);
                wantBytes.push_back(std::size_t(kvElems * kb));
            }
        }
        std::sort(spare_.begin(), spare_.end(),
                  [](const Buffer& a, const Buffer& b) { return a.bytes < b.bytes; });
        for (std::size_t i = 0; i < wanted.size(); ++i)
            for (Buffer& b : spare_)
                if (b.data && b.bytes >= wantBytes[i]) { // the smallest that fits
                    *wanted[i] = std::move(b);
                    break;
                }
        spare_.clear();
        for (std::size_t i = 0; i < wanted.size(); ++i)
            if (!wanted[i]->data && !wanted[i]->allocate(wantBytes[i])) {
                release();
                spare_.clear();
                return "out of memory allocating the input sets for " + describe(s);
            }
        for (int set = 0; set < sets; ++set) {
            InputSet& in = sets_[std::size_t(set)];
            const std::uint64_t sd = seed + std::uint64_t(set);
            fill(in.q.data, qElems, act, sd, num::kQuery, num::kQueryScale);
            fill(in.k.data, kvElems, s.dtype, sd,
                 s.kind == Attention::Mla ? num::kLatent : num::kKey, 1.0f);
            if (s.kind == Attention::Gqa)
                fill(in.v.data, kvElems, s.dtype, sd, num::kValue, 1.0f);
        }
        const std::int64_t outElems = s.batch * s.qHeads * s.valueDim();
        if (!out_.allocate(std::size_t(outElems * ab))) {
            release();
            return "out of memory allocating the output";
        }
        const std::int64_t rows = s.batch * s.qHeads;
        partialOut_.assign(std::size_t(splits_ * outElems), 0.0f);
        partialLse_.assign(std::size_t(splits_ * rows), 0.0f);
        return {};
    }

    std::string poisonOutput() override {
        std::memset(out_.data, 0xff, out_.bytes); // NaN in bf16, fp16 and fp32
        return {};
    }

    std::string run(int set) override {
        if (set < 0 || std::size_t(set) >= sets_.size())
            return "input set " + std::to_string(set) + " was not prepared";
        const DecodeShape& s = shape_;
        const InputSet& in = sets_[std::size_t(set)];
        const KvDtype act = activationType(s.dtype);
        const std::int64_t kb = kvBytesPerElement(s.dtype), ab = activationBytesPerElement(s.dtype);
        const std::int64_t dq = s.queryDim(), dv = s.valueDim(), S = s.context;
        const bool mla = s.kind == Attention::Mla;
        const std::int64_t rowsPerStream = mla ? s.qHeads : s.groupSize();
        const std::int64_t streams = mla ? s.batch : s.batch * s.kvHeads;
        const std::int64_t rows = s.batch * s.qHeads;
        const std::int64_t chunk = (S + splits_ - 1) / splits_;
        const float qScale = float(softmaxScale(s) * 1.4426950408889634); // log2(e)
        // Work item = (stream, split): one KV stream's chunk for all its query rows.
        pool_.parallelFor(streams * splits_, [&](std::int64_t item) {
            thread_local std::vector<float> q;
            const std::int64_t stream = item / splits_, split = item % splits_;
            const std::int64_t firstRow = stream * rowsPerStream; // rows are [b][head] in order
#if KVSCOPE_HAVE_BF16_KERNEL
            if (bf16Dot_) {
                SegmentBf16 sg;
                sg.q = reinterpret_cast<const std::uint16_t*>(in.q.data) + firstRow * dq;
                sg.rows = rowsPerStream;
                sg.keyRowBytes = dq * kb;
                sg.valueRowBytes = dq * kb;
                sg.keys = in.k.data + stream * S * dq * kb;
                sg.values = mla ? sg.keys : in.v.data + stream * S * dq * kb;
                sg.t0 = std::min(S, split * chunk);
                sg.t1 = std::min(S, sg.t0 + chunk);
                sg.dtype = s.dtype;
                sg.scoreScale = qScale;
                sg.out = partialOut_.data() + (split * rows + firstRow) * dv;
                sg.lse = partialLse_.data() + split * rows + firstRow;
                thread_local ScratchBf16 scratch;
                dispatchAttendBf16(sg, dq, dv, scratch); // widths checked in prepare()
                return;
            }
#endif
            q.resize(std::size_t(rowsPerStream * dq));
            for (std::int64_t r = 0; r < rowsPerStream; ++r)
                for (std::int64_t j = 0; j < dq; ++j)
                    q[std::size_t(r * dq + j)] =
                        decodeValue(act, in.q.data + ((firstRow + r) * dq + j) * ab) * qScale;
            Segment sg;
            sg.q = q.data();
            sg.rows = rowsPerStream;
            sg.keyDim = dq;
            sg.valueDim = dv;
            sg.keyRowBytes = dq * kb;
            sg.valueRowBytes = dq * kb;
            sg.keys = in.k.data + stream * S * dq * kb;
            sg.values = mla ? sg.keys : in.v.data + stream * S * dq * kb;
            sg.t0 = std::min(S, split * chunk);
            sg.t1 = std::min(S, sg.t0 + chunk);
            sg.dtype = s.dtype;
            sg.out = partialOut_.data() + (split * rows + firstRow) * dv;
            sg.lse = partialLse_.data() + split * rows + firstRow;
            thread_local Scratch scratch;
            portable_(sg, scratch); // widths checked by supports()
        });
        // Combine the splits (log-sum-exp merge) and store in the activation type.
        const std::int64_t rowsPerItem =
            std::max<std::int64_t>(1, rows / (4 * std::int64_t(pool_.size())));
        pool_.parallelFor((rows + rowsPerItem - 1) / rowsPerItem, [&](std::int64_t item) {
            for (std::int64_t row = item * rowsPerItem;
                 row < std::min(rows, (item + 1) * rowsPerItem); ++row) {
                float mMax = -std::numeric_limits<float>::infinity();
                for (int sp = 0; sp < splits_; ++sp)
                    mMax = std::max(mMax, partialLse_[std::size_t(sp * rows + row)]);
                float wsum = 0;
                float w[256];
                const int ns = std::min(splits_, 256);
                for (int sp = 0; sp < ns; ++sp) {
                    const float lse = partialLse_[std::size_t(sp * rows + row)];
                    w[sp] = lse == -std::numeric_limits<float>::infinity() ? 0.0f
                                                                           : std::exp2(lse - mMax);
                    wsum += w[sp];
                }
                for (std::int64_t j = 0; j < dv; ++j) {
                    float o = 0;
                    for (int sp = 0; sp < ns; ++sp)
                        o += w[sp] * partialOut_[std::size_t((sp * rows + row) * dv + j)];
                    encodeValue(act, wsum > 0 ? o / wsum : 0.0f, out_.data + (row * dv + j) * ab);
                }
            }
        });
        return {};
    }

    std::string timeRun(int set, double* seconds) override {
        const auto t0 = std::chrono::steady_clock::now();
        auto e = run(set);
        *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return e;
    }

    std::string readOutput(std::vector<float>* out) override {
        const KvDtype act = activationType(shape_.dtype);
        const std::int64_t ab = activationBytesPerElement(shape_.dtype);
        const std::int64_t n = std::int64_t(out_.bytes) / ab;
        out->resize(std::size_t(n));
        for (std::int64_t i = 0; i < n; ++i)
            (*out)[std::size_t(i)] = decodeValue(act, out_.data + i * ab);
        if (act == KvDtype::Fp16) // the fast decoder treats exponent 31 as finite: poison is NaN
            for (std::int64_t i = 0; i < n; ++i) {
                std::uint16_t h;
                std::memcpy(&h, out_.data + i * ab, 2);
                if ((h & 0x7c00u) == 0x7c00u)
                    (*out)[std::size_t(i)] = std::numeric_limits<float>::quiet_NaN();
            }
        return {};
    }

    std::string kernelName() const override {
        const std::string name = shape_.kind == Attention::Mla ? "cpu-mla-absorbed" : "cpu-gqa";
        if (bf16Dot_)
            return name + "-bf16dot";
        return name + (width_ == 16 ? "-avx512" : width_ == 8 ? "-avx2" : "-vec4");
    }
    int splits() const override {
        return splits_;
    }

    void release() override {
        for (InputSet& in : sets_) // kept for the next prepare(); freed with the engine
            for (Buffer* b : {&in.q, &in.k, &in.v})
                if (b->data)
                    spare_.push_back(std::move(*b));
        sets_.clear();
        out_ = Buffer{};
        partialOut_.clear();
        partialOut_.shrink_to_fit();
        partialLse_.clear();
    }

private:
    struct InputSet {
        Buffer q, k, v;
    };

    void fill(std::uint8_t* dst, std::int64_t n, KvDtype dtype, std::uint64_t seed,
              std::uint32_t tensor, float scale) {
        const std::int64_t eb = kvBytesPerElement(dtype);
        const std::int64_t parts = 4 * std::int64_t(pool_.size());
        const std::int64_t per = (n + parts - 1) / parts;
        pool_.parallelFor(parts, [&](std::int64_t p) {
            const std::int64_t b = p * per, e = std::min(n, b + per);
            if (b < e)
                fillInputs(dtype, dst + b * eb, b, e - b, seed, tensor, scale);
        });
    }

    ThreadPool pool_;
    std::int64_t llc_ = 0;
    DecodeShape shape_;
    std::uint64_t seed_ = 0;
    int splits_ = 1;
    bool bf16Dot_ = false;
    int width_ = 4; // the portable kernel's vector width
    PortableKernel portable_ = nullptr;
    std::vector<InputSet> sets_;
    std::vector<Buffer> spare_; // input buffers of the last shape, for the next prepare()
    Buffer out_;
    std::vector<float> partialOut_, partialLse_;
};

} // namespace

std::unique_ptr<Engine> makeCpuEngine() {
    return std::make_unique<CpuEngine>();
}

int cpuFp8VectorMismatch() {
#if KVSCOPE_HAVE_BF16_KERNEL
    return cpuHasBf16Dot() ? fp8VectorMismatchImpl() : -2;
#else
    return -2;
#endif
}

} // namespace kvscope::gpu::detail
