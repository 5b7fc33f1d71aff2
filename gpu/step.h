// One whole decode step of a scaled layer stack, measured on a backend: a few layers of a
// model's real per-rank shapes (RMSNorm, QKV GEMM, decode attention over a K/V cache of S
// tokens, O GEMM, gated or plain MLP) run for B requests, timed, and placed against the
// measured ceilings. The bytes and FLOPs are counted the way core/law/step.cpp counts a decode
// step, restricted to the layers that run (no embedding, no lm_head: those are per model, not
// per layer), so the measured per-layer time scales to the model's layer count.
//
// Plain C++20 (no CUDA, no Qt, no core/ types): the CLI and the GUI map a model to StepShape.
#pragma once

#include "gpu/backend.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kvscope::gpu {

/// The per-rank shapes of the layers that run. Weights are bf16; activations travel in bf16
/// between kernels (as core/law/step.cpp assumes); the residual stream stays fp32 in registers of
/// the norm kernels and is stored as bf16.
struct StepShape {
    std::int64_t layers = 2;           ///< layers that run (a few; the model has modelLayers)
    std::int64_t modelLayers = 32;     ///< the model's layer count, for scaling the time
    std::int64_t hidden = 4096;        ///< d
    std::int64_t qHeads = 32;          ///< query heads per rank
    std::int64_t kvHeads = 8;          ///< KV heads per rank
    std::int64_t headDim = 128;        ///< d_h (keys and values)
    std::int64_t intermediate = 14336; ///< MLP width per rank (MoE: touched experts x width)
    bool gated = true;                 ///< gate/up/down (SwiGLU) rather than up/down
    std::int64_t batch = 1;            ///< B
    std::int64_t context = 4096;       ///< S: cached tokens per request, the new one included
    KvDtype kvDtype = KvDtype::Bf16;   ///< KV-cache storage type
};

/// "L2/32 d4096 h32/8 d_h128 w14336 bf16 B16 S4096".
std::string describe(const StepShape& shape);
/// "" when the shape makes sense, else one line naming the field.
std::string validateStepShape(const StepShape& shape);

/// What the layers that run must move and compute, counted as core/law/step.cpp counts a layer.
struct StepCounts {
    double weightBytes = 0;     ///< attention + MLP + the two norms' weights, read once, bf16
    double kvBytes = 0;         ///< B · S · 2 · h_kv · d_h · b_kv per layer
    double activationBytes = 0; ///< GEMM inputs/outputs, attention Q/O, new K/V, residual
    double bytes = 0;           ///< the sum
    double gemmFlops = 0;       ///< 2 · (attention + MLP parameters) · B per layer
    double attentionFlops = 0;  ///< 2 · B · h · S · (d_k + d_v) per layer
    double flops = 0;           ///< the sum
};
StepCounts countStep(const StepShape& shape);

/// One measured (or self-checked) decode step of the scaled stack.
struct StepMeasurement {
    StepShape shape;
    std::string kernel; ///< e.g. "cpu-step-bf16dot" (GEMV/GEMM kernel + attention kernel)
    double minSeconds = 0, medianSeconds = 0, maxSeconds = 0; ///< per step of `layers` layers
    int repeats = 0;
    StepCounts counts;
    double bytesPerSecond = 0; ///< counts.bytes / medianSeconds
    double flopPerSecond = 0;  ///< counts.flops / medianSeconds
    /// Ceilings taken right before and after the timed repeats (max of the two is used).
    double readCeiling = 0; ///< byte/s
    double peak = 0;        ///< FLOP/s of the GEMM units (bf16 dot product where present)
    /// The roof: max(bytes / read ceiling, flops / peak) — the time the step cannot beat.
    double roofSeconds = 0;
    double fractionOfRoof = 0; ///< roofSeconds / medianSeconds (1 = on the roof)
    bool computeBound = false; ///< flops / peak is the larger term
    bool aboveRoof = false;    ///< faster than the roof by more than kCeilingTolerance
    /// Weight copies the timed steps rotate through and their total bytes (weights and KV are
    /// read from DRAM, not from the last cache).
    int weightSets = 0;
    double residentBytes = 0;
    /// ‖out − ref‖₂ / ‖ref‖₂ of the final residual stream against the fp64 reference.
    double maxRelError = 0;
    double errorBound = 0;
    std::uint64_t seed = 0;
    bool ok = false;
    std::string error;
    /// medianSeconds × modelLayers / layers: the whole model's layers at this batch, s.
    double scaledSeconds() const {
        return shape.layers > 0 ? medianSeconds * double(shape.modelLayers) / double(shape.layers)
                                : 0;
    }
};

/// A backend that runs whole decode steps. One instance from one thread at a time.
class StepBackend {
public:
    virtual ~StepBackend() = default;
    virtual std::string name() const = 0;
    virtual std::vector<DeviceInfo> devices() const = 0;
    /// "" when the backend can run the shape, else one line.
    virtual std::string supports(const StepShape& shape) const = 0;
    /// The device's ceilings (the same meter as Backend::measureCeilings).
    virtual Ceilings measureCeilings(const Progress& progress = {}) = 0;
    /// Times the stack: warm-up, weight copies rotated beyond the last cache, median of
    /// repeats, ceilings measured right before and after. No reference check (selfCheckStep
    /// does that, on shapes small enough for an fp64 reference).
    virtual StepMeasurement measureStep(const StepShape& shape, const Progress& progress = {}) = 0;
    /// Runs the stack once on fresh random inputs (poisoned output) and compares the final
    /// residual stream with the fp64 reference. For small shapes (the reference is O(weights·B)).
    virtual StepMeasurement selfCheckStep(const StepShape& shape) = 0;
};

/// "cpu" always works; "cuda" gives nullptr and *error when this build has no CUDA or no
/// device answers.
std::unique_ptr<StepBackend> makeStepBackend(const std::string& name, std::string* error);

/// The step table of `measure --step`: per point the measured time of the scaled stack and
/// scaled to the model's layers, counted GB and GFLOP, achieved GB/s and GFLOP/s, % of the
/// roof, the binding term, and a flag on a point more than kCeilingTolerance above its roof.
/// Fills m's repeats, min/median/max seconds and achieved rates from the timed repeats
/// (`m.counts` set); `times` is not empty.
void setStepTimes(StepMeasurement& m, std::vector<double> times);

std::string stepTable(const std::vector<StepMeasurement>& steps);

/// Relative error bound of the stack (bf16 weights and activations, fp32 accumulation): 2e-2.
constexpr double kStepErrorBound = 2e-2;

} // namespace kvscope::gpu
