// The KV pool per rank as each engine sizes it. vllm.cpp holds vLLM's rules release by
// release, sglang.cpp SGLang's; core/law/law.cpp's computePool dispatches here.
#pragma once

#include "core/engines/engine.h"
#include "core/law/law.h"

#include <cstdint>

namespace kvscope {

/// A release kvscope has rules for, as a pool-model choice.
struct EngineRelease {
    EngineSpec spec;
    std::string label; ///< "vLLM 0.19 (0.17–0.20)": short, for a menu
    std::string rules; ///< what sets the release apart, for a tooltip
};
/// One release per set of rules, newest vLLM first (the default), then SGLang: vLLM 0.21 (CUDA
/// graphs subtracted, util 0.92), 0.19 (the 0.17–0.20 rules, the logged H100 runs), 0.11
/// (0.11–0.16), 0.10.1 (up to 0.10, the logged A100 runs); SGLang 0.4.3.
std::vector<EngineRelease> modeledEngineReleases();

/// vLLM's determine_available_memory for the deployment's release (see docs/engines.md).
PoolBreakdown vllmPool(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d,
                       std::int64_t weightBytesPerRank);

/// SGLang's profile_max_num_token: mem_fraction_static × free memory − weights.
PoolBreakdown sglangPool(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d,
                         std::int64_t weightBytesPerRank);

/// vLLM's default max_num_seqs for the API server: 1024 on a GPU of 70 GiB or more that is not
/// an A100, else 256 (vllm/engine/arg_utils.py, _set_default_args).
std::int64_t vllmDefaultMaxNumSeqs(const GpuSpec& gpu);

/// vLLM's default max_num_batched_tokens for the API server: 8192 where max_num_seqs defaults to
/// 1024, else 2048 (same rule; the 0.10.1.1 A100 logs show 2048, the 0.19 H100 logs 8192).
std::int64_t vllmDefaultMaxNumBatchedTokens(const GpuSpec& gpu);

/// The layers each pipeline stage holds: L // pp each, the L % pp extra layers on the stages
/// just before the last (vllm/distributed/utils.py, get_pp_indices).
std::vector<std::int64_t> pipelineStageLayers(std::int64_t layers, std::int64_t pp);

/// SGLang's default mem_fraction_static (python/sglang/srt/server_args.py, __post_init__):
/// 0.4.3 picks it by TP size alone — 0.88 (TP 1), 0.87 (TP 2–3), 0.85 (TP 4–7), 0.81 (TP 8–15),
/// 0.79 (TP 16+).
double sglangDefaultMemFractionStatic(const EngineSpec& e, std::int64_t tp);

/// What SGLang's "mem usage" at weight load holds beyond the tensor bytes: the CUDA caching
/// allocator's rounding of each weight tensor to its segment (core/engines/torch_alloc.h), per
/// rank. 0 for quantized checkpoints (their packed layout is not listed per tensor).
std::int64_t sglangWeightSlackBytes(const ModelSpec& m, const Deployment& d);

/// ReqToTokenPool's size SGLang 0.4 picks without --max-running-requests: max_num_reqs + 1.
std::int64_t sglangReqSlots(std::int64_t tokens, std::int64_t contextLen);

/// Device memory SGLang's memory pool takes once sized (logged as "Load weight end" avail −
/// "Memory pool end" avail) for a pool of `tokens` (max_total_num_tokens): the per-layer K and V
/// buffers of tokens + 1 rows and the req_to_token table, each rounded by the caching allocator.
std::int64_t sglangPoolReservedBytes(const Report& r, std::int64_t tokens, std::int64_t contextLen,
                                     std::int64_t reqSlots);

/// The number the engine prints for the pool: vLLM's "GPU KV cache size: N tokens", SGLang's
/// "KV Cache is allocated. #tokens: N" (= max_total_num_tokens).
std::int64_t engineTokens(const Report& r);

} // namespace kvscope
