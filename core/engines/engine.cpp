#include "core/engines/engine.h"

#include "core/engines/engines.h"

#include <cctype>
#include <vector>

namespace kvscope {

std::string toString(EngineName e) {
    return e == EngineName::Vllm ? "vllm" : "sglang";
}

std::string EngineVersion::text() const {
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string EngineSpec::text() const {
    return toString(name) + "@" + version.text();
}

EngineVersion newestModeledVersion(EngineName e) {
    // vLLM: the CUDA-graph and utilisation rules of 0.21 are the newest modelled; SGLang: the
    // 0.4.3 mem_fraction_static heuristic (python/sglang/srt/server_args.py of that release).
    return e == EngineName::Vllm ? EngineVersion{0, 21, 0} : EngineVersion{0, 4, 3};
}

EngineSpec defaultEngine() {
    return EngineSpec{EngineName::Vllm, newestModeledVersion(EngineName::Vllm)};
}

std::vector<EngineRelease> modeledEngineReleases() {
    // The boundaries are those of vllm.cpp's rulesFor and defaultGpuMemUtil; each later release
    // in a range gets that range's rules.
    return {
        {defaultEngine(), "vLLM 0.21 (newest)",
         "vLLM 0.21 on: CUDA graphs estimated and subtracted (PR #30515), default util 0.92 "
         "(PR #38284)"},
        {{EngineName::Vllm, {0, 19, 0}},
         "vLLM 0.19 (0.17–0.20)",
         "vLLM 0.17–0.20: Triton top-k/top-p sampler in the profiling pass, CUDA graphs "
         "estimated but not subtracted, util 0.9"},
        {{EngineName::Vllm, {0, 11, 0}},
         "vLLM 0.11 (0.11–0.16)",
         "vLLM 0.11–0.16: fp32 logits of every batched token in the profiling pass"},
        {{EngineName::Vllm, {0, 10, 1}},
         "vLLM 0.10.1 (to 0.10)",
         "vLLM up to 0.10: FlashInfer sampler, one CUDA-graph mode"},
        {{EngineName::Sglang, newestModeledVersion(EngineName::Sglang)},
         "SGLang 0.4.3",
         "SGLang 0.4.3: mem_fraction_static × free memory − weights (as allocated)"},
    };
}

Result<EngineVersion> parseEngineVersion(std::string_view text) {
    std::size_t i = 0;
    if (i < text.size() && (text[i] == 'v' || text[i] == 'V'))
        ++i;
    std::vector<int> parts;
    while (i < text.size() && parts.size() < 4) {
        if (!std::isdigit(static_cast<unsigned char>(text[i])))
            break;
        long v = 0;
        while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
            v = v * 10 + (text[i] - '0');
            if (v > 100000)
                return makeError("engine",
                                 "version number too large in '" + std::string(text) + "'");
            ++i;
        }
        parts.push_back(static_cast<int>(v));
        if (i < text.size() && text[i] == '.')
            ++i;
        else
            break;
    }
    if (parts.size() < 2)
        return makeError("engine",
                         "version must look like 0.19 or 0.19.0; got '" + std::string(text) + "'");
    return EngineVersion{parts[0], parts[1], parts.size() > 2 ? parts[2] : 0};
}

Result<EngineSpec> parseEngineSpec(std::string_view text) {
    const std::size_t at = text.find('@');
    const std::string_view name = text.substr(0, at);
    EngineSpec e;
    if (name == "vllm")
        e.name = EngineName::Vllm;
    else if (name == "sglang")
        e.name = EngineName::Sglang;
    else
        return makeError("engine", "must be vllm[@VERSION] or sglang[@VERSION]; got '" +
                                       std::string(text) + "'");
    e.version = newestModeledVersion(e.name);
    if (at != std::string_view::npos) {
        auto v = parseEngineVersion(text.substr(at + 1));
        if (!v.ok())
            return v.error();
        e.version = v.value();
    }
    return e;
}

double defaultGpuMemUtil(const EngineSpec& e) {
    // vllm/config/cache.py: gpu_memory_utilization defaults to 0.9; PR #38284 (v0.21) raised it
    // to 0.92 once CUDA graphs were counted inside the budget.
    return e.isVllm() && e.atLeast(0, 21) ? 0.92 : 0.9;
}

} // namespace kvscope
