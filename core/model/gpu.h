// GPU datasheet figures (presets or a user's JSON file).
#pragma once

#include "core/model/dtype.h"
#include "core/result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvscope {

struct GpuSpec {
    std::string id;                     ///< "h100-sxm"
    std::string name;                   ///< "NVIDIA H100 SXM 80GB"
    std::int64_t memoryBytes = 0;       ///< datasheet capacity, decimal (80 GB = 80e9)
    std::int64_t driverMemoryBytes = 0; ///< total the CUDA driver reports; 0 = unknown
    std::string driverMemorySource;
    double bandwidthBytesPerS = 0; ///< datasheet HBM/GDDR bandwidth
    double peakBf16FlopPerS = 0;   ///< dense tensor bf16
    double peakFp8FlopPerS = 0;    ///< dense tensor fp8; 0 = no fp8 tensor cores
    double peakFp32FlopPerS = 0;   ///< non-tensor fp32
    std::int64_t gpusPerNode = 8;
    /// GPU-to-GPU bandwidth per GPU, both directions together, as datasheets quote it
    /// (NVLink 4: 900 GB/s = 450 GB/s each way); 0 = unknown. Tensor-parallel all-reduces
    /// send and receive at once, so they run at half of it each way.
    double interconnectBytesPerS = 0;
    std::string interconnect;       ///< "NVLink 4", "PCIe Gen5 x16", ...
    std::string interconnectSource; ///< where the figure comes from
    std::optional<double> l2MiB;    ///< L2 cache, MiB as the datasheet prints it; unset: unknown
    std::string l2Source;           ///< the datasheet the L2 figure comes from

    /// Memory the vLLM pool model starts from: driver total when known, else datasheet.
    std::int64_t reportedMemoryBytes() const {
        return driverMemoryBytes > 0 ? driverMemoryBytes : memoryBytes;
    }
    double ridgeBf16() const { return peakBf16FlopPerS / bandwidthBytesPerS; }
};

/// Parses a GPU JSON object: {"id","name","memory_gb","driver_memory_gib"?,"bandwidth_tb_s",
/// "bf16_tflops","fp8_tflops"?,"fp32_tflops","gpus_per_node"?,"interconnect_gb_s"? (per GPU,
/// bidirectional),"interconnect"?,"interconnect_source"?,"l2_mib"?,"l2_source"?}. Never throws.
Result<GpuSpec> parseGpuJson(std::string_view jsonText, const std::string& fallbackId);
Result<GpuSpec> loadGpuFile(const std::string& path);

/// Checks a GPU spec's figures are positive and sane (used for custom GPUs in the GUI too).
Status validateGpu(const GpuSpec& gpu);

} // namespace kvscope
