// Internal to the law (core/law/law.cpp, law_validate.cpp, law_paging.cpp): how a deployment
// reads the model's attention (latent or per-head, the KV heads), what each layer group costs
// under it, and vLLM's paging of the pool from those costs.
#pragma once

#include "core/law/law.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvscope::lawdetail {

inline std::string str(std::int64_t v) {
    return std::to_string(v);
}

/// An MLA model caches its latent unless --h-kv asks for the per-head what-if.
inline bool latentMode(const ModelSpec& m, const Deployment& d) {
    return m.mla && !d.kvHeads;
}

/// The KV heads the deployment caches: 1 for the latent, else --h-kv or the model's own.
inline std::int64_t effectiveKvHeads(const ModelSpec& m, const Deployment& d) {
    if (latentMode(m, d))
        return 1;
    return d.kvHeads.value_or(m.kvHeads.value);
}

/// What one layer group costs under a deployment: bytes per token per layer (the cell part),
/// and fixed bytes per request per layer, on one rank and for the whole model.
struct GroupCost {
    const LayerGroup* group = nullptr;
    LayerKind kind = LayerKind::Full;
    std::int64_t n = 0;                 ///< layers
    std::optional<std::int64_t> window; ///< sliding window / chunk (not compress ratio)
    std::int64_t tokenBytesRank = 0;    ///< per token per layer, one rank
    std::int64_t tokenBytes = 0;        ///< per token per layer, all distinct heads once
    std::int64_t fixedBytesRank = 0;    ///< per request per layer (state, encoder tokens)
    std::int64_t fixedBytes = 0;
    std::int64_t auxWindow = 0; ///< compressed: uncompressed sliding window
    std::int64_t auxTokenBytesRank = 0, auxTokenBytes = 0;
};

struct Paging {
    std::int64_t pageBytes = 0;
    std::int64_t blocks = 0;
    std::int64_t blockSize = 16;
    std::int64_t groups = 0, groupSize = 0, paddingLayers = 0;
    std::int64_t blocksPerRequest = 0;
    std::int64_t requestBytes = 0; ///< vLLM's admission bytes for one max_model_len request
    std::int64_t tokens = 0;
    double concurrency = 0;
    std::vector<std::string> notes;
};

/// vLLM's paging of the pool (per rank), following vllm/v1/core/kv_cache_utils.py:
/// get_kv_cache_groups → uniform spec / UniformTypeKVCacheSpecs (one group; pages summed over
/// layers), or for hybrid models unify_kv_cache_spec_page_size (smaller pages get a larger
/// block size) and _get_kv_cache_groups_uniform_page_size (groups of group_size layers, padding
/// layers); get_kv_cache_config_from_groups (num_blocks = pool // page // group_size);
/// _report_kv_cache_config (tokens = num_blocks // groups · min block size · DCP);
/// get_max_concurrency_for_kv_cache_config (num_blocks / Σ over groups of the blocks one
/// request at max_model_len needs, from each spec's max_memory_usage_bytes).
Paging vllmPaging(const std::vector<GroupCost>& costs, const Deployment& d, std::int64_t pool,
                  std::int64_t ctxRank, bool mla);

} // namespace kvscope::lawdetail
