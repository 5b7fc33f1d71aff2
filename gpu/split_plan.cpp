#include "gpu/split_plan.h"

#include <algorithm>

namespace kvscope::gpu {

namespace {

constexpr std::int64_t kStageTokens = 64;
constexpr int kMaxSplits = 128;
/// More splits must score 1% better: within that the model cannot tell them apart, and fewer
/// splits write fewer partial rows (at g 32 on an H200, 256 blocks measured 57 us, 384 60 us,
/// scored 0.879 and 0.880).
constexpr double kMinGain = 0.01;

/// Blocks = streams x splits against the SMs, from the H200 measurements in gpu/NOTES.md:
/// - up to one wave (every block resident at once), the busiest SM sets the time: the score is
///   the mean blocks per SM over the most any SM holds (128 blocks on 132 SMs: 0.97; 192:
///   0.73, measured 71% of the read ceiling against 79% at 128 or 256; 64 blocks: 0.48,
///   measured 46%);
/// - past one wave, the last blocks run while most slots idle: 1 - 0.25 x slots / blocks
///   (512 blocks on 396 slots measured 74-77% against 94% at many waves; 1024 86-89%;
///   2048 91-94%).
double balance(std::int64_t blocks, SplitDevice d) {
    const double sms = std::max(1, d.multiprocessors);
    const double slots = sms * std::max(1, d.blocksPerSm);
    if (double(blocks) <= slots) {
        const double perSm = double(blocks) / sms;
        return perSm / std::max(1.0, double(std::int64_t(perSm + 0.999999)));
    }
    return 1.0 - 0.25 * slots / double(blocks);
}

/// A block's fixed work (loading its queries, merging its warps' rows, writing a partial row
/// per query row) in tokens of its stream: 8 + 4 per query row up to 16 rows (past 16 rows a
/// token's own work grows as fast as the fixed work). Fitted to the fall of the score with the
/// split count at 1, 2, 4, 8 and 16 rows per KV head on Llama-3-70B and DeepSeek-V3 shapes.
double fixedTokens(int rows) {
    return 8.0 + 4.0 * std::min(rows, 16);
}

/// Blocks that spend 24 FLOP or more per KV byte are shaped by the tensor cores, not the
/// memory: they need two blocks per SM to hide the mma and shared-memory latencies (measured
/// on bf16 g 32, 64 and 128 and on MLA with 16 heads per block, 30 FLOP/byte: 256 blocks beat
/// 128 by 10-40%).
double concurrency(std::int64_t blocks, double flopPerByte, SplitDevice d) {
    if (flopPerByte < 24)
        return 1.0;
    const double perSm = double(blocks) / std::max(1, d.multiprocessors);
    return std::min(1.0, perSm / std::min(2, std::max(1, d.blocksPerSm)));
}

} // namespace

SplitPlan planForSplits(std::int64_t context, std::int64_t splits) {
    const std::int64_t most =
        std::max<std::int64_t>(1, (context + kStageTokens - 1) / kStageTokens);
    splits = std::clamp<std::int64_t>(splits, 1, most);
    std::int64_t perSplit = (context + splits - 1) / splits;
    perSplit = (perSplit + kStageTokens - 1) / kStageTokens * kStageTokens;
    return {int((context + perSplit - 1) / perSplit), int(perSplit)};
}

double splitScore(std::int64_t streams, std::int64_t context, SplitWork work, int splits,
                  SplitDevice device) {
    const SplitPlan p = planForSplits(context, splits);
    const std::int64_t blocks = std::max<std::int64_t>(1, streams) * p.splits;
    const double tokens = double(p.tokensPerSplit);
    return balance(blocks, device) * concurrency(blocks, work.flopPerByte, device) *
           (tokens / (tokens + fixedTokens(work.rows)));
}

SplitPlan chooseSplits(std::int64_t streams, std::int64_t context, SplitWork work,
                       SplitDevice device) {
    const std::int64_t most = std::min<std::int64_t>(
        kMaxSplits, std::max<std::int64_t>(1, (context + kStageTokens - 1) / kStageTokens));
    SplitPlan best = planForSplits(context, 1);
    double bestScore = splitScore(streams, context, work, 1, device);
    for (std::int64_t s = 2; s <= most; ++s) {
        const SplitPlan p = planForSplits(context, s);
        if (p.splits != s) // the same plan as a smaller count (whole stages)
            continue;
        const double score = splitScore(streams, context, work, int(s), device);
        if (score > bestScore * (1 + kMinGain)) {
            best = p;
            bestScore = score;
        }
    }
    return best;
}

} // namespace kvscope::gpu
