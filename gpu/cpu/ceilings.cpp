#include "gpu/cpu/ceilings.h"

#include "gpu/cpu/amx_kernel.h"
#include "gpu/cpu/bf16_kernel.h"
#include "gpu/cpu/portable_kernel.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace kvscope::gpu::detail::cpu {
namespace {

std::int64_t parseCacheSize(const std::string& text) {
    std::int64_t v = 0;
    std::size_t i = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9')
        v = v * 10 + (text[i++] - '0');
    if (i < text.size() && (text[i] == 'K' || text[i] == 'k'))
        v <<= 10;
    else if (i < text.size() && (text[i] == 'M' || text[i] == 'm'))
        v <<= 20;
    return v;
}

std::int64_t sysfsCacheBytes(int wantLevel) {
    for (int idx = 0; idx < 16; ++idx) {
        const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx);
        std::ifstream lf(dir + "/level"), sf(dir + "/size"), tf(dir + "/type");
        if (!lf || !sf)
            continue;
        int level = 0;
        std::string size, type;
        lf >> level;
        sf >> size;
        tf >> type;
        if (level == wantLevel && type != "Instruction")
            return parseCacheSize(size);
    }
    return 0;
}

/// x rounded down to a multiple of `to`, and at least `to`: for buffers the meter owns.
std::int64_t roundDown(std::int64_t x, std::int64_t to) {
    return std::max(to, x / to * to);
}

double seconds(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string mib(std::int64_t bytes) {
    return std::to_string(bytes >> 20) + " MiB";
}

/// Bytes of [p, p + n) the kernel backs with transparent huge pages (/proc/self/smaps'
/// AnonHugePages of the mappings that overlap it; a mapping partly outside counts in full, so
/// the share is clamped); -1 where smaps cannot be read.
std::int64_t hugePageBytes(const void* p, std::int64_t n) {
    std::ifstream f("/proc/self/smaps");
    if (!f)
        return -1;
    const auto lo = reinterpret_cast<std::uintptr_t>(p), hi = lo + std::uintptr_t(n);
    std::int64_t sum = 0;
    bool inside = false;
    for (std::string line; std::getline(f, line);) {
        std::uintptr_t a = 0, b = 0;
        char dash = 0;
        std::istringstream head(line);
        if (head >> std::hex >> a >> dash >> b && dash == '-') {
            inside = a < hi && b > lo;
            continue;
        }
        if (inside && line.rfind("AnonHugePages:", 0) == 0)
            sum += std::stoll(line.substr(14)) << 10;
    }
    return std::min(sum, n);
}

/// ", 2 MiB pages over N%" of the read buffer, or ", 4 KiB pages" where it got none; empty where
/// that cannot be told.
std::string pageNote(const void* p, std::int64_t n) {
    const std::int64_t huge = hugePageBytes(p, n);
    if (huge < 0 || n <= 0)
        return {};
    if (huge == 0)
        return ", 4 KiB pages";
    return ", 2 MiB pages over " + std::to_string(100 * huge / n) + "%";
}

} // namespace

std::int64_t cacheLevelBytes(int level) {
    long v = -1;
#if defined(_SC_LEVEL3_CACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
    v = sysconf(level == 3 ? _SC_LEVEL3_CACHE_SIZE : _SC_LEVEL2_CACHE_SIZE);
#endif
    return v > 0 ? std::int64_t(v) : sysfsCacheBytes(level);
}

std::int64_t lastLevelCacheBytes() {
    const std::int64_t l3 = cacheLevelBytes(3);
    return l3 > 0 ? l3 : cacheLevelBytes(2);
}

DeviceInfo cpuDeviceInfo(int threads, std::int64_t lastCacheBytes) {
    DeviceInfo d;
    d.name = cpuModelName();
    d.memoryBytes = physicalMemoryBytes();
    d.lastCacheBytes = lastCacheBytes;
    d.multiprocessors = threads;
    return d;
}

std::string cpuModelName() {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("model name", 0) == 0) {
            auto c = line.find(':');
            if (c != std::string::npos)
                return line.substr(line.find_first_not_of(' ', c + 1));
        }
    return "CPU";
}

std::int64_t physicalMemoryBytes() {
    const long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && pageSize > 0 ? std::int64_t(pages) * pageSize : 0;
}

CeilingMeter::CeilingMeter(ThreadPool& pool, std::int64_t llc, std::int64_t l2, std::int64_t budget)
    : pool_(pool), llc_(llc), l2_(l2), budget_(budget), reads_(readKernelFamily()),
      computes_(computeKernelFamily()), sink_(pool.size(), 0.0f) {}

/// The DRAM buffer: 4x the last-level cache (256 MiB when unknown), within 256 MiB..2 GiB and
/// half the memory budget; first touched by the pool's threads.
std::string CeilingMeter::prepareBuffer() {
    if (buffer_.data)
        return {};
    std::int64_t bytes = std::clamp<std::int64_t>(4 * llc_, 256ll << 20, 2ll << 30);
    bytes = roundDown(std::min(bytes, std::max<std::int64_t>(budget_ / 2, 64ll << 20)),
                      kReadGranule * 8);
    if (!buffer_.allocate(std::size_t(bytes)))
        return "out of memory allocating the " + mib(bytes) + " read buffer";
    bufferBytes_ = bytes;
    const std::int64_t parts = pool_.size(), per = bytes / parts;
    pool_.parallelFor(parts, [&](std::int64_t t) {
        float* p = reinterpret_cast<float*>(buffer_.data + t * per);
        std::fill(p, p + per / 4, 1.0f + float(t));
    });
    return {};
}

/// Best (highest) bytes/s over `reps` runs: thread t reads [t * bytesPerThread, +bytesPerThread)
/// `passes` times.
double CeilingMeter::timeRead(const ReadKernel& k, unsigned threads, std::int64_t bytesPerThread,
                              int passes, int reps, std::int64_t offset) {
    double best = 0;
    for (int rep = 0; rep < reps; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        pool_.parallelFor(threads, [&](std::int64_t t) {
            const std::uint8_t* p = buffer_.data + offset + t * bytesPerThread;
            for (int pass = 0; pass < passes; ++pass)
                sink_[std::size_t(t)] += k.fn(p, bytesPerThread);
        });
        best = std::max(best, double(threads) * double(bytesPerThread) * passes / seconds(t0));
    }
    return best;
}

double CeilingMeter::timeCompute(const ComputeKernel& k, std::int64_t iterations, int reps) {
    const unsigned threads = pool_.size();
    double best = 0;
    for (int rep = 0; rep < reps; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        pool_.parallelFor(
            threads, [&](std::int64_t t) { sink_[std::size_t(t)] += k.fn(iterations, float(t)); });
        best = std::max(best, k.flopsPerIteration * double(iterations) * threads / seconds(t0));
    }
    return best;
}

/// Every read kernel on every thread, then the three best on each smaller thread count.
void CeilingMeter::measureDram(Ceilings& c, const Progress& progress) {
    const unsigned all = pool_.size();
    rankedReads_.clear();
    auto bytesPer = [&](unsigned th) { return roundDown(bufferBytes_ / th, kReadGranule); };
    for (std::size_t i = 0; i < reads_.size(); ++i) {
        rankedReads_.push_back({i, all, timeRead(reads_[i], all, bytesPer(all), 1, 1)});
        if (progress)
            progress(0.1 + 0.5 * double(i) / double(reads_.size()), "cpu read ceilings");
    }
    auto byValue = [](const Ranked& a, const Ranked& b) { return a.value > b.value; };
    std::sort(rankedReads_.begin(), rankedReads_.end(), byValue);
    // One pass each, then two more for the five best (a pass the machine slowed down must not
    // drop a kernel from the top).
    for (std::size_t i = 0; i < std::min<std::size_t>(5, rankedReads_.size()); ++i)
        rankedReads_[i].value =
            std::max(rankedReads_[i].value,
                     timeRead(reads_[rankedReads_[i].kernel], all, bytesPer(all), 1, 2));
    std::sort(rankedReads_.begin(), rankedReads_.end(), byValue);
    const std::vector<Ranked> top(
        rankedReads_.begin(), rankedReads_.begin() + std::min<std::size_t>(3, rankedReads_.size()));
    for (unsigned th = 1; th < all; ++th)
        for (const Ranked& r : top)
            rankedReads_.push_back(
                {r.kernel, th, timeRead(reads_[r.kernel], th, bytesPer(th), 1, 2)});
    std::sort(rankedReads_.begin(), rankedReads_.end(), byValue);
    for (const Ranked& r : rankedReads_)
        c.readFamily.push_back({reads_[r.kernel].name + " x" + std::to_string(r.threads), r.value});
    // The kernels read around every point: the two best, and the best with software prefetch
    // (the decode kernels prefetch), so a machine state that favours another access style
    // than the one that won at the start is still read next to the point.
    pieceKernels_.assign(rankedReads_.begin(),
                         rankedReads_.begin() + std::min<std::size_t>(2, rankedReads_.size()));
    for (const Ranked& r : rankedReads_)
        if (reads_[r.kernel].prefetches) {
            if (std::none_of(pieceKernels_.begin(), pieceKernels_.end(),
                             [&](const Ranked& p) { return p.kernel == r.kernel; }))
                pieceKernels_.push_back(r);
            break;
        }
    const Ranked& win = rankedReads_.front();
    c.readBytesPerSecond = win.value;
    c.readKernel = reads_[win.kernel].name + " on " + std::to_string(win.threads) +
                   " threads (best of " + std::to_string(rankedReads_.size()) +
                   " read kernels x thread counts over " + mib(bufferBytes_) +
                   pageNote(buffer_.data, bufferBytes_) + ", LLC " + mib(llc_) + ")";
}

/// Best bytes/s of the kernels without prefetch on data that stays in one cache level.
double CeilingMeter::measureResident(std::int64_t bytesPerThread, int passes) {
    double best = 0;
    for (const ReadKernel& k : reads_)
        if (!k.prefetches)
            best = std::max(best, timeRead(k, pool_.size(), bytesPerThread, passes, 2));
    return best;
}

ComputeUnit kernelUnit(KvDtype d) {
    if (d != KvDtype::Bf16 && d != KvDtype::Fp8E4m3)
        return ComputeUnit::Fma;
    return amxEnabled() ? ComputeUnit::Amx
                        : (bf16DotEnabled() ? ComputeUnit::Bf16Dot : ComputeUnit::Fma);
}

void CeilingMeter::measurePeaks(Ceilings& c) {
    const std::int64_t iterations = 2'000'000;
    double* best = best_;
    std::fill(best_, best_ + 3, 0.0);
    peaks_.assign(computes_.size(), 0.0);
    for (std::size_t i = 0; i < computes_.size(); ++i) {
        // A tdpbf16ps iteration is 1024 vdpbf16ps worth of work: fewer of them.
        const bool amx = computes_[i].unit == ComputeUnit::Amx;
        const double v = timeCompute(computes_[i], amx ? iterations / 16 : iterations, 3);
        c.peakFamily.push_back({computes_[i].name, v});
        peaks_[i] = v;
        const int u = int(computes_[i].unit);
        if (v > best[u])
            best[u] = v, winner_[u] = i;
    }
    for (KvDtype d : {KvDtype::Bf16, KvDtype::Fp16, KvDtype::Fp8E4m3, KvDtype::Fp32}) {
        const std::string key(dtypeName(d));
        const std::size_t w = winnerFor(d);
        c.peakFlopPerSecond[key] = peaks_[w];
        c.peakKernelFor[key] = computes_[w].name;
    }
    const std::size_t fma = winnerFor(KvDtype::Fp16);
    c.peakKernel = "best of " + std::to_string(computes_.size()) + " chain kernels on " +
                   std::to_string(pool_.size()) + " threads: " + computes_[fma].name +
                   " for fp16/fp32 KV" +
                   (fma != winner_[int(ComputeUnit::Fma)]
                        ? " (the portable kernel runs " + std::to_string(portableWidth()) +
                              " lanes wide, by KVSCOPE_CPU_VECTOR)"
                        : "") +
                   ", " + computes_[winnerFor(KvDtype::Bf16)].name + " for bf16/fp8 KV" +
                   (kernelUnit(KvDtype::Bf16) == ComputeUnit::Fma
                        ? " (computed in fp32 on this CPU or by KVSCOPE_CPU_KERNEL)"
                        : "");
}

double CeilingMeter::unitPeak(ComputeUnit unit) const {
    return best_[int(unit)] > 0 ? best_[int(unit)] : best_[int(ComputeUnit::Fma)];
}

/// The fastest FMA chain no wider than the portable kernel's vectors: a kernel forced to AVX2
/// on an AVX-512 CPU is placed against what AVX2 can compute, not against AVX-512's peak.
std::size_t CeilingMeter::fmaWinner() const {
    const int width = portableWidth();
    std::size_t w = winner_[int(ComputeUnit::Fma)];
    double best = -1;
    for (std::size_t i = 0; i < computes_.size() && i < peaks_.size(); ++i)
        if (computes_[i].unit == ComputeUnit::Fma && computes_[i].width <= width &&
            peaks_[i] > best)
            best = peaks_[i], w = i;
    return w;
}

/// The winning chain kernel of a unit (the FMA one at the portable kernel's width; FMA's if the
/// unit was not measured).
std::size_t CeilingMeter::unitWinner(ComputeUnit u) const {
    const std::size_t w = winner_[int(u)];
    return u != ComputeUnit::Fma && computes_[w].unit == u ? w : fmaWinner();
}

/// The winning chain kernel of the unit the dtype's kernel runs on.
std::size_t CeilingMeter::winnerFor(KvDtype d) const {
    return unitWinner(kernelUnit(d));
}

Ceilings CeilingMeter::measure(const Progress& progress) {
    Ceilings c;
    if (auto e = prepareBuffer(); !e.empty()) {
        c.error = e;
        return c;
    }
    if (progress && !progress(0.1, "cpu read ceilings")) {
        c.error = "cancelled";
        return c;
    }
    measureDram(c, progress);
    const unsigned threads = pool_.size();
    if (l2_ > 0) // half of each core's L2, read 4+ times
        c.l2ReadBytesPerSecond =
            measureResident(roundDown(l2_ / 2, kReadGranule),
                            int(std::max<std::int64_t>(4, (256ll << 20) / (l2_ / 2 * threads))));
    if (llc_ > 4 * l2_ * threads && l2_ > 0) { // a quarter of L3, at least 4x all L2s
        const std::int64_t total =
            std::clamp<std::int64_t>(llc_ / 4, 4 * l2_ * threads, std::min(llc_ / 2, bufferBytes_));
        c.l3ReadBytesPerSecond =
            measureResident(roundDown(total / threads, kReadGranule),
                            int(std::max<std::int64_t>(2, (512ll << 20) / total)));
    }
    if (progress && !progress(0.8, "cpu peaks")) {
        c.error = "cancelled";
        return c;
    }
    measurePeaks(c);
    measured_ = true;
    c.ok = true;
    if (progress)
        progress(1.0, "cpu ceilings done");
    return c;
}

/// The spot pieces' part of the buffer: its first 2x LLC (at least 256 MiB).
std::int64_t CeilingMeter::spotSpan() const {
    return std::clamp<std::int64_t>(2 * llc_, 256ll << 20, bufferBytes_);
}

std::int64_t CeilingMeter::pieceBytesPerThread(unsigned threads, std::int64_t pieceBytes) const {
    return roundDown(
        std::clamp<std::int64_t>(pieceBytes / threads, 1 << 20, bufferBytes_ / threads),
        kReadGranule);
}

/// 2x the LLC of the buffer (at least 256 MiB) read once in consecutive pieces of pieceBytes
/// (each split among the threads): the fastest piece's bytes/s. Every piece is cold: it was
/// last read a whole spot measurement and a point's rotation (4x the LLC) ago.
double CeilingMeter::fastestPiece(const ReadKernel& k, unsigned threads, std::int64_t pieceBytes) {
    const std::int64_t perThread = pieceBytesPerThread(threads, pieceBytes);
    const std::int64_t piece = perThread * threads;
    const std::int64_t span = spotSpan();
    double best = 0;
    for (std::int64_t off = 0; off + piece <= std::max(span, piece); off += piece)
        best = std::max(best, timeRead(k, threads, perThread, 1, 1, off));
    return best;
}

bool CeilingMeter::spot(ComputeUnit unit, double pointBytes, double* read, double* peak,
                        std::string* kernel) {
    if (!measured_ && !measure({}).ok)
        return false;
    *read = 0;
    for (const Ranked& r : pieceKernels_) {
        const double v = fastestPiece(reads_[r.kernel], r.threads, std::int64_t(pointBytes));
        if (v > *read) {
            *read = v;
            *kernel = reads_[r.kernel].name + " x" + std::to_string(r.threads);
        }
    }
    const ComputeKernel& k = computes_[unitWinner(unit)];
    *peak = timeCompute(k, k.unit == ComputeUnit::Amx ? 125'000 / 16 : 125'000, 16);
    return true;
}

const CeilingMeter::Ranked* CeilingMeter::pieceKernel(int which) {
    if ((!measured_ && !measure({}).ok) || pieceKernels_.empty())
        return nullptr;
    return &pieceKernels_[std::size_t(which) % pieceKernels_.size()];
}

bool CeilingMeter::piece(int which, double pointBytes, double* read, std::string* kernel) {
    const Ranked* pk = pieceKernel(which);
    if (!pk)
        return false;
    const Ranked& r = *pk;
    const std::int64_t perThread = pieceBytesPerThread(r.threads, std::int64_t(pointBytes));
    const std::int64_t bytes = perThread * r.threads;
    // Paired pieces walk the part of the buffer the spot pieces (the first 2x LLC) leave, when
    // there is one, so a piece never reads what the spot measurement before the point just read.
    const std::int64_t start = bufferBytes_ - spotSpan() >= bytes ? spotSpan() : 0;
    if (pieceCursor_ < start || pieceCursor_ + bytes > bufferBytes_)
        pieceCursor_ = start;
    *read = timeRead(reads_[r.kernel], r.threads, perThread, 1, 1, pieceCursor_);
    *kernel = reads_[r.kernel].name + " x" + std::to_string(r.threads);
    pieceCursor_ += bytes;
    return true;
}

bool CeilingMeter::pieceOf(int which, const std::vector<Region>& regions, double* read,
                           std::string* kernel) {
    const Ranked* pk = pieceKernel(which);
    if (!pk)
        return false;
    const Ranked& r = *pk;
    const ReadKernel& k = reads_[r.kernel];
    // Each thread's part of a region in whole granules, never rounded up: the regions are the
    // point's own inputs, and a region under a granule per thread is left out.
    auto chunkOf = [&](const Region& g) {
        return g.bytes / r.threads / kReadGranule * kReadGranule;
    };
    std::int64_t total = 0;
    for (const Region& g : regions)
        total += chunkOf(g) * r.threads;
    if (total == 0)
        return false;
    const auto t0 = std::chrono::steady_clock::now();
    pool_.parallelFor(r.threads, [&](std::int64_t t) {
        for (const Region& g : regions) {
            const std::int64_t chunk = chunkOf(g);
            if (chunk > 0)
                sink_[std::size_t(t)] += k.fn(g.data + t * chunk, chunk);
        }
    });
    *read = double(total) / seconds(t0);
    *kernel = k.name + " x" + std::to_string(r.threads);
    return true;
}

} // namespace kvscope::gpu::detail::cpu
