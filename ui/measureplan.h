// Which decode shapes the GUI's Measure action runs for a model: one per attention variant
// (MHA … MQA, and MLA for a latent model) at the window's TP, the way `kvscope-cli measure
// --sweep variants` plans them. Qt-free: core (the model) and gpu (the shapes) meet here.
#pragma once

#include "core/model.h"
#include "gpu/backend.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvscope::ui {

struct PlannedShape {
    gpu::DecodeShape shape;
    std::string variant; ///< "GQA-8", "MLA"
    std::string skip;    ///< non-empty: not run, and why
};

/// One shape per valid KV-head count of `m` (per rank at `tp`), plus MLA for a latent model.
/// `context` tokens and `batch` requests per shape; shapes TP cannot split carry `skip`.
std::vector<PlannedShape> variantShapes(const kvscope::ModelSpec& m, std::int64_t tp,
                                        std::int64_t context, std::int64_t batch,
                                        gpu::KvDtype dtype);

} // namespace kvscope::ui
