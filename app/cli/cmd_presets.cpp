// kvscope-cli models / gpus: the bundled presets.
#include "command.h"
#include "core/model/presets.h"

#include <iostream>

namespace {

int list(const std::vector<kvscope::PresetInfo>& presets) {
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

kvscope::cli::Runner setupModels(CLI::App&) {
    return [] { return list(kvscope::modelPresets()); };
}
kvscope::cli::Runner setupGpus(CLI::App&) {
    return [] { return list(kvscope::gpuPresets()); };
}

} // namespace

KVSCOPE_CLI_COMMAND({"models", "List the bundled model presets", &setupModels});
KVSCOPE_CLI_COMMAND({"gpus", "List the bundled GPU presets (datasheet figures)", &setupGpus});
