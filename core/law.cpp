// The attention-memory law (docs/formulas.md §2–§6, §8) and the engines' validation rules.
#include "core/law.h"

#include "core/format.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kvscope {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr std::int64_t kMiB = 1024 * 1024;

std::string str(std::int64_t v) {
    return std::to_string(v);
}

bool latentMode(const ModelSpec& m, const Deployment& d) {
    return m.mla && !d.kvHeads;
}

std::int64_t effectiveKvHeads(const ModelSpec& m, const Deployment& d) {
    if (latentMode(m, d))
        return 1;
    return d.kvHeads.value_or(m.kvHeads.value);
}

KvDtype resolveKvDtype(const ModelSpec& m, KvDtype k) {
    if (k != KvDtype::Auto)
        return k;
    return m.torchDtype.value == "float16" || m.torchDtype.value == "half" ? KvDtype::FP16
                                                                           : KvDtype::BF16;
}

/// Bytes one token occupies in one layer's cache on one rank.
std::int64_t cellPerLayerPerRank(const ModelSpec& m, const Deployment& d, KvDtype kv) {
    if (latentMode(m, d)) {
        if (kv == KvDtype::FP8DsMla)
            return kFp8DsMlaBytesPerTokenPerLayer;
        return (m.kvLoraRank.value + m.qkRopeHeadDim.value) * bytesPerElement(kv);
    }
    const std::int64_t kvPerRank = std::max<std::int64_t>(1, effectiveKvHeads(m, d) / d.tp);
    return kvPerRank * (m.keyDim() + m.valueDim()) * bytesPerElement(kv);
}

/// Bytes one token occupies in one layer's cache, whole model (all distinct heads once).
std::int64_t cellPerLayer(const ModelSpec& m, const Deployment& d, KvDtype kv) {
    if (latentMode(m, d))
        return cellPerLayerPerRank(m, d, kv);
    return effectiveKvHeads(m, d) * (m.keyDim() + m.valueDim()) * bytesPerElement(kv);
}

/// Σ over layers of per-layer bytes × min(tokens, window) — window layers keep at most
/// `window` tokens of one request.
std::int64_t windowedBytes(const ModelSpec& m, std::int64_t perLayer, std::int64_t tokens) {
    std::int64_t total = 0;
    for (std::int64_t w : m.layerWindow)
        total += perLayer * (w > 0 ? std::min(tokens, w) : tokens);
    return total;
}

std::int64_t ceilDiv(std::int64_t a, std::int64_t b) {
    return (a + b - 1) / b;
}

/// The widest MLP activation (per token, per rank, elements) of one forward pass.
std::int64_t mlpActivationWidth(const ModelSpec& m, std::int64_t tp) {
    std::int64_t width = m.intermediate.value;
    if (m.routedExperts.value > 0)
        width = std::max(width, m.expertsPerToken.value * m.moeIntermediate.value +
                                    m.sharedExperts.value * m.moeIntermediate.value);
    const std::int64_t mats = m.gatedMlp.value ? 3 : 2; // gate+up output, then act output
    return mats * width / tp;
}

} // namespace

std::string toString(PoolModel p) {
    return p == PoolModel::Vllm ? "vllm" : "datasheet";
}

Result<PoolModel> parsePoolModel(std::string_view text) {
    if (text == "vllm")
        return PoolModel::Vllm;
    if (text == "datasheet")
        return PoolModel::Datasheet;
    return makeError("pool-model", "must be vllm or datasheet; got '" + std::string(text) + "'");
}

std::vector<std::int64_t> validKvHeadCounts(const ModelSpec& m) {
    std::vector<std::int64_t> out;
    const std::int64_t h = m.qHeads.value;
    for (std::int64_t k = h; k >= 1; --k)
        if (h % k == 0)
            out.push_back(k);
    return out;
}

std::string variantLabel(const ModelSpec& m, std::int64_t kvHeads) {
    if (kvHeads <= 0)
        return "MLA latent";
    const std::int64_t h = m.qHeads.value;
    if (kvHeads == h)
        return "MHA";
    if (kvHeads == 1)
        return "MQA";
    if (h % kvHeads != 0)
        return "h_kv=" + str(kvHeads);
    return "GQA-" + str(h / kvHeads);
}

Status validate(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d) {
    const std::int64_t h = m.qHeads.value;
    if (d.tp < 1)
        return makeError("tp", "must be a positive integer, got " + str(d.tp));
    if (d.tp > kMaxTp)
        return makeError("tp", "must be at most " + str(kMaxTp) + ", got " + str(d.tp));
    if (d.dcp < 1)
        return makeError("dcp", "must be a positive integer, got " + str(d.dcp));
    if (d.kvHeads) {
        const std::int64_t k = *d.kvHeads;
        if (k < 1)
            return makeError("h_kv", "must be a positive integer, got " + str(k));
        if (k > h || h % k != 0)
            return makeError("h_kv", "must divide num_attention_heads (" + str(h) + "); " + str(k) +
                                         " does not");
    }
    if (h % d.tp != 0)
        return makeError("tp", "Total number of attention heads (" + str(h) +
                                   ") must be divisible by tensor parallel size (" + str(d.tp) +
                                   ")");
    const std::int64_t hkv = effectiveKvHeads(m, d);
    const bool latent = latentMode(m, d);
    if (!latent) {
        if (hkv >= d.tp && hkv % d.tp != 0)
            return makeError("tp", "Total number of KV heads (" + str(hkv) +
                                       ") must be divisible by tensor parallel size (" + str(d.tp) +
                                       ") when it is at least the TP size");
        if (hkv < d.tp && d.tp % hkv != 0)
            return makeError("tp", "tensor parallel size (" + str(d.tp) +
                                       ") must be a multiple of the number of KV heads (" +
                                       str(hkv) + ") for the heads to be replicated");
    }
    if (d.dcp > 1) {
        if (d.tp % d.dcp != 0)
            return makeError("dcp", "tensor parallel size (" + str(d.tp) +
                                        ") must be divisible by decode context parallel size (" +
                                        str(d.dcp) + ")");
        if (!latent && d.tp <= hkv)
            return makeError("dcp", "Decode context parallelism for GQA/MQA requires "
                                    "--tensor-parallel-size (" +
                                        str(d.tp) +
                                        ") to be greater than the model's total number of KV "
                                        "heads (" +
                                        str(hkv) + ")");
    }
    if (d.kvDtype == KvDtype::FP8DsMla && !latent)
        return makeError("kv-dtype", "fp8_ds_mla is vLLM's MLA latent layout; this deployment "
                                     "caches per-head K/V (use fp8)");
    if (d.context < 1)
        return makeError("context", "must be a positive number of tokens, got " + str(d.context));
    if (d.context > kMaxContext)
        return makeError("context", "must be at most " + withCommas(kMaxContext) + " tokens");
    if (d.batch < 1)
        return makeError("batch", "must be a positive integer, got " + str(d.batch));
    if (d.batch > kMaxBatch)
        return makeError("batch", "must be at most " + withCommas(kMaxBatch));
    if (!(d.gpuMemUtil > 0.0 && d.gpuMemUtil <= 1.0))
        return makeError("gpu-mem-util", "must be in (0, 1], got " + fixed(d.gpuMemUtil, 3));
    static constexpr std::int64_t kBlocks[] = {1, 8, 16, 32, 64, 128, 256};
    if (std::find(std::begin(kBlocks), std::end(kBlocks), d.blockSize) == std::end(kBlocks))
        return makeError("block-size", "must be one of 1, 8, 16, 32, 64, 128, 256 (vLLM's "
                                       "--block-size), got " +
                                           str(d.blockSize));
    if (d.maxNumBatchedTokens < 1 || d.maxNumBatchedTokens > kMaxContext)
        return makeError("max-num-batched-tokens",
                         "must be a positive integer up to " + withCommas(kMaxContext));
    if (d.poolGiB && !(*d.poolGiB > 0.0 && *d.poolGiB <= 1e6))
        return makeError("pool-gib", "must be a positive number of GiB (at most 1e6)");
    if (auto s = validateGpu(gpu); !s.ok())
        return Error{"gpu." + s.error().field, s.error().rule};
    return Ok{};
}

std::vector<std::int64_t> validTpSizes(const ModelSpec& m, std::int64_t kvHeads,
                                       std::int64_t maxTp) {
    std::vector<std::int64_t> out;
    const std::int64_t h = m.qHeads.value;
    const bool latent = m.mla && kvHeads <= 0;
    const std::int64_t hkv = latent ? 1 : (kvHeads > 0 ? kvHeads : m.kvHeads.value);
    for (std::int64_t tp = 1; tp <= std::min(maxTp, h); ++tp) {
        if (h % tp != 0)
            continue;
        if (!latent && ((hkv >= tp && hkv % tp != 0) || (hkv < tp && tp % hkv != 0)))
            continue;
        out.push_back(tp);
    }
    return out;
}

PoolBreakdown computePool(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d,
                          std::int64_t weightBytesPerRank) {
    PoolBreakdown p;
    p.model = d.poolModel;
    p.util = d.gpuMemUtil;
    p.weightBytes = weightBytesPerRank;
    if (d.poolGiB) {
        p.overridden = true;
        p.capacityBytes = std::llround(*d.poolGiB * kGiB);
        p.capacitySource = "--pool-gib";
        p.util = 1.0;
        p.budgetBytes = p.capacityBytes;
        p.weightBytes = 0;
        p.poolBytes = p.capacityBytes;
        return p;
    }
    if (d.poolModel == PoolModel::Datasheet) {
        // The chapter's model: util × datasheet capacity (decimal GB) − weights / TP.
        p.capacityBytes = gpu.memoryBytes;
        p.capacitySource = "datasheet";
        p.budgetBytes = std::llround(d.gpuMemUtil * static_cast<double>(gpu.memoryBytes));
        p.poolBytes = p.budgetBytes - p.weightBytes;
        return p;
    }
    // vLLM (v1 worker, determine_available_memory): requested = util × total memory the driver
    // reports; KV pool = requested − (weights + torch peak increase of the profiling run +
    // non-torch increase). Calibrated against vLLM 0.11 startup logs on H100 (79.18 GiB):
    // Llama-3.1-8B TP=1 logs weights 14.99, activation 4.76, non-torch 0.13 → KV 51.38 GiB;
    // Llama-3.3-70B-FP8 TP=2 logs activation 4.84, non-torch 0.55; Qwen3-32B 5.64 / 0.14.
    p.capacityBytes = gpu.reportedMemoryBytes();
    p.capacitySource =
        gpu.driverMemoryBytes > 0 ? gpu.driverMemorySource : "datasheet (driver figure unknown)";
    p.budgetBytes = static_cast<std::int64_t>(d.gpuMemUtil * static_cast<double>(p.capacityBytes));

    const std::int64_t tp = d.tp;
    const std::int64_t act = 2; // 16-bit activations
    const std::int64_t tokens = d.maxNumBatchedTokens;
    const std::int64_t dModel = m.hidden.value;
    const bool latent = latentMode(m, d);
    const std::int64_t qkvWidth =
        latent ? (m.qLoraRank.value + m.kvLoraRank.value + m.qkRopeHeadDim.value +
                  m.qHeads.value * (m.qkNopeHeadDim.value + m.qkRopeHeadDim.value) / tp)
               : ((m.qHeads.value + 2 * effectiveKvHeads(m, d)) * m.keyDim()) / tp;
    const std::int64_t attnOut = m.qHeads.value * m.valueDim() / tp;
    // The profiling pass runs max_num_batched_tokens tokens through the model: the residual
    // stream and the normed hidden state stay live (2·d) beside the widest stage — the QKV
    // projection plus the attention output, or the MLP's gate/up and activation outputs
    // (MoE: the top-k experts' intermediates plus shared experts).
    const std::int64_t widest = std::max(qkvWidth + attnOut, mlpActivationWidth(m, tp));
    const std::int64_t forward = tokens * (2 * dModel + widest) * act;
    // Then its dummy sampler pass computes fp32 logits over the full vocabulary for every one
    // of those tokens — the larger term (3.9 GiB of Llama-3-8B's 4.76 GiB at 8,192 tokens).
    const std::int64_t logits = tokens * m.vocab.value * 4;
    p.activationPeakBytes = forward + logits;
    // Non-torch memory at TP=1: cuBLAS/cuDNN workspaces and allocator slack, 0.13 GiB in every
    // TP=1 log above.
    p.cudaContextBytes = 133 * kMiB;
    // CUDA graphs: the 67 captured batch sizes (1..512) share one memory pool sized by the
    // largest (512 tokens of activations). vLLM 0.11 captures them after sizing the pool, so
    // the logs above show changes of −0.9 to +1.0 GiB; newer releases profile them first.
    p.cudaGraphBytes = 512 * (2 * dModel + widest) * act;
    if (tp > 1) {
        // NCCL's communicator buffers (channels × peers × NCCL_BUFFSIZE): the TP=2 logs show
        // non-torch memory rising from 0.13 to 0.55 GiB.
        p.ncclBytes = 400 * kMiB;
        // vLLM's custom all-reduce (world sizes 2, 4, 6, 8 only): an 8 MiB IPC buffer plus
        // 8 MiB of metadata and registered-pointer space per rank.
        if (tp <= 8 && tp % 2 == 0)
            p.customAllReduceBytes = 16 * kMiB;
    }
    p.poolBytes = p.budgetBytes - p.weightBytes - p.activationPeakBytes - p.nonTorchBytes();
    return p;
}

double decodeIntensity(const ModelSpec& m, const Deployment& d) {
    const KvDtype kv = resolveKvDtype(m, d.kvDtype);
    const double qPerRank = static_cast<double>(m.qHeads.value) / static_cast<double>(d.tp);
    double flopsPerTokenPerLayer = 0;
    if (latentMode(m, d)) // absorbed MLA: scores over r + d_rope, output over r, per head
        flopsPerTokenPerLayer = 2.0 * qPerRank * (2.0 * m.kvLoraRank.value + m.qkRopeHeadDim.value);
    else // QK^T over d_k and PV over d_v, 2 FLOPs per multiply-add
        flopsPerTokenPerLayer = 2.0 * qPerRank * static_cast<double>(m.keyDim() + m.valueDim());
    return flopsPerTokenPerLayer / static_cast<double>(cellPerLayerPerRank(m, d, kv));
}

double capacityCrossover(std::int64_t gqaCellBytesPerToken, std::int64_t mlaCellBytesPerToken) {
    if (mlaCellBytesPerToken <= 0)
        return 0;
    return static_cast<double>(gqaCellBytesPerToken) / static_cast<double>(mlaCellBytesPerToken);
}

Result<Report> evaluate(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d) {
    if (auto s = validate(m, gpu, d); !s.ok())
        return s.error();
    // Absurd sizes: one request's bytes must stay far inside 64-bit arithmetic.
    if (static_cast<double>(cellPerLayer(m, d, resolveKvDtype(m, d.kvDtype))) *
            static_cast<double>(m.layers.value) * static_cast<double>(d.context) *
            static_cast<double>(d.batch) >
        1e18)
        return makeError("context", "one decode step would read over 10^18 bytes of KV cache; "
                                    "the sizes are absurd");
    Report r;
    const bool latent = latentMode(m, d);
    const std::int64_t hkv = effectiveKvHeads(m, d);
    const KvDtype kv = resolveKvDtype(m, d.kvDtype);

    r.attention = latent ? AttentionKind::MLA : classifyHeads(m.qHeads.value, hkv);
    r.variant = latent ? "MLA latent" : variantLabel(m, hkv);
    r.layers = m.layers.value;
    r.qHeads = m.qHeads.value;
    r.kvHeads = hkv;
    r.keyDim = latent ? m.kvLoraRank.value + m.qkRopeHeadDim.value : m.keyDim();
    r.valueDim = latent ? 0 : m.valueDim();
    r.kvLoraRank = m.mla ? m.kvLoraRank.value : 0;
    r.qkRopeHeadDim = m.mla ? m.qkRopeHeadDim.value : 0;
    r.kvDtype = kv;
    r.kvBytesPerElement = bytesPerElement(kv);
    r.weightDtype = resolveWeightDtype(m, d.weightDtype);

    // --- §3 tensor parallelism --------------------------------------------------------------
    r.tp = d.tp;
    r.dcp = d.dcp;
    r.qHeadsPerRank = m.qHeads.value / d.tp;
    r.kvHeadsPerRank = latent ? 1 : std::max<std::int64_t>(1, hkv / d.tp);
    r.kvReplicated = d.tp > 1 && (latent || hkv < d.tp);
    r.kvCopies = latent ? d.tp : (hkv < d.tp ? d.tp / hkv : 1);
    r.groupSize = static_cast<double>(m.qHeads.value) / static_cast<double>(hkv);
    r.groupSizePerRank =
        static_cast<double>(r.qHeadsPerRank) / static_cast<double>(r.kvHeadsPerRank);

    // --- §2 cell --------------------------------------------------------------------------
    const std::int64_t perLayer = cellPerLayer(m, d, kv);
    const std::int64_t perLayerRank = cellPerLayerPerRank(m, d, kv);
    r.cellBytesPerToken = perLayer * m.layers.value;
    r.cellBytesPerTokenPerLayerPerRank = perLayerRank;
    r.cellBytesPerTokenPerRank = perLayerRank * m.layers.value;
    r.context = d.context;
    r.batch = d.batch;
    r.contextPerRank = ceilDiv(d.context, d.dcp);
    r.requestBytesPerRank = windowedBytes(m, perLayerRank, r.contextPerRank);
    r.requestBytes = windowedBytes(m, perLayer, d.context);

    // --- weights (§6) -----------------------------------------------------------------------
    r.params = countParams(m);
    r.kvProjParamsPerLayer = kvProjParamsPerLayer(m, latent ? 0 : hkv);
    r.kvProjParamsPerLayerModel = kvProjParamsPerLayer(m, 0);
    r.weightBytes = weightBytes(m, r.params, d.weightDtype);
    r.weightBytesPerRank = ceilDiv(r.weightBytes, d.tp);

    // --- §4 pool, capacity, concurrency ---------------------------------------------------
    r.pool = computePool(m, gpu, d, r.weightBytesPerRank);
    const std::int64_t pool = std::max<std::int64_t>(0, r.pool.poolBytes);
    r.tokensCapacity = pool / r.cellBytesPerTokenPerRank * d.dcp;
    r.concurrency = static_cast<double>(pool) / static_cast<double>(r.requestBytesPerRank);
    r.maxConcurrency = pool / r.requestBytesPerRank;
    r.pageBytes = perLayerRank * d.blockSize; // (head_size + head_size_v)·b·heads·block
    r.blocksPerRank = pool / (r.pageBytes * m.layers.value);
    r.vllmTokens = r.blocksPerRank * d.blockSize * d.dcp;
    r.vllmConcurrency = static_cast<double>(r.blocksPerRank) /
                        static_cast<double>(ceilDiv(r.contextPerRank, d.blockSize));
    r.vllmLogTokens = "GPU KV cache size: " + withCommas(r.vllmTokens) + " tokens";
    r.vllmLogConcurrency = "Maximum concurrency for " + withCommas(d.context) +
                           " tokens per request: " + fixed(r.vllmConcurrency, 2) + "x";
    if (r.pool.poolBytes <= 0) {
        r.fits = false;
        r.noFitReason = "weights and overheads (" +
                        humanBytes(static_cast<double>(r.pool.budgetBytes - r.pool.poolBytes)) +
                        " per rank) exceed " + fixed(r.pool.util, 2) + " × " +
                        humanBytes(static_cast<double>(r.pool.capacityBytes)) +
                        ": no room for the KV cache; raise --tp or use a larger GPU";
    } else if (r.maxConcurrency == 0) {
        r.fits = false;
        r.noFitReason = "one " + withCommas(d.context) + "-token request needs " +
                        humanBytes(static_cast<double>(r.requestBytesPerRank)) +
                        " per rank, more than the " + humanBytes(static_cast<double>(pool)) +
                        " pool";
    }

    // --- §5 roofline --------------------------------------------------------------------------
    r.intensityFlopPerByte = decodeIntensity(m, d);
    const double peak = kv == KvDtype::FP32 ? gpu.peakFp32FlopPerS : gpu.peakBf16FlopPerS;
    r.ridgeFlopPerByte = peak / gpu.bandwidthBytesPerS;
    r.attainableFlopPerS = std::min(peak, r.intensityFlopPerByte * gpu.bandwidthBytesPerS);
    r.attainableFractionOfPeak = r.attainableFlopPerS / peak;

    // --- §8 one decode step: weights read once vs KV read once, per rank ------------------
    {
        const ParamCount& p = r.params;
        const double bytesPerParam = static_cast<double>(r.weightBytes) /
                                     static_cast<double>(std::max<std::int64_t>(1, p.total()));
        // The embedding table is gathered (B rows), not streamed; lm_head (or the tied table)
        // is read in full.
        double streamed = static_cast<double>(p.total() - p.embedding +
                                              (m.tiedEmbeddings.value ? p.embedding : 0));
        if (m.routedExperts.value > 0) {
            // Routed experts: a decode step of B tokens touches a fraction 1 − (1 − k/E)^B of
            // each MoE layer's E experts (uniform routing); the rest are not read.
            const double e = static_cast<double>(m.routedExperts.value);
            const double k = static_cast<double>(m.expertsPerToken.value);
            const double touched = 1.0 - std::pow(1.0 - k / e, static_cast<double>(d.batch));
            std::int64_t moeLayers = 0;
            for (std::int64_t l = m.firstDenseLayers.value; l < m.layers.value; ++l)
                moeLayers += (m.moeLayerFreq.value <= 1 || (l + 1) % m.moeLayerFreq.value == 0);
            const double routedParams =
                static_cast<double>(moeLayers) * e *
                static_cast<double>((m.gatedMlp.value ? 3 : 2) * m.hidden.value *
                                    m.moeIntermediate.value);
            streamed -= routedParams * (1.0 - touched);
        }
        r.stepWeightBytesPerRank =
            std::llround(streamed * bytesPerParam / static_cast<double>(d.tp));
        r.stepKvBytesPerRank = d.batch * r.requestBytesPerRank;
        const double total = static_cast<double>(r.stepWeightBytesPerRank + r.stepKvBytesPerRank);
        r.stepKvFraction = total > 0 ? static_cast<double>(r.stepKvBytesPerRank) / total : 0;
        r.stepTimeLowerBoundS = total / gpu.bandwidthBytesPerS;
    }

    // --- warnings -------------------------------------------------------------------------
    r.warnings = m.warnings;
    if (r.kvReplicated && !latent)
        r.warnings.push_back("KV heads replicate: h_kv (" + str(hkv) + ") < TP (" + str(d.tp) +
                             "), each KV head is stored on " + str(r.kvCopies) +
                             " ranks; the per-rank cell stops shrinking past TP = " + str(hkv));
    if (latent && d.tp > 1)
        r.warnings.push_back("MLA's latent is replicated on every rank: the per-rank cell is "
                             "the same at any TP");
    if (m.maxPositionEmbeddings.value > 0 && d.context > m.maxPositionEmbeddings.value)
        r.warnings.push_back("context " + withCommas(d.context) + " exceeds " +
                             m.maxPositionEmbeddings.source + " (" +
                             withCommas(m.maxPositionEmbeddings.value) +
                             "): engines refuse this max-model-len without rope scaling");
    if (m.attention() == AttentionKind::MQA && !d.kvHeads && d.tp > 1 &&
        (m.modelType == "gpt_bigcode" || m.modelType == "falcon" || m.modelType == "RefinedWeb" ||
         m.modelType == "RefinedWebModel"))
        r.warnings.push_back("SGLang's multi_query path has no tensor-parallel support");
    if (m.windowLayerCount() > 0)
        r.warnings.push_back("tokens held count every layer at the full cell; bytes per request "
                             "cap window layers at their window (vLLM's hybrid allocator "
                             "differs)");
    if (!r.fits)
        r.warnings.push_back(r.noFitReason);
    return r;
}

std::vector<SweepRow> sweep(const ModelSpec& m, const GpuSpec& gpu, const Deployment& base,
                            std::int64_t maxTp) {
    std::vector<SweepRow> rows;
    std::vector<std::int64_t> kvs = validKvHeadCounts(m);
    if (m.mla)
        kvs.insert(kvs.begin(), 0);
    for (std::int64_t tp = 1; tp <= maxTp; tp *= 2) {
        for (std::int64_t k : kvs) {
            Deployment d = base;
            d.tp = tp;
            d.dcp = 1;
            d.kvHeads = k > 0 ? std::optional<std::int64_t>(k) : std::nullopt;
            if (d.kvDtype == KvDtype::FP8DsMla && k > 0)
                d.kvDtype = KvDtype::FP8;
            SweepRow row;
            row.tp = tp;
            row.kvHeads = k;
            row.variant = variantLabel(m, k);
            row.report = evaluate(m, gpu, d);
            rows.push_back(std::move(row));
        }
    }
    return rows;
}

} // namespace kvscope
