#include "gpu/measureplan.h"

#include "core/law/law.h"
#include "core/model/dtype.h"

#include <algorithm>

namespace kvscope {

namespace {

/// The kernels take head dims 64, 128 and 256; an MLA model's q/k width (192) is not one of
/// them, so its GQA what-ifs run at its value head dim.
std::int64_t gqaHeadDim(const ModelSpec& m) {
    auto ok = [](std::int64_t d) { return d == 64 || d == 128 || d == 256; };
    if (m.mla && ok(m.vHeadDim.value))
        return m.vHeadDim.value;
    return m.headDim.value;
}

} // namespace

std::optional<gpu::KvDtype> kernelKvDtype(const ModelSpec& m, KvDtype shown) {
    if (shown == KvDtype::Auto)
        shown = m.torchDtype.value == "float16" || m.torchDtype.value == "half" ? KvDtype::FP16
                                                                                : KvDtype::BF16;
    return gpu::parseDtype(toString(shown));
}

PlannedShape planShape(const ModelSpec& m, std::int64_t kvHeads, std::int64_t tp,
                       std::int64_t context, std::int64_t batch, gpu::KvDtype dtype) {
    PlannedShape p;
    const std::int64_t h = m.qHeads.value;
    const bool latent = m.mla && kvHeads <= 0;
    const std::int64_t hkv = latent ? 1 : (kvHeads > 0 ? kvHeads : m.kvHeads.value);
    const auto tps = validTpSizes(m, latent ? 0 : hkv, std::max<std::int64_t>(tp, 1));
    if (tp < 1 || std::find(tps.begin(), tps.end(), tp) == tps.end())
        p.skip = "TP=" + std::to_string(tp) + " is invalid with " + std::to_string(h) +
                 " query heads and " + std::to_string(hkv) + " KV heads";
    const std::int64_t t = p.skip.empty() ? tp : 1;
    p.variant = latent ? "MLA" : variantLabel(m, hkv);
    p.shape.kind = latent ? gpu::Attention::Mla : gpu::Attention::Gqa;
    p.shape.batch = batch;
    p.shape.qHeads = h / t;
    p.shape.kvHeads = latent ? 1 : std::max<std::int64_t>(1, hkv / t);
    if (latent) {
        p.shape.kvLoraRank = m.kvLoraRank.value;
        p.shape.ropeDim = m.qkRopeHeadDim.value;
    } else {
        p.shape.headDim = gqaHeadDim(m);
    }
    p.shape.context = context;
    p.shape.dtype = dtype;
    return p;
}

PlannedShape naturalShape(const ModelSpec& m, std::int64_t tp, std::int64_t context,
                          std::int64_t batch, gpu::KvDtype dtype) {
    return planShape(m, m.mla ? 0 : m.kvHeads.value, tp, context, batch, dtype);
}

std::vector<PlannedShape> variantShapes(const ModelSpec& m, std::int64_t tp, std::int64_t context,
                                        std::int64_t batch, gpu::KvDtype dtype) {
    std::vector<PlannedShape> out;
    for (std::int64_t hkv : validKvHeadCounts(m))
        out.push_back(planShape(m, hkv, tp, context, batch, dtype));
    if (m.mla)
        out.push_back(planShape(m, 0, tp, context, batch, dtype));
    return out;
}

PlannedStep planStep(const ModelSpec& m, std::int64_t tp, std::int64_t context, std::int64_t batch,
                     gpu::KvDtype dtype, std::int64_t layers) {
    PlannedStep p;
    const PlannedShape attn = naturalShape(m, tp, context, batch, dtype);
    p.skip = attn.skip;
    if (m.mla)
        p.skip = "MLA: the step stack runs the GQA family only";
    else if (m.routedExperts.value > 0)
        p.skip = "mixture of experts: the step stack runs dense MLPs only";
    const std::int64_t t = p.skip.empty() ? tp : 1;
    gpu::StepShape& s = p.shape;
    s.modelLayers = std::max<std::int64_t>(m.layers.value, 1);
    s.layers = std::clamp<std::int64_t>(layers, 1, s.modelLayers);
    s.hidden = m.hidden.value;
    s.qHeads = attn.shape.qHeads;
    s.kvHeads = attn.shape.kvHeads;
    s.headDim = attn.shape.headDim;
    // Column/row-parallel MLP: each rank holds intermediate / TP (vLLM MergedColumnParallelLinear).
    s.intermediate = std::max<std::int64_t>(1, m.intermediate.value / t);
    s.gated = m.gatedMlp.value;
    s.batch = batch;
    s.context = context;
    s.kvDtype = dtype;
    return p;
}

} // namespace kvscope
