#include "core/model/presets.h"

#include "core/embedded.h"
#include "core/format.h"
#include "core/jsonutil.h"
#include "core/model/weights.h"

#include <algorithm>

namespace kvscope {

namespace {

const embedded::File* findFile(const std::string& rel) {
    for (const auto& f : embedded::files())
        if (f.path == rel)
            return &f;
    return nullptr;
}

std::string idOf(std::string_view path) {
    auto slash = path.rfind('/');
    auto stem = path.substr(slash == std::string_view::npos ? 0 : slash + 1);
    if (stem.size() > 5 && stem.substr(stem.size() - 5) == ".json")
        stem.remove_suffix(5);
    return std::string(stem);
}

bool looksLikePath(const std::string& s) {
    return s.find('/') != std::string::npos || s.find('\\') != std::string::npos ||
           (s.size() > 5 && s.substr(s.size() - 5) == ".json");
}

std::vector<PresetInfo> scanModelPresets() {
    std::vector<PresetInfo> out;
    for (const auto& f : embedded::files()) {
        if (f.path.rfind("models/", 0) != 0)
            continue;
        PresetInfo info;
        info.id = idOf(f.path);
        auto parsed = parseJsonBounded(f.content, info.id);
        info.title = info.id;
        if (parsed.ok() && parsed.value().contains("_kvscope_title") &&
            parsed.value()["_kvscope_title"].is_string())
            info.title = parsed.value()["_kvscope_title"].get<std::string>();
        auto m = parseModelConfig(f.content, info.id);
        if (m.ok()) {
            const ModelSpec& s = m.value();
            info.summary = toString(s.attention()) + ", L " + std::to_string(s.layers.value) +
                           ", h " + std::to_string(s.qHeads.value) + ", h_kv " +
                           std::to_string(s.kvHeads.value) + ", d_h " +
                           std::to_string(s.headDim.value);
        }
        out.push_back(std::move(info));
    }
    // The chapter's model first, then alphabetical.
    std::stable_sort(out.begin(), out.end(), [](const PresetInfo& a, const PresetInfo& b) {
        const bool ad = a.id == kDefaultModelId, bd = b.id == kDefaultModelId;
        if (ad != bd)
            return ad;
        return a.id < b.id;
    });
    return out;
}

std::vector<PresetInfo> scanGpuPresets() {
    std::vector<PresetInfo> out;
    for (const auto& f : embedded::files()) {
        if (f.path.rfind("gpus/", 0) != 0)
            continue;
        auto g = parseGpuJson(f.content, idOf(f.path));
        if (!g.ok())
            continue;
        const GpuSpec& s = g.value();
        out.push_back({s.id, s.name,
                       fixed(static_cast<double>(s.memoryBytes) / 1e9, 0) + " GB, " +
                           humanBandwidth(s.bandwidthBytesPerS) + ", " +
                           humanFlops(s.peakBf16FlopPerS) + " bf16"});
    }
    std::stable_sort(out.begin(), out.end(), [](const PresetInfo& a, const PresetInfo& b) {
        const bool ad = a.id == kDefaultGpuId, bd = b.id == kDefaultGpuId;
        if (ad != bd)
            return ad;
        return a.id < b.id;
    });
    return out;
}

} // namespace

const std::vector<PresetInfo>& modelPresets() {
    static const std::vector<PresetInfo> presets = scanModelPresets();
    return presets;
}

const std::vector<PresetInfo>& gpuPresets() {
    static const std::vector<PresetInfo> presets = scanGpuPresets();
    return presets;
}

std::string modelPresetJson(const std::string& id) {
    const auto* f = findFile("models/" + id + ".json");
    return f ? std::string(f->content) : std::string();
}

Result<ModelSpec> loadModel(const std::string& idOrPath) {
    if (idOrPath.empty())
        return makeError("model", "empty; give a preset id (kvscope-cli models) or a path");
    if (const auto* f = findFile("models/" + idOrPath + ".json"); f && !looksLikePath(idOrPath))
        return parseModelConfig(f->content, idOrPath);
    auto m = loadModelSnapshot(idOrPath);
    if (!m.ok() && !looksLikePath(idOrPath) && m.error().field == "model")
        return makeError("model", "no preset or file named '" + idOrPath +
                                      "' (kvscope-cli models lists the presets)");
    return m;
}

Result<GpuSpec> loadGpu(const std::string& idOrPath) {
    if (idOrPath.empty())
        return makeError("gpu", "empty; give a preset id (kvscope-cli gpus) or a path");
    if (const auto* f = findFile("gpus/" + idOrPath + ".json"); f && !looksLikePath(idOrPath))
        return parseGpuJson(f->content, idOrPath);
    if (!looksLikePath(idOrPath))
        return makeError("gpu", "no preset or file named '" + idOrPath +
                                    "' (kvscope-cli gpus lists the presets)");
    return loadGpuFile(idOrPath);
}

std::string embeddedResource(const std::string& relativePath) {
    const auto* f = findFile(relativePath);
    return f ? std::string(f->content) : std::string();
}

std::vector<std::string> embeddedResourcePaths(const std::string& folderPrefix) {
    std::vector<std::string> out;
    for (const auto& f : embedded::files())
        if (f.path.rfind(folderPrefix, 0) == 0)
            out.emplace_back(f.path);
    return out;
}

} // namespace kvscope
