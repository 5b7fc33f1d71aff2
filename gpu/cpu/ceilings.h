// The CPU's measured ceilings (read bandwidth from DRAM, L3 and L2; arithmetic peak per KV
// dtype), each the maximum over a family of kernels and thread counts, and the short
// re-measurement the harness takes right before and after every point.
#pragma once

#include "gpu/backend.h"
#include "gpu/cpu/buffer.h"
#include "gpu/cpu/ceiling_kernels.h"
#include "gpu/cpu/thread_pool.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvscope::gpu::detail::cpu {

/// Cache size of a level (2 or 3) of cpu0: sysconf(_SC_LEVEL<n>_CACHE_SIZE), else sysfs; 0 when
/// unknown.
std::int64_t cacheLevelBytes(int level);
/// The last-level cache (L3, else L2), 0 when unknown.
std::int64_t lastLevelCacheBytes();
/// "model name" of /proc/cpuinfo, "CPU" when unreadable.
std::string cpuModelName();
/// Physical memory, bytes (0 when unknown).
std::int64_t physicalMemoryBytes();
/// This CPU as a measurement device: its model name, memory, last-level cache and `threads`.
DeviceInfo cpuDeviceInfo(int threads, std::int64_t lastCacheBytes);

/// The best unit a kernel for this KV dtype can compute on here: AMX or vdpbf16ps for bf16 and
/// fp8 where the CPU has them (and KVSCOPE_CPU_KERNEL does not force another), else fp32 FMA.
/// (A shape's kernel may use a slower one: the vdpbf16ps kernel serves small groups.)
ComputeUnit kernelUnit(KvDtype d);

class CeilingMeter {
public:
    CeilingMeter(ThreadPool& pool, std::int64_t llcBytes, std::int64_t l2Bytes,
                 std::int64_t memoryBudget);
    /// Every family on every thread count up to the pool's size.
    Ceilings measure(const Progress& progress);
    /// The piece kernels of the last measure() (the two best reads and the best with software
    /// prefetch) and the dtype's winning peak kernel: the ceilings a point is placed against. One
    /// pass over the buffer per kernel, timed in pieces of about `pointBytes` (at least 1 MiB per
    /// thread); the ceiling is the fastest piece, as the point's repeats are runs of that size. The
    /// peak likewise: the fastest of 16 short runs of the unit's winning chain kernel.
    bool spot(ComputeUnit unit, double pointBytes, double* readBytesPerSecond,
              double* peakFlopPerSecond, std::string* readKernel);

    /// One piece of about `pointBytes` (at least 1 MiB per thread) read by the `which`-th of
    /// the piece kernels (wrapping) at a cursor that walks the buffer, so each piece is
    /// cold: the last read of its bytes was a whole buffer (4x the LLC) ago.
    bool piece(int which, double pointBytes, double* readBytesPerSecond, std::string* readKernel);

    /// A span of memory another owner holds (an input set of the point).
    struct Region {
        const std::uint8_t* data;
        std::int64_t bytes;
    };
    /// One piece read from `regions` (each split among the threads, in 64 KiB granules) by the
    /// `which`-th of the piece kernels: a ceiling measured on the very pages a point reads, so
    /// it sees their backing (a VM's host pages are not all equally fast) and not the
    /// meter's. False when the regions hold less than a granule per thread.
    bool pieceOf(int which, const std::vector<Region>& regions, double* readBytesPerSecond,
                 std::string* readKernel);

    /// The winning chain kernel's FLOP/s of a unit in the last measure() (FMA's if the unit was
    /// not measured), at any vector width: the decode step's GEMMs run the widest.
    double unitPeak(ComputeUnit unit) const;

private:
    struct Ranked {
        std::size_t kernel;
        unsigned threads;
        double value;
    };
    /// The `which`-th piece kernel (wrapping), measuring the families first if need be;
    /// nullptr when there is none.
    const Ranked* pieceKernel(int which);
    std::string prepareBuffer();
    double timeRead(const ReadKernel& k, unsigned threads, std::int64_t bytesPerThread, int passes,
                    int reps, std::int64_t offset = 0);
    double fastestPiece(const ReadKernel& k, unsigned threads, std::int64_t pieceBytes);
    std::int64_t pieceBytesPerThread(unsigned threads, std::int64_t pieceBytes) const;
    std::int64_t spotSpan() const;
    double timeCompute(const ComputeKernel& k, std::int64_t iterations, int reps);
    void measureDram(Ceilings& c, const Progress& progress);
    double measureResident(std::int64_t bytesPerThread, int passes);
    void measurePeaks(Ceilings& c);

    ThreadPool& pool_;
    std::int64_t llc_, l2_, budget_;
    std::vector<ReadKernel> reads_;
    std::vector<ComputeKernel> computes_;
    Buffer buffer_;
    std::int64_t bufferBytes_ = 0;
    std::int64_t pieceCursor_ = 0;     // where the next paired piece starts
    std::vector<Ranked> rankedReads_;  // best first
    std::vector<Ranked> pieceKernels_; // read by spot() and piece(): see measureDram
    std::size_t fmaWinner() const;
    std::size_t unitWinner(ComputeUnit u) const;
    std::size_t winnerFor(KvDtype d) const;
    std::size_t winner_[3] = {0, 0, 0}; // per ComputeUnit
    double best_[3] = {0, 0, 0};
    std::vector<double> peaks_; // FLOP/s of each chain kernel in the last measure()
    bool measured_ = false;
    std::vector<float> sink_;
};

} // namespace kvscope::gpu::detail::cpu
