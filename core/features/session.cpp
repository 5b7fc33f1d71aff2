#include "core/features/session.h"

#include "core/features/schema.h"
#include "core/jsonutil.h"
#include "core/model/presets.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace kvscope {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxSessionBytes = 1024 * 1024;

/// The schema row a JSON state key names (its key or a deprecated one); custom-GPU figures
/// live inside the "gpu" object, not at the top level.
const Field* fieldForKey(const std::string& key, bool* old) {
    for (const auto& f : schemaFields()) {
        if (f.group == FieldGroup::CustomGpu)
            continue;
        if (f.key == key) {
            *old = false;
            return &f;
        }
        for (const auto& o : f.oldKeys)
            if (o == key) {
                *old = true;
                return &f;
            }
    }
    return nullptr;
}

std::string knownKeys() {
    std::string out;
    for (const auto& f : schemaFields())
        if (f.group != FieldGroup::CustomGpu)
            out += (out.empty() ? "" : ", ") + f.key;
    return out;
}

} // namespace

json gpuToJson(const GpuSpec& g) {
    Session holder;
    holder.customGpu = g;
    json j = json::object();
    j["id"] = g.id;
    for (const auto& f : schemaFields())
        if (f.group == FieldGroup::CustomGpu)
            if (auto v = f.toJson(holder))
                j[f.key] = *v;
    if (g.driverMemoryBytes > 0)
        j["driver_memory_source"] = g.driverMemorySource;
    if (g.interconnectBytesPerS > 0)
        j["interconnect_source"] = g.interconnectSource;
    return j;
}

Result<Session> sessionFromJsonObject(const json& o, const std::string& prefix,
                                      const std::vector<std::string>& extra,
                                      bool* latentRequested) {
    if (!o.is_object())
        return makeError(prefix.empty() ? "state" : prefix.substr(0, prefix.size() - 1),
                         "must be a JSON object");
    Session s;
    FieldNotes notes;
    for (const auto& [key, value] : o.items()) {
        if (std::find(extra.begin(), extra.end(), key) != extra.end())
            continue;
        bool old = false;
        const Field* f = fieldForKey(key, &old);
        if (!f)
            return makeError(prefix + key, "unknown field (known: " + knownKeys() + ")");
        if (old)
            reportDeprecation(prefix + key + ": deprecated key, read as \"" + f->key +
                              "\" (saving writes the new name)");
        if (f->key == "gpu" && value.is_object()) {
            auto spec = parseGpuJson(value.dump(), "custom");
            if (!spec.ok())
                return makeError(prefix + key + "." + spec.error().field, spec.error().rule);
            s.customGpu = spec.value();
            s.gpu = spec->id;
            continue;
        }
        auto text = f->fromJson(value);
        if (!text)
            return makeError(prefix + key, f->jsonRule);
        if (auto rule = f->check(*text); !rule.empty())
            return makeError(prefix + key, f->kind == FieldKind::Number ? f->jsonRule : rule);
        f->set(s, *text, notes);
    }
    if (latentRequested)
        *latentRequested = notes.latentRequested;
    return s;
}

std::string sessionToJson(const Session& s) {
    json j = json::object();
    j["kvscope_session"] = kSessionVersion;
    for (const auto& f : schemaFields()) {
        if (f.group == FieldGroup::CustomGpu)
            continue;
        if (f.key == "gpu" && s.customGpu)
            j["gpu"] = gpuToJson(*s.customGpu);
        else if (auto v = f.toJson(s))
            j[f.key] = *v;
    }
    return j.dump(2) + "\n";
}

Result<Session> parseSession(std::string_view text) {
    auto parsed = parseJsonBounded(text, "session", kMaxSessionBytes);
    if (!parsed.ok())
        return parsed.error();
    const json& j = parsed.value();
    if (!j.is_object())
        return makeError("session", "must be a JSON object");
    auto version = j.find("kvscope_session");
    if (version == j.end())
        return makeError("kvscope_session", "missing; not a kvscope session file");
    if (!version->is_number_integer() || version->get<std::int64_t>() < 1)
        return makeError("kvscope_session", "must be a positive integer version");
    if (version->get<std::int64_t>() > kSessionVersion)
        return makeError("kvscope_session", "version " +
                                                std::to_string(version->get<std::int64_t>()) +
                                                " is newer than this kvscope reads (" +
                                                std::to_string(kSessionVersion) + ")");
    bool latent = false;
    auto s = sessionFromJsonObject(j, "", {"kvscope_session"}, &latent);
    if (!s.ok())
        return s.error();
    return s;
}

Status saveSessionFile(const Session& s, const std::string& path) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out)
        return makeError("session", "cannot write " + path);
    out << sessionToJson(s);
    out.close();
    if (!out)
        return makeError("session", "cannot write " + path);
    return Ok{};
}

Result<Session> loadSessionFile(const std::string& path) {
    auto text = readFileBounded(path, "session", kMaxSessionBytes);
    if (!text.ok())
        return text.error();
    return parseSession(text.value());
}

Result<Scenario> resolveSession(const Session& s) {
    auto model = loadModel(s.model);
    if (!model.ok())
        return makeError("model", model.error().message());
    Scenario sc{model.value(), GpuSpec{}, s.deployment};
    if (s.customGpu) {
        if (auto ok = validateGpu(*s.customGpu); !ok.ok())
            return makeError("gpu." + ok.error().field, ok.error().rule);
        sc.gpu = *s.customGpu;
    } else {
        auto gpu = loadGpu(s.gpu);
        if (!gpu.ok())
            return makeError("gpu", gpu.error().message());
        sc.gpu = gpu.value();
    }
    if (auto ok = validate(sc.model, sc.gpu, sc.deployment); !ok.ok())
        return ok.error();
    return sc;
}

std::string huggingFaceHubDir() {
    if (const char* c = std::getenv("HF_HUB_CACHE"); c && *c)
        return c;
    if (const char* h = std::getenv("HF_HOME"); h && *h)
        return (fs::path(h) / "hub").string();
    if (const char* home = std::getenv("HOME"); home && *home)
        return (fs::path(home) / ".cache" / "huggingface" / "hub").string();
    return {};
}

std::vector<HfConfig> findHuggingFaceConfigs(const std::string& hubDirArg) {
    const std::string hubDir = hubDirArg.empty() ? huggingFaceHubDir() : hubDirArg;
    std::vector<HfConfig> out;
    std::error_code ec;
    if (hubDir.empty() || !fs::is_directory(hubDir, ec))
        return out;
    for (const auto& repo : fs::directory_iterator(hubDir, ec)) {
        const std::string name = repo.path().filename().string();
        const std::string tag = "models--";
        if (name.rfind(tag, 0) != 0 || !repo.is_directory(ec))
            continue;
        // models--org--name → org/name (a repo without an org has no second "--").
        std::string repoId = name.substr(tag.size());
        if (auto sep = repoId.find("--"); sep != std::string::npos)
            repoId = repoId.substr(0, sep) + "/" + repoId.substr(sep + 2);
        const fs::path snapshots = repo.path() / "snapshots";
        if (!fs::is_directory(snapshots, ec))
            continue;
        fs::path best;
        fs::file_time_type bestTime{};
        for (const auto& snap : fs::directory_iterator(snapshots, ec)) {
            const fs::path config = snap.path() / "config.json";
            if (!fs::is_regular_file(config, ec)) // follows the blob symlink
                continue;
            const auto t = fs::last_write_time(config, ec);
            if (best.empty() || t > bestTime) {
                best = config;
                bestTime = t;
            }
        }
        if (!best.empty())
            out.push_back({repoId, best.string()});
    }
    std::sort(out.begin(), out.end(),
              [](const HfConfig& a, const HfConfig& b) { return a.repoId < b.repoId; });
    return out;
}

} // namespace kvscope
