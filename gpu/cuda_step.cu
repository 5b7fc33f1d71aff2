// The CUDA step backend: the scaled layer stack of gpu/step.h on one GPU. The GEMMs are cuBLAS
// (bf16 weights and activations, fp32 accumulate and fp32 output, cublasGemmEx); the norms,
// SiLU·up and residual adds are small elementwise kernels here; attention is the CUDA
// backend's own decode kernel, run through its Engine on a K/V cache of the layer's shape at
// context S (prepared once per layer). That engine reads its own generated Q and K/V, so the
// attention of this stack is not fed by the QKV GEMM: the timing is the step's, the data flow
// is not, and selfCheckStep refuses (the kernel itself is checked by Backend::selfCheck).
// Timed on the host clock around a whole step (the engine synchronises after each run).
#include "gpu/engine.h"
#include "gpu/numerics.h"
#include "gpu/step.h"

#include <algorithm>
#include <chrono>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <string>
#include <vector>

namespace kvscope::gpu::detail {
namespace {

#define KVSCOPE_STEP_CUDA(call)                                                                    \
    do {                                                                                           \
        const cudaError_t kvscopeStepErr_ = (call);                                                \
        if (kvscopeStepErr_ != cudaSuccess)                                                        \
            return std::string(cudaGetErrorString(kvscopeStepErr_)) + " in " #call;                \
    } while (0)
#define KVSCOPE_STEP_CUBLAS(call)                                                                  \
    do {                                                                                           \
        const cublasStatus_t kvscopeStepStatus_ = (call);                                          \
        if (kvscopeStepStatus_ != CUBLAS_STATUS_SUCCESS)                                           \
            return "cuBLAS status " + std::to_string(int(kvscopeStepStatus_)) + " in " #call;      \
    } while (0)

__global__ void fillBf16(__nv_bfloat16* p, std::int64_t n, std::uint64_t seed, std::uint32_t tensor,
                         float scale, float offset) {
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::int64_t(gridDim.x) * blockDim.x)
        p[i] = __float2bfloat16(num::uniformInput(seed, tensor, std::uint64_t(i)) * scale + offset);
}

/// out[b][:] = bf16(rmsnorm(x[b][:]) * g), one block per batch row.
__global__ void rmsNormKernel(const float* x, const __nv_bfloat16* g, __nv_bfloat16* out, int d) {
    __shared__ float partial[32];
    const float* row = x + std::int64_t(blockIdx.x) * d;
    float ss = 0;
    for (int i = threadIdx.x; i < d; i += blockDim.x)
        ss += row[i] * row[i];
    for (int o = 16; o > 0; o /= 2)
        ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (threadIdx.x % 32 == 0)
        partial[threadIdx.x / 32] = ss;
    __syncthreads();
    float total = 0;
    for (int w = 0; w < int(blockDim.x / 32); ++w)
        total += partial[w];
    const float r = rsqrtf(total / float(d) + 1e-5f);
    for (int i = threadIdx.x; i < d; i += blockDim.x)
        out[std::int64_t(blockIdx.x) * d + i] =
            __float2bfloat16(row[i] * r * __bfloat162float(g[i]));
}

__global__ void addKernel(float* x, const float* y, std::int64_t n) {
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::int64_t(gridDim.x) * blockDim.x)
        x[i] += y[i];
}

/// a[b][i] = bf16(silu(gate) * up) (gated) or bf16(silu(up)); y is [B][rows].
__global__ void siluKernel(const float* y, __nv_bfloat16* a, std::int64_t B, std::int64_t w,
                           std::int64_t rows, bool gated) {
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < B * w;
         i += std::int64_t(gridDim.x) * blockDim.x) {
        const std::int64_t b = i / w, j = i % w;
        const float g = y[b * rows + j];
        const float s = g / (1.0f + __expf(-g));
        a[i] = __float2bfloat16(gated ? s * y[b * rows + w + j] : s);
    }
}

struct Dev {
    void* p = nullptr;
    Dev() = default;
    Dev(const Dev&) = delete;
    Dev& operator=(const Dev&) = delete;
    Dev(Dev&& o) noexcept : p(o.p) { o.p = nullptr; }
    ~Dev() {
        if (p)
            cudaFree(p);
    }
    template <class T> T* as() const { return static_cast<T*>(p); }
};

struct Layer {
    Dev attnNorm, qkv, o, mlpNorm, gateUp, down;
    std::unique_ptr<Engine> attention; // the CUDA decode kernel on this layer's cache
};

class CudaStepBackend final : public StepBackend {
public:
    explicit CudaStepBackend(std::unique_ptr<Engine> probe) : probe_(std::move(probe)) {}
    ~CudaStepBackend() override {
        layers_.clear();
        if (blas_)
            cublasDestroy(blas_);
        if (stream_)
            cudaStreamDestroy(stream_);
    }
    std::string init() {
        KVSCOPE_STEP_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        KVSCOPE_STEP_CUBLAS(cublasCreate(&blas_));
        KVSCOPE_STEP_CUBLAS(cublasSetStream(blas_, stream_));
        return {};
    }

    std::string name() const override { return "cuda"; }
    std::vector<DeviceInfo> devices() const override { return probe_->devices(); }
    std::string supports(const StepShape& s) const override {
        if (auto e = validateStepShape(s); !e.empty())
            return e;
        DecodeShape a = attentionShape(s);
        return probe_->supports(a);
    }
    Ceilings measureCeilings(const Progress& progress) override {
        ceilings_ = probe_->measureCeilings(progress);
        return ceilings_;
    }
    StepMeasurement selfCheckStep(const StepShape& s) override {
        StepMeasurement m;
        m.shape = s;
        m.error = "cuda: the step is timed only (its attention runs the checked decode kernel "
                  "on the kernel's own inputs); no fp64 reference of the stack on CUDA";
        return m;
    }
    StepMeasurement measureStep(const StepShape& s, const Progress& progress) override {
        StepMeasurement m;
        m.shape = s;
        m.counts = countStep(s);
        m.kernel = "cuda-step-cublas+cuda-gqa";
        if (auto e = supports(s); !e.empty()) {
            m.error = e;
            return m;
        }
        if (!ceilings_.ok && !measureCeilings(progress).ok) {
            m.error = "ceilings: " + ceilings_.error;
            return m;
        }
        if (auto e = prepare(s); !e.empty()) {
            m.error = e;
            layers_.clear();
            return m;
        }
        std::vector<double> times;
        for (int r = 0; r < 2; ++r) // warm-up
            if (auto e = runStep(); !e.empty()) {
                m.error = e;
                return m;
            }
        const auto start = std::chrono::steady_clock::now();
        for (int r = 0; r < 51; ++r) {
            const auto t0 = std::chrono::steady_clock::now();
            if (auto e = runStep(); !e.empty()) {
                m.error = e;
                return m;
            }
            const auto t1 = std::chrono::steady_clock::now();
            times.push_back(std::chrono::duration<double>(t1 - t0).count());
            if (r >= 9 && std::chrono::duration<double>(t1 - start).count() > 1.0)
                break;
        }
        layers_.clear();
        setStepTimes(m, std::move(times));
        m.readCeiling = ceilings_.readBytesPerSecond;
        m.peak = ceilings_.peakFor(KvDtype::Bf16);
        const double attnPeak =
            ceilings_.peakFor(s.kvDtype) > 0 ? ceilings_.peakFor(s.kvDtype) : m.peak;
        const double memoryS = m.counts.bytes / m.readCeiling;
        const double computeS = m.counts.gemmFlops / m.peak + m.counts.attentionFlops / attnPeak;
        m.roofSeconds = std::max(memoryS, computeS);
        m.computeBound = computeS > memoryS;
        m.fractionOfRoof = m.roofSeconds / m.medianSeconds;
        m.aboveRoof = m.fractionOfRoof > 1.0 + kCeilingTolerance;
        m.weightSets = 1; // a few layers of any 7B+ model are many times the 50 MB L2
        m.residentBytes = m.counts.weightBytes + m.counts.kvBytes;
        m.ok = true;
        return m;
    }

private:
    static DecodeShape attentionShape(const StepShape& s) {
        DecodeShape a;
        a.kind = Attention::Gqa;
        a.batch = s.batch;
        a.qHeads = s.qHeads;
        a.kvHeads = s.kvHeads;
        a.headDim = s.headDim;
        a.context = s.context;
        a.dtype = s.kvDtype;
        return a;
    }

    std::string alloc(Dev& d, std::size_t bytes) {
        KVSCOPE_STEP_CUDA(cudaMalloc(&d.p, bytes ? bytes : 16));
        return {};
    }
    std::string weight(Dev& d, std::int64_t n, std::uint32_t tensor, float scale, float offset) {
        if (auto e = alloc(d, std::size_t(n) * 2); !e.empty())
            return e;
        fillBf16<<<1024, 256, 0, stream_>>>(d.as<__nv_bfloat16>(), n, seed_, tensor, scale, offset);
        KVSCOPE_STEP_CUDA(cudaGetLastError());
        return {};
    }

    std::string prepare(const StepShape& s) {
        layers_.clear();
        s_ = s;
        seed_ =
            num::mix64(std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()));
        const std::int64_t d = s.hidden, h = s.qHeads, kv = s.kvHeads, dh = s.headDim;
        qkvOut_ = (h + 2 * kv) * dh;
        upRows_ = s.gated ? 2 * s.intermediate : s.intermediate;
        for (std::int64_t l = 0; l < s.layers; ++l) {
            layers_.emplace_back();
            Layer& L = layers_.back();
            const std::uint32_t t = std::uint32_t(l) * 16 + 16;
            auto fan = [](std::int64_t n) { return float(std::sqrt(3.0 / double(n))); };
            if (auto e = weight(L.attnNorm, d, t, 0.1f, 1.0f); !e.empty())
                return e;
            if (auto e = weight(L.qkv, qkvOut_ * d, t + 1, fan(d), 0); !e.empty())
                return e;
            if (auto e = weight(L.o, d * h * dh, t + 2, fan(h * dh), 0); !e.empty())
                return e;
            if (auto e = weight(L.mlpNorm, d, t + 3, 0.1f, 1.0f); !e.empty())
                return e;
            if (auto e = weight(L.gateUp, upRows_ * d, t + 4, fan(d), 0); !e.empty())
                return e;
            if (auto e = weight(L.down, d * s.intermediate, t + 5, fan(s.intermediate), 0);
                !e.empty())
                return e;
            std::string why;
            L.attention = makeCudaEngine(&why);
            if (!L.attention)
                return why;
            if (auto e = L.attention->prepare(attentionShape(s), 1, seed_ + std::uint64_t(l));
                !e.empty())
                return e;
        }
        const std::int64_t B = s.batch;
        for (auto [buf, bytes] : {std::pair{&residual_, B * d * 4},
                                  std::pair{&normed_, B * std::max(d, s.intermediate) * 2},
                                  std::pair{&attn_, B * h * dh * 2},
                                  std::pair{&y_, B * std::max({qkvOut_, d, upRows_}) * 4}})
            if (auto e = alloc(*buf, std::size_t(bytes)); !e.empty())
                return e;
        KVSCOPE_STEP_CUDA(cudaMemsetAsync(residual_.p, 0, std::size_t(B * d * 4), stream_));
        KVSCOPE_STEP_CUDA(cudaMemsetAsync(attn_.p, 0, std::size_t(B * h * dh * 2), stream_));
        KVSCOPE_STEP_CUDA(cudaStreamSynchronize(stream_));
        return {};
    }

    /// y[B][N] = x[B][K] · W[N][K]^T (column-major: y^T = W^T-as-stored · x^T).
    std::string gemm(const Dev& x, const Dev& w, std::int64_t N, std::int64_t K) {
        const float one = 1.0f, zero = 0.0f;
        KVSCOPE_STEP_CUBLAS(cublasGemmEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, int(N), int(s_.batch),
                                         int(K), &one, w.p, CUDA_R_16BF, int(K), x.p, CUDA_R_16BF,
                                         int(K), &zero, y_.p, CUDA_R_32F, int(N),
                                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        return {};
    }

    std::string runStep() {
        const std::int64_t d = s_.hidden, B = s_.batch, w = s_.intermediate;
        const std::int64_t hd = s_.qHeads * s_.headDim;
        for (Layer& L : layers_) {
            rmsNormKernel<<<unsigned(B), 256, 0, stream_>>>(residual_.as<float>(),
                                                            L.attnNorm.as<__nv_bfloat16>(),
                                                            normed_.as<__nv_bfloat16>(), int(d));
            if (auto e = gemm(normed_, L.qkv, qkvOut_, d); !e.empty())
                return e;
            KVSCOPE_STEP_CUDA(cudaStreamSynchronize(stream_));
            if (auto e = L.attention->run(0); !e.empty()) // completes before it returns
                return e;
            if (auto e = gemm(attn_, L.o, d, hd); !e.empty())
                return e;
            addKernel<<<264, 256, 0, stream_>>>(residual_.as<float>(), y_.as<float>(), B * d);
            rmsNormKernel<<<unsigned(B), 256, 0, stream_>>>(residual_.as<float>(),
                                                            L.mlpNorm.as<__nv_bfloat16>(),
                                                            normed_.as<__nv_bfloat16>(), int(d));
            if (auto e = gemm(normed_, L.gateUp, upRows_, d); !e.empty())
                return e;
            siluKernel<<<264, 256, 0, stream_>>>(y_.as<float>(), normed_.as<__nv_bfloat16>(), B, w,
                                                 upRows_, s_.gated);
            if (auto e = gemm(normed_, L.down, d, w); !e.empty())
                return e;
            addKernel<<<264, 256, 0, stream_>>>(residual_.as<float>(), y_.as<float>(), B * d);
            KVSCOPE_STEP_CUDA(cudaGetLastError());
        }
        KVSCOPE_STEP_CUDA(cudaStreamSynchronize(stream_));
        return {};
    }

    std::unique_ptr<Engine> probe_; // devices, limits and ceilings
    Ceilings ceilings_;
    cudaStream_t stream_ = nullptr;
    cublasHandle_t blas_ = nullptr;
    StepShape s_;
    std::uint64_t seed_ = 0;
    std::int64_t qkvOut_ = 0, upRows_ = 0;
    std::vector<Layer> layers_;
    Dev residual_, normed_, attn_, y_;
};

} // namespace

std::unique_ptr<StepBackend> makeCudaStepBackend(std::string* error) {
    auto probe = makeCudaEngine(error);
    if (!probe)
        return nullptr;
    auto b = std::make_unique<CudaStepBackend>(std::move(probe));
    if (auto e = b->init(); !e.empty()) {
        if (error)
            *error = e;
        return nullptr;
    }
    return b;
}

} // namespace kvscope::gpu::detail
