// Bundled model and GPU presets (resources/models/*.json, resources/gpus/*.json, compiled in).
#pragma once

#include "core/model/gpu.h"
#include "core/model/model.h"
#include "core/result.h"

#include <string>
#include <vector>

namespace kvscope {

struct PresetInfo {
    std::string id;      ///< "llama-3-70b"
    std::string title;   ///< "Llama-3-70B" / "NVIDIA H100 SXM 80GB"
    std::string summary; ///< one line: geometry or datasheet figures
};

inline constexpr const char* kDefaultModelId = "llama-3-70b";
inline constexpr const char* kDefaultGpuId = "h100-sxm";

/// The bundled presets, default first. Computed once (the embedded files never change), so
/// callers on a GUI's hot path may ask every frame.
const std::vector<PresetInfo>& modelPresets();
const std::vector<PresetInfo>& gpuPresets();

/// The raw config.json text of a bundled model preset ("" when unknown).
std::string modelPresetJson(const std::string& id);

/// A preset id, else a path to a config.json (or a folder holding one).
Result<ModelSpec> loadModel(const std::string& idOrPath);
/// A preset id, else a path to a GPU JSON file.
Result<GpuSpec> loadGpu(const std::string& idOrPath);

/// Embedded resource files by relative path ("stories/chapter.json"); "" when absent.
std::string embeddedResource(const std::string& relativePath);
std::vector<std::string> embeddedResourcePaths(const std::string& folderPrefix);

} // namespace kvscope
