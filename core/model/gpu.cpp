#include "core/model/gpu.h"

#include "core/jsonutil.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

namespace kvscope {

using nlohmann::json;

namespace {

/// A positive finite number field, or an error naming it. `required` false: 0 when absent.
Result<double> number(const json& j, const char* key, bool required, double max) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
        if (required)
            return makeError(key, "missing");
        return 0.0;
    }
    if (!it->is_number())
        return makeError(key, "must be a number");
    const double v = it->get<double>();
    if (!std::isfinite(v) || v <= 0)
        return makeError(key, "must be a positive number");
    if (v > max)
        return makeError(key, "must be at most " + std::to_string(static_cast<long long>(max)));
    return v;
}

} // namespace

Result<GpuSpec> parseGpuJson(std::string_view jsonText, const std::string& fallbackId) {
    auto parsed = parseJsonBounded(jsonText, "gpu", 1024 * 1024, 16);
    if (!parsed.ok())
        return parsed.error();
    const json& j = parsed.value();
    if (!j.is_object())
        return makeError("gpu", "must be a JSON object");
    GpuSpec g;
    auto str = [&](const char* key, const std::string& def) {
        auto it = j.find(key);
        return (it != j.end() && it->is_string()) ? it->get<std::string>() : def;
    };
    g.id = str("id", fallbackId);
    g.name = str("name", g.id);
#define KV_NUM(var, key, req, max)                                                                 \
    auto var = number(j, key, req, max);                                                           \
    if (!var.ok())                                                                                 \
        return var.error();
    KV_NUM(mem, "memory_gb", true, 1e6)
    KV_NUM(drv, "driver_memory_gib", false, 1e6)
    KV_NUM(bw, "bandwidth_tb_s", true, 1e4)
    KV_NUM(bf16, "bf16_tflops", true, 1e7)
    KV_NUM(fp8, "fp8_tflops", false, 1e7)
    KV_NUM(fp32, "fp32_tflops", true, 1e7)
    KV_NUM(node, "gpus_per_node", false, 1024)
    KV_NUM(link, "interconnect_gb_s", false, 1e6)
    KV_NUM(l2, "l2_mib", false, 1e4)
#undef KV_NUM
    g.memoryBytes = std::llround(mem.value() * 1e9);
    g.driverMemoryBytes = std::llround(drv.value() * 1073741824.0);
    g.driverMemorySource =
        str("driver_memory_source",
            g.driverMemoryBytes > 0 ? "driver_memory_gib" : "unknown: datasheet capacity used");
    g.bandwidthBytesPerS = bw.value() * 1e12;
    g.peakBf16FlopPerS = bf16.value() * 1e12;
    g.peakFp8FlopPerS = fp8.value() * 1e12;
    g.peakFp32FlopPerS = fp32.value() * 1e12;
    g.interconnectBytesPerS = link.value() * 1e9;
    g.interconnect = str("interconnect", "");
    g.interconnectSource =
        str("interconnect_source", link.value() > 0 ? "interconnect_gb_s" : "unknown");
    if (l2.value() > 0) {
        g.l2MiB = l2.value();
        g.l2Source = str("l2_source", "l2_mib");
    }
    if (node.value() > 0) {
        if (node.value() != std::floor(node.value()))
            return makeError("gpus_per_node", "must be a positive integer");
        g.gpusPerNode = static_cast<std::int64_t>(node.value());
    }
    if (auto s = validateGpu(g); !s.ok())
        return s.error();
    return g;
}

Status validateGpu(const GpuSpec& g) {
    if (g.memoryBytes <= 0)
        return makeError("memory_gb", "must be a positive number");
    if (g.driverMemoryBytes < 0)
        return makeError("driver_memory_gib", "must be positive");
    if (g.driverMemoryBytes > 0 && g.driverMemoryBytes > g.memoryBytes * 11 / 10)
        return makeError("driver_memory_gib",
                         "cannot exceed the datasheet capacity (memory_gb) by more than 10%");
    if (!(g.bandwidthBytesPerS > 0) || !std::isfinite(g.bandwidthBytesPerS))
        return makeError("bandwidth_tb_s", "must be a positive number");
    if (!(g.peakBf16FlopPerS > 0) || !std::isfinite(g.peakBf16FlopPerS))
        return makeError("bf16_tflops", "must be a positive number");
    if (!(g.peakFp32FlopPerS > 0) || !std::isfinite(g.peakFp32FlopPerS))
        return makeError("fp32_tflops", "must be a positive number");
    if (g.peakFp8FlopPerS < 0 || !std::isfinite(g.peakFp8FlopPerS))
        return makeError("fp8_tflops", "must be a positive number");
    if (g.interconnectBytesPerS < 0 || !std::isfinite(g.interconnectBytesPerS))
        return makeError("interconnect_gb_s", "must be a positive number");
    if (g.gpusPerNode < 1)
        return makeError("gpus_per_node", "must be a positive integer");
    return Ok{};
}

Result<GpuSpec> loadGpuFile(const std::string& path) {
    namespace fs = std::filesystem;
    auto text = readFileBounded(path, "gpu", 1024 * 1024);
    if (!text.ok())
        return text.error();
    return parseGpuJson(text.value(), fs::path(path).stem().string());
}

} // namespace kvscope
