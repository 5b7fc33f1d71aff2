#include "core/engines/torch_alloc.h"

#include "core/model/params.h"
#include "core/model/weights.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace kvscope {

namespace {

std::int64_t roundSize(std::int64_t bytes) {
    // round_size: at least 512 B, in steps of 512 B.
    const std::int64_t b = CachingAllocatorModel::kMinBlockSize;
    return std::max<std::int64_t>(b, (bytes + b - 1) / b * b);
}

bool endsWith(const std::string& s, const char* suffix) {
    const std::string t(suffix);
    return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

/// The fused parameter a checkpoint tensor is loaded into, or "" for a parameter of its own:
/// "model.layers.3.self_attn.#qkv" for q_proj, k_proj and v_proj (QKVParallelLinear);
/// "model.layers.3.mlp.#gate_up" for gate_proj and up_proj (MergedColumnParallelLinear; the
/// experts' w13_weight in FusedMoE).
std::string fusedKey(const std::string& module) {
    for (const char* s : {".q_proj", ".k_proj", ".v_proj"})
        if (endsWith(module, s))
            return module.substr(0, module.size() - 6) + ".#qkv";
    for (const char* s : {".gate_proj", ".up_proj"})
        if (endsWith(module, s))
            return module.substr(0, module.rfind('.')) + ".#gate_up";
    return {};
}

/// Bytes of one tensor on one rank, split the way core/model/weights.cpp splits it:
/// column/row-parallel linears, the vocab-parallel embedding and lm_head TP ways; K/V
/// projections min(TP, h_kv) ways; norms, routers, biases and MLA's down-projections whole.
std::int64_t perRankBytes(const ModelSpec& m, const WeightTensor& t, std::int64_t tp,
                          std::int64_t elementBytes) {
    std::int64_t ways = tensorSplitWays(m, t, tp);
    ways = std::max<std::int64_t>(1, ways);
    return (t.params() * elementBytes + ways - 1) / ways;
}

} // namespace

std::int64_t CachingAllocatorModel::segmentSize(std::int64_t bytes) {
    // get_allocation_size
    if (bytes <= kSmallSize)
        return kSmallBuffer;
    if (bytes < kMinLargeAlloc)
        return kLargeBuffer;
    return (bytes + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

void CachingAllocatorModel::allocate(std::int64_t bytes, std::int64_t count) {
    if (bytes <= 0)
        return;
    const std::int64_t size = roundSize(bytes);
    const bool small = size <= kSmallSize;
    auto& pool = small ? smallFree_ : largeFree_;
    for (std::int64_t i = 0; i < count; ++i) {
        requested_ += bytes;
        std::int64_t block = 0;
        auto it = pool.lower_bound(size); // the smallest free block that fits
        if (it != pool.end()) {
            block = it->first;
            pool.erase(it);
        } else {
            block = segmentSize(size);
            reserved_ += block;
        }
        // should_split: small blocks keep a remainder of 512 B or more, large ones over 1 MiB.
        const std::int64_t remaining = block - size;
        if (small ? remaining >= kMinBlockSize : remaining > kSmallSize)
            pool.emplace(remaining, 0);
    }
}

std::vector<std::int64_t> weightAllocationsPerRank(const ModelSpec& m, std::int64_t tp,
                                                   std::int64_t elementBytes,
                                                   std::int64_t ropeCacheBytes) {
    tp = std::max<std::int64_t>(1, tp);
    std::vector<std::int64_t> out;
    std::unordered_map<std::string, std::size_t> fused;
    bool ropePlaced = ropeCacheBytes <= 0;
    for (const WeightTensor& t : *weightInventory(m)) {
        if (!ropePlaced && t.layer >= 0) {
            // The rotary cos/sin buffer is built with the first attention layer, one per rank
            // (get_rope caches the module, so every layer shares it).
            out.push_back(ropeCacheBytes);
            ropePlaced = true;
        }
        // Stacked tensors (the routed experts of a layer) are one parameter.
        const std::int64_t bytes = perRankBytes(m, t, tp, elementBytes);
        const std::string key = fusedKey(t.module);
        if (!key.empty()) {
            auto [it, fresh] = fused.emplace(key, out.size());
            if (!fresh) {
                out[it->second] += bytes;
                continue;
            }
        }
        out.push_back(bytes);
    }
    if (!ropePlaced)
        out.push_back(ropeCacheBytes);
    return out;
}

} // namespace kvscope
