#include "core/session.h"

#include "core/jsonutil.h"
#include "core/presets.h"

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

const std::vector<std::string>& stateKeys() {
    static const std::vector<std::string> keys = {"model",
                                                  "gpu",
                                                  "tp",
                                                  "dcp",
                                                  "h_kv",
                                                  "kv_dtype",
                                                  "weight_dtype",
                                                  "context",
                                                  "batch",
                                                  "util",
                                                  "pool_model",
                                                  "pool_gib",
                                                  "max_num_batched_tokens",
                                                  "block_size"};
    return keys;
}

/// A positive JSON integer within [1, max], or an error naming the field.
Result<std::int64_t> positiveInt(const json& v, const std::string& field, std::int64_t max) {
    if (!v.is_number_integer() || v.get<std::int64_t>() < 1)
        return makeError(field, "must be a positive integer");
    const auto n = v.get<std::int64_t>();
    if (n > max)
        return makeError(field, "must be at most " + std::to_string(max));
    return n;
}

Result<std::string> nonEmptyString(const json& v, const std::string& field) {
    if (!v.is_string() || v.get<std::string>().empty())
        return makeError(field, "must be a non-empty string");
    return v.get<std::string>();
}

/// Replaces a parse helper's own field name (e.g. "kv-dtype") with the JSON path.
Error renamed(const Error& e, const std::string& field) {
    return makeError(field, e.rule);
}

} // namespace

json gpuToJson(const GpuSpec& g) {
    json j = json::object();
    j["id"] = g.id;
    j["name"] = g.name;
    j["memory_gb"] = static_cast<double>(g.memoryBytes) / 1e9;
    if (g.driverMemoryBytes > 0) {
        j["driver_memory_gib"] = static_cast<double>(g.driverMemoryBytes) / 1073741824.0;
        j["driver_memory_source"] = g.driverMemorySource;
    }
    j["bandwidth_tb_s"] = g.bandwidthBytesPerS / 1e12;
    j["bf16_tflops"] = g.peakBf16FlopPerS / 1e12;
    if (g.peakFp8FlopPerS > 0)
        j["fp8_tflops"] = g.peakFp8FlopPerS / 1e12;
    j["fp32_tflops"] = g.peakFp32FlopPerS / 1e12;
    j["gpus_per_node"] = g.gpusPerNode;
    if (g.interconnectBytesPerS > 0) {
        j["interconnect_gb_s"] = g.interconnectBytesPerS / 1e9;
        j["interconnect"] = g.interconnect;
        j["interconnect_source"] = g.interconnectSource;
    }
    return j;
}

Result<Session> sessionFromJsonObject(const json& o, const std::string& prefix,
                                      const std::vector<std::string>& extra,
                                      bool* latentRequested) {
    if (latentRequested)
        *latentRequested = false;
    if (!o.is_object())
        return makeError(prefix.empty() ? "state" : prefix.substr(0, prefix.size() - 1),
                         "must be a JSON object");
    const auto& keys = stateKeys();
    for (const auto& [key, value] : o.items()) {
        (void)value;
        if (std::find(keys.begin(), keys.end(), key) == keys.end() &&
            std::find(extra.begin(), extra.end(), key) == extra.end())
            return makeError(prefix + key, "unknown field (known: model, gpu, tp, dcp, h_kv, "
                                           "kv_dtype, weight_dtype, context, batch, util, "
                                           "pool_model, pool_gib, max_num_batched_tokens, "
                                           "block_size)");
    }

    Session s;
    Deployment& d = s.deployment;
    auto has = [&](const char* key) { return o.contains(key); };
    auto field = [&](const char* key) { return prefix + key; };

    if (has("model")) {
        auto v = nonEmptyString(o["model"], field("model"));
        if (!v.ok())
            return v.error();
        s.model = v.value();
    }
    if (has("gpu")) {
        const json& g = o["gpu"];
        if (g.is_object()) {
            auto spec = parseGpuJson(g.dump(), "custom");
            if (!spec.ok())
                return makeError(field("gpu") + "." + spec.error().field, spec.error().rule);
            s.customGpu = spec.value();
            s.gpu = spec->id;
        } else {
            auto v = nonEmptyString(g, field("gpu"));
            if (!v.ok())
                return makeError(field("gpu"), "must be a preset id, a path or an object of "
                                               "GPU figures");
            s.gpu = v.value();
        }
    }
    struct IntField {
        const char* key;
        std::int64_t* target;
        std::int64_t max;
    };
    const IntField ints[] = {{"tp", &d.tp, kMaxTp},
                             {"dcp", &d.dcp, kMaxTp},
                             {"context", &d.context, kMaxContext},
                             {"batch", &d.batch, kMaxBatch},
                             {"max_num_batched_tokens", &d.maxNumBatchedTokens, kMaxContext},
                             {"block_size", &d.blockSize, 4096}};
    for (const auto& f : ints) {
        if (!has(f.key))
            continue;
        auto v = positiveInt(o[f.key], field(f.key), f.max);
        if (!v.ok())
            return v.error();
        *f.target = v.value();
    }
    if (has("h_kv")) {
        const json& h = o["h_kv"];
        if (h.is_string() && h.get<std::string>() == "latent") {
            if (latentRequested)
                *latentRequested = true;
        } else if (h.is_string() && h.get<std::string>() == "auto") {
            // the model's own
        } else {
            auto v = positiveInt(h, field("h_kv"), kMaxHeads);
            if (!v.ok())
                return makeError(field("h_kv"),
                                 "must be a positive integer, \"latent\" or \"auto\"");
            d.kvHeads = v.value();
        }
    }
    if (has("kv_dtype")) {
        if (!o["kv_dtype"].is_string())
            return makeError(field("kv_dtype"), "must be a string (auto, bf16, fp16, fp8, fp32, "
                                                "fp8_ds_mla)");
        auto v = parseKvDtype(o["kv_dtype"].get<std::string>());
        if (!v.ok())
            return renamed(v.error(), field("kv_dtype"));
        d.kvDtype = v.value();
    }
    if (has("weight_dtype")) {
        if (!o["weight_dtype"].is_string())
            return makeError(field("weight_dtype"), "must be a string (auto, bf16, fp8)");
        auto v = parseWeightDtype(o["weight_dtype"].get<std::string>());
        if (!v.ok())
            return renamed(v.error(), field("weight_dtype"));
        d.weightDtype = v.value();
    }
    if (has("pool_model")) {
        if (!o["pool_model"].is_string())
            return makeError(field("pool_model"), "must be \"vllm\" or \"datasheet\"");
        auto v = parsePoolModel(o["pool_model"].get<std::string>());
        if (!v.ok())
            return renamed(v.error(), field("pool_model"));
        d.poolModel = v.value();
    }
    if (has("util")) {
        const json& u = o["util"];
        if (!u.is_number() || !(u.get<double>() > 0) || u.get<double>() > 1)
            return makeError(field("util"), "must be a number in (0, 1]");
        d.gpuMemUtil = u.get<double>();
    }
    if (has("pool_gib") && !o["pool_gib"].is_null()) {
        const json& p = o["pool_gib"];
        if (!p.is_number() || !(p.get<double>() > 0) || !std::isfinite(p.get<double>()) ||
            p.get<double>() > 1e6)
            return makeError(field("pool_gib"), "must be a positive number of GiB (at most 1e6) "
                                                "or null");
        d.poolGiB = p.get<double>();
    }
    return s;
}

std::string sessionToJson(const Session& s) {
    const Deployment& d = s.deployment;
    json j = json::object();
    j["kvscope_session"] = kSessionVersion;
    j["model"] = s.model;
    if (s.customGpu)
        j["gpu"] = gpuToJson(*s.customGpu);
    else
        j["gpu"] = s.gpu;
    j["tp"] = d.tp;
    j["dcp"] = d.dcp;
    if (d.kvHeads)
        j["h_kv"] = *d.kvHeads;
    j["kv_dtype"] = toString(d.kvDtype);
    j["weight_dtype"] = toString(d.weightDtype);
    j["context"] = d.context;
    j["batch"] = d.batch;
    j["util"] = d.gpuMemUtil;
    j["pool_model"] = toString(d.poolModel);
    if (d.poolGiB)
        j["pool_gib"] = *d.poolGiB;
    j["max_num_batched_tokens"] = d.maxNumBatchedTokens;
    j["block_size"] = d.blockSize;
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
