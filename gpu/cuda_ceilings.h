// The CUDA engine's read ceilings: a family of read kernels (load flavour, loads in flight per
// thread, cp.async into shared memory as the decode kernels load) over a buffer many times L2,
// the best of them as the DRAM read ceiling, an L2-resident read as the roofline's inner line,
// and the pieces the harness pairs with every timed repeat. Internal to gpu/; included by
// cuda_backend.cu only.
#pragma once

#include "gpu/backend.h"

#include <cstddef>
#include <cuda_runtime.h>
#include <string>
#include <vector>

namespace kvscope::gpu::cuda {

class ReadCeilings {
public:
    ReadCeilings() = default;
    ReadCeilings(const ReadCeilings&) = delete;
    ReadCeilings& operator=(const ReadCeilings&) = delete;
    ~ReadCeilings();

    /// Times every kernel of the family over a buffer of max(32 x L2, 1 GiB) (at most a
    /// quarter of free memory) and over an L2-resident third of L2; fills readBytesPerSecond,
    /// readKernel, readFamily (best first) and l2ReadBytesPerSecond. Keeps the buffer for
    /// piece(). Returns "" or an error line.
    std::string measure(const cudaDeviceProp& prop, cudaStream_t stream, Ceilings* c,
                        const Progress& progress);

    /// One piece of about `pointBytes` (at least 1 MiB, at most half the buffer) read by the
    /// `which`-th of the two best kernels at a cursor that walks the buffer, so the piece is
    /// cold: its bytes were last read a whole buffer ago. False before measure() or on error.
    bool piece(int which, double pointBytes, double* readBytesPerSecond, std::string* kernel);

    /// Frees the buffer (piece() then returns false until the next measure()).
    void release();

private:
    struct Ranked {
        int kernel;
        double value;
    };
    std::string ensureEvents();
    std::string timeRead(int kernel, std::size_t offset, std::size_t bytes, int passes,
                         double* seconds);
    std::string measureDram(Ceilings* c, const Progress& progress);
    std::string measureL2(Ceilings* c);

    cudaStream_t stream_ = nullptr;
    cudaEvent_t start_ = nullptr, stop_ = nullptr;
    int multiprocessors_ = 0;
    std::size_t l2Bytes_ = 0;
    void* buffer_ = nullptr;
    std::size_t bufferBytes_ = 0, cursor_ = 0;
    unsigned* sink_ = nullptr;
    std::vector<Ranked> ranked_; // the family, best first, after measure()
};

} // namespace kvscope::gpu::cuda
