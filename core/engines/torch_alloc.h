// PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp), as far as it decides how
// much device memory a sequence of long-lived tensors reserves. An engine that measures memory
// as a drop in free device memory (SGLang's get_available_gpu_memory: torch.cuda.empty_cache(),
// then torch.cuda.mem_get_info) sees the reserved segments, not the tensor bytes.
#pragma once

#include "core/model/model.h"

#include <cstdint>
#include <map>
#include <vector>

namespace kvscope {

/// The allocator's default rules (no expandable segments, no max_split_size, no power-of-two
/// rounding), from CUDACachingAllocator.cpp:
///  - every request is rounded up to 512 B (kMinBlockSize, round_size);
///  - requests up to 1 MiB (kSmallSize) come from the small pool, carved out of 2 MiB segments
///    (kSmallBuffer); a block is split when at least 512 B would remain;
///  - larger requests come from the large pool: a request under 10 MiB (kMinLargeAlloc) opens a
///    20 MiB segment (kLargeBuffer), a larger one a segment of its size rounded up to 2 MiB
///    (kRoundLarge); a large block is split when more than 1 MiB would remain, and the remainder
///    serves later large requests;
///  - a request takes the smallest free block that fits (get_free_block, best fit).
/// Tensors are never freed here: what is reserved is the sum of the segments opened.
class CachingAllocatorModel {
public:
    static constexpr std::int64_t kMinBlockSize = 512;
    static constexpr std::int64_t kSmallSize = 1 << 20;
    static constexpr std::int64_t kSmallBuffer = 2 << 20;
    static constexpr std::int64_t kLargeBuffer = 20 << 20;
    static constexpr std::int64_t kMinLargeAlloc = 10 << 20;
    static constexpr std::int64_t kRoundLarge = 2 << 20;

    /// Allocates `bytes` (count times) and keeps it.
    void allocate(std::int64_t bytes, std::int64_t count = 1);
    /// Device memory the allocator holds: the sum of its segments.
    std::int64_t reservedBytes() const { return reserved_; }
    /// What the tensors asked for (before any rounding).
    std::int64_t requestedBytes() const { return requested_; }

    /// get_allocation_size: the segment a request of `bytes` (already rounded) opens.
    static std::int64_t segmentSize(std::int64_t bytes);

private:
    std::multimap<std::int64_t, int> smallFree_, largeFree_; ///< free block sizes
    std::int64_t reserved_ = 0, requested_ = 0;
};

/// The weights of `m` at TP `tp` as the engine's model code allocates them, one request per
/// parameter per rank, in construction order: the embedding, lm_head, the rotary cos/sin cache,
/// then per layer its projections — q/k/v fused into one qkv_proj (QKVParallelLinear) and
/// gate/up into one gate_up_proj (MergedColumnParallelLinear), routed experts stacked into one
/// w13 and one w2 tensor (FusedMoE) — its norms and biases, and the final norm.
/// `elementBytes` is the bytes per parameter (2 for bf16/fp16). Quantized layouts (packed values
/// + scales) are not listed per tensor: pass only unquantized checkpoints. The vision tower is
/// not listed per tensor either and is left out.
std::vector<std::int64_t> weightAllocationsPerRank(const ModelSpec& m, std::int64_t tp,
                                                   std::int64_t elementBytes,
                                                   std::int64_t ropeCacheBytes);

} // namespace kvscope
