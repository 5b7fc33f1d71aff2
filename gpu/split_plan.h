// How the CUDA decode kernels split each KV stream's context across blocks (split-KV), as a
// CUDA-free rule so it is tested on every machine. The rule scores every split count with a
// small model of how an H200 ran the kernels at forced split counts (gpu/NOTES.md, "CUDA split
// rule"), and takes the best.
#pragma once

#include <cstdint>

namespace kvscope::gpu {

struct SplitPlan {
    int splits = 1;         ///< blocks per KV stream
    int tokensPerSplit = 0; ///< whole 64-token stages, the last split may hold fewer
};

/// What the rule knows of the GPU and the kernel: SMs, and how many blocks of this kernel one
/// SM holds at once (cudaOccupancyMaxActiveBlocksPerMultiprocessor).
struct SplitDevice {
    int multiprocessors = 0;
    int blocksPerSm = 1;
};

/// What one block does: the query rows it serves (g, or the MLA head tile of 16) and the FLOPs
/// it spends per byte of KV it reads (2g / bytes per element for the GQA family).
struct SplitWork {
    int rows = 1;
    double flopPerByte = 1;
};

/// The model's score of `splits` for `streams` KV streams (B·h_kv, or B·ceil(h/16) for MLA)
/// of `context` tokens, in (0, 1]: how evenly the blocks spread over the SMs, times how many
/// blocks share an SM where the tensor cores set the pace, times the share of a block's time
/// spent on its tokens rather than its fixed per-split work. Exposed for tests.
double splitScore(std::int64_t streams, std::int64_t context, SplitWork work, int splits,
                  SplitDevice device);

/// The best-scoring split count from 1 to min(128, context / 64); a larger count must score
/// 1% better than the best smaller one.
SplitPlan chooseSplits(std::int64_t streams, std::int64_t context, SplitWork work,
                       SplitDevice device);

/// The plan for exactly `splits` (clamped to [1, context / 64]), in whole 64-token stages.
SplitPlan planForSplits(std::int64_t context, std::int64_t splits);

} // namespace kvscope::gpu
