// One whole decode step per rank on the roofline: the bytes it must read (weights, KV,
// activations), the FLOPs it must do (GEMMs and attention) and the tensor-parallel traffic it
// must exchange, and the time none of them can beat. This is the chapter's argument for
// stopping at g = 4–8: once KV is a small share of the step's bytes, the weights set the pace.
#pragma once

#include "core/model/gpu.h"
#include "core/model/model.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvscope {

struct Deployment;
struct Report;

/// What limits the step's lower bound.
enum class StepBound { Memory, Compute, Communication };
/// "memory", "compute", "communication".
std::string toString(StepBound b);

/// One decode step of B requests at context S (every request emits one token), per rank.
struct DecodeStep {
    std::int64_t batch = 0, context = 0;

    // Bytes that must cross the memory bus once per step, per rank.
    std::int64_t weightBytes = 0; ///< weights read once (MoE: only the experts the batch touches)
    std::int64_t kvBytes = 0;     ///< B × one request's KV per rank (window layers capped)
    std::int64_t activationBytes = 0; ///< GEMM inputs/outputs, attention Q/O, residual stream
    std::int64_t bytes() const { return weightBytes + kvBytes + activationBytes; }
    double kvFraction = 0; ///< KV / all bytes of the step

    // Mixture of experts: expected distinct routed experts per MoE layer at this batch.
    std::int64_t moeLayers = 0;
    double expertsTouchedPerMoeLayer = 0; ///< E · (1 − (1 − k/E)^B); 0 for dense models

    // FLOPs per rank.
    double activeParams = 0;   ///< per token, whole model: the parameters a token's GEMMs use
    double gemmFlops = 0;      ///< 2 · active params · B / TP
    double attentionFlops = 0; ///< QK and PV (GQA family) or the absorbed MLA kernel
    double flops() const { return gemmFlops + attentionFlops; }

    // Tensor-parallel communication per rank: two ring all-reduces per layer.
    std::int64_t commBytes = 0; ///< bytes each rank sends: 2 · L · B · d · b_act · 2(TP−1)/TP
    bool commCounted = true;    ///< false: TP > 1 but the GPU's interconnect bandwidth is unknown

    // Times (seconds) and the lower bound.
    double memoryTimeS = 0;     ///< bytes / HBM bandwidth
    double computeTimeS = 0;    ///< GEMMs at the weight dtype's peak + attention at the KV's
    double commTimeS = 0;       ///< comm bytes / per-direction interconnect bandwidth
    double timeLowerBoundS = 0; ///< max(memory, compute) + communication = time per output token
    StepBound bound = StepBound::Memory;
    double tokensPerS = 0;       ///< B / time, the whole deployment (TP ranks)
    double tokensPerSPerGpu = 0; ///< tokensPerS / TP
};

/// E · (1 − (1 − k/E)^B): the expected number of distinct experts B tokens touch when each
/// token picks k of E experts uniformly at random (linearity of expectation over experts).
double expectedDistinctExperts(std::int64_t experts, std::int64_t perToken, std::int64_t batch);

/// The step for an evaluated report (uses its resolved dtypes, heads per rank, request bytes
/// and the checkpoint's parameter count). Called by evaluate().
DecodeStep computeDecodeStep(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d,
                             const Report& r);

/// The smallest batch whose step has KV at least `fraction` of its bytes (KV's share grows with
/// B), or nullopt when even kMaxBatch stays below it or the deployment is refused.
std::optional<std::int64_t> batchAtKvFraction(const ModelSpec& m, const GpuSpec& gpu,
                                              const Deployment& d, double fraction);

/// One row of the decode-step table (`kvscope-cli sweep --batch`).
struct StepSweepRow {
    std::int64_t kvHeads = 0; ///< 0 = the MLA latent
    std::string variant;
    std::int64_t batch = 1;
    std::optional<DecodeStep> step; ///< unset: refused
    std::string error;              ///< why it was refused
};
/// Every valid h_kv (and the latent for an MLA model) × every batch, at `base`'s TP and context.
std::vector<StepSweepRow> stepSweep(const ModelSpec& m, const GpuSpec& gpu, const Deployment& base,
                                    const std::vector<std::int64_t>& batches);
/// The table as text (units in the headers) or CSV (raw numbers, one header line).
std::string stepTable(const ModelSpec& m, const GpuSpec& gpu, const Deployment& base,
                      const std::vector<StepSweepRow>& rows, bool csv);

} // namespace kvscope
