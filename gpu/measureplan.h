// Which decode shapes a measurement runs for a model: the seam where core (the model, its
// variants and the engines' TP rules) meets gpu (the kernels' shapes). Used by
// `kvscope-cli measure` and the GUI's Measure action. Its own target, kvscope_measureplan, so
// that kvscope_gpu itself stays free of core.
#pragma once

#include "core/model/dtype.h"
#include "core/model/model.h"
#include "gpu/backend.h"
#include "gpu/step.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvscope {

/// The kernels' KV dtype for core's KV dtype (what the window's deployment and `--kv-cache-dtype`
/// say): Auto is the model's served 16-bit dtype (float16 checkpoints fp16, everything else
/// bf16, as core/law/law.cpp resolves it), then the name maps through gpu::parseDtype (bf16,
/// fp16, fp32, fp8 = e4m3). nullopt for the layouts no kernel reads (fp8_e5m2, nvfp4, the
/// per-token-head scaled types, fp8_ds_mla).
std::optional<gpu::KvDtype> kernelKvDtype(const ModelSpec& m, KvDtype shown);

struct PlannedShape {
    gpu::DecodeShape shape;
    std::string variant; ///< "GQA-8", "MLA"
    std::string skip;    ///< non-empty: not run, and why
};

/// One decode step of `m` at tensor-parallel size `tp`, per rank: the GQA-family variant with
/// `kvHeads` KV heads (an MLA model's GQA what-ifs use its value head dim, which the kernels
/// take), or, with kvHeads = 0, MLA's absorbed latent. A TP the engines would refuse for that
/// head count comes back with `skip` set.
PlannedShape planShape(const ModelSpec& m, std::int64_t kvHeads, std::int64_t tp,
                       std::int64_t context, std::int64_t batch, gpu::KvDtype dtype);

/// The shape a model runs as shipped: its own KV heads, or its latent for MLA.
PlannedShape naturalShape(const ModelSpec& m, std::int64_t tp, std::int64_t context,
                          std::int64_t batch, gpu::KvDtype dtype);

/// One shape per valid KV-head count of `m` (MHA … MQA), plus MLA for a latent model.
std::vector<PlannedShape> variantShapes(const ModelSpec& m, std::int64_t tp, std::int64_t context,
                                        std::int64_t batch, gpu::KvDtype dtype);

/// A scaled decode step of `m` per rank: `layers` layers of its real shapes (heads and MLP
/// width / TP) with the model's own KV heads. Refused (skip set) for MLA (the step stack runs
/// the GQA family) and MoE models (it runs dense MLPs), and for a TP the engines refuse.
struct PlannedStep {
    gpu::StepShape shape;
    std::string skip;
};
PlannedStep planStep(const ModelSpec& m, std::int64_t tp, std::int64_t context, std::int64_t batch,
                     gpu::KvDtype dtype, std::int64_t layers = 2);

} // namespace kvscope
