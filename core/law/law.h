// The law: what a deployment of a model on a GPU stores, holds and reads per decode step
// (docs/formulas.md §2–§6, §8), with the engines' validation rules.
#pragma once

#include "core/engines/engine.h"
#include "core/law/step.h"
#include "core/model/dtype.h"
#include "core/model/gpu.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvscope {

/// datasheet: the chapter's P = util · capacity(decimal) − weights/TP.
/// vllm: util · driver-reported total − weights/TP − activation peak − non-torch memory.
enum class PoolModel { Vllm, Datasheet };
std::string toString(PoolModel p);
Result<PoolModel> parsePoolModel(std::string_view text);

/// Everything a user chooses. Defaults are the CLI's defaults.
struct Deployment {
    std::int64_t tp = 1;  ///< tensor-parallel size
    std::int64_t dcp = 1; ///< decode context parallel size
    /// What-if KV head count (any divisor of h). Unset: the model's own; for an MLA model,
    /// unset means its latent cache, set means "this model as GQA with that many KV heads".
    std::optional<std::int64_t> kvHeads;
    KvDtype kvDtype = KvDtype::Auto;
    WeightDtype weightDtype = WeightDtype::Auto;
    std::int64_t context = 8192; ///< tokens per request (S)
    std::int64_t batch = 1;      ///< concurrent requests in the decode step (B)
    double gpuMemUtil = 0.9;     ///< vLLM's --gpu-memory-utilization, in (0, 1]
    PoolModel poolModel = PoolModel::Vllm;
    std::optional<double> poolGiB;           ///< overrides the pool per rank outright
    std::int64_t maxNumBatchedTokens = 8192; ///< vLLM's profiling pass size
    std::int64_t blockSize = 16;             ///< vLLM page size in tokens
    EngineSpec engine = defaultEngine();     ///< which engine and release sizes the pool (vllm)
    std::int64_t pp = 1; ///< pipeline-parallel stages: layers split, each stage its own pool
    /// SGLang's --mem-fraction-static; unset: SGLang's own default for the release and TP.
    std::optional<double> memFractionStatic;
};

inline constexpr std::int64_t kMaxContext = 1LL << 30;
inline constexpr std::int64_t kMaxBatch = 1'000'000;
inline constexpr std::int64_t kMaxTp = 4096;

/// Checks a deployment against the engines' rules; the first violation comes back as an Error
/// whose field is the flag ("tp", "h_kv", "dcp", ...) and whose rule reads like vLLM's message.
Status validate(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d);

/// Every valid h_kv for a model (the divisors of h), descending: MHA first, MQA last.
std::vector<std::int64_t> validKvHeadCounts(const ModelSpec& m);
/// "MHA", "GQA-8" (8 = h_kv, the number of KV groups, as the GQA paper names it), "MQA".
std::string variantLabel(const ModelSpec& m, std::int64_t kvHeads);
/// Valid TP sizes for a model at an h_kv: h % TP == 0 and the two KV regimes; ascending.
std::vector<std::int64_t> validTpSizes(const ModelSpec& m, std::int64_t kvHeads,
                                       std::int64_t maxTp = 1024);

/// One term of the pool arithmetic: what it is, how large, and where the rule comes from
/// (an engine source file or PR, a formula, or a constant measured on named logs).
struct PoolTerm {
    std::string key;   ///< "budget", "weights", "activation", "non_torch", "cuda_graphs", ...
    std::string label; ///< "util x driver-reported memory"
    std::int64_t bytes = 0;
    bool subtracted = true; ///< false: shown (the engine estimates it) but not taken off the pool
    std::string rule;       ///< the formula as evaluated
    std::string source;     ///< engine file / PR / measured on which logs
};

/// The pool and where it came from (all bytes per rank).
struct PoolBreakdown {
    PoolModel model = PoolModel::Vllm;
    bool overridden = false;        ///< --pool-gib
    std::int64_t capacityBytes = 0; ///< datasheet (decimal) or driver-reported total
    std::string capacitySource;
    double util = 0.9;
    std::int64_t budgetBytes = 0;          ///< util × capacity
    std::int64_t weightBytes = 0;          ///< weights / TP
    std::int64_t activationPeakBytes = 0;  ///< vllm: peak of the profiling forward pass
    std::int64_t cudaGraphBytes = 0;       ///< vllm: captured CUDA graphs
    std::int64_t ncclBytes = 0;            ///< vllm: NCCL buffers (TP > 1)
    std::int64_t customAllReduceBytes = 0; ///< vllm: custom all-reduce buffers (TP > 1)
    std::int64_t cudaContextBytes = 0;     ///< vllm: CUDA context + cuBLAS workspace, non-torch
    std::int64_t nonTorchBytes() const {
        return cudaGraphBytes + ncclBytes + customAllReduceBytes + cudaContextBytes;
    }
    std::int64_t poolBytes = 0; ///< what is left for KV pages (may be <= 0: nothing fits)

    EngineSpec engine;                       ///< the release whose rules sized this pool
    std::vector<PoolTerm> terms;             ///< budget first, then each term, in engine order
    std::int64_t cudaGraphEstimateBytes = 0; ///< vLLM's estimate, subtracted only from 0.21
    std::int64_t maxNumSeqs = 0;             ///< vLLM: rows of the profiling sampler pass
    // Pipeline parallelism: each stage holds its own layers' KV. With pp > 1, poolBytes is the
    // limiting stage's pool scaled to all L layers (stagePoolBytes × L / stageLayers), so that
    // pool / (cell × L) is that stage's token capacity.
    std::int64_t pp = 1;
    std::int64_t limitingStage = 0;
    std::int64_t stageLayers = 0;
    std::int64_t stagePoolBytes = 0;
    // SGLang
    double memFractionStatic = 0;
    std::string memFractionSource;
    std::int64_t freeBeforeWeightsBytes = 0; ///< "Load weight begin. avail mem="
};

/// Every number kvscope shows for one (model, GPU, deployment).
struct Report {
    AttentionKind attention = AttentionKind::GQA;     ///< of the evaluated variant
    std::string variant;                              ///< "GQA-8", "MLA latent", ...
    std::int64_t layers = 0, qHeads = 0, kvHeads = 0; ///< kvHeads: the evaluated h_kv (1 for MLA)
    std::int64_t keyDim = 0, valueDim = 0;            ///< per-head K and V widths in the cache
    std::int64_t kvLoraRank = 0, qkRopeHeadDim = 0;
    KvDtype kvDtype = KvDtype::BF16;             ///< resolved
    std::int64_t kvBytesPerElement = 2;          ///< whole bytes (nvfp4: 0; see kvStorageBits)
    int kvStorageBits = 16;                      ///< per element, before scales (kvDtypeTable)
    WeightDtype weightDtype = WeightDtype::BF16; ///< resolved

    std::int64_t tp = 1, dcp = 1;
    std::int64_t qHeadsPerRank = 0;
    std::int64_t kvHeadsPerRank = 0; ///< max(1, h_kv // TP); 1 for MLA
    bool kvReplicated = false;       ///< h_kv < TP (or MLA at TP > 1): copies, not shards
    std::int64_t kvCopies = 1;       ///< how many ranks hold each KV head
    double groupSize = 0;            ///< g = h / h_kv
    double groupSizePerRank = 0;     ///< q heads per rank / kv heads per rank

    std::int64_t cellBytesPerToken = 0;        ///< whole model, all layers (§2)
    std::int64_t cellBytesPerTokenPerRank = 0; ///< §3
    /// Per token in one layer on one rank; the largest per-token layer where layers differ.
    std::int64_t cellBytesPerTokenPerLayerPerRank = 0;
    std::int64_t perTokenLayers = 0; ///< layers that store per-token KV
    /// Fixed bytes one request holds on one rank whatever its length (mamba / linear states,
    /// cross-attention encoder tokens).
    std::int64_t fixedStateBytesPerRequestPerRank = 0;
    std::int64_t context = 0, batch = 0;
    std::int64_t contextPerRank = 0;      ///< ceil(S / dcp)
    std::int64_t requestBytesPerRank = 0; ///< one request at S (window layers capped, + state)
    std::int64_t requestBytes = 0;        ///< one request, whole model, all ranks' shards
    /// One layer group's share of requestBytesPerRank (same order as ModelSpec::layerGroups):
    /// bytes that grow with the context, bytes capped at the group's window (sliding, chunked,
    /// a compressed group's uncompressed window), fixed state (mamba, linear, encoder tokens).
    struct GroupRequestBytes {
        std::int64_t growing = 0, capped = 0, fixed = 0;
    };
    std::vector<GroupRequestBytes> groupRequestBytesPerRank;

    PoolBreakdown pool;
    bool fits = true;                ///< false: the pool is empty or smaller than one request
    std::string noFitReason;         ///< one line, when !fits
    std::int64_t tokensCapacity = 0; ///< floor(pool / per-rank cell) × dcp
    std::int64_t maxConcurrency = 0; ///< floor(pool / request bytes per rank)
    double concurrency = 0;          ///< unrounded

    // vLLM's paging (vllm/v1/core/kv_cache_utils.py; hybrid models: its hybrid allocator)
    std::int64_t pageBytes = 0;  ///< (head_size + head_size_v) · b · kv heads per rank · block;
                                 ///< several specs of one type: summed over layers
    std::int64_t blockSize = 16; ///< attention block in tokens (raised for mamba hybrids)
    std::int64_t blocksPerRank = 0; ///< floor(pool / (page · L)); hybrid: pool // page // group
    std::int64_t vllmKvCacheGroups = 1, vllmGroupSize = 0, vllmPaddingLayers = 0;
    std::int64_t vllmBlocksPerRequest = 0; ///< blocks one max_model_len request takes
    /// Bytes vLLM reserves for one request at S (max_memory_usage_bytes: sliding layers at
    /// min(W - 1 + max_num_batched_tokens, S) + 1 block, chunks at min(C + batched, S),
    /// mamba one page), for admission and the concurrency it logs.
    std::int64_t vllmRequestBytesPerRank = 0;
    std::vector<std::string> pagingNotes;
    std::int64_t vllmTokens = 0;    ///< blocks · block_size · dcp, as vLLM logs it
    double vllmConcurrency = 0;     ///< as vLLM logs it
    std::string vllmLogTokens;      ///< "GPU KV cache size: 1,327,136 tokens"
    std::string vllmLogConcurrency; ///< "Maximum concurrency for 8,192 tokens per request: 162.00x"

    // Roofline (§5)
    double intensityFlopPerByte = 0;
    double ridgeFlopPerByte = 0;
    double attainableFlopPerS = 0;
    double attainableFractionOfPeak = 0;

    // Weights (§6)
    ParamCount params;                          ///< the checkpoint's
    std::int64_t kvProjParamsPerLayer = 0;      ///< of the evaluated variant
    std::int64_t kvProjParamsPerLayerModel = 0; ///< of the checkpoint
    /// The variant's K/V projection bytes minus the checkpoint's, as loaded (quantized values
    /// with their scales): what an h_kv what-if adds to or takes from the weights.
    std::int64_t kvProjWeightBytesDelta = 0;
    std::int64_t weightBytes = 0, weightBytesPerRank = 0;

    // One decode step at batch B and context S, per rank (why g > 8 buys little)
    DecodeStep step;

    std::vector<std::string> warnings; ///< replication, window layers, engine caveats
};

/// Validates then evaluates. The pool uses the checkpoint's weights even for an h_kv what-if
/// (the chapter's comparison: same hardware, same weights, different cache).
Result<Report> evaluate(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d);

/// The pool per rank under the chosen model (used by evaluate; exposed for the UI breakdown).
PoolBreakdown computePool(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d,
                          std::int64_t weightBytesPerRank);

/// Decode-attention intensity per rank (FLOP per byte of KV read), §5.
double decodeIntensity(const ModelSpec& m, const Deployment& d);

/// GQA vs MLA capacity crossover at a fixed pool: min(TP, h_kv) = c_gqa / c_mla (§6).
double capacityCrossover(std::int64_t gqaCellBytesPerToken, std::int64_t mlaCellBytesPerToken);

/// One row of `kvscope-cli sweep`: a deployment that was evaluated, or why it was refused.
struct SweepRow {
    std::int64_t tp = 1;
    std::int64_t kvHeads = 0; ///< 0 = the MLA latent
    std::string variant;
    Result<Report> report = Error{};
};
/// Evaluates every valid h_kv (and the latent for MLA) over TP ∈ {1, 2, 4, 8, 16, …} up to
/// maxTp, keeping the rest of `base`.
std::vector<SweepRow> sweep(const ModelSpec& m, const GpuSpec& gpu, const Deployment& base,
                            std::int64_t maxTp = 64);

} // namespace kvscope
