// Internal to gpu/: what a device engine provides to the shared check-and-time harness
// (harness.cpp). CUDA-free.
#pragma once

#include "gpu/backend.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kvscope::gpu::detail {

/// Softmax scale of the scores: 1/sqrt(headDim) for the GQA family and 1/sqrt(r + d_rope)
/// for absorbed MLA (the true model uses 1/sqrt(d_nope + d_rope); the memory physics does not
/// depend on it, and the reference uses the same value).
double softmaxScale(const DecodeShape& shape);

/// A device that can hold input sets for one shape and run one decode step on any of them.
/// Inputs are filled from num::uniformInput(seed + set, ...) so the reference can regenerate
/// them; outputs are [batch][qHeads][valueDim] in the activation dtype.
class Engine {
public:
    virtual ~Engine() = default;
    virtual std::string backendName() const = 0;
    virtual std::vector<DeviceInfo> devices() const = 0;
    /// Backend limits beyond validateShape(); "" when supported.
    virtual std::string supports(const DecodeShape& shape) const = 0;
    virtual Ceilings measureCeilings(const Progress& progress) = 0;
    /// A short re-measurement of the read ceiling (the best kernels of the family) and of the
    /// peak for `dtype`, taken right before and right after a point so both see the machine
    /// state the point saw, timed in pieces of about `pointBytes` (one run of the point) so
    /// both see the same time slices of a shared machine. False when the engine does not take
    /// them (the global ceilings apply).
    virtual bool spotCeilings(KvDtype dtype, double pointBytes, double* readBytesPerSecond,
                              double* peakFlopPerSecond, std::string* readKernel) {
        (void)dtype, (void)pointBytes, (void)readBytesPerSecond, (void)peakFlopPerSecond,
            (void)readKernel;
        return false;
    }
    /// One piece of about `pointBytes` of cold memory read by the `which`-th best read kernel
    /// of the family (which = 0, 1, ...; it wraps): the ceiling paired with one timed repeat.
    /// The CPU engine reads a cold input set of the prepared point itself (the same pages).
    /// False when the engine reads no pieces.
    virtual bool ceilingPiece(int which, double pointBytes, double* readBytesPerSecond,
                              std::string* readKernel) {
        (void)which, (void)pointBytes, (void)readBytesPerSecond, (void)readKernel;
        return false;
    }
    /// Bytes of cache to defeat when rotating input sets (L2 or LLC).
    virtual std::int64_t cacheBytes() const = 0;
    /// Memory this engine may use for input sets, bytes.
    virtual std::int64_t memoryBudgetBytes() const = 0;

    /// Allocates `sets` input sets filled with generated values (set s uses seed + s) and the
    /// output. Returns "" or an error line.
    virtual std::string prepare(const DecodeShape& shape, int sets, std::uint64_t seed) = 0;
    /// Fills the output with NaN bit patterns.
    virtual std::string poisonOutput() = 0;
    /// One decode step on input set `set`, completed before return.
    virtual std::string run(int set) = 0;
    /// One decode step timed by the device's clock (events on a GPU), seconds.
    virtual std::string timeRun(int set, double* seconds) = 0;
    /// The output decoded to float, [batch][qHeads][valueDim].
    virtual std::string readOutput(std::vector<float>* out) = 0;
    /// Kernel name and KV splits of the last prepared shape.
    virtual std::string kernelName() const = 0;
    virtual int splits() const = 0;
    /// Frees the input sets. (An engine may keep their memory for its next prepare(); it is
    /// returned when the engine is destroyed.)
    virtual void release() = 0;
};

/// Wraps an engine in the Backend interface (reference check, rotation, timing).
std::unique_ptr<Backend> makeHarnessBackend(std::unique_ptr<Engine> engine);

std::unique_ptr<Engine> makeCpuEngine();
/// Runs all 256 fp8 e4m3 codes through the CPU engine's vector fp8 -> bf16 conversion: the first
/// code that differs from the exact scalar table, -1 if none, -2 if this CPU or build has no
/// AVX512_BF16 kernel (for tests: random inputs in [-1, 1) never reach codes >= 0x40).
int cpuFp8VectorMismatch();
/// The same for the portable kernel's fp8 -> fp32 decoder at a vector width (16, 8 or 4): -1 if
/// all 256 codes match the scalar reference bit for bit, -2 where the CPU has no such width.
int cpuPortableFp8Mismatch(int width);
/// The CPU engine's AMX kernel can run here (AMX-BF16 and the tile state granted by Linux).
bool cpuHasAmxKernel();
#if KVSCOPE_HAVE_CUDA
/// nullptr with *error set when there is no usable driver or device.
std::unique_ptr<Engine> makeCudaEngine(std::string* error);
#endif

} // namespace kvscope::gpu::detail
