// CUDA engine: device memory for the input sets, kernel dispatch (one macro per knob), event
// timing and the two ceilings (the best of a family of read kernels over a buffer many times L2,
// cuda_ceilings.cu, and a bf16 / fp16 tensor-core peak through cuBLAS). Every CUDA call goes
// through KVSCOPE_CUDA_CALL, which turns a failure into an error value with file, line and call
// text.
#include "gpu/cuda_ceilings.h"
#include "gpu/cuda_dispatch.h"
#include "gpu/cuda_kernels.cuh"
#include "gpu/engine.h"
#include "gpu/numerics.h"
#include "gpu/split_plan.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <string>
#include <vector>

namespace kvscope::gpu::detail {
namespace {

using cuda::DecodeParams;

int formatOf(KvDtype d) {
    switch (d) {
    case KvDtype::Bf16:
        return 0;
    case KvDtype::Fp16:
        return 1;
    case KvDtype::Fp8E4m3:
        return 2;
    default:
        return 3;
    }
}

KvDtype activationType(KvDtype kv) {
    return kv == KvDtype::Fp32 ? KvDtype::Fp32
                               : (kv == KvDtype::Fp16 ? KvDtype::Fp16 : KvDtype::Bf16);
}

double medianOf(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

/// Device memory owned by the engine.
struct DeviceBuffer {
    void* ptr = nullptr;
    std::size_t bytes = 0;
    DeviceBuffer() = default;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&& o) noexcept : ptr(o.ptr), bytes(o.bytes) {
        o.ptr = nullptr, o.bytes = 0;
    }
    DeviceBuffer& operator=(DeviceBuffer&&) = delete;
    ~DeviceBuffer() { reset(); }
    void reset() {
        if (ptr)
            cudaFree(ptr);
        ptr = nullptr;
        bytes = 0;
    }
    std::string allocate(std::size_t n, const char* what) {
        reset();
        const cudaError_t e = cudaMalloc(&ptr, n ? n : 16);
        if (e != cudaSuccess) {
            ptr = nullptr;
            cudaGetLastError(); // clear the sticky-free allocation error
            return std::string("out of device memory allocating ") + what + " (" +
                   std::to_string(n >> 20) + " MiB): " + cudaGetErrorString(e);
        }
        bytes = n;
        return {};
    }
    std::uint8_t* bytesPtr() const { return static_cast<std::uint8_t*>(ptr); }
};

class CudaEngine final : public Engine {
public:
    explicit CudaEngine(int device) : device_(device) {}
    ~CudaEngine() override {
        release();
        if (start_)
            cudaEventDestroy(start_);
        if (stop_)
            cudaEventDestroy(stop_);
        if (stream_)
            cudaStreamDestroy(stream_);
    }

    std::string init() {
        KVSCOPE_CUDA_CALL(cudaSetDevice(device_));
        KVSCOPE_CUDA_CALL(cudaGetDeviceProperties(&prop_, device_));
        KVSCOPE_CUDA_CALL(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        KVSCOPE_CUDA_CALL(cudaEventCreate(&start_));
        KVSCOPE_CUDA_CALL(cudaEventCreate(&stop_));
        return {};
    }

    std::string backendName() const override { return "cuda"; }

    std::vector<DeviceInfo> devices() const override {
        std::vector<DeviceInfo> out;
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess)
            return out;
        for (int i = 0; i < n; ++i) {
            cudaDeviceProp p{};
            if (cudaGetDeviceProperties(&p, i) != cudaSuccess)
                continue;
            DeviceInfo d;
            d.index = i;
            d.name = p.name;
            d.memoryBytes = std::int64_t(p.totalGlobalMem);
            d.lastCacheBytes = p.l2CacheSize;
            d.multiprocessors = p.multiProcessorCount;
            d.computeCapability = std::to_string(p.major) + "." + std::to_string(p.minor);
            out.push_back(d);
        }
        // The measuring device first.
        std::stable_partition(out.begin(), out.end(),
                              [&](const DeviceInfo& d) { return d.index == device_; });
        return out;
    }

    std::string supports(const DecodeShape& s) const override {
        if (s.dtype == KvDtype::Fp32)
            return "unsupported KV dtype fp32 on cuda (bf16, fp16 or fp8_e4m3)";
        if (s.context > INT_MAX / 2 || s.batch > 65535 || s.qHeads > 65535 * 16 ||
            s.kvHeads > 65535)
            return "shape too large for the kernel grid (batch <= 65535, context < 2^30)";
        if (s.kind == Attention::Mla) {
            if (s.kvLoraRank != 512 || s.ropeDim != 64)
                return "unsupported MLA widths r=" + std::to_string(s.kvLoraRank) +
                       ", d_rope=" + std::to_string(s.ropeDim) +
                       " (the kernel is built for 512 + 64)";
        } else {
            const std::int64_t g = s.groupSize();
            if (g > 128)
                return "unsupported group size " + std::to_string(g) + " (at most 128)";
            if (s.headDim == 256 && g > 64)
                return "unsupported group size " + std::to_string(g) +
                       " with head dim 256 (at most 64)";
        }
        return {};
    }

    bool ceilingPiece(int which, double pointBytes, double* read, std::string* kernel) override {
        return reads_.piece(which, pointBytes, read, kernel);
    }

    std::int64_t cacheBytes() const override { return prop_.l2CacheSize; }

    std::int64_t memoryBudgetBytes() const override {
        std::size_t freeBytes = 0, total = 0;
        if (cudaMemGetInfo(&freeBytes, &total) != cudaSuccess)
            return 0;
        return std::int64_t(double(freeBytes + heldBytes()) * 0.8);
    }

    Ceilings measureCeilings(const Progress& progress) override {
        Ceilings c;
        if (const cudaError_t e = cudaSetDevice(device_); e != cudaSuccess) {
            c.error = std::string("cudaSetDevice: ") + cudaGetErrorString(e);
            return c;
        }
        if (auto e = reads_.measure(prop_, stream_, &c, progress); !e.empty()) {
            c.error = e;
            return c;
        }
        if (progress && !progress(0.5, "cuda tensor-core peak")) {
            c.error = "cancelled";
            return c;
        }
        if (auto e = peakCeiling(&c); !e.empty()) {
            c.error = "peak: " + e; // the read ceiling still stands
        }
        c.ok = c.readBytesPerSecond > 0;
        if (progress)
            progress(1.0, "cuda ceilings done");
        return c;
    }

    std::string prepare(const DecodeShape& s, int sets, std::uint64_t seed) override {
        release();
        KVSCOPE_CUDA_CALL(cudaSetDevice(device_));
        shape_ = s;
        const bool mla = s.kind == Attention::Mla;
        const std::size_t kb = std::size_t(kvBytesPerElement(s.dtype)),
                          ab = std::size_t(activationBytesPerElement(s.dtype));
        const std::size_t dq = std::size_t(s.queryDim()), dv = std::size_t(s.valueDim());
        const std::size_t rows = std::size_t(s.batch * s.qHeads);
        const std::size_t kvElems = mla ? std::size_t(s.batch * s.context) * dq
                                        : std::size_t(s.batch * s.kvHeads * s.context) * dq;
        if (auto e = configureKernel(); !e.empty())
            return e;
        const std::int64_t baseBlocks =
            mla ? s.batch * ((s.qHeads + 15) / 16) : s.batch * s.kvHeads;
        const DecodeCounts counts = countDecode(s);
        // fp8 KV is converted in registers before the mma; on an H200 that made g 8 (16
        // FLOP/byte) need two blocks per SM as bf16 does from 24 (one block per SM: 49% of the
        // read ceiling, three: 67%, with the four-instruction bf16 conversion; three still
        // measured 75-77% with today's one-cvt fp16 one), so the conversion counts as 16
        // FLOP/byte more.
        const double convert = s.dtype == KvDtype::Fp8E4m3 ? 16.0 : 0.0;
        const SplitWork work{mla ? int(std::min<std::int64_t>(s.qHeads, 16)) : int(s.groupSize()),
                             counts.flops / std::max(1.0, counts.kvBytes) + convert};
        const SplitDevice device{prop_.multiProcessorCount, blocksPerSm_};
        // KVSCOPE_CUDA_SPLITS=N forces N splits (to measure the rule against the alternatives).
        const char* force = std::getenv("KVSCOPE_CUDA_SPLITS");
        const SplitPlan plan = force ? planForSplits(s.context, std::atoll(force))
                                     : chooseSplits(baseBlocks, s.context, work, device);
        splits_ = plan.splits;
        tokensPerSplit_ = plan.tokensPerSplit;

        for (int i = 0; i < sets; ++i) {
            InputSet in;
            const std::uint64_t sd = seed + std::uint64_t(i);
            if (auto e = in.q.allocate(rows * dq * ab, "queries"); !e.empty())
                return release(), e;
            if (auto e = in.k.allocate(kvElems * kb, mla ? "latent cache" : "keys"); !e.empty())
                return release(), e;
            if (!mla)
                if (auto e = in.v.allocate(kvElems * kb, "values"); !e.empty())
                    return release(), e;
            if (auto e = fill(in.q, rows * dq, activationType(s.dtype), sd, num::kQuery,
                              num::kQueryScale);
                !e.empty())
                return release(), e;
            if (auto e = fill(in.k, kvElems, s.dtype, sd, mla ? num::kLatent : num::kKey, 1.0f);
                !e.empty())
                return release(), e;
            if (!mla)
                if (auto e = fill(in.v, kvElems, s.dtype, sd, num::kValue, 1.0f); !e.empty())
                    return release(), e;
            sets_.push_back(std::move(in));
        }
        if (auto e = out_.allocate(rows * dv * ab, "output"); !e.empty())
            return release(), e;
        if (splits_ > 1) {
            if (auto e =
                    partialOut_.allocate(std::size_t(splits_) * rows * dv * 4, "split partials");
                !e.empty())
                return release(), e;
            if (auto e = partialLse_.allocate(std::size_t(splits_) * rows * 4, "split log-sum-exp");
                !e.empty())
                return release(), e;
        }
        KVSCOPE_CUDA_CALL(cudaStreamSynchronize(stream_));
        return {};
    }

    std::string poisonOutput() override {
        KVSCOPE_CUDA_CALL(cudaMemsetAsync(out_.ptr, 0xff, out_.bytes, stream_));
        if (partialOut_.ptr)
            KVSCOPE_CUDA_CALL(cudaMemsetAsync(partialOut_.ptr, 0xff, partialOut_.bytes, stream_));
        KVSCOPE_CUDA_CALL(cudaStreamSynchronize(stream_));
        return {};
    }

    std::string run(int set) override {
        if (auto e = launch(set); !e.empty())
            return e;
        KVSCOPE_CUDA_CALL(cudaStreamSynchronize(stream_));
        return {};
    }

    std::string timeRun(int set, double* seconds) override {
        KVSCOPE_CUDA_CALL(cudaEventRecord(start_, stream_));
        if (auto e = launch(set); !e.empty())
            return e;
        KVSCOPE_CUDA_CALL(cudaEventRecord(stop_, stream_));
        KVSCOPE_CUDA_CALL(cudaEventSynchronize(stop_));
        float ms = 0;
        KVSCOPE_CUDA_CALL(cudaEventElapsedTime(&ms, start_, stop_));
        *seconds = double(ms) * 1e-3;
        return {};
    }

    std::string readOutput(std::vector<float>* out) override {
        const std::size_t n = out_.bytes / 2; // activation types on cuda are 16-bit
        std::vector<std::uint16_t> raw(n);
        KVSCOPE_CUDA_CALL(cudaMemcpy(raw.data(), out_.ptr, n * 2, cudaMemcpyDeviceToHost));
        out->resize(n);
        const bool fp16 = shape_.dtype == KvDtype::Fp16;
        for (std::size_t i = 0; i < n; ++i)
            (*out)[i] = fp16 ? num::fp16ToFloat(raw[i]) : num::bf16ToFloat(raw[i]);
        // The fp16 decoder treats exponent 31 as finite; report poisoned halves as NaN.
        if (fp16)
            for (std::size_t i = 0; i < n; ++i)
                if ((raw[i] & 0x7c00u) == 0x7c00u)
                    (*out)[i] = __builtin_nanf("");
        return {};
    }

    std::string kernelName() const override {
        const std::string base =
            shape_.kind == Attention::Mla ? "cuda-mla-absorbed-mma" : "cuda-gqa-mma";
        return splits_ > 1 ? base + "-split" : base;
    }
    int splits() const override { return splits_; }

    void release() override {
        sets_.clear();
        out_.reset();
        partialOut_.reset();
        partialLse_.reset();
    }

private:
    struct InputSet {
        DeviceBuffer q, k, v;
    };

    std::size_t heldBytes() const {
        std::size_t n = out_.bytes + partialOut_.bytes + partialLse_.bytes;
        for (const auto& s : sets_)
            n += s.q.bytes + s.k.bytes + s.v.bytes;
        return n;
    }

    std::string fill(DeviceBuffer& buf, std::size_t n, KvDtype format, std::uint64_t seed,
                     std::uint32_t tensor, float scale) {
        const int blocks = prop_.multiProcessorCount * 8;
        cuda::fillKernel<<<blocks, 256, 0, stream_>>>(buf.bytesPtr(), n, formatOf(format), seed,
                                                      tensor, scale);
        KVSCOPE_CUDA_CALL(cudaGetLastError());
        return {};
    }

    DecodeParams params(int set) const {
        const InputSet& in = sets_[std::size_t(set)];
        DecodeParams p{};
        p.q = in.q.ptr;
        p.k = in.k.bytesPtr();
        p.v = in.v.bytesPtr();
        p.out = out_.ptr;
        p.partialOut = static_cast<float*>(partialOut_.ptr);
        p.partialLse = static_cast<float*>(partialLse_.ptr);
        p.batch = int(shape_.batch);
        p.qHeads = int(shape_.qHeads);
        p.kvHeads = shape_.kind == Attention::Mla ? 1 : int(shape_.kvHeads);
        p.group = shape_.kind == Attention::Mla ? int(shape_.qHeads) : int(shape_.groupSize());
        p.context = int(shape_.context);
        p.splits = splits_;
        p.tokensPerSplit = tokensPerSplit_;
        p.scaleLog2 = float(softmaxScale(shape_) * 1.4426950408889634);
        return p;
    }

    /// Raises the dynamic shared-memory limit of the kernel this shape uses and reads how many
    /// of its blocks one SM holds (blocksPerSm_).
    std::string configureKernel() {
        const DecodeShape& s = shape_;
        auto configure = [&](const void* kernel, int smemBytes) -> std::string {
            KVSCOPE_CUDA_CALL(cudaFuncSetAttribute(
                kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smemBytes));
            KVSCOPE_CUDA_CALL(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                &blocksPerSm_, kernel, cuda::kThreads, std::size_t(smemBytes)));
            blocksPerSm_ = std::max(1, blocksPerSm_);
            return {};
        };
        if (s.kind == Attention::Mla) {
            KVSCOPE_DISPATCH_KV_DTYPE(s.dtype, Kv, {
                return configure(reinterpret_cast<const void*>(cuda::mlaDecodeKernel<Kv>),
                                 cuda::MlaTile<Kv>::kSmemBytes);
            })
        }
        const std::int64_t g = s.groupSize();
        KVSCOPE_DISPATCH_KV_DTYPE(
            s.dtype, Kv,
            {KVSCOPE_DISPATCH_HEAD_DIM(
                s.headDim, D, {KVSCOPE_DISPATCH_GQA_GROUP_SIZE(g, MT, {
                    if constexpr (D == 256 && MT == 8) {
                        return std::string("unsupported group size with head dim 256 (at most 64)");
                    } else {
                        return configure(
                            reinterpret_cast<const void*>(cuda::gqaDecodeKernel<D, MT, Kv>),
                            cuda::GqaTile<D, MT, Kv>::kSmemBytes);
                    }
                })})})
        return {};
    }

    std::string launch(int set) {
        if (set < 0 || std::size_t(set) >= sets_.size())
            return "input set " + std::to_string(set) + " was not prepared";
        const DecodeShape& s = shape_;
        const DecodeParams p = params(set);
        const bool fp16 = s.dtype == KvDtype::Fp16;
        if (s.kind == Attention::Mla) {
            const dim3 grid(unsigned(splits_), unsigned((s.qHeads + 15) / 16), unsigned(s.batch));
            KVSCOPE_DISPATCH_KV_DTYPE(s.dtype, Kv, {
                cuda::mlaDecodeKernel<Kv>
                    <<<grid, cuda::kThreads, cuda::MlaTile<Kv>::kSmemBytes, stream_>>>(p);
            })
        } else {
            const std::int64_t g = s.groupSize();
            const dim3 grid(unsigned(splits_), unsigned(s.kvHeads), unsigned(s.batch));
            KVSCOPE_DISPATCH_KV_DTYPE(
                s.dtype, Kv,
                {KVSCOPE_DISPATCH_HEAD_DIM(
                    s.headDim, D, {KVSCOPE_DISPATCH_GQA_GROUP_SIZE(g, MT, {
                        if constexpr (D == 256 && MT == 8) {
                            return std::string(
                                "unsupported group size with head dim 256 (at most 64)");
                        } else {
                            cuda::gqaDecodeKernel<D, MT, Kv>
                                <<<grid, cuda::kThreads, cuda::GqaTile<D, MT, Kv>::kSmemBytes,
                                   stream_>>>(p);
                        }
                    })})})
        }
        KVSCOPE_CUDA_CALL(cudaGetLastError());
        if (splits_ > 1) {
            const unsigned rows = unsigned(s.batch * s.qHeads);
            const int dv = int(s.valueDim());
            if (fp16)
                cuda::combineKernel<true><<<rows, 128, 0, stream_>>>(p, dv);
            else
                cuda::combineKernel<false><<<rows, 128, 0, stream_>>>(p, dv);
            KVSCOPE_CUDA_CALL(cudaGetLastError());
        }
        return {};
    }

    std::string peakCeiling(Ceilings* c) {
        cublasHandle_t handle = nullptr;
        KVSCOPE_CUBLAS_CALL(cublasCreate(&handle));
        struct HandleGuard {
            cublasHandle_t h;
            ~HandleGuard() { cublasDestroy(h); }
        } guard{handle};
        KVSCOPE_CUBLAS_CALL(cublasSetStream(handle, stream_));
        const int n = 8192;
        const std::size_t elems = std::size_t(n) * n;
        DeviceBuffer a, b, d;
        if (auto e = a.allocate(elems * 2, "gemm A"); !e.empty())
            return e;
        if (auto e = b.allocate(elems * 2, "gemm B"); !e.empty())
            return e;
        if (auto e = d.allocate(elems * 2, "gemm D"); !e.empty())
            return e;
        for (int fp16 = 0; fp16 < 2; ++fp16) {
            const KvDtype t = fp16 ? KvDtype::Fp16 : KvDtype::Bf16;
            const cudaDataType_t dt = fp16 ? CUDA_R_16F : CUDA_R_16BF;
            // Random operands (never zeros: zeros run faster than real data).
            if (auto e = fill(a, elems, t, 11, 5, 1.0f); !e.empty())
                return e;
            if (auto e = fill(b, elems, t, 12, 6, 1.0f); !e.empty())
                return e;
            const float alpha = 1.0f, beta = 0.0f;
            std::vector<double> times;
            for (int rep = 0; rep < 13; ++rep) {
                KVSCOPE_CUDA_CALL(cudaEventRecord(start_, stream_));
                KVSCOPE_CUBLAS_CALL(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha,
                                                 a.ptr, dt, n, b.ptr, dt, n, &beta, d.ptr, dt, n,
                                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
                KVSCOPE_CUDA_CALL(cudaEventRecord(stop_, stream_));
                KVSCOPE_CUDA_CALL(cudaEventSynchronize(stop_));
                float ms = 0;
                KVSCOPE_CUDA_CALL(cudaEventElapsedTime(&ms, start_, stop_));
                if (rep >= 3)
                    times.push_back(double(ms) * 1e-3);
            }
            const double peak = 2.0 * double(n) * n * n / medianOf(times);
            c->peakFlopPerSecond[std::string(dtypeName(t))] = peak;
        }
        // fp8 KV is dequantised to fp16 mma (GQA) or bf16 mma (MLA): the higher of the two, so
        // neither kernel's points can pass their peak.
        c->peakFlopPerSecond[std::string(dtypeName(KvDtype::Fp8E4m3))] =
            std::max(c->peakFlopPerSecond[std::string(dtypeName(KvDtype::Bf16))],
                     c->peakFlopPerSecond[std::string(dtypeName(KvDtype::Fp16))]);
        c->peakKernel = "cublasGemmEx 8192^3, bf16/fp16 in, fp32 accumulate, median of 10";
        return {};
    }

    int device_ = 0;
    cudaDeviceProp prop_{};
    cudaStream_t stream_ = nullptr;
    cudaEvent_t start_ = nullptr, stop_ = nullptr;
    DecodeShape shape_;
    int splits_ = 1, tokensPerSplit_ = 0, blocksPerSm_ = 1;
    std::vector<InputSet> sets_;
    DeviceBuffer out_, partialOut_, partialLse_;
    cuda::ReadCeilings reads_; // declared last: freed first, while the device is still set
};

} // namespace

std::unique_ptr<Engine> makeCudaEngine(std::string* error) {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        std::string why;
        if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0))
            why = "no CUDA device found";
        else if (e == cudaErrorInsufficientDriver)
            why = "no NVIDIA driver, or one too old for this CUDA runtime";
        else
            why = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(e);
        cudaGetLastError();
        if (error)
            *error = why;
        return nullptr;
    }
    auto engine = std::make_unique<CudaEngine>(0);
    if (auto why = engine->init(); !why.empty()) {
        if (error)
            *error = why;
        return nullptr;
    }
    return engine;
}

} // namespace kvscope::gpu::detail
