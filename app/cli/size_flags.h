// The deployment options shared by `size`, `sweep` and `compare --a/--b`: every schema field
// (core/features/schema.h), resolved into a model, a GPU and a validated deployment.
#pragma once

#include "core/features/schema.h"
#include "core/features/session.h"
#include "core/law/law.h"
#include "core/model/gpu.h"
#include "core/model/model.h"
#include "core/result.h"

#include <CLI/CLI.hpp>
#include <string>

namespace kvscope::cli {

struct SizeInputs {
    Session session; ///< the state as named (what --save-session writes)
    ModelSpec model;
    GpuSpec gpu;
    Deployment deployment;
};

/// Adds every schema field to `app`; the values given land in `texts`.
void addSizeOptions(CLI::App& app, FieldTexts& texts);

/// The session the values describe (defaults: kDefaultModelId on kDefaultGpuId), its model
/// and GPU loaded and the deployment validated. Errors name the flag or the config field.
Result<SizeInputs> resolveSizeInputs(const FieldTexts& texts);

/// Parses and resolves a quoted flag string ("--model llama-3-8b --tp 2").
Result<SizeInputs> parseSizeLine(const std::string& line);

} // namespace kvscope::cli
