// SGLang's KV pool (python/sglang/srt/model_executor/model_runner.py, profile_max_num_token):
//   rest = avail after weights − free before weights × (1 − mem_fraction_static)
//   max_total_num_tokens = rest / cell   (page size 1: no block rounding)
// "free before weights" is what the device had free when the weights began loading ("Load
// weight begin. avail mem=…"); SGLang's "GB" there is 2^30 bytes. (1 − mem_fraction_static)
// of it is left for activations and CUDA graphs, so neither is subtracted from the pool.
#include "core/engines/engines.h"
#include "core/engines/torch_alloc.h"
#include "core/format.h"
#include "core/model/params.h"
#include "core/model/weights.h"

#include <algorithm>
#include <cmath>

namespace kvscope {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string gibText(std::int64_t b) {
    return fixed(static_cast<double>(b) / kGiB, 2) + " GiB";
}

} // namespace

std::int64_t sglangWeightSlackBytes(const ModelSpec& m, const Deployment& d) {
    // model_runner.py load_model logs "mem usage" = free before − free after loading, each read
    // by get_available_gpu_memory (torch.cuda.empty_cache(), then torch.cuda.mem_get_info): the
    // caching allocator's segments, not the tensor bytes. Checked on the QwQ-32B TP 4 log
    // (15.54 GiB logged, 15.29 GiB of parameters + rotary cache, 0.22 GiB of rounding).
    const LoadedWeights w = loadedWeights(m, d.weightDtype, d.tp);
    if (w.quantizedParams > 0)
        return 0; // packed values + scales: the per-tensor layout is not listed
    CachingAllocatorModel alloc;
    for (std::int64_t bytes :
         weightAllocationsPerRank(m, d.tp, w.unquantizedElementBytes, w.ropeCacheBytesPerRank))
        alloc.allocate(bytes);
    return alloc.reservedBytes() - alloc.requestedBytes();
}

std::int64_t sglangReqSlots(std::int64_t tokens, std::int64_t contextLen) {
    // model_runner.py init_memory_pool (0.4.x): max_num_reqs = min(max(int(max_total_num_tokens
    // / context_len * 512), 2048), 4096); ReqToTokenPool(size=max_num_reqs + 1, ...). The
    // QwQ-32B log's max_running_requests=2049 is that size.
    const std::int64_t reqs = std::min<std::int64_t>(
        std::max<std::int64_t>(static_cast<std::int64_t>(static_cast<double>(tokens) /
                                                         static_cast<double>(contextLen) * 512),
                               2048),
        4096);
    return reqs + 1;
}

std::int64_t sglangPoolReservedBytes(const Report& r, std::int64_t tokens, std::int64_t contextLen,
                                     std::int64_t reqSlots) {
    // memory_pool.py MHATokenToKVPool._create_buffers: one k and one v buffer per layer of
    // (size + 1) × head_num × head_dim (slot 0 takes padded tokens' writes); MLATokenToKVPool
    // one latent buffer per layer. ReqToTokenPool: req_to_token int32 [size, context_len + 4].
    // Each is one caching-allocator request.
    CachingAllocatorModel alloc;
    const std::int64_t rows = tokens + 1;
    const std::int64_t layers = r.perTokenLayers > 0 ? r.perTokenLayers : r.layers;
    const std::int64_t b = r.kvBytesPerElement;
    if (r.attention == AttentionKind::MLA) {
        alloc.allocate(rows * (r.kvLoraRank + r.qkRopeHeadDim) * b, layers);
    } else {
        alloc.allocate(rows * r.kvHeadsPerRank * r.keyDim * b, layers);
        alloc.allocate(rows * r.kvHeadsPerRank * r.valueDim * b, layers);
    }
    alloc.allocate(reqSlots * (contextLen + 4) * 4);
    return alloc.reservedBytes();
}

double sglangDefaultMemFractionStatic(const EngineSpec& /*e*/, std::int64_t tp) {
    // server_args.py (0.4.3), __post_init__: the larger the TP group, the more memory NCCL and
    // the CUDA graphs of the bigger batch need beside the pool.
    if (tp >= 16)
        return 0.79;
    if (tp >= 8)
        return 0.81;
    if (tp >= 4)
        return 0.85;
    if (tp >= 2)
        return 0.87;
    return 0.88;
}

PoolBreakdown sglangPool(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d,
                         std::int64_t weightBytesPerRank) {
    PoolBreakdown p;
    p.model = PoolModel::Vllm; // an engine model, not the chapter's datasheet one
    p.engine = d.engine;
    p.capacityBytes = gpu.reportedMemoryBytes();
    p.capacitySource =
        gpu.driverMemoryBytes > 0 ? gpu.driverMemorySource : "datasheet (driver figure unknown)";
    p.memFractionStatic =
        d.memFractionStatic.value_or(sglangDefaultMemFractionStatic(d.engine, d.tp));
    p.memFractionSource = d.memFractionStatic
                              ? "--mem-fraction-static"
                              : "server_args.py default for TP " + std::to_string(d.tp);
    p.util = p.memFractionStatic;
    // Before the weights load the process already holds its CUDA context (0.51 GiB in every
    // TP 1 init snapshot of the vLLM 0.19 logs: total 79.19 GiB, free 78.68 GiB).
    p.cudaContextBytes = std::llround(0.51 * kGiB);
    p.freeBeforeWeightsBytes = p.capacityBytes - p.cudaContextBytes;
    p.budgetBytes =
        std::llround(p.memFractionStatic * static_cast<double>(p.freeBeforeWeightsBytes));
    p.weightBytes = weightBytesPerRank;
    const std::int64_t slack = sglangWeightSlackBytes(m, d);
    p.poolBytes = p.budgetBytes - p.weightBytes - slack;
    p.stagePoolBytes = p.poolBytes;
    p.stageLayers = 0;
    p.terms.push_back(
        PoolTerm{"budget", "mem_fraction_static × free memory before weights", p.budgetBytes, false,
                 fixed(p.memFractionStatic, 2) + " × " + gibText(p.freeBeforeWeightsBytes),
                 p.memFractionSource + "; free = driver total − CUDA context"});
    p.terms.push_back(
        PoolTerm{"weights", "weights / TP", p.weightBytes, true, gibText(p.weightBytes),
                 "parameter count × bytes per parameter / TP (core/model/params.cpp)"});
    p.terms.push_back(PoolTerm{
        "allocator", "allocator rounding", slack, true, gibText(slack) + " over the tensor bytes",
        "SGLang measures weights as a drop in free memory (get_available_gpu_memory: "
        "mem_get_info); c10/cuda/CUDACachingAllocator.cpp rounds each tensor to its segment"});
    p.terms.push_back(PoolTerm{"pool", "KV pool (K size + V size)", p.poolBytes, false,
                               "budget − weights − allocator rounding",
                               "model_runner.py profile_max_num_token"});
    // The per-rank cudaContextBytes is consumed before the budget; nonTorchBytes() would count
    // it again, so keep the pool identity budget − weights explicit.
    p.cudaContextBytes = 0;
    return p;
}

std::int64_t engineTokens(const Report& r) {
    if (r.pool.engine.name == EngineName::Sglang)
        return r.tokensCapacity; // pool / cell, page size 1
    return r.vllmTokens;         // blocks × block_size (× DCP)
}

} // namespace kvscope
