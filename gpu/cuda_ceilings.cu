// The CUDA read-ceiling family (gpu/cuda_ceilings.h). Every member reads 16-byte vectors in a
// grid-stride loop, so the grid's loads walk the buffer as one front; the members differ in
// the load instruction (streaming, non-coherent, non-coherent without L1 allocation and with
// a 256-byte L2 prefetch, cp.async into shared memory as the decode kernels load K and V) and
// in the loads each thread keeps in flight (4 or 8). The ceiling is the best member, so no
// decode kernel can beat its ceiling with a load pattern the family lacks.
#include "gpu/cuda_ceilings.h"
#include "gpu/cuda_device.cuh"
#include "gpu/cuda_dispatch.h"

#include <algorithm>
#include <cstdint>

namespace kvscope::gpu::cuda {
namespace {

enum Load { kStreaming, kNonCoherent, kNoAllocate };

template <int L> __device__ __forceinline__ uint4 load16(const uint4* p) {
    if constexpr (L == kStreaming) {
        return __ldcs(p);
    } else if constexpr (L == kNonCoherent) {
        return __ldg(p);
    } else {
        uint4 r;
        asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                     : "l"(p));
        return r;
    }
}

__device__ __forceinline__ void fold(uint4& x, const uint4& a) {
    x.x ^= a.x, x.y ^= a.y, x.z ^= a.z, x.w ^= a.w;
}

/// `passes` passes over n 16-byte vectors, U independent loads in flight per thread.
template <int L, int U>
__global__ void __launch_bounds__(512)
    readKernel(const uint4* __restrict__ src, std::size_t n, int passes, unsigned* sink) {
    const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
    uint4 x = make_uint4(0, 0, 0, 0);
    for (int pass = 0; pass < passes; ++pass) {
        std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
        for (; i + (U - 1) * stride < n; i += U * stride) {
            uint4 v[U];
#pragma unroll
            for (int u = 0; u < U; ++u)
                v[u] = load16<L>(src + i + u * stride);
#pragma unroll
            for (int u = 0; u < U; ++u)
                fold(x, v[u]);
        }
        for (; i < n; i += stride)
            fold(x, load16<L>(src + i));
    }
    if ((x.x ^ x.y ^ x.z ^ x.w) == 0x9e3779b9u) // practically never: keeps the loads alive
        sink[0] = x.x;
}

/// The same walk through cp.async (16 bytes, L2 only) into two shared-memory stages of U
/// vectors per thread: one stage fills while the other lands.
template <int U>
__global__ void __launch_bounds__(256)
    readCpAsyncKernel(const uint4* __restrict__ src, std::size_t n, int passes, unsigned* sink) {
    extern __shared__ uint4 stage[]; // [2][U][blockDim.x]
    const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
    int buf = 0;
    for (int pass = 0; pass < passes; ++pass) {
        std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
        for (; i < n; i += U * stride) {
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const bool valid = i + u * stride < n;
                cpAsync16(&stage[(buf * U + u) * blockDim.x + threadIdx.x],
                          src + (valid ? i + u * stride : 0), valid);
            }
            cpAsyncCommit();
            cpAsyncWait<1>();
            buf ^= 1;
        }
    }
    cpAsyncWait<0>();
    const uint4 v = stage[threadIdx.x];
    if ((v.x ^ v.y ^ v.z ^ v.w) == 0x9e3779b9u)
        sink[0] = v.x;
}

struct Member {
    const char* name;
    const void* kernel;
    int threads;
    int smemBytes; // dynamic shared memory per block
};

template <int U> constexpr int cpAsyncSmem() {
    return 2 * U * 256 * 16;
}

const Member kFamily[] = {
    {"ld.cs-u4", reinterpret_cast<const void*>(readKernel<kStreaming, 4>), 512, 0},
    {"ld.cs-u8", reinterpret_cast<const void*>(readKernel<kStreaming, 8>), 512, 0},
    {"ld.nc-u4", reinterpret_cast<const void*>(readKernel<kNonCoherent, 4>), 512, 0},
    {"ld.nc-u8", reinterpret_cast<const void*>(readKernel<kNonCoherent, 8>), 512, 0},
    {"ld.nc.noalloc.pf256-u4", reinterpret_cast<const void*>(readKernel<kNoAllocate, 4>), 512, 0},
    {"ld.nc.noalloc.pf256-u8", reinterpret_cast<const void*>(readKernel<kNoAllocate, 8>), 512, 0},
    {"cp.async-u4", reinterpret_cast<const void*>(readCpAsyncKernel<4>), 256, cpAsyncSmem<4>()},
    {"cp.async-u8", reinterpret_cast<const void*>(readCpAsyncKernel<8>), 256, cpAsyncSmem<8>()},
};
constexpr int kMembers = int(sizeof kFamily / sizeof kFamily[0]);

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace

ReadCeilings::~ReadCeilings() {
    release();
    if (start_)
        cudaEventDestroy(start_);
    if (stop_)
        cudaEventDestroy(stop_);
}

void ReadCeilings::release() {
    if (buffer_)
        cudaFree(buffer_);
    if (sink_)
        cudaFree(sink_);
    buffer_ = nullptr, sink_ = nullptr;
    bufferBytes_ = cursor_ = 0;
    ranked_.clear();
}

std::string ReadCeilings::ensureEvents() {
    if (!start_)
        KVSCOPE_CUDA_CALL(cudaEventCreate(&start_));
    if (!stop_)
        KVSCOPE_CUDA_CALL(cudaEventCreate(&stop_));
    return {};
}

std::string ReadCeilings::timeRead(int kernel, std::size_t offset, std::size_t bytes, int passes,
                                   double* seconds) {
    const Member& m = kFamily[kernel];
    int perSm = 0;
    KVSCOPE_CUDA_CALL(
        cudaFuncSetAttribute(m.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, m.smemBytes));
    KVSCOPE_CUDA_CALL(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, m.kernel, m.threads, m.smemBytes));
    const dim3 grid(unsigned(multiprocessors_ * std::max(1, perSm))), block(unsigned(m.threads));
    const uint4* src = reinterpret_cast<const uint4*>(static_cast<char*>(buffer_) + offset);
    std::size_t n = bytes / 16;
    void* args[] = {&src, &n, &passes, &sink_};
    KVSCOPE_CUDA_CALL(cudaEventRecord(start_, stream_));
    KVSCOPE_CUDA_CALL(
        cudaLaunchKernel(m.kernel, grid, block, args, std::size_t(m.smemBytes), stream_));
    KVSCOPE_CUDA_CALL(cudaEventRecord(stop_, stream_));
    KVSCOPE_CUDA_CALL(cudaEventSynchronize(stop_));
    float ms = 0;
    KVSCOPE_CUDA_CALL(cudaEventElapsedTime(&ms, start_, stop_));
    *seconds = double(ms) * 1e-3;
    return {};
}

std::string ReadCeilings::measure(const cudaDeviceProp& prop, cudaStream_t stream, Ceilings* c,
                                  const Progress& progress) {
    release();
    stream_ = stream;
    multiprocessors_ = prop.multiProcessorCount;
    l2Bytes_ = std::size_t(std::max(prop.l2CacheSize, 1 << 20));
    if (auto e = ensureEvents(); !e.empty())
        return e;
    std::size_t freeBytes = 0, total = 0;
    KVSCOPE_CUDA_CALL(cudaMemGetInfo(&freeBytes, &total));
    // Many times L2 (H200: 60 MB): at least 1 GiB, at most a quarter of free memory.
    std::size_t bytes = std::max<std::size_t>(l2Bytes_ * 32, std::size_t(1) << 30);
    bytes = std::min(bytes, freeBytes / 4) / 4096 * 4096;
    if (const cudaError_t e = cudaMalloc(&buffer_, bytes); e != cudaSuccess) {
        buffer_ = nullptr;
        cudaGetLastError();
        return std::string("out of device memory allocating the read-ceiling buffer (") +
               std::to_string(bytes >> 20) + " MiB): " + cudaGetErrorString(e);
    }
    bufferBytes_ = bytes;
    KVSCOPE_CUDA_CALL(cudaMalloc(reinterpret_cast<void**>(&sink_), 64));
    // Any bit pattern will do for a read; the loads' results only feed an XOR.
    KVSCOPE_CUDA_CALL(cudaMemsetAsync(buffer_, 0x5a, bufferBytes_, stream_));
    KVSCOPE_CUDA_CALL(cudaStreamSynchronize(stream_));
    if (auto e = measureDram(c, progress); !e.empty())
        return e;
    return measureL2(c);
}

std::string ReadCeilings::measureDram(Ceilings* c, const Progress& progress) {
    std::vector<std::vector<double>> times(kMembers);
    // Rounds over the family, so a drift of the device's state reaches every member alike.
    for (int round = 0; round < 12; ++round) {
        if (progress && !progress(0.05 + 0.35 * round / 12.0, "cuda read bandwidth"))
            return "cancelled";
        for (int k = 0; k < kMembers; ++k) {
            double t = 0;
            if (auto e = timeRead(k, 0, bufferBytes_, 1, &t); !e.empty())
                return std::string(kFamily[k].name) + ": " + e;
            if (round >= 2) // warm-up
                times[std::size_t(k)].push_back(t);
        }
    }
    ranked_.clear();
    for (int k = 0; k < kMembers; ++k)
        ranked_.push_back({k, double(bufferBytes_) / median(times[std::size_t(k)])});
    std::sort(ranked_.begin(), ranked_.end(),
              [](const Ranked& a, const Ranked& b) { return a.value > b.value; });
    c->readFamily.clear();
    for (const Ranked& r : ranked_)
        c->readFamily.push_back({kFamily[r.kernel].name, r.value});
    c->readBytesPerSecond = ranked_.front().value;
    c->readKernel = std::string(kFamily[ranked_.front().kernel].name) + " over " +
                    std::to_string(bufferBytes_ >> 20) + " MiB (" +
                    std::to_string(bufferBytes_ / l2Bytes_) + "x L2), best of " +
                    std::to_string(kMembers) + " read kernels, median of 10 each";
    return {};
}

std::string ReadCeilings::measureL2(Ceilings* c) {
    // A third of L2, read 32 times per launch: after the first pass every load hits L2.
    const std::size_t bytes = l2Bytes_ / 3 / 4096 * 4096;
    const int passes = 32;
    double best = 0;
    for (int k = 0; k < kMembers; ++k) {
        std::vector<double> times;
        for (int rep = 0; rep < 7; ++rep) {
            double t = 0;
            if (auto e = timeRead(k, 0, bytes, passes, &t); !e.empty())
                return std::string(kFamily[k].name) + " (L2): " + e;
            if (rep >= 2)
                times.push_back(t);
        }
        best = std::max(best, double(bytes) * passes / median(times));
    }
    c->l2ReadBytesPerSecond = best;
    return {};
}

bool ReadCeilings::piece(int which, double pointBytes, double* readBytesPerSecond,
                         std::string* kernel) {
    if (!buffer_ || ranked_.empty())
        return false;
    const Ranked& r = ranked_[std::size_t(which) % std::min<std::size_t>(2, ranked_.size())];
    std::size_t bytes = std::size_t(std::max(pointBytes, double(1 << 20)));
    bytes = std::min(bytes, bufferBytes_ / 2) / 4096 * 4096;
    if (cursor_ + bytes > bufferBytes_)
        cursor_ = 0;
    double t = 0;
    if (!timeRead(r.kernel, cursor_, bytes, 1, &t).empty() || !(t > 0))
        return false;
    cursor_ += bytes;
    *readBytesPerSecond = double(bytes) / t;
    *kernel = kFamily[r.kernel].name;
    return true;
}

} // namespace kvscope::gpu::cuda
