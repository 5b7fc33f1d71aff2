// The attention-memory law (docs/formulas.md §2–§6, §8): the cell, the pool, the roofline and
// the report of one deployment. The engines' validation rules are in law_validate.cpp.
#include "core/law/law.h"

#include "core/engines/engines.h"
#include "core/format.h"
#include "core/law/law_detail.h"
#include "core/model/weights.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

namespace kvscope {

namespace {

using lawdetail::effectiveKvHeads;
using lawdetail::GroupCost;
using lawdetail::latentMode;
using lawdetail::Paging;
using lawdetail::str;
using lawdetail::vllmPaging;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

KvDtype resolveKvDtype(const ModelSpec& m, KvDtype k) {
    if (k != KvDtype::Auto)
        return k;
    return m.torchDtype.value == "float16" || m.torchDtype.value == "half" ? KvDtype::FP16
                                                                           : KvDtype::BF16;
}

/// Bytes one token occupies in one attention layer's cache on one rank, for the model-wide
/// attention geometry (the decode-intensity denominator, §5).
std::int64_t cellPerLayerPerRank(const ModelSpec& m, const Deployment& d, KvDtype kv) {
    if (latentMode(m, d))
        return kvTokenBytes(kv, 1, m.kvLoraRank.value + m.qkRopeHeadDim.value, 0);
    const std::int64_t kvPerRank = std::max<std::int64_t>(1, effectiveKvHeads(m, d) / d.tp);
    return kvTokenBytes(kv, kvPerRank, m.keyDim(), m.valueDim());
}

std::int64_t ceilDiv(std::int64_t a, std::int64_t b);

/// Per-token bytes of one K/V (or latent) entry in a group, one rank and whole model.
std::pair<std::int64_t, std::int64_t> entryBytes(const ModelSpec& m, const LayerGroup& g,
                                                 const Deployment& d, KvDtype kv) {
    if (g.kind == LayerKind::Mla) {
        if (latentMode(m, d)) {
            const std::int64_t idx = g.indexerHeadDim ? indexerBytesPerToken(g.indexerHeadDim) : 0;
            const std::int64_t latent = kvTokenBytes(kv, 1, g.headDimK, 0);
            return {latent + idx, latent + idx}; // the latent is replicated on every rank
        }
        // What-if: the MLA model viewed as a GQA model with --h-kv heads.
        const std::int64_t h = effectiveKvHeads(m, d);
        return {kvTokenBytes(kv, std::max<std::int64_t>(1, h / d.tp), m.keyDim(), m.valueDim()),
                kvTokenBytes(kv, h, m.keyDim(), m.valueDim())};
    }
    const std::int64_t h = d.kvHeads.value_or(g.kvHeads);
    return {kvTokenBytes(kv, std::max<std::int64_t>(1, h / d.tp), g.headDimK, g.headDimV),
            kvTokenBytes(kv, h, g.headDimK, g.headDimV)};
}

std::vector<GroupCost> groupCosts(const ModelSpec& m, const Deployment& d, KvDtype kv) {
    std::vector<GroupCost> out;
    for (const LayerGroup& g : m.layerGroups) {
        GroupCost c;
        c.group = &g;
        c.kind = g.kind;
        c.n = g.count();
        switch (g.kind) {
        case LayerKind::Full:
        case LayerKind::Mla:
            std::tie(c.tokenBytesRank, c.tokenBytes) = entryBytes(m, g, d, kv);
            break;
        case LayerKind::Sliding:
        case LayerKind::Chunked:
            std::tie(c.tokenBytesRank, c.tokenBytes) = entryBytes(m, g, d, kv);
            c.window = g.window;
            break;
        case LayerKind::Compressed: {
            // One entry (and indexer key) per `ratio` tokens, rounded up per token, plus the
            // uncompressed sliding window of whole entries.
            const auto [rank, whole] = entryBytes(m, g, d, kv);
            const std::int64_t ratio = g.window.value_or(1);
            const std::int64_t idx = g.indexerHeadDim ? indexerBytesPerToken(g.indexerHeadDim) : 0;
            c.tokenBytesRank = ceilDiv(rank, ratio) + ceilDiv(idx, ratio);
            c.tokenBytes = ceilDiv(whole, ratio) + ceilDiv(idx, ratio);
            c.auxWindow = g.auxWindow;
            c.auxTokenBytesRank = rank;
            c.auxTokenBytes = whole;
            break;
        }
        case LayerKind::Cross: {
            const auto [rank, whole] = entryBytes(m, g, d, kv);
            c.fixedBytesRank = rank * g.encoderTokens;
            c.fixedBytes = whole * g.encoderTokens;
            break;
        }
        case LayerKind::Linear:
        case LayerKind::Mamba:
            // vLLM's state dtypes come from mamba_cache_dtype / mamba_ssm_cache_dtype, not from
            // --kv-cache-dtype (MambaStateDtypeCalculator, mamba_utils.py).
            c.fixedBytesRank = stateBytesPerRank(g.state, d.tp);
            c.fixedBytes = stateBytesPerRank(g.state, 1);
            break;
        case LayerKind::None:
            break;
        }
        out.push_back(c);
    }
    return out;
}

/// One request's bytes at `tokens` tokens: per-token layers capped at their window (a
/// chunked-local layer at its chunk), plus fixed state per request.
std::int64_t requestBytesAt(const std::vector<GroupCost>& costs, std::int64_t tokens,
                            bool perRank) {
    std::int64_t total = 0;
    for (const GroupCost& c : costs) {
        const std::int64_t tok = perRank ? c.tokenBytesRank : c.tokenBytes;
        const std::int64_t held = c.window ? std::min(tokens, *c.window) : tokens;
        total += c.n * tok * held;
        total +=
            c.n * (perRank ? c.auxTokenBytesRank : c.auxTokenBytes) * std::min(tokens, c.auxWindow);
        total += c.n * (perRank ? c.fixedBytesRank : c.fixedBytes);
    }
    return total;
}

std::int64_t ceilDiv(std::int64_t a, std::int64_t b) {
    return (a + b - 1) / b;
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
    // The GQA paper (Ainslie et al. 2023, §2.2) names a model by its number of KV groups:
    // "GQA-G" has G = h_kv groups, so Llama-3-8B (32 query heads, 8 KV heads) is GQA-8, with
    // g = h / h_kv = 4 query heads per group.
    return "GQA-" + str(kvHeads);
}

PoolBreakdown computePool(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d,
                          std::int64_t weightBytesPerRank) {
    PoolBreakdown p;
    p.model = d.poolModel;
    p.engine = d.engine;
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
    // The engine's own arithmetic, release by release (core/engines/, docs/engines.md).
    if (d.engine.name == EngineName::Sglang)
        return sglangPool(m, gpu, d, weightBytesPerRank);
    return vllmPool(m, gpu, d, weightBytesPerRank);
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

namespace {

/// Absurd sizes: one request's bytes must stay far inside 64-bit arithmetic.
Status checkMagnitude(const std::vector<GroupCost>& costs, const Deployment& d) {
    double perToken = 0, fixedBytes = 0;
    for (const GroupCost& c : costs) {
        perToken += static_cast<double>(c.n) *
                    static_cast<double>(c.tokenBytes + c.tokenBytesRank + c.auxTokenBytes);
        fixedBytes += static_cast<double>(c.n) * static_cast<double>(c.fixedBytes);
    }
    if ((perToken * static_cast<double>(d.context) + fixedBytes) * static_cast<double>(d.batch) >
        1e18)
        return makeError("context", "one decode step would read over 10^18 bytes of KV "
                                    "cache; the sizes are absurd");
    return Ok{};
}

/// The attention shape and how TP splits it (§3).
void describeLayout(Report& r, const ModelSpec& m, const Deployment& d, bool latent,
                    std::int64_t hkv, KvDtype kv) {
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
    r.kvStorageBits = kvStorageBits(kv);
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
}

/// The cell (§2), the fixed state and one request's bytes.
void sizeCell(Report& r, const std::vector<GroupCost>& costs, const Deployment& d) {
    // --- §2 cell: layers that store per-token KV (full, sliding, chunked, mla, compressed) ---
    std::int64_t perTokenLayers = 0, largestPerLayerRank = 0;
    for (const GroupCost& c : costs) {
        if (!storesPerTokenKv(c.kind))
            continue;
        r.cellBytesPerToken += c.n * c.tokenBytes;
        r.cellBytesPerTokenPerRank += c.n * c.tokenBytesRank;
        largestPerLayerRank = std::max(largestPerLayerRank, c.tokenBytesRank);
        perTokenLayers += c.n;
    }
    for (const GroupCost& c : costs)
        r.fixedStateBytesPerRequestPerRank += c.n * c.fixedBytesRank;
    r.cellBytesPerTokenPerLayerPerRank = largestPerLayerRank;
    r.perTokenLayers = perTokenLayers;
    r.context = d.context;
    r.batch = d.batch;
    r.contextPerRank = ceilDiv(d.context, d.dcp);
    r.requestBytesPerRank = requestBytesAt(costs, r.contextPerRank, true);
    r.requestBytes = requestBytesAt(costs, d.context, false);
    for (const GroupCost& c : costs) {
        // requestBytesAt's terms, one group at a time.
        Report::GroupRequestBytes g;
        const std::int64_t s = r.contextPerRank;
        (c.window ? g.capped : g.growing) =
            c.n * c.tokenBytesRank * (c.window ? std::min(s, *c.window) : s);
        g.capped += c.n * c.auxTokenBytesRank * std::min(s, c.auxWindow);
        g.fixed = c.n * c.fixedBytesRank;
        r.groupRequestBytesPerRank.push_back(g);
    }
}

void sizeWeights(Report& r, const ModelSpec& m, const Deployment& d, bool latent,
                 std::int64_t hkv) {
    // --- weights (§6) -----------------------------------------------------------------------
    r.params = countParams(m);
    r.kvProjParamsPerLayer = kvProjParamsPerLayer(m, latent ? 0 : hkv);
    r.kvProjParamsPerLayerModel = kvProjParamsPerLayer(m, 0);
    const LoadedWeights loaded = loadedWeights(m, d.weightDtype, d.tp);
    if (r.kvProjParamsPerLayer != r.kvProjParamsPerLayerModel)
        r.kvProjWeightBytesDelta =
            loadedWeights(m, d.weightDtype, 1, latent ? 0 : hkv).kvProjectionBytes -
            loadedWeights(m, d.weightDtype, 1).kvProjectionBytes;
    r.weightBytes = loaded.bytes;
    // The chapter's datasheet pool divides the checkpoint by TP; the vLLM pool takes what one
    // rank holds once loaded (replicated tensors, the rotary cache).
    r.weightBytesPerRank =
        d.poolModel == PoolModel::Datasheet ? ceilDiv(loaded.bytes, d.tp) : loaded.bytesPerRank;
}

/// The pool (§4), capacity, concurrency, vLLM's pages and whether one request fits.
void sizePool(Report& r, const ModelSpec& m, const GpuSpec& gpu, const Deployment& d,
              const std::vector<GroupCost>& costs, bool latent) {
    // --- §4 pool, capacity, concurrency ---------------------------------------------------
    r.pool = computePool(m, gpu, d, r.weightBytesPerRank);
    const std::int64_t pool = std::max<std::int64_t>(0, r.pool.poolBytes);
    // kvscope's own measures: every per-token layer at the full cell; requests capped at the
    // window and carrying their fixed state.
    r.tokensCapacity =
        r.cellBytesPerTokenPerRank > 0 ? pool / r.cellBytesPerTokenPerRank * d.dcp : 0;
    r.concurrency = r.requestBytesPerRank > 0
                        ? static_cast<double>(pool) / static_cast<double>(r.requestBytesPerRank)
                        : 0;
    r.maxConcurrency = r.requestBytesPerRank > 0 ? pool / r.requestBytesPerRank : 0;
    // vLLM's pages (hybrid allocator)
    {
        const Paging pg = vllmPaging(costs, d, pool, r.contextPerRank, latent);
        r.pageBytes = pg.pageBytes;
        r.blockSize = pg.blockSize;
        r.blocksPerRank = pg.blocks;
        r.vllmKvCacheGroups = pg.groups;
        r.vllmGroupSize = pg.groupSize;
        r.vllmPaddingLayers = pg.paddingLayers;
        r.vllmBlocksPerRequest = pg.blocksPerRequest;
        r.vllmRequestBytesPerRank = pg.requestBytes;
        r.vllmTokens = pg.tokens;
        r.vllmConcurrency = pg.concurrency;
        r.pagingNotes = pg.notes;
    }
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
}

void placeOnRoofline(Report& r, const ModelSpec& m, const GpuSpec& gpu, const Deployment& d,
                     KvDtype kv) {
    // --- §5 roofline --------------------------------------------------------------------------
    r.intensityFlopPerByte = decodeIntensity(m, d);
    const double peak = kv == KvDtype::FP32 ? gpu.peakFp32FlopPerS : gpu.peakBf16FlopPerS;
    r.ridgeFlopPerByte = peak / gpu.bandwidthBytesPerS;
    r.attainableFlopPerS = std::min(peak, r.intensityFlopPerByte * gpu.bandwidthBytesPerS);
    r.attainableFractionOfPeak = r.attainableFlopPerS / peak;
}

/// What the numbers do not say by themselves: replication, limits the engines enforce.
void addWarnings(Report& r, const ModelSpec& m, const GpuSpec& gpu, const Deployment& d,
                 bool latent, std::int64_t hkv) {
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
    if (m.layerGroups.size() > 1 || m.windowLayerCount() > 0) {
        r.warnings.push_back("tokens held count every per-token layer at the full cell; bytes per "
                             "request cap window and chunk layers at their window; the vLLM "
                             "lines follow its hybrid allocator");
        const bool chunked =
            std::any_of(m.layerGroups.begin(), m.layerGroups.end(),
                        [](const LayerGroup& g) { return g.kind == LayerKind::Chunked; });
        if (chunked)
            r.warnings.push_back(
                "chunked local attention: vLLM releases where "
                "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE defaults to 0 disable the "
                "hybrid allocator and page every layer at full context");
        if (d.dcp > 1 && m.windowLayerCount() > 0)
            r.warnings.push_back("vLLM does not support decode context parallelism with sliding "
                                 "window layers (SlidingWindowSpec)");
    }
    for (const auto& n : r.pagingNotes)
        r.warnings.push_back(n);
    if (latent && d.kvDtype == KvDtype::FP8 &&
        std::any_of(m.layerGroups.begin(), m.layerGroups.end(),
                    [](const LayerGroup& g) { return g.indexerHeadDim > 0; }))
        r.warnings.push_back("vLLM serves DeepSeek-V3.2's fp8 KV cache as fp8_ds_mla (656 B per "
                             "token per layer; DeepseekV32ForCausalLM.verify_and_update_config): "
                             "use --kv-dtype fp8_ds_mla to match it");
    if (!r.step.commCounted)
        r.warnings.push_back(gpu.name + " has no interconnect_gb_s: the decode step's TP "
                                        "all-reduces are not counted in its time");
    if (!r.fits)
        r.warnings.push_back(r.noFitReason);
}

} // namespace

Result<Report> evaluate(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d) {
    if (auto s = validate(m, gpu, d); !s.ok())
        return s.error();
    const std::vector<GroupCost> costs = groupCosts(m, d, resolveKvDtype(m, d.kvDtype));
    if (auto s = checkMagnitude(costs, d); !s.ok())
        return s.error();
    Report r;
    const bool latent = latentMode(m, d);
    const std::int64_t hkv = effectiveKvHeads(m, d);
    const KvDtype kv = resolveKvDtype(m, d.kvDtype);

    describeLayout(r, m, d, latent, hkv, kv);
    sizeCell(r, costs, d);
    sizeWeights(r, m, d, latent, hkv);
    sizePool(r, m, gpu, d, costs, latent);
    placeOnRoofline(r, m, gpu, d, kv);
    // --- one decode step: weights, KV and activations read, FLOPs, TP all-reduces ---------
    r.step = computeDecodeStep(m, gpu, d, r);

    addWarnings(r, m, gpu, d, latent, hkv);
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
