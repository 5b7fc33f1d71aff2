#include "gpu/cpu/ceilings.h"

#include "gpu/cpu/bf16_kernel.h"
#include "gpu/cpu/buffer.h"
#include "gpu/cpu/ceiling_kernels.h"
#include "gpu/numerics.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <unistd.h>
#include <vector>

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

double medianOf(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace

std::int64_t lastLevelCacheBytes() {
    std::int64_t best = 0;
    int bestLevel = 0;
    for (int idx = 0; idx < 16; ++idx) {
        const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx);
        std::ifstream lf(dir + "/level"), sf(dir + "/size");
        if (!lf || !sf)
            continue;
        int level = 0;
        std::string size;
        lf >> level;
        sf >> size;
        if (level >= bestLevel) {
            bestLevel = level;
            best = parseCacheSize(size);
        }
    }
    return best;
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

Ceilings measureCeilings(ThreadPool& pool, std::int64_t llc, const Progress& progress) {
    Ceilings c;
    const unsigned threads = pool.size();
    // Read bandwidth: 8x the last-level cache (256 MiB when unknown), within 64 MiB..1 GiB.
    const std::int64_t bytes =
        std::clamp<std::int64_t>(llc > 0 ? 8 * llc : (256ll << 20), 64ll << 20, 1ll << 30);
    const std::int64_t n = bytes / std::int64_t(sizeof(float));
    Buffer buf;
    if (!buf.allocate(std::size_t(bytes))) {
        c.error =
            "out of memory allocating the " + std::to_string(bytes >> 20) + " MiB read buffer";
        return c;
    }
    float* p = reinterpret_cast<float*>(buf.data);
    const std::int64_t parts = threads;
    const std::int64_t per = (n + parts - 1) / parts;
    pool.parallelFor(parts, [&](std::int64_t t) { // first touch by the reading threads
        const std::int64_t b = t * per, e = std::min(n, b + per);
        for (std::int64_t i = b; i < e; ++i)
            p[i] = num::uniformInput(7, 9, std::uint64_t(i));
    });
    if (progress && !progress(0.2, "cpu read bandwidth")) {
        c.error = "cancelled";
        return c;
    }
    std::vector<float> sink(static_cast<std::size_t>(parts), 0.0f);
    // Median wall time of `reps` runs of perThread(t) on every thread (t < parts); each
    // adds its result to sink[t] so the work cannot be optimised away.
    auto medianSeconds = [&](int reps, const std::function<float(std::int64_t)>& perThread) {
        std::vector<double> times;
        for (int rep = 0; rep < reps; ++rep) {
            const auto t0 = std::chrono::steady_clock::now();
            pool.parallelFor(parts, [&](std::int64_t t) { sink[std::size_t(t)] += perThread(t); });
            times.push_back(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        return medianOf(times);
    };
    const double readSeconds = medianSeconds(7, [&](std::int64_t t) {
        const std::int64_t b = t * per, e = std::min(n, b + per);
        return sumStreams(p + b, e - b);
    });
    c.readBytesPerSecond = double(bytes) / readSeconds;
    c.readKernel = "sum of fp32 over " + std::to_string(bytes >> 20) + " MiB on " +
                   std::to_string(threads) + " threads, median of 7";
    if (progress && !progress(0.6, "cpu fma peak")) {
        c.error = "cancelled";
        return c;
    }
    // FMA peak: every thread runs independent multiply-add chains.
    const std::int64_t iters = 2'000'000;
    const double flops = double(iters) * 8 * 16 * 2 * threads;
    const double peak =
        flops / medianSeconds(5, [&](std::int64_t t) { return fmaLoop(iters, float(t)); });
    for (KvDtype d : {KvDtype::Bf16, KvDtype::Fp16, KvDtype::Fp8E4m3, KvDtype::Fp32})
        c.peakFlopPerSecond[std::string(dtypeName(d))] = peak;
    c.peakKernel = "fp32 multiply-add chains on " + std::to_string(threads) + " threads";
    if (bf16DotEnabled()) {
        // bf16 and fp8 KV run on vdpbf16ps (two products per lane): their roof is its peak.
        const double dot =
            double(iters) * bf16DotLoopFlops() * threads /
            medianSeconds(5, [&](std::int64_t t) { return bf16DotLoop(iters, float(t)); });
        for (KvDtype d : {KvDtype::Bf16, KvDtype::Fp8E4m3})
            c.peakFlopPerSecond[std::string(dtypeName(d))] = dot;
        c.peakKernel += " for fp16/fp32 KV; vdpbf16ps chains for bf16/fp8 KV";
    } else {
        c.peakKernel += " (every KV dtype is computed in fp32 on this CPU)";
    }
    volatile float keep = sink[0];
    (void)keep;
    c.ok = true;
    if (progress)
        progress(1.0, "cpu ceilings done");
    return c;
}

} // namespace kvscope::gpu::detail::cpu
