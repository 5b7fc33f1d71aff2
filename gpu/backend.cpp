// Shape arithmetic, counting (docs/formulas.md §8) and the backend factory.
#include "gpu/backend.h"

#include "gpu/engine.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace kvscope::gpu {

std::string_view dtypeName(KvDtype dtype) {
    switch (dtype) {
    case KvDtype::Bf16:
        return "bf16";
    case KvDtype::Fp16:
        return "fp16";
    case KvDtype::Fp8E4m3:
        return "fp8_e4m3";
    case KvDtype::Fp32:
        return "fp32";
    }
    return "unknown";
}

std::optional<KvDtype> parseDtype(std::string_view name) {
    if (name == "bf16" || name == "bfloat16")
        return KvDtype::Bf16;
    if (name == "fp16" || name == "float16" || name == "half")
        return KvDtype::Fp16;
    if (name == "fp8_e4m3" || name == "fp8" || name == "fp8e4m3" || name == "e4m3")
        return KvDtype::Fp8E4m3;
    if (name == "fp32" || name == "float32" || name == "float")
        return KvDtype::Fp32;
    return std::nullopt;
}

int activationBytesPerElement(KvDtype dtype) {
    return dtype == KvDtype::Fp32 ? 4 : 2;
}

std::string describe(const DecodeShape& s) {
    std::ostringstream os;
    if (s.kind == Attention::Mla) {
        os << "mla h" << s.qHeads << " r" << s.kvLoraRank << "+" << s.ropeDim;
    } else {
        const std::int64_t g = s.groupSize();
        if (s.kvHeads == s.qHeads)
            os << "mha h" << s.qHeads;
        else if (s.kvHeads == 1)
            os << "mqa h" << s.qHeads;
        else
            os << "gqa-" << g << " h" << s.qHeads;
        os << " d" << s.headDim;
    }
    os << ' ' << dtypeName(s.dtype) << " B" << s.batch << " S" << s.context;
    return os.str();
}

DecodeCounts countDecode(const DecodeShape& s) {
    DecodeCounts c;
    const double B = double(s.batch), h = double(s.qHeads), S = double(s.context);
    const double b = kvBytesPerElement(s.dtype), a = activationBytesPerElement(s.dtype);
    if (s.kind == Attention::Mla) {
        const double r = double(s.kvLoraRank), rope = double(s.ropeDim);
        c.flops = 2.0 * B * h * S * (2.0 * r + rope);
        c.kvBytes = B * S * (r + rope) * b;
        c.qBytes = B * h * (r + rope) * a;
        c.outBytes = B * h * r * a;
    } else {
        const double d = double(s.headDim), hkv = double(s.kvHeads);
        c.flops = 4.0 * B * h * S * d;
        c.kvBytes = B * S * 2.0 * hkv * d * b;
        c.qBytes = B * h * d * a;
        c.outBytes = B * h * d * a;
    }
    c.bytes = c.kvBytes + c.qBytes + c.outBytes;
    c.intensity = c.bytes > 0 ? c.flops / c.bytes : 0;
    return c;
}

std::string validateShape(const DecodeShape& s) {
    if (s.batch < 1)
        return "batch: must be at least 1, got " + std::to_string(s.batch);
    if (s.context < 1)
        return "context: must be at least 1 token, got " + std::to_string(s.context);
    if (s.qHeads < 1)
        return "q_heads: must be at least 1, got " + std::to_string(s.qHeads);
    if (s.kind == Attention::Mla) {
        if (s.kvLoraRank < 16 || s.kvLoraRank % 16 != 0)
            return "kv_lora_rank: must be a positive multiple of 16, got " +
                   std::to_string(s.kvLoraRank);
        if (s.ropeDim < 0 || s.ropeDim % 16 != 0)
            return "rope_dim: must be a non-negative multiple of 16, got " +
                   std::to_string(s.ropeDim);
    } else {
        if (s.kvHeads < 1)
            return "kv_heads: must be at least 1, got " + std::to_string(s.kvHeads);
        if (s.qHeads % s.kvHeads != 0)
            return "kv_heads: " + std::to_string(s.kvHeads) + " does not divide q_heads " +
                   std::to_string(s.qHeads);
        if (s.headDim != 64 && s.headDim != 128 && s.headDim != 256)
            return "head_dim: unsupported " + std::to_string(s.headDim) +
                   " (the decode kernels take 64, 128 or 256)";
    }
    // Element counts must stay far from int64 overflow (every index below is int64).
    const DecodeCounts c = countDecode(s);
    if (!(c.bytes < 1e15) || !(c.flops < 1e18))
        return "shape too large: " + std::to_string(c.bytes / double(1ll << 30)) +
               " GiB per decode step";
    return {};
}

double errorBoundFor(KvDtype dtype) {
    switch (dtype) {
    case KvDtype::Fp32:
        return 1e-4;
    case KvDtype::Fp16:
        return 2e-3;
    default:
        return 1e-2;
    }
}

double Ceilings::peakFor(KvDtype dtype) const {
    auto it = peakFlopPerSecond.find(std::string(dtypeName(dtype)));
    return it == peakFlopPerSecond.end() ? 0.0 : it->second;
}

RoofPlacement placeOnRoof(const Measurement& m, double read, double peak) {
    RoofPlacement r;
    const double memoryRoof = m.intensityFlopPerByte * read;
    r.computeBound = peak > 0 && peak < memoryRoof;
    r.roof = peak > 0 ? std::min(peak, memoryRoof) : memoryRoof;
    r.fractionRead = read > 0 ? m.bytesPerSecond / read : 0;
    r.fractionRoof = r.roof > 0 ? m.flopPerSecond / r.roof : 0;
    r.aboveCeiling =
        r.fractionRoof > 1 + kCeilingTolerance || r.fractionRead > 1 + kCeilingTolerance;
    return r;
}

bool cudaCompiledIn() {
    return KVSCOPE_HAVE_CUDA != 0;
}

std::unique_ptr<Backend> makeBackend(const std::string& name, std::string* error) {
    if (name == "cpu")
        return detail::makeHarnessBackend(detail::makeCpuEngine());
    if (name == "cuda") {
#if KVSCOPE_HAVE_CUDA
        std::string why;
        auto engine = detail::makeCudaEngine(&why);
        if (!engine) {
            if (error)
                *error = "cuda backend unavailable: " + why;
            return nullptr;
        }
        return detail::makeHarnessBackend(std::move(engine));
#else
        if (error)
            *error = "cuda backend unavailable: this build has no CUDA (configure with "
                     "-DKVSCOPE_CUDA=ON where nvcc is installed)";
        return nullptr;
#endif
    }
    if (error)
        *error = "unknown backend '" + name + "' (expected cpu or cuda)";
    return nullptr;
}

} // namespace kvscope::gpu
