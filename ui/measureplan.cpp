#include "ui/measureplan.h"

#include "core/law.h"

#include <algorithm>

namespace kvscope::ui {

namespace {
bool tpSplits(std::int64_t h, std::int64_t hkv, std::int64_t tp) {
    if (tp < 1 || h % tp != 0)
        return false;
    return hkv >= tp ? hkv % tp == 0 : tp % hkv == 0;
}

/// The kernels take head dims 64, 128 and 256; an MLA model's GQA variants use its value dim.
std::int64_t gqaHeadDim(const kvscope::ModelSpec& m) {
    auto ok = [](std::int64_t d) { return d == 64 || d == 128 || d == 256; };
    if (m.mla && ok(m.vHeadDim.value))
        return m.vHeadDim.value;
    return m.headDim.value;
}
} // namespace

std::vector<PlannedShape> variantShapes(const kvscope::ModelSpec& m, std::int64_t tp,
                                        std::int64_t context, std::int64_t batch,
                                        gpu::KvDtype dtype) {
    std::vector<PlannedShape> out;
    const std::int64_t h = m.qHeads.value;
    if (tp < 1 || h % tp != 0)
        tp = 1;
    const std::int64_t hRank = h / tp;
    for (std::int64_t hkv : kvscope::validKvHeadCounts(m)) {
        PlannedShape p;
        p.variant = kvscope::variantLabel(m, hkv);
        p.shape.kind = gpu::Attention::Gqa;
        p.shape.batch = batch;
        p.shape.qHeads = hRank;
        p.shape.kvHeads = std::max<std::int64_t>(1, hkv / tp);
        p.shape.headDim = gqaHeadDim(m);
        p.shape.context = context;
        p.shape.dtype = dtype;
        if (!tpSplits(h, hkv, tp))
            p.skip =
                "TP=" + std::to_string(tp) + " cannot split " + std::to_string(hkv) + " KV heads";
        out.push_back(p);
    }
    if (m.mla) {
        PlannedShape p;
        p.variant = "MLA";
        p.shape.kind = gpu::Attention::Mla;
        p.shape.batch = batch;
        p.shape.qHeads = hRank;
        p.shape.kvHeads = 1;
        p.shape.kvLoraRank = m.kvLoraRank.value;
        p.shape.ropeDim = m.qkRopeHeadDim.value;
        p.shape.context = context;
        p.shape.dtype = dtype;
        out.push_back(p);
    }
    return out;
}

} // namespace kvscope::ui
