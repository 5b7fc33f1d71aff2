// The one state every view of the kvscope window follows: which model, on which GPU, deployed
// how. Plain values only; the seam the story, compare and session features build on.
#pragma once

#include "core/law/law.h"
#include "core/model/gpu.h"
#include "core/model/model.h"

#include <string>

namespace kvscope::ui {

struct AppState {
    std::string modelRef; ///< preset id ("llama-3-70b") or a config.json path
    kvscope::ModelSpec model;
    kvscope::GpuSpec gpu;
    kvscope::Deployment deployment;
};

} // namespace kvscope::ui
