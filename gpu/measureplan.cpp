#include "gpu/measureplan.h"

#include "core/law.h"

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

} // namespace kvscope
