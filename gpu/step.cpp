// The shape-level parts of the step measurement: names, validation, the counts (as
// core/law/step.cpp counts a decode step, per layer) and the backend factory.
#include "gpu/step.h"

#include <algorithm>
#include <cstdio>

namespace kvscope::gpu {

namespace detail {
std::unique_ptr<StepBackend> makeCpuStepBackend();
#if KVSCOPE_HAVE_CUDA
std::unique_ptr<StepBackend> makeCudaStepBackend(std::string* error);
#endif
} // namespace detail

std::string describe(const StepShape& s) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "L%lld/%lld d%lld h%lld/%lld d_h%lld w%lld%s %s B%lld S%lld",
                  (long long)s.layers, (long long)s.modelLayers, (long long)s.hidden,
                  (long long)s.qHeads, (long long)s.kvHeads, (long long)s.headDim,
                  (long long)s.intermediate, s.gated ? "" : " plain",
                  std::string(dtypeName(s.kvDtype)).c_str(), (long long)s.batch,
                  (long long)s.context);
    return buf;
}

std::string validateStepShape(const StepShape& s) {
    if (s.layers < 1 || s.layers > 64)
        return "layers: must be between 1 and 64, got " + std::to_string(s.layers);
    if (s.modelLayers < s.layers)
        return "modelLayers: must be at least layers (" + std::to_string(s.layers) + ")";
    if (s.hidden < 1)
        return "hidden: must be positive";
    if (s.qHeads < 1 || s.kvHeads < 1 || s.qHeads % s.kvHeads != 0)
        return "kvHeads: must divide qHeads (" + std::to_string(s.qHeads) + "), got " +
               std::to_string(s.kvHeads);
    if (s.headDim < 1)
        return "headDim: must be positive";
    if (s.intermediate < 1)
        return "intermediate: must be positive";
    if (s.batch < 1)
        return "batch: must be positive";
    if (s.context < 1)
        return "context: must be at least 1 (the new token)";
    return {};
}

StepCounts countStep(const StepShape& s) {
    // Per layer, as core/law/step.cpp: weights read once (bf16), the batch's KV read once, and the
    // activation elements of attentionActivationElements() + the residual (8d: vLLM's
    // fused_add_rms_norm reads input and residual and writes both, twice per layer) +
    // mlpActivationElements(), 2 bytes each.
    const double L = double(s.layers), B = double(s.batch), S = double(s.context);
    const double d = double(s.hidden), h = double(s.qHeads), kv = double(s.kvHeads);
    const double dh = double(s.headDim), w = double(s.intermediate);
    const double qkvOut = h * dh + 2 * kv * dh;
    const double attnParams = d * qkvOut + h * dh * d;
    const double mlpParams = (s.gated ? 3.0 : 2.0) * d * w;
    const double normParams = 2 * d;
    StepCounts c;
    c.weightBytes = L * (attnParams + mlpParams + normParams) * 2.0;
    c.kvBytes = L * B * S * 2 * kv * dh * double(kvBytesPerElement(s.kvDtype));
    const double attnAct = (d + qkvOut) + (h * dh + h * dh) + (h * dh + d) + 2 * kv * dh;
    const double mlpAct = s.gated ? 2 * d + 6 * w : 2 * d + 4 * w;
    c.activationBytes = L * B * (attnAct + 8 * d + mlpAct) * 2.0;
    c.bytes = c.weightBytes + c.kvBytes + c.activationBytes;
    c.gemmFlops = 2.0 * L * (attnParams + mlpParams) * B;
    c.attentionFlops = L * B * h * S * 2.0 * (dh + dh);
    c.flops = c.gemmFlops + c.attentionFlops;
    return c;
}

void setStepTimes(StepMeasurement& m, std::vector<double> times) {
    std::sort(times.begin(), times.end());
    m.repeats = int(times.size());
    m.minSeconds = times.front();
    m.maxSeconds = times.back();
    m.medianSeconds = times[times.size() / 2];
    m.bytesPerSecond = m.counts.bytes / m.medianSeconds;
    m.flopPerSecond = m.counts.flops / m.medianSeconds;
}

std::string stepTable(const std::vector<StepMeasurement>& steps) {
    std::string out;
    char buf[320];
    std::snprintf(buf, sizeof buf, "%6s %10s %12s %9s %9s %9s %10s %8s %10s %8s  %s\n", "B",
                  "ms/step", "ms x L/layers", "GB", "GFLOP", "GB/s", "GFLOP/s", "% roof", "bound",
                  "copies", "note");
    out += buf;
    for (const StepMeasurement& m : steps) {
        if (!m.ok) {
            std::snprintf(buf, sizeof buf, "%6lld  FAIL: %s\n", (long long)m.shape.batch,
                          m.error.c_str());
            out += buf;
            continue;
        }
        std::snprintf(
            buf, sizeof buf, "%6lld %10.3f %12.2f %9.3f %9.2f %9.1f %10.1f %7.1f%% %10s %8d  %s\n",
            (long long)m.shape.batch, m.medianSeconds * 1e3, m.scaledSeconds() * 1e3,
            m.counts.bytes / 1e9, m.counts.flops / 1e9, m.bytesPerSecond / 1e9,
            m.flopPerSecond / 1e9, 100 * m.fractionOfRoof, m.computeBound ? "compute" : "memory",
            m.weightSets, m.aboveRoof ? "ABOVE ROOF (>3%): counts or ceilings wrong" : "");
        out += buf;
    }
    return out;
}

std::unique_ptr<StepBackend> makeStepBackend(const std::string& name, std::string* error) {
    if (name == "cpu")
        return detail::makeCpuStepBackend();
    if (name == "cuda") {
#if KVSCOPE_HAVE_CUDA
        return detail::makeCudaStepBackend(error);
#else
        if (error)
            *error = "cuda: this build has no CUDA backend (configure with -DKVSCOPE_CUDA=ON)";
        return nullptr;
#endif
    }
    if (error)
        *error = "backend: unknown '" + name + "' (cpu or cuda)";
    return nullptr;
}

} // namespace kvscope::gpu
