// kvscope measurement backends: decode attention on a CPU or an NVIDIA GPU, checked against a
// double-precision reference and timed, plus the machine's two ceilings (read bandwidth and
// arithmetic peak) that a roofline needs.
//
// This header is plain C++20: no CUDA, no Qt, no core/ types. The CLI and the GUI map a model
// to DecodeShape values; this library only measures shapes.
//
// Errors are values: every function returns an error string or a value with `ok == false`
// and a one-line `error`; nothing here calls exit() or throws across this interface.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope::gpu {

/// Which decode-attention kernel family a shape belongs to.
enum class Attention {
    Gqa, ///< the GQA family: MHA (kvHeads == qHeads), GQA, MQA (kvHeads == 1)
    Mla, ///< absorbed multi-head latent attention (DeepSeek-V2/V3 style)
};

/// Storage type of the KV cache. Queries and outputs use the matching activation type:
/// bf16 for bf16 and fp8 KV, fp16 for fp16 KV, fp32 for fp32 KV.
enum class KvDtype { Bf16, Fp16, Fp8E4m3, Fp32 };

/// "bf16", "fp16", "fp8_e4m3", "fp32".
std::string_view dtypeName(KvDtype dtype);
/// Accepts the names above plus "fp8" and "float32"/"bfloat16"/"float16" aliases.
std::optional<KvDtype> parseDtype(std::string_view name);
/// Bytes per stored KV element: 2, 2, 1, 4 (constexpr: the CPU kernels size rows with it).
constexpr int kvBytesPerElement(KvDtype dtype) {
    return dtype == KvDtype::Fp8E4m3 ? 1 : dtype == KvDtype::Fp32 ? 4 : 2;
}
/// Bytes per query/output element (the activation type): 2, 2, 2, 4.
int activationBytesPerElement(KvDtype dtype);

/// One decode step of one layer on one rank: every query head attends over `context` cached
/// tokens for each of `batch` requests.
struct DecodeShape {
    Attention kind = Attention::Gqa;
    std::int64_t batch = 1;        ///< requests decoded together (B)
    std::int64_t qHeads = 32;      ///< query heads per rank (h / TP)
    std::int64_t kvHeads = 8;      ///< KV heads per rank (GQA family only; MLA stores one latent)
    std::int64_t headDim = 128;    ///< elements per head (GQA family: 64, 128 or 256)
    std::int64_t context = 4096;   ///< cached tokens per request (S)
    std::int64_t kvLoraRank = 512; ///< MLA latent width r, elements
    std::int64_t ropeDim = 64;     ///< MLA decoupled RoPE key width d_rope, elements
    KvDtype dtype = KvDtype::Bf16; ///< KV-cache storage type

    /// Query heads per KV head (g); 0 when kvHeads does not divide qHeads.
    std::int64_t groupSize() const {
        return kvHeads > 0 && qHeads % kvHeads == 0 ? qHeads / kvHeads : 0;
    }
    /// Elements per query row: headDim (GQA) or kvLoraRank + ropeDim (MLA).
    std::int64_t queryDim() const {
        return kind == Attention::Mla ? kvLoraRank + ropeDim : headDim;
    }
    /// Elements per output row: headDim (GQA) or kvLoraRank (MLA).
    std::int64_t valueDim() const { return kind == Attention::Mla ? kvLoraRank : headDim; }
};

/// A short name for logs and test rows: "gqa-8 d128 bf16 B1 S4096", "mla h16 fp8_e4m3 B4 S8192".
std::string describe(const DecodeShape& shape);

/// What one decode step must do (docs/formulas.md §8). Doubles: the counts exceed 2^53 only for
/// shapes no machine holds.
struct DecodeCounts {
    double flops = 0;   ///< GQA: 4·B·h·S·d_h; MLA absorbed: 2·B·h·S·(2r + d_rope), FLOP
    double kvBytes = 0; ///< the cache read once: GQA B·S·2·h_kv·d_h·b; MLA B·S·(r + d_rope)·b
    double qBytes = 0;    ///< queries read once, bytes
    double outBytes = 0;  ///< outputs written once, bytes
    double bytes = 0;     ///< kvBytes + qBytes + outBytes: the minimum DRAM traffic, bytes
    double intensity = 0; ///< flops / bytes, FLOP/byte (→ 2g/b and the MLA formula at long S)
};
DecodeCounts countDecode(const DecodeShape& shape);

/// Checks a shape's arithmetic sense (positive sizes, kvHeads divides qHeads, head dim...).
/// Returns "" when valid, else one line naming the field. Backends add their own limits.
std::string validateShape(const DecodeShape& shape);

/// One measured (or self-checked) decode kernel.
struct Measurement {
    std::string kernel;              ///< kernel that ran, e.g. "cpu-gqa", "cuda-gqa-mma-split"
    std::string variant;             ///< label given by the caller, e.g. "GQA-8" (empty when none)
    DecodeShape shape;               ///< what ran; shape.dtype is the KV dtype
    double medianSeconds = 0;        ///< median of the timed repeats, s
    int repeats = 0;                 ///< timed repeats behind the median
    int splits = 1;                  ///< KV splits (split-K) the kernel used
    double bytes = 0;                ///< counted bytes (DecodeCounts::bytes)
    double flops = 0;                ///< counted FLOPs (DecodeCounts::flops)
    double bytesPerSecond = 0;       ///< bytes / medianSeconds, byte/s
    double flopPerSecond = 0;        ///< flops / medianSeconds, FLOP/s
    double intensityFlopPerByte = 0; ///< flops / bytes, FLOP/byte
    /// Largest, over the checked output rows, of ‖out − ref‖₂ / ‖ref‖₂ against the
    /// double-precision reference (NaN/unwritten output counts as +inf).
    double maxRelError = 0;
    double errorBound = 0;  ///< the bound maxRelError was held to (depends on the dtype)
    std::uint64_t seed = 0; ///< generator seed of the checked inputs (for reproduction)
    double minSeconds = 0;  ///< fastest timed repeat, s
    double maxSeconds = 0;  ///< slowest timed repeat, s
    int attempts = 0;       ///< timed attempts (a wide spread is measured again)
    /// Input sets the timed repeats rotate through and their total bytes (> the last cache
    /// several times over, so no repeat reads a cache-resident set).
    int inputSets = 0;
    double inputSetBytes = 0;
    /// The read ceiling and the dtype's peak measured right before and right after the timed
    /// repeats (same machine state); 0 when the backend takes no ceilings around points.
    double readCeilingBefore = 0, readCeilingAfter = 0; ///< byte/s
    double peakBefore = 0, peakAfter = 0;               ///< FLOP/s
    std::string readCeilingKernel;                      ///< the read kernel that won
    /// The read ceiling paired with the repeats, byte/s: before every timed repeat (and after
    /// the last) one piece of the point's bytes is read by one of the family's best kernels,
    /// taking turns, and each repeat is set against the fastest of the pieces right after it,
    /// right before it and before that, so a repeat and its ceiling see the same moment of a
    /// machine whose bandwidth moves within seconds. This is bytesPerSecond over the median of the
    /// repeats' fractions (so %read is that median); 0 when the backend reads no pieces.
    double readCeilingPaired = 0;
    int pairedPieces = 0; ///< pieces read between the repeats (repeats + 1)
    /// The point's read ceiling: the paired one, else the max of before and after.
    double readCeiling() const {
        return readCeilingPaired > 0 ? readCeilingPaired
                                     : std::max(readCeilingBefore, readCeilingAfter);
    }
    double peakCeiling() const { return std::max(peakBefore, peakAfter); }
    /// (maxSeconds - minSeconds) / medianSeconds.
    double spread() const {
        return medianSeconds > 0 ? (maxSeconds - minSeconds) / medianSeconds : 0;
    }
    /// The spread of the repeats or the ceilings before/after stayed too wide on every attempt.
    bool unstable = false;
    bool ok = false;   ///< check passed (and, for measure(), timing succeeded)
    std::string error; ///< one line when !ok
};

/// A measured point against a pair of ceilings (read bandwidth, byte/s; peak, FLOP/s).
struct RoofPlacement {
    double roof = 0;           ///< min(peak, intensity x read), FLOP/s (read alone when no peak)
    double fractionRead = 0;   ///< achieved byte/s over the read ceiling
    double fractionRoof = 0;   ///< achieved FLOP/s over the roof
    bool computeBound = false; ///< the peak is the lower of the two
    /// Above the roof or the read ceiling by more than kCeilingTolerance: a ceiling a kernel
    /// beats is not a ceiling, so this is a bug in the ceilings or the counts.
    bool aboveCeiling = false;
};
constexpr double kCeilingTolerance = 0.03;
RoofPlacement placeOnRoof(const Measurement& m, double readBytesPerSecond,
                          double peakFlopPerSecond);

/// The machine's ceilings, measured (never datasheet values).
struct Ceilings {
    /// Sustained read bandwidth over a buffer many times the last-level cache, byte/s.
    double readBytesPerSecond = 0;
    /// Arithmetic peak of the units a decode kernel uses for each KV dtype, keyed by
    /// dtypeName(): on the CPU, bf16 and fp8_e4m3 KV run on vdpbf16ps where the CPU has
    /// AVX512_BF16 (its peak) and everything else on fp32 FMA (that peak); CUDA bf16/fp16 are
    /// tensor-core peaks and fp8_e4m3 KV is dequantised to fp16 (GQA) or bf16 (MLA) mma, so it
    /// maps to the higher of the two. FLOP/s.
    std::map<std::string, double> peakFlopPerSecond;
    std::string readKernel; ///< how the read ceiling was taken (the winning kernel, method)
    std::string peakKernel; ///< how the peak was taken
    /// Read bandwidth with the data resident in L2 / L3 (inner roofline lines), byte/s; 0 when
    /// not measured.
    double l2ReadBytesPerSecond = 0;
    double l3ReadBytesPerSecond = 0;
    /// Every kernel of the ceiling families with what it measured (byte/s for reads, FLOP/s
    /// for peaks); the ceilings are the maxima.
    struct FamilyMember {
        std::string kernel;
        double value = 0;
    };
    std::vector<FamilyMember> readFamily;
    std::vector<FamilyMember> peakFamily;
    /// The peak kernel that won, per dtype name.
    std::map<std::string, std::string> peakKernelFor;
    bool ok = false;
    std::string error; ///< one line when !ok
    /// Peak for a KV dtype, 0 when unknown.
    double peakFor(KvDtype dtype) const;
};

/// One compute device of a backend.
struct DeviceInfo {
    int index = 0;
    std::string name;                ///< e.g. "NVIDIA H200" or the CPU model name
    std::int64_t memoryBytes = 0;    ///< device (or system) memory, bytes
    std::int64_t lastCacheBytes = 0; ///< L2 (GPU) or last-level cache (CPU), bytes; 0 unknown
    int multiprocessors = 0;         ///< SMs (GPU) or hardware threads (CPU)
    std::string computeCapability;   ///< "9.0" on Hopper; empty on a CPU
};

/// Progress hook: fraction done in [0, 1] and what runs now. Return false to cancel; the
/// running call then returns promptly with error "cancelled". Called on the measuring thread.
using Progress = std::function<bool(double fraction, const std::string& what)>;

/// A measurement backend. One instance is used from one thread at a time (a GUI runs it on a
/// worker thread); different instances are independent.
class Backend {
public:
    virtual ~Backend() = default;
    /// "cpu" or "cuda".
    virtual std::string name() const = 0;
    /// Devices this backend can see; the first is the one that measures.
    virtual std::vector<DeviceInfo> devices() const = 0;
    /// "" when this backend can run the shape, else one line (unsupported head dim, group
    /// size, dtype, or a shape too large for memory).
    virtual std::string supports(const DecodeShape& shape) const = 0;
    /// Read bandwidth and arithmetic peak of the device.
    virtual Ceilings measureCeilings(const Progress& progress = {}) = 0;
    /// Checks the kernel against the reference on fresh random inputs (poisoned outputs), then
    /// times it: warm-up, input sets rotated beyond the last cache, median of repeats.
    virtual Measurement measure(const DecodeShape& shape, const Progress& progress = {}) = 0;
    /// Only the reference comparison of measure() (no timing).
    virtual Measurement selfCheck(const DecodeShape& shape, const Progress& progress = {}) = 0;
};

/// "cpu" always works; "cuda" returns nullptr with *error set (one line) when this build has
/// no CUDA, or no driver or device is present. Unknown names give nullptr and an error too.
std::unique_ptr<Backend> makeBackend(const std::string& name, std::string* error);

/// True when this build contains the CUDA backend (KVSCOPE_HAVE_CUDA).
bool cudaCompiledIn();

/// The relative-error bound a kernel must meet for a KV dtype: fp32 1e-4; fp16 2e-3;
/// bf16 and fp8 e4m3 1e-2 (bf16 queries and outputs, probabilities rounded to bf16 on tensor
/// cores: about 2e-3 expected, so an indexing bug, which costs O(1), cannot hide).
double errorBoundFor(KvDtype dtype);

} // namespace kvscope::gpu
