// The CPU step backend: a scaled layer stack of a model's real per-rank shapes, run for B
// requests on the engine's thread pool. Per layer: RMSNorm -> QKV GEMM (bf16 weights [out][in])
// -> the new token's K/V written to the cache at position S-1 -> decode attention over the S
// cached tokens with the engine's kernels (vdpbf16ps where the CPU has AVX512_BF16, else the
// portable fp32 kernel), split over KV chunks and merged by log-sum-exp -> O GEMM + residual
// -> RMSNorm -> gate/up GEMM -> SiLU(gate)·up -> down GEMM + residual. RoPE is left out: it is
// elementwise on Q and K (no weight or KV bytes) and core/law/step.cpp counts no FLOPs for it.
// The GEMMs (gemm.h) and the fp64 reference's pieces (step_reference.h) have their own files.
//
// DRAM, not the last cache: the weights of the stack are allocated `sets` times, so that the
// bytes between two reads of the same weight are at least 2x the last-level cache; step r
// uses copy r % sets. The K/V cache is one copy per layer (B·S tokens of it per layer; at
// small B it is small next to the weights, at large B it is larger than the cache by itself).
#include "gpu/step.h"

#include "gpu/cpu/bf16_kernel.h"
#include "gpu/cpu/buffer.h"
#include "gpu/cpu/ceilings.h"
#include "gpu/cpu/decode.h"
#include "gpu/cpu/gemm.h"
#include "gpu/cpu/inputs.h"
#include "gpu/cpu/portable_kernel.h"
#include "gpu/cpu/simd.h"
#include "gpu/cpu/step_reference.h"
#include "gpu/cpu/thread_pool.h"
#include "gpu/numerics.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>

namespace kvscope::gpu::detail {
namespace {

using namespace cpu;

std::uint16_t* u16(Buffer& b) {
    return reinterpret_cast<std::uint16_t*>(b.data);
}
const std::uint16_t* u16(const Buffer& b) {
    return reinterpret_cast<const std::uint16_t*>(b.data);
}

// --- the stack ---------------------------------------------------------------------------------

struct LayerWeights {
    Buffer attnNorm, qkv, o, mlpNorm, gateUp, down; // bf16
};
struct LayerCache {
    Buffer k, v; // [B][kv][S][d_h] in the KV dtype
};

/// Tensor ids of the generator (beyond numerics.h's attention tensors).
enum : std::uint32_t {
    kAttnNorm = 16,
    kQkv,
    kO,
    kMlpNorm,
    kGateUp,
    kDown,
    kCacheK,
    kCacheV,
    kResidual,
    kTensorsPerLayer = 16
};

class CpuStepBackend final : public StepBackend {
public:
    CpuStepBackend()
        : pool_(std::max(1u, std::thread::hardware_concurrency())), llc_(lastLevelCacheBytes()),
          meter_(pool_, llc_, cacheLevelBytes(2), budget()) {}

    std::string name() const override { return "cpu"; }
    std::vector<DeviceInfo> devices() const override {
        return {cpuDeviceInfo(int(pool_.size()), llc_)};
    }
    std::string supports(const StepShape& s) const override {
        if (auto e = validateStepShape(s); !e.empty())
            return e;
        if (!portableKernel(portableWidth(), s.headDim, s.headDim))
            return "headDim: the CPU attention kernels are built for 64, 128 or 256, got " +
                   std::to_string(s.headDim);
        const double need = residentBytes(s, 1);
        if (need > double(budget()))
            return "shape needs " + std::to_string(std::int64_t(need / 1e6)) +
                   " MB, over the CPU step's memory budget of " +
                   std::to_string(budget() / 1000000) + " MB";
        return {};
    }
    Ceilings measureCeilings(const Progress& progress) override {
        ceilings_ = meter_.measure(progress);
        return ceilings_;
    }

    StepMeasurement selfCheckStep(const StepShape& s) override {
        StepMeasurement m = begin(s);
        if (!m.error.empty())
            return m;
        if (auto e = prepare(s, 1, m.seed); !e.empty())
            return fail(m, e);
        // The reference reads the stored (bf16) inputs; the kernels' output starts poisoned.
        std::vector<double> ref = reference(s);
        std::vector<float> x0 = residual0_;
        // Every buffer between the kernels starts as NaN: an element a kernel fails to write
        // reaches the output as NaN.
        for (auto* v : {&normed_, &qkv_, &attn_})
            std::fill(v->begin(), v->end(), std::uint16_t(0xffff));
        std::fill(gemmOut_.begin(), gemmOut_.end(), std::numeric_limits<float>::quiet_NaN());
        std::fill(partialOut_.begin(), partialOut_.end(), std::numeric_limits<float>::quiet_NaN());
        loadResidual();
        runStep(0);
        double num = 0, den = 0;
        bool finite = true;
        for (std::size_t i = 0; i < ref.size(); ++i) {
            const double got = double(residual_[i]) - double(x0[i]);
            const double want = ref[i] - double(x0[i]);
            finite = finite && std::isfinite(got);
            num += (got - want) * (got - want);
            den += want * want;
        }
        m.maxRelError =
            finite && den > 0 ? std::sqrt(num / den) : std::numeric_limits<double>::infinity();
        m.errorBound = kStepErrorBound;
        m.ok = m.maxRelError <= m.errorBound;
        if (!m.ok)
            m.error = "step output differs from the fp64 reference: rel error " +
                      std::to_string(m.maxRelError) + " > " + std::to_string(m.errorBound);
        release();
        return m;
    }

    StepMeasurement measureStep(const StepShape& s, const Progress& progress) override {
        StepMeasurement m = begin(s);
        if (!m.error.empty())
            return m;
        if (!ceilings_.ok && !measureCeilings(progress).ok)
            return fail(m, "ceilings: " + ceilings_.error);
        // Copies of the weights so that a weight is read again only after 2x the LLC of other
        // bytes (at most 64 copies, within the budget).
        const double perCopy = countStep(s).weightBytes;
        int sets = int(std::clamp<double>(
            std::ceil(2.0 * double(std::max<std::int64_t>(llc_, 1)) / std::max(perCopy, 1.0)), 1,
            64));
        while (sets > 1 && residentBytes(s, sets) > double(budget()))
            --sets;
        if (progress && !progress(0.0, "preparing " + describe(s)))
            return fail(m, "cancelled");
        if (auto e = prepare(s, sets, m.seed); !e.empty())
            return fail(m, e);
        m.weightSets = sets;
        m.residentBytes = residentBytes(s, sets);
        loadResidual();
        for (int i = 0; i < std::max(sets, 2); ++i) // warm-up: page in, touch every copy
            runStep(i % sets);

        double readBefore = 0, peakBefore = 0, readAfter = 0, peakAfter = 0;
        std::string kernel;
        meter_.spot(gemmUnit(), m.counts.bytes, &readBefore, &peakBefore, &kernel);
        std::vector<double> times;
        const auto start = std::chrono::steady_clock::now();
        for (int r = 0; r < 41; ++r) {
            const auto t0 = std::chrono::steady_clock::now();
            runStep(r % sets);
            const auto t1 = std::chrono::steady_clock::now();
            times.push_back(std::chrono::duration<double>(t1 - t0).count());
            const double elapsed = std::chrono::duration<double>(t1 - start).count();
            if (progress && !progress(0.2 + 0.7 * std::min(1.0, elapsed / 2.0), describe(s))) {
                release();
                return fail(m, "cancelled");
            }
            if (r >= 4 && elapsed > 2.0) // at least 5 repeats, about 2 s per point
                break;
        }
        meter_.spot(gemmUnit(), m.counts.bytes, &readAfter, &peakAfter, &kernel);
        release();
        setStepTimes(m, std::move(times));
        m.readCeiling = std::max(readBefore, readAfter);
        m.peak = std::max(peakBefore, peakAfter);
        if (m.readCeiling <= 0)
            m.readCeiling = ceilings_.readBytesPerSecond;
        if (m.peak <= 0)
            m.peak = meter_.unitPeak(gemmUnit());
        // Attention runs on the KV dtype's units (as core/law/step.cpp times it): the bf16 dot
        // product for bf16/fp8 KV, else fp32 FMA, whose global peak is scaled by this point's
        // bf16 spot over the global bf16 peak (same machine state). The step's kernels use
        // vdpbf16ps, not AMX, so the bf16 peak is that unit's.
        double attnPeak = m.peak;
        if (m.shape.kvDtype == KvDtype::Fp16 || m.shape.kvDtype == KvDtype::Fp32) {
            const double g = meter_.unitPeak(gemmUnit());
            attnPeak = g > 0 ? ceilings_.peakFor(m.shape.kvDtype) * m.peak / g : m.peak;
        }
        const double memoryS = m.counts.bytes / m.readCeiling;
        const double computeS = m.counts.gemmFlops / m.peak + m.counts.attentionFlops / attnPeak;
        m.roofSeconds = std::max(memoryS, computeS);
        m.computeBound = computeS > memoryS;
        m.fractionOfRoof = m.roofSeconds / m.medianSeconds;
        m.aboveRoof = m.fractionOfRoof > 1.0 + kCeilingTolerance;
        m.ok = true;
        return m;
    }

private:
    static std::int64_t budget() {
        const std::int64_t phys = physicalMemoryBytes();
        return std::min<std::int64_t>(phys > 0 ? phys / 4 : (2ll << 30), 6ll << 30);
    }
    static double residentBytes(const StepShape& s, int sets) {
        const StepCounts c = countStep(s);
        return c.weightBytes * sets + c.kvBytes;
    }

    StepMeasurement begin(const StepShape& s) {
        StepMeasurement m;
        m.shape = s;
        m.counts = countStep(s);
        m.kernel = std::string("cpu-step-") + (bf16Gemm() ? "bf16dot" : "fp32fma") + "+" +
                   (bf16Attention(s) ? "cpu-gqa-bf16dot" : "cpu-gqa-portable");
        std::random_device rd;
        m.seed =
            num::mix64(std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                       (std::uint64_t(rd()) << 32) ^ counter_++);
        if (auto e = supports(s); !e.empty())
            m.error = e;
        return m;
    }
    static StepMeasurement fail(StepMeasurement m, const std::string& e) {
        m.ok = false;
        m.error = e;
        return m;
    }

    static bool bf16Gemm() {
#if KVSCOPE_HAVE_BF16_KERNEL
        return bf16DotEnabled();
#else
        return false;
#endif
    }
    static bool bf16Attention(const StepShape& s) {
        return bf16DotEnabled() && (s.kvDtype == KvDtype::Bf16 || s.kvDtype == KvDtype::Fp8E4m3);
    }

    // --- buffers --------------------------------------------------------------------------

    std::string prepare(const StepShape& s, int sets, std::uint64_t seed) {
        release();
        s_ = s;
        const std::int64_t d = s.hidden, h = s.qHeads, kv = s.kvHeads, dh = s.headDim;
        const std::int64_t w = s.intermediate, B = s.batch, S = s.context;
        qkvOut_ = (h + 2 * kv) * dh;
        upRows_ = s.gated ? 2 * w : w;
        weights_.resize(std::size_t(sets));
        for (int set = 0; set < sets; ++set) {
            weights_[std::size_t(set)].resize(std::size_t(s.layers));
            for (std::int64_t l = 0; l < s.layers; ++l) {
                LayerWeights& lw = weights_[std::size_t(set)][std::size_t(l)];
                const std::uint64_t sd = seed + std::uint64_t(set);
                const std::uint32_t t = std::uint32_t(l) * kTensorsPerLayer;
                // Matrices scaled by 1/sqrt(fan-in) so every layer keeps activations O(1);
                // norm weights in [0.9, 1.1).
                if (!alloc(lw.attnNorm, d, sd, t + kAttnNorm, 0.1f, 1.0f) ||
                    !alloc(lw.qkv, qkvOut_ * d, sd, t + kQkv, fanIn(d)) ||
                    !alloc(lw.o, d * h * dh, sd, t + kO, fanIn(h * dh)) ||
                    !alloc(lw.mlpNorm, d, sd, t + kMlpNorm, 0.1f, 1.0f) ||
                    !alloc(lw.gateUp, upRows_ * d, sd, t + kGateUp, fanIn(d)) ||
                    !alloc(lw.down, d * w, sd, t + kDown, fanIn(w))) {
                    release();
                    return "out of memory allocating the weights of " + describe(s);
                }
            }
        }
        const std::int64_t kb = kvBytesPerElement(s.kvDtype);
        caches_.resize(std::size_t(s.layers));
        for (std::int64_t l = 0; l < s.layers; ++l) {
            LayerCache& c = caches_[std::size_t(l)];
            const std::uint32_t t = std::uint32_t(l) * kTensorsPerLayer;
            const std::int64_t n = B * kv * S * dh;
            if (!c.k.allocate(std::size_t(n * kb)) || !c.v.allocate(std::size_t(n * kb))) {
                release();
                return "out of memory allocating the K/V cache of " + describe(s);
            }
            fill(c.k.data, n, s.kvDtype, seed, t + kCacheK, 1.0f);
            fill(c.v.data, n, s.kvDtype, seed, t + kCacheV, 1.0f);
        }
        residual0_.resize(std::size_t(B * d));
        for (std::int64_t i = 0; i < B * d; ++i)
            residual0_[std::size_t(i)] = num::uniformInput(seed, kResidual, std::uint64_t(i));
        residual_.assign(std::size_t(B * d), 0.0f);
        normed_.assign(std::size_t(B * std::max(d, w)), 0);
        qkv_.assign(std::size_t(B * qkvOut_), 0);
        attn_.assign(std::size_t(B * h * dh), 0);
        gemmOut_.assign(std::size_t(B * std::max({qkvOut_, d, upRows_})), 0.0f);
        streams_ = B * kv;
        const std::int64_t want = 4 * std::int64_t(pool_.size());
        splits_ = std::clamp<std::int64_t>((want + streams_ - 1) / streams_, 1,
                                           std::clamp<std::int64_t>(S / 256, 1, 256));
        partialOut_.assign(std::size_t(splits_ * B * h * dh), 0.0f);
        partialLse_.assign(std::size_t(splits_ * B * h), 0.0f);
        return {};
    }

    static float fanIn(std::int64_t n) {
        return float(std::sqrt(3.0 / double(n)));
    }

    bool alloc(Buffer& b, std::int64_t n, std::uint64_t seed, std::uint32_t tensor, float scale,
               float offset = 0.0f) {
        if (!b.allocate(std::size_t(n) * 2))
            return false;
        fill(b.data, n, KvDtype::Bf16, seed, tensor, scale);
        if (offset != 0.0f)
            for (std::int64_t i = 0; i < n; ++i)
                u16(b)[i] = num::floatToBf16(num::bf16ToFloat(u16(b)[i]) + offset);
        return true;
    }

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

    void release() {
        weights_.clear();
        caches_.clear();
    }

    void loadResidual() {
        residual_ = residual0_;
    }

    // --- one step ---------------------------------------------------------------------------

    void runStep(int set) {
        for (std::int64_t l = 0; l < s_.layers; ++l)
            runLayer(weights_[std::size_t(set)][std::size_t(l)], caches_[std::size_t(l)]);
    }

    void gemm(const std::uint16_t* x, const Buffer& w, std::int64_t N, std::int64_t K) {
        const GemmArgs a{x, u16(w), gemmOut_.data(), s_.batch, N, K};
        const std::int64_t items = (N + kGemmRowsPerItem - 1) / kGemmRowsPerItem;
        const bool bf16 = bf16Gemm();
        pool_.parallelFor(items, [&](std::int64_t i) { gemmItem(a, i * kGemmRowsPerItem, bf16); });
    }

    /// normed = bf16(rmsnorm(residual) * g), eps 1e-5 (Llama's rms_norm_eps).
    void rmsNorm(const Buffer& g) {
        const std::int64_t d = s_.hidden;
        for (std::int64_t b = 0; b < s_.batch; ++b) {
            const float* x = residual_.data() + b * d;
            double ss = 0;
            for (std::int64_t i = 0; i < d; ++i)
                ss += double(x[i]) * x[i];
            const float r = float(1.0 / std::sqrt(ss / double(d) + 1e-5));
            for (std::int64_t i = 0; i < d; ++i)
                normed_[std::size_t(b * d + i)] =
                    num::floatToBf16(x[i] * r * num::bf16ToFloat(u16(g)[i]));
        }
    }

    void runLayer(const LayerWeights& w, LayerCache& c) {
        const std::int64_t d = s_.hidden, h = s_.qHeads, kv = s_.kvHeads, dh = s_.headDim;
        const std::int64_t B = s_.batch, S = s_.context, wi = s_.intermediate;
        rmsNorm(w.attnNorm);
        gemm(normed_.data(), w.qkv, qkvOut_, d);
        const std::int64_t kb = kvBytesPerElement(s_.kvDtype);
        for (std::int64_t b = 0; b < B; ++b) {
            for (std::int64_t i = 0; i < qkvOut_; ++i)
                qkv_[std::size_t(b * qkvOut_ + i)] =
                    num::floatToBf16(gemmOut_[std::size_t(b * qkvOut_ + i)]);
            // The new token's K and V (stored in the activation type, then in the KV dtype).
            for (std::int64_t j = 0; j < kv; ++j)
                for (std::int64_t e = 0; e < dh; ++e) {
                    const std::int64_t at = ((b * kv + j) * S + (S - 1)) * dh + e;
                    const std::uint16_t* row = qkv_.data() + b * qkvOut_ + h * dh;
                    encodeValue(s_.kvDtype, num::bf16ToFloat(row[j * dh + e]), c.k.data + at * kb);
                    encodeValue(s_.kvDtype, num::bf16ToFloat(row[(kv + j) * dh + e]),
                                c.v.data + at * kb);
                }
        }
        attend(c);
        gemm(attn_.data(), w.o, d, h * dh);
        for (std::int64_t i = 0; i < B * d; ++i)
            residual_[std::size_t(i)] += gemmOut_[std::size_t(i)];
        rmsNorm(w.mlpNorm);
        gemm(normed_.data(), w.gateUp, upRows_, d);
        for (std::int64_t b = 0; b < B; ++b)
            for (std::int64_t i = 0; i < wi; ++i) {
                const float* row = gemmOut_.data() + b * upRows_;
                float a;
                if (s_.gated) {
                    const float g = num::bf16ToFloat(num::floatToBf16(row[i]));
                    const float u = num::bf16ToFloat(num::floatToBf16(row[wi + i]));
                    a = g / (1.0f + std::exp(-g)) * u;
                } else {
                    const float u = num::bf16ToFloat(num::floatToBf16(row[i]));
                    a = u / (1.0f + std::exp(-u));
                }
                normed_[std::size_t(b * wi + i)] = num::floatToBf16(a);
            }
        gemm(normed_.data(), w.down, d, wi);
        for (std::int64_t i = 0; i < B * d; ++i)
            residual_[std::size_t(i)] += gemmOut_[std::size_t(i)];
    }

    void attend(const LayerCache& c) {
        const std::int64_t h = s_.qHeads, kv = s_.kvHeads, dh = s_.headDim, S = s_.context;
        const std::int64_t g = h / kv, rows = s_.batch * h;
        const std::int64_t rowBytes = dh * kvBytesPerElement(s_.kvDtype);
        const std::int64_t chunk = (S + splits_ - 1) / splits_;
        const float scale = float(1.0 / std::sqrt(double(dh)) * 1.4426950408889634);
        const bool dot = bf16Attention(s_);
        const PortableKernel portable = portableKernel(portableWidth(), dh, dh);
        pool_.parallelFor(streams_ * splits_, [&](std::int64_t item) {
            const std::int64_t stream = item / splits_, split = item % splits_;
            const std::int64_t b = stream / kv, j = stream % kv;
            const std::int64_t firstRow = stream * g;
            const std::uint16_t* q = qkv_.data() + b * qkvOut_ + j * g * dh;
            const std::int64_t t0 = std::min(S, split * chunk), t1 = std::min(S, t0 + chunk);
            float* out = partialOut_.data() + (split * rows + firstRow) * dh;
            float* lse = partialLse_.data() + split * rows + firstRow;
            const std::uint8_t* keys = c.k.data + stream * S * rowBytes;
            const std::uint8_t* values = c.v.data + stream * S * rowBytes;
            if (dot) {
                SegmentBf16 sg{q,  g,  keys,       values, rowBytes, rowBytes,
                               t0, t1, s_.kvDtype, scale,  out,      lse};
                thread_local ScratchBf16 scratch;
                attendBf16(sg, dh, dh, scratch);
            } else {
                thread_local std::vector<float> qf;
                qf.resize(std::size_t(g * dh));
                for (std::int64_t i = 0; i < g * dh; ++i)
                    qf[std::size_t(i)] = num::bf16ToFloat(q[i]) * scale;
                Segment sg{qf.data(), g,  dh, dh,         keys, values, rowBytes,
                           rowBytes,  t0, t1, s_.kvDtype, out,  lse};
                thread_local Scratch scratch;
                portable(sg, scratch);
            }
        });
        // Merge the splits (log-sum-exp), output in bf16 [B][h][d_h].
        for (std::int64_t row = 0; row < rows; ++row) {
            float mMax = -std::numeric_limits<float>::infinity();
            for (std::int64_t sp = 0; sp < splits_; ++sp)
                mMax = std::max(mMax, partialLse_[std::size_t(sp * rows + row)]);
            float wsum = 0;
            float wt[256];
            for (std::int64_t sp = 0; sp < splits_; ++sp) {
                const float l = partialLse_[std::size_t(sp * rows + row)];
                wt[sp] = l == -std::numeric_limits<float>::infinity() ? 0.0f : std::exp2(l - mMax);
                wsum += wt[sp];
            }
            for (std::int64_t e = 0; e < dh; ++e) {
                float o = 0;
                for (std::int64_t sp = 0; sp < splits_; ++sp)
                    o += wt[sp] * partialOut_[std::size_t((sp * rows + row) * dh + e)];
                attn_[std::size_t(row * dh + e)] = num::floatToBf16(wsum > 0 ? o / wsum : 0.0f);
            }
        }
    }

    // --- the fp64 reference -----------------------------------------------------------------

    /// The final residual stream of the stack on weight copy 0, in double from the stored
    /// inputs (bf16 weights, KV-dtype cache), nothing rounded in between.
    std::vector<double> reference(const StepShape& s) const {
        const std::int64_t d = s.hidden, h = s.qHeads, kv = s.kvHeads, dh = s.headDim;
        const std::int64_t B = s.batch, S = s.context, wi = s.intermediate, g = h / kv;
        const std::int64_t kb = kvBytesPerElement(s.kvDtype);
        std::vector<double> x(residual0_.begin(), residual0_.end());
        auto matvec = [](const Buffer& w, const std::vector<double>& in, std::int64_t N,
                         std::int64_t K) { return referenceMatvec(u16(w), in, N, K); };
        auto norm = [&](const Buffer& gw, const double* in) {
            return referenceRmsNorm(u16(gw), in, d);
        };
        for (std::int64_t l = 0; l < s.layers; ++l) {
            const LayerWeights& w = weights_[0][std::size_t(l)];
            const LayerCache& c = caches_[std::size_t(l)];
            for (std::int64_t b = 0; b < B; ++b) {
                double* xb = x.data() + b * d;
                const std::vector<double> qkv = matvec(w.qkv, norm(w.attnNorm, xb), qkvOut_, d);
                std::vector<double> attn(std::size_t(h * dh), 0.0);
                for (std::int64_t head = 0; head < h; ++head) {
                    const std::int64_t j = head / g;
                    auto kAt = [&](std::int64_t t, std::int64_t e) {
                        if (t == S - 1) // the new token, as stored in the cache's dtype
                            return double(referenceStoredKv(s.kvDtype,
                                                            qkv[std::size_t(h * dh + j * dh + e)]));
                        return double(decodeValue(
                            s.kvDtype, c.k.data + (((b * kv + j) * S + t) * dh + e) * kb));
                    };
                    auto vAt = [&](std::int64_t t, std::int64_t e) {
                        if (t == S - 1)
                            return double(referenceStoredKv(
                                s.kvDtype, qkv[std::size_t((h + kv) * dh + j * dh + e)]));
                        return double(decodeValue(
                            s.kvDtype, c.v.data + (((b * kv + j) * S + t) * dh + e) * kb));
                    };
                    std::vector<double> sc(static_cast<std::size_t>(S));
                    double mx = -std::numeric_limits<double>::infinity();
                    for (std::int64_t t = 0; t < S; ++t) {
                        double dot = 0;
                        for (std::int64_t e = 0; e < dh; ++e)
                            dot += qkv[std::size_t(head * dh + e)] * kAt(t, e);
                        sc[std::size_t(t)] = dot / std::sqrt(double(dh));
                        mx = std::max(mx, sc[std::size_t(t)]);
                    }
                    double sum = 0;
                    for (double& v : sc)
                        sum += (v = std::exp(v - mx));
                    for (std::int64_t t = 0; t < S; ++t)
                        for (std::int64_t e = 0; e < dh; ++e)
                            attn[std::size_t(head * dh + e)] +=
                                sc[std::size_t(t)] / sum * vAt(t, e);
                }
                const std::vector<double> o = matvec(w.o, attn, d, h * dh);
                for (std::int64_t i = 0; i < d; ++i)
                    xb[i] += o[std::size_t(i)];
                const std::vector<double> up = matvec(w.gateUp, norm(w.mlpNorm, xb), upRows_, d);
                std::vector<double> a(static_cast<std::size_t>(wi));
                for (std::int64_t i = 0; i < wi; ++i) {
                    const double gt = up[std::size_t(i)];
                    a[std::size_t(i)] = s.gated ? gt / (1 + std::exp(-gt)) * up[std::size_t(wi + i)]
                                                : gt / (1 + std::exp(-gt));
                }
                const std::vector<double> dn = matvec(w.down, a, d, wi);
                for (std::int64_t i = 0; i < d; ++i)
                    xb[i] += dn[std::size_t(i)];
            }
        }
        return x;
    }

    ThreadPool pool_;
    std::int64_t llc_ = 0;
    /// The GEMMs' and bf16/fp8 attention's unit: vdpbf16ps where enabled, else fp32 FMA.
    static ComputeUnit gemmUnit() {
        return bf16DotEnabled() ? ComputeUnit::Bf16Dot : ComputeUnit::Fma;
    }

    CeilingMeter meter_;
    Ceilings ceilings_;
    StepShape s_;
    std::int64_t qkvOut_ = 0, upRows_ = 0, streams_ = 1, splits_ = 1;
    std::vector<std::vector<LayerWeights>> weights_; // [set][layer]
    std::vector<LayerCache> caches_;                 // [layer]
    std::vector<float> residual0_, residual_, gemmOut_, partialOut_, partialLse_;
    std::vector<std::uint16_t> normed_, qkv_, attn_;
    std::uint64_t counter_ = 0;
};

} // namespace

std::unique_ptr<StepBackend> makeCpuStepBackend() {
    return std::make_unique<CpuStepBackend>();
}

} // namespace kvscope::gpu::detail
