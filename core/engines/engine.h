// Which serving engine, and which release of it, a deployment is sized for. The KV pool an
// engine leaves depends on both: vLLM changed its default utilisation, its profiling pass and
// its CUDA-graph accounting across releases (docs/engines.md lists each rule and its source).
#pragma once

#include "core/result.h"

#include <compare>
#include <string>
#include <string_view>

namespace kvscope {

enum class EngineName { Vllm, Sglang };
std::string toString(EngineName e);

/// A release number: "0.19.0", "0.10.1.1" (a fourth part is kept for display only),
/// "0.4.3.post4" (suffixes after the numbers are dropped).
struct EngineVersion {
    int major = 0, minor = 0, patch = 0;
    auto operator<=>(const EngineVersion&) const = default;
    std::string text() const;
};

struct EngineSpec {
    EngineName name = EngineName::Vllm;
    EngineVersion version;
    /// "vllm@0.19.0"
    std::string text() const;
    bool isVllm() const { return name == EngineName::Vllm; }
    /// version >= major.minor.patch
    bool atLeast(int major, int minor, int patch = 0) const {
        return version >= EngineVersion{major, minor, patch};
    }
    bool operator==(const EngineSpec&) const = default;
};

/// The newest release whose rules kvscope models (later releases get these rules).
EngineVersion newestModeledVersion(EngineName e);
/// vLLM at its newest modelled release: what a deployment is sized for when nothing is said.
EngineSpec defaultEngine();

/// "vllm", "vllm@0.19", "vllm@v0.10.1.1", "sglang@0.4.3.post4". A missing version means the
/// newest modelled one. Error (field "engine") for anything else.
Result<EngineSpec> parseEngineSpec(std::string_view text);
/// "0.19.0", "v0.10.1.1", "0.4.3.post4" → the numbers; error when no major.minor is there.
Result<EngineVersion> parseEngineVersion(std::string_view text);

/// vLLM's default --gpu-memory-utilization for a release: 0.9 up to 0.20, 0.92 from 0.21
/// (vllm/config/cache.py, PR #38284). SGLang has no such flag: see defaultMemFractionStatic.
double defaultGpuMemUtil(const EngineSpec& e);

} // namespace kvscope
