// The whole decode step per rank: bytes, FLOPs, tensor-parallel traffic and the time bound.
#include "core/law/step.h"

#include "core/features/export.h"
#include "core/format.h"
#include "core/law/law.h"
#include "core/model/weights.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace kvscope {

namespace {

/// Activations travel in 16-bit (bf16/fp16) between kernels, as vLLM runs these models.
constexpr double kActivationBytes = 2;

/// Parameters of one MLP (or one expert) of intermediate width `width`: d × width per matrix
/// (3 for gated MLPs), plus biases where the architecture has them (as core/model/params.cpp
/// counts).
double mlpParams(const ModelSpec& m, std::int64_t width) {
    const double d = static_cast<double>(m.hidden.value);
    const double w = static_cast<double>(width);
    double p = (m.gatedMlp.value ? 3.0 : 2.0) * d * w;
    if (m.mlpBias.value)
        p += (m.gatedMlp.value ? 2.0 * w : w) + d;
    return p;
}

/// The layers that hold routed experts, by core/model/params.cpp's rule (DeepSeek
/// first_k_dense_replace, Qwen-MoE decoder_sparse_step).
std::int64_t moeLayerCount(const ModelSpec& m) {
    if (m.routedExperts.value <= 0)
        return 0;
    const std::int64_t freq = m.moeLayerFreq.value > 0 ? m.moeLayerFreq.value : 1;
    std::int64_t n = 0;
    for (std::int64_t l = m.firstDenseLayers.value; l < m.layers.value; ++l)
        n += (freq == 1 || (l + 1) % freq == 0);
    return n;
}

/// Elements one token moves through one layer's attention block on one rank: each GEMM reads
/// its input and writes its output once, the attention kernel reads Q and writes O (its K/V
/// reads are the KV bytes), and the new token's K/V (or latent) is written to the cache.
double attentionActivationElements(const ModelSpec& m, const Report& r) {
    const double d = static_cast<double>(m.hidden.value);
    const double hR = static_cast<double>(r.qHeadsPerRank);
    if (r.attention == AttentionKind::MLA) {
        const double lr = static_cast<double>(m.kvLoraRank.value);
        const double rope = static_cast<double>(m.qkRopeHeadDim.value);
        const double nope = static_cast<double>(m.qkNopeHeadDim.value);
        const double dv = static_cast<double>(m.vHeadDim.value);
        const double qLora = static_cast<double>(m.qLoraRank.value);
        const double qk = nope + rope;
        const double q = qLora > 0 ? (d + qLora) + (qLora + hR * qk) : d + hR * qk;
        return q + (d + lr + rope)            // kv_a_proj: the latent and the rope key
               + (hR * nope + hR * lr)        // W_UK absorbed into the query
               + (hR * (lr + rope) + hR * lr) // the kernel: Q in, latent-space O out
               + (hR * lr + hR * dv)          // W_UV
               + (hR * dv + d)                // o_proj
               + (lr + rope);                 // the new latent written to the cache
    }
    const double dk = static_cast<double>(r.keyDim), dv = static_cast<double>(r.valueDim);
    const double kvR = static_cast<double>(r.kvHeadsPerRank);
    const double qkvOut = hR * dk + kvR * (dk + dv);
    return (d + qkvOut)          // QKV projection
           + (hR * dk + hR * dv) // the kernel: Q in, O out
           + (hR * dv + d)       // o_proj
           + kvR * (dk + dv);    // the new token's K and V written to the cache
}

/// Elements one token moves through an MLP of per-rank width w: gate/up (d in, 2w out), the
/// activation (2w in, w out), down (w in, d out); a plain MLP has one up matrix.
double mlpActivationElements(const ModelSpec& m, double w) {
    const double d = static_cast<double>(m.hidden.value);
    return m.gatedMlp.value ? 2 * d + 6 * w : 2 * d + 4 * w;
}

/// Parameters of one routed expert; 0 for a dense model.
double routedExpertParams(const ModelSpec& m) {
    return m.routedExperts.value > 0 ? mlpParams(m, m.moeIntermediate.value) : 0;
}

/// Weights read once per step, per rank. Routed experts no token of the batch picked are not
/// read: a fraction (1 − k/E)^B of each MoE layer's E experts under uniform top-k routing. Shared
/// experts and dense layers are always read. The embedding table is gathered (B rows, counted
/// with the activations), not streamed; lm_head (or the tied table) is read in full. Experts are
/// sharded across TP like every other matrix (vLLM's default without expert parallelism), so
/// everything is / TP.
std::int64_t stepWeightBytes(const ModelSpec& m, const Deployment& d, const Report& r,
                             const DecodeStep& s, double expert) {
    const double tp = static_cast<double>(d.tp);
    const ParamCount& p = r.params; // the checkpoint's, as the pool uses
    const std::int64_t e = m.routedExperts.value;
    const double routed = static_cast<double>(s.moeLayers) * static_cast<double>(e) * expert;
    const double untouched =
        e > 0 ? routed * (1.0 - s.expertsTouchedPerMoeLayer / static_cast<double>(e)) : 0;
    const double head = static_cast<double>(m.tiedEmbeddings.value ? p.embedding : p.lmHead);
    // Bytes as loaded (core/model/weights.cpp): quantized values with their scales and zero points,
    // modules a checkpoint leaves 16-bit at 2 B. Embeddings, lm_head, norms and routers stay
    // 16-bit in every quantized checkpoint (core/model/params.h). The untouched experts are taken
    // off at the routed experts' own bytes per parameter.
    const LoadedWeights loaded = loadedWeights(m, d.weightDtype, d.tp);
    const double expertBytesPerParam =
        p.experts > 0 ? static_cast<double>(loaded.expertBytes) / static_cast<double>(p.experts)
                      : 0;
    const double sixteen = (head + static_cast<double>(p.norms + p.router)) *
                           static_cast<double>(loaded.unquantizedElementBytes);
    const double body =
        static_cast<double>(loaded.attentionMlpBytes) - untouched * expertBytesPerParam;
    return std::llround((body + sixteen) / tp);
}

/// Activation bytes of one step per rank: every layer's attention block and residual stream,
/// the dense or MoE MLP, the embedding gather, the final norm and lm_head's vocab shard.
std::int64_t stepActivationBytes(const ModelSpec& m, const Deployment& d, const Report& r,
                                 std::int64_t moeLayers) {
    const double B = static_cast<double>(d.batch);
    const double tp = static_cast<double>(d.tp);
    const double dModel = static_cast<double>(m.hidden.value);
    const double vocab = static_cast<double>(m.vocab.value);
    const std::int64_t e = m.routedExperts.value, k = m.expertsPerToken.value;
    const double attn = attentionActivationElements(m, r);
    const double dense = mlpActivationElements(m, static_cast<double>(m.intermediate.value) / tp);
    const double moe = e > 0 ? mlpActivationElements(
                                   m, static_cast<double>((std::min(k, e) + m.sharedExperts.value) *
                                                          m.moeIntermediate.value) /
                                          tp) +
                                   dModel + static_cast<double>(e) // the router: d in, E scores out
                             : 0;
    // The residual stream: vLLM fuses each residual add into the next RMSNorm
    // (fused_add_rms_norm, vllm/model_executor/layers/layernorm.py), which reads the
    // input and the residual and writes both: 4d, twice per layer.
    const double residual = 8 * dModel;
    const double L = static_cast<double>(m.layers.value);
    const double perToken = L * (attn + residual) + static_cast<double>(moeLayers) * moe +
                            (L - static_cast<double>(moeLayers)) * dense +
                            2 * dModel             // embedding rows: gathered, written
                            + 4 * dModel           // final fused add + norm
                            + dModel + vocab / tp; // lm_head: d in, its vocab shard out
    return std::llround(B * perToken * kActivationBytes);
}

/// FLOPs per rank. GEMMs: 2 FLOPs per multiply-add, every parameter a token's matmuls use:
/// attention, dense MLPs, k routed + the shared experts of each MoE layer, the routers, and
/// lm_head (the embedding gather and the norms are not matmuls). Attention (formulas.md §8): GQA
/// family 2 · B · h_rank · S · (d_k + d_v) per layer (= 4·B·h·S·d_h / TP when d_k = d_v), MLA
/// absorbed 2 · B · h_rank · S · (2r + d_rope); a window layer attends over at most its window.
/// The query heads per rank set the work whatever DCP does with the context.
void countFlops(DecodeStep& s, const ModelSpec& m, const Deployment& d, const Report& r,
                double expert) {
    const double B = static_cast<double>(d.batch);
    const double tp = static_cast<double>(d.tp);
    const double dModel = static_cast<double>(m.hidden.value);
    const double vocab = static_cast<double>(m.vocab.value);
    const ParamCount& p = r.params;
    const std::int64_t e = m.routedExperts.value, k = m.expertsPerToken.value;
    s.activeParams =
        static_cast<double>(p.attention + p.mlp + p.router) -
        (e > 0 ? static_cast<double>(s.moeLayers) * static_cast<double>(e - std::min(k, e)) * expert
               : 0) +
        vocab * dModel;
    s.gemmFlops = 2.0 * s.activeParams * B / tp;
    const double hR = static_cast<double>(r.qHeadsPerRank);
    const double perPosition = r.attention == AttentionKind::MLA
                                   ? 2.0 * (2.0 * static_cast<double>(m.kvLoraRank.value) +
                                            static_cast<double>(m.qkRopeHeadDim.value))
                                   : 2.0 * static_cast<double>(r.keyDim + r.valueDim);
    double positions = 0;
    for (std::int64_t w : m.layerWindow)
        positions += static_cast<double>(w > 0 ? std::min(d.context, w) : d.context);
    s.attentionFlops = B * hR * positions * perPosition;
}

/// Tensor-parallel communication per rank. Megatron-style TP all-reduces the residual stream
/// twice per layer (after o_proj and after the MLP/MoE down projection; vLLM RowParallelLinear
/// reduce_results). A ring all-reduce of M bytes has each rank send (and receive)
/// 2(TP−1)/TP · M.
void countCommunication(DecodeStep& s, const ModelSpec& m, const GpuSpec& gpu,
                        const Deployment& d) {
    if (d.tp <= 1)
        return;
    const double B = static_cast<double>(d.batch);
    const double tp = static_cast<double>(d.tp);
    const double message = B * static_cast<double>(m.hidden.value) * kActivationBytes;
    s.commBytes =
        std::llround(2.0 * static_cast<double>(m.layers.value) * message * 2.0 * (tp - 1.0) / tp);
    const double perDirection = gpu.interconnectBytesPerS / 2.0;
    s.commCounted = perDirection > 0;
    s.commTimeS = s.commCounted ? static_cast<double>(s.commBytes) / perDirection : 0;
}

/// The time bound and what sets it. GEMMs run at the weight dtype's tensor peak (fp8 when the
/// checkpoint and the GPU have it), attention at the KV dtype's (§5: fp32 KV runs on the fp32
/// units); the TP all-reduces add to the larger of memory and compute time.
void boundTime(DecodeStep& s, const GpuSpec& gpu, const Deployment& d, const Report& r) {
    const double B = static_cast<double>(d.batch);
    const double tp = static_cast<double>(d.tp);
    const double gemmPeak = r.weightDtype == WeightDtype::FP8 && gpu.peakFp8FlopPerS > 0
                                ? gpu.peakFp8FlopPerS
                                : gpu.peakBf16FlopPerS;
    const double attnPeak =
        r.kvDtype == KvDtype::FP32 ? gpu.peakFp32FlopPerS : gpu.peakBf16FlopPerS;
    s.memoryTimeS = static_cast<double>(s.bytes()) / gpu.bandwidthBytesPerS;
    s.computeTimeS = s.gemmFlops / gemmPeak + s.attentionFlops / attnPeak;
    s.timeLowerBoundS = std::max(s.memoryTimeS, s.computeTimeS) + s.commTimeS;
    if (s.commTimeS > std::max(s.memoryTimeS, s.computeTimeS))
        s.bound = StepBound::Communication;
    else if (s.computeTimeS > s.memoryTimeS)
        s.bound = StepBound::Compute;
    else
        s.bound = StepBound::Memory;
    if (s.timeLowerBoundS > 0) {
        s.tokensPerS = B / s.timeLowerBoundS;
        s.tokensPerSPerGpu = s.tokensPerS / tp;
    }
}

} // namespace

std::string toString(StepBound b) {
    switch (b) {
    case StepBound::Memory:
        return "memory";
    case StepBound::Compute:
        return "compute";
    case StepBound::Communication:
        return "communication";
    }
    return "memory";
}

double expectedDistinctExperts(std::int64_t experts, std::int64_t perToken, std::int64_t batch) {
    if (experts <= 0 || perToken <= 0 || batch <= 0)
        return 0;
    const double e = static_cast<double>(experts);
    const double k = static_cast<double>(std::min(perToken, experts));
    return e * (1.0 - std::pow(1.0 - k / e, static_cast<double>(batch)));
}

DecodeStep computeDecodeStep(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d,
                             const Report& r) {
    DecodeStep s;
    s.batch = d.batch;
    s.context = d.context;
    s.moeLayers = moeLayerCount(m);
    s.expertsTouchedPerMoeLayer =
        expectedDistinctExperts(m.routedExperts.value, m.expertsPerToken.value, d.batch);
    const double expert = routedExpertParams(m);
    s.weightBytes = stepWeightBytes(m, d, r, s, expert);
    s.kvBytes = d.batch * r.requestBytesPerRank; // every request's cache read once
    s.activationBytes = stepActivationBytes(m, d, r, s.moeLayers);
    const std::int64_t total = s.bytes();
    s.kvFraction = total > 0 ? static_cast<double>(s.kvBytes) / static_cast<double>(total) : 0;
    countFlops(s, m, d, r, expert);
    countCommunication(s, m, gpu, d);
    boundTime(s, gpu, d, r);
    return s;
}

namespace {

/// The decode step of one deployment at any batch. The step depends on the batch only through
/// computeDecodeStep's own arithmetic (the report's per-request bytes, heads per rank and dtypes
/// do not), so the deployment is evaluated once, at the largest batch asked for: evaluate's size
/// guard grows with B, so a deployment it accepts there it accepts at every smaller batch, which
/// then only needs validate's range check. Where that evaluation is refused, each batch is
/// evaluated on its own (the refusal may not hold at smaller batches).
class StepAtBatch {
public:
    StepAtBatch(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d, std::int64_t maxBatch)
        : m_(m), gpu_(gpu), d_(d) {
        d_.batch = std::max<std::int64_t>(1, maxBatch);
        auto r = evaluate(m_, gpu_, d_);
        if (r.ok())
            report_ = std::move(r).value();
    }
    Result<DecodeStep> at(std::int64_t batch) const {
        Deployment x = d_;
        x.batch = batch;
        if (!report_ || batch > d_.batch) {
            auto r = evaluate(m_, gpu_, x);
            if (!r.ok())
                return r.error();
            return r->step;
        }
        if (auto s = validate(m_, gpu_, x); !s.ok())
            return s.error();
        return computeDecodeStep(m_, gpu_, x, *report_);
    }

private:
    const ModelSpec& m_;
    const GpuSpec& gpu_;
    Deployment d_;
    std::optional<Report> report_;
};

} // namespace

std::optional<std::int64_t> batchAtKvFraction(const ModelSpec& m, const GpuSpec& gpu,
                                              const Deployment& d, double fraction) {
    const StepAtBatch steps(m, gpu, d, kMaxBatch);
    auto at = [&](std::int64_t b) -> std::optional<double> {
        auto s = steps.at(b);
        if (!s.ok())
            return std::nullopt;
        return s->kvFraction;
    };
    // KV grows as B while weights grow slower (MoE experts saturate), so the share rises with B.
    std::int64_t lo = 1, hi = 1;
    for (;;) {
        auto f = at(hi);
        if (!f)
            return std::nullopt;
        if (*f >= fraction)
            break;
        if (hi >= kMaxBatch)
            return std::nullopt;
        lo = hi + 1;
        hi = std::min(kMaxBatch, hi * 2);
    }
    while (lo < hi) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        auto f = at(mid);
        if (!f)
            return std::nullopt;
        if (*f >= fraction)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

std::vector<StepSweepRow> stepSweep(const ModelSpec& m, const GpuSpec& gpu, const Deployment& base,
                                    const std::vector<std::int64_t>& batches) {
    std::vector<StepSweepRow> rows;
    std::vector<std::int64_t> kvs = validKvHeadCounts(m);
    if (m.mla)
        kvs.insert(kvs.begin(), 0);
    std::int64_t maxBatch = 1;
    for (std::int64_t b : batches)
        maxBatch = std::max(maxBatch, b);
    for (std::int64_t kv : kvs) {
        Deployment d = base;
        d.kvHeads = kv > 0 ? std::optional<std::int64_t>(kv) : std::nullopt;
        if (d.kvDtype == KvDtype::FP8DsMla && kv > 0)
            d.kvDtype = KvDtype::FP8;
        const StepAtBatch steps(m, gpu, d, maxBatch);
        for (std::int64_t b : batches) {
            StepSweepRow row;
            row.kvHeads = kv;
            row.variant = variantLabel(m, kv);
            row.batch = b;
            auto s = steps.at(b);
            if (s.ok())
                row.step = s.value();
            else
                row.error = s.error().message();
            rows.push_back(std::move(row));
        }
    }
    return rows;
}

namespace {

std::string padTo(std::string s, std::size_t width) {
    if (s.size() < width)
        s.append(width - s.size(), ' ');
    return s + ' ';
}

std::string sig(double v) {
    std::ostringstream o;
    o.precision(6);
    o << v;
    return o.str();
}

} // namespace

std::string stepTable(const ModelSpec& m, const GpuSpec& gpu, const Deployment& base,
                      const std::vector<StepSweepRow>& rows, bool csv) {
    std::ostringstream o;
    if (csv) {
        o << "variant,kv_heads,batch,weight_bytes,kv_bytes,activation_bytes,bytes,kv_fraction,"
             "flops,comm_bytes,bound,time_lower_bound_s,tokens_per_s_per_gpu,tokens_per_s,"
             "error\n";
        for (const auto& row : rows) {
            o << csvField(row.variant) << ',' << row.kvHeads << ',' << row.batch << ',';
            if (!row.step) {
                o << ",,,,,,,,,,," << csvField(row.error) << '\n';
                continue;
            }
            const DecodeStep& s = *row.step;
            o << s.weightBytes << ',' << s.kvBytes << ',' << s.activationBytes << ',' << s.bytes()
              << ',' << sig(s.kvFraction) << ',' << sig(s.flops()) << ',' << s.commBytes << ','
              << toString(s.bound) << ',' << sig(s.timeLowerBoundS) << ','
              << sig(s.tokensPerSPerGpu) << ',' << sig(s.tokensPerS) << ",\n";
        }
        return o.str();
    }
    o << "kvscope decode step: " << m.name << " on " << base.tp << " x " << gpu.name
      << " (TP=" << base.tp << "), context " << withCommas(base.context) << ", per rank\n\n";
    const std::size_t w[] = {11, 7, 11, 11, 11, 7, 13, 11, 15, 9, 12, 10};
    const char* head[] = {"variant", "batch", "weights", "KV",       "act.",      "KV %",
                          "FLOPs",   "comm",  "bound",   "ms/token", "tok/s/GPU", "tok/s"};
    for (std::size_t i = 0; i < std::size(head); ++i)
        o << padTo(head[i], w[i]);
    o << '\n';
    bool uncounted = false;
    for (const auto& row : rows) {
        o << padTo(row.variant, w[0]) << padTo(withCommas(row.batch), w[1]);
        if (!row.step) {
            o << "refused: " << row.error << '\n';
            continue;
        }
        const DecodeStep& s = *row.step;
        uncounted = uncounted || !s.commCounted;
        o << padTo(humanBytes(static_cast<double>(s.weightBytes)), w[2])
          << padTo(humanBytes(static_cast<double>(s.kvBytes)), w[3])
          << padTo(humanBytes(static_cast<double>(s.activationBytes)), w[4])
          << padTo(fixed(100.0 * s.kvFraction, 1), w[5])
          << padTo(fixed(s.flops() / 1e12, 3) + " TFLOP", w[6])
          << padTo(humanBytes(static_cast<double>(s.commBytes)) + (s.commCounted ? "" : "?"), w[7])
          << padTo(toString(s.bound), w[8]) << padTo(fixed(s.timeLowerBoundS * 1e3, 3), w[9])
          << padTo(fixed(s.tokensPerSPerGpu, 1), w[10]) << fixed(s.tokensPerS, 1) << '\n';
    }
    o << "\nbytes per rank per step; ms/token = max(bytes / HBM, FLOPs / peak) + TP all-reduces\n";
    if (uncounted)
        o << "? the GPU's interconnect bandwidth is unknown: communication time not counted\n";
    return o.str();
}

} // namespace kvscope
