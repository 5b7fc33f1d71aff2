// The `kvscope-cli size` flags, shared by `size`, `sweep` and `compare --a/--b`.
#pragma once

#include "core/gpu.h"
#include "core/law.h"
#include "core/model.h"
#include "core/result.h"

#include <set>
#include <string>
#include <vector>

namespace kvscope::cli {

struct SizeInputs {
    ModelSpec model;
    GpuSpec gpu;
    Deployment deployment;
    bool json = false;
    bool csv = false;
};

/// Value flags of `size`: --model --tp --dcp --h-kv --kv-dtype --weight-dtype --context --batch
/// --gpu --gpu-mem-util --pool-model --pool-gib --max-num-batched-tokens --block-size.
const std::set<std::string>& sizeValueFlags();

/// Parses the size flags (plus `extraSwitches`, e.g. --json, --csv) into model, GPU and
/// deployment. Errors name the flag or the config field.
Result<SizeInputs> parseSizeFlags(const std::vector<std::string>& args,
                                  const std::set<std::string>& extraSwitches = {"--json"});

/// Splits a flag string ("--model llama-3-8b --tp 2") into words; quotes group words.
std::vector<std::string> splitWords(const std::string& text);

} // namespace kvscope::cli
