// kvscope-cli models / gpus: the bundled presets.
#include "args.h"
#include "command.h"
#include "core/presets.h"

#include <iostream>

namespace {

int list(const kvscope::cli::Args& args, const std::vector<kvscope::PresetInfo>& presets) {
    if (!args.empty())
        return kvscope::cli::fail(args.front() + ": unexpected argument");
    std::size_t idWidth = 4, titleWidth = 5;
    for (const auto& p : presets) {
        idWidth = std::max(idWidth, p.id.size());
        titleWidth = std::max(titleWidth, p.title.size());
    }
    for (const auto& p : presets)
        std::cout << p.id << std::string(idWidth + 2 - p.id.size(), ' ') << p.title
                  << std::string(titleWidth + 2 - p.title.size(), ' ') << p.summary << '\n';
    return 0;
}

int runModels(const kvscope::cli::Args& args) {
    return list(args, kvscope::modelPresets());
}
int runGpus(const kvscope::cli::Args& args) {
    return list(args, kvscope::gpuPresets());
}

} // namespace

KVSCOPE_CLI_COMMAND({"models", "models", "List the bundled model presets", &runModels});
KVSCOPE_CLI_COMMAND({"gpus", "gpus", "List the bundled GPU presets (datasheet figures)", &runGpus});
