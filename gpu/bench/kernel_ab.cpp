// Paired A/B timing of two variants of the CPU kernels (bf16 / fp8 KV: the AMX and vdpbf16ps
// kernels; fp16 / fp32 KV: the portable one): the same work items timed in
// alternation in one process, so the host's drift (this project's VM moves its memory bandwidth
// and clock within minutes) cancels in the per-round ratio. scripts/kernel-ab.sh builds it from
// a git revision (A) and the working tree (B). Per variant: CPU time per token of one thread
// with K/V in L2, the same with both threads at once (wall time), and wall time per token of
// every thread reading its own rotated 768 MiB from DRAM (on the engine's thread pool), against
// a plain read of the same bytes (2 streams, the read ceiling's best kernel family). Last line:
// the median and quartiles of the per-round B / A.
#include "ab_variant.h"
#include "gpu/cpu/amx_kernel.h"
#include "gpu/cpu/buffer.h"
#include "gpu/cpu/inputs.h"
#include "gpu/cpu/thread_pool.h"
#include "gpu/numerics.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <immintrin.h>
#include <string>
#include <thread>
#include <vector>

namespace {

double threadNs() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}
double wallNs() {
    return std::chrono::duration<double, std::nano>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

/// n elements of one input tensor as the CPU engine generates them (gpu/cpu/inputs.h): the
/// same values `measure` times the kernels on.
void fill(std::uint8_t* dst, std::int64_t n, kvscope::gpu::KvDtype dtype, std::uint64_t seed,
          std::uint32_t tensor, float scale = 1.0f) {
    kvscope::gpu::detail::cpu::fillInputs(dtype, dst, 0, n, seed, tensor, scale);
}

template <int N> struct Floats { typedef float V __attribute__((vector_size(4 * N))); };

/// The K (and V) bytes read with no compute: 2 streams, 2 lines per step, no software prefetch
/// (on the AMD host of NOTES.md, "nineteenth session", a plain 2-stream read with a prefetcht0
/// per line 1-8 KiB ahead took 1.23-1.29x the time of the same read without; the read
/// ceiling's winner there has none either). N floats per load (16: AVX-512, 8: AVX), inlined into
/// each width's function, whose target the vector code is built for.
template <int N>
inline __attribute__((always_inline)) float readRowsAs(const std::uint8_t* k, const std::uint8_t* v,
                                                       std::int64_t bytes) {
    using V = typename Floats<N>::V;
    constexpr int step = 4 * N;
    V a{}, b{};
    for (std::int64_t i = 0; i < bytes; i += 2 * step) {
        a += *reinterpret_cast<const V*>(k + i);
        a += *reinterpret_cast<const V*>(k + i + step);
        if (v != k) {
            b += *reinterpret_cast<const V*>(v + i);
            b += *reinterpret_cast<const V*>(v + i + step);
        }
    }
    const V s = a + b;
    float sum = 0;
    for (int j = 0; j < N; ++j)
        sum += s[j];
    return sum;
}
__attribute__((target("avx512f"), noinline)) float
readRows512(const std::uint8_t* k, const std::uint8_t* v, std::int64_t bytes) {
    return readRowsAs<16>(k, v, bytes);
}
/// The same read in 256-bit loads, for CPUs without AVX-512 (AVX2 hosts).
__attribute__((target("avx"), noinline)) float
readRows256(const std::uint8_t* k, const std::uint8_t* v, std::int64_t bytes) {
    return readRowsAs<8>(k, v, bytes);
}
float readRows(const std::uint8_t* k, const std::uint8_t* v, std::int64_t bytes) {
    static const bool wide = __builtin_cpu_supports("avx512f");
    return wide ? readRows512(k, v, bytes) : readRows256(k, v, bytes);
}

/// The engine's buffers (2 MiB pages from 2 MiB on, as the engine reads its KV); the run stops
/// when one cannot be had.
struct AlignedBytes : kvscope::gpu::detail::cpu::Buffer {
    explicit AlignedBytes(std::size_t n) {
        if (!allocate(n)) {
            std::fprintf(stderr, "out of memory allocating %zu bytes\n", n);
            std::exit(1);
        }
    }
};

double median(std::vector<double> v, double at = 0.5) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, std::size_t(at * double(v.size())))];
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"Paired A/B timing of two variants of the CPU attention kernels"};
    AbShape shape;
    std::string kv = "bf16";
    int rounds = 21;
    std::int64_t segment = 4096;
    app.add_option("--rows", shape.rows, "query rows per KV stream (g; MLA: heads)")
        ->check(CLI::Range(1, 128));
    app.add_option("--kv", kv, "KV dtype (fp16, fp32: the portable kernel)")
        ->check(CLI::IsMember({"bf16", "fp8", "fp16", "fp32"}));
    app.add_flag("--mla", shape.mla, "absorbed MLA (576/512) instead of GQA d 128");
    app.add_flag("--paired-values", shape.pairedValuesB,
                 "B reads V in token pairs (AMX, or GQA streams of 16k rows)");
    bool gathered = false;
    app.add_flag("--gathered", gathered,
                 "both read gathered tiles (vdpbf16ps row streams, portable)");
    app.add_flag("--gathered-b", shape.gatheredB, "B reads gathered tiles, A contiguous ones");
    app.add_option("--rounds", rounds, "alternations")->check(CLI::Range(3, 1000));
    app.add_option("--segment", segment, "tokens per work item")->check(CLI::Range(64, 65536));
    int profile = 0;
    app.add_option(
           "--profile", profile,
           "only run A and B this many times each on K/V in L2, one thread (for perf record)")
        ->check(CLI::Range(1, 1000000));
    CLI11_PARSE(app, argc, argv);
    shape.gatheredA = gathered;
    shape.gatheredB = shape.gatheredB || gathered;
    using kvscope::gpu::KvDtype;
    shape.dtype = kv == "fp8"    ? KvDtype::Fp8E4m3
                  : kv == "fp16" ? KvDtype::Fp16
                  : kv == "fp32" ? KvDtype::Fp32
                                 : KvDtype::Bf16;
    // The kernels read V in token pairs only for GQA streams in bf16 or fp8: the AMX kernel (from
    // amxMinRows where the CPU has it) and the vdpbf16ps kernel's streams of 16k rows
    // (bf16PairedValues); B would otherwise refuse every call and time nothing.
    const char* kernel = std::getenv("KVSCOPE_CPU_KERNEL"); // "amx": every row count on AMX
    const bool amxForced = kernel && std::string(kernel) == "amx";
    const std::int64_t amxRows = kvscope::gpu::detail::cpu::amxMinRows(shape.dtype);
    if (shape.pairedValuesB && ((shape.rows % 16 != 0 && shape.rows < amxRows && !amxForced) ||
                                shape.mla || kv == "fp16" || kv == "fp32")) {
        std::fprintf(stderr,
                     "--paired-values: needs --rows of %lld or more (AMX) or a multiple of 16, no "
                     "--mla, and bf16 or fp8 KV\n",
                     static_cast<long long>(amxRows));
        return 2;
    }
    shape.keyDim = shape.mla ? 576 : 128;
    shape.valueDim = shape.mla ? 512 : 128;
    const int elementBytes = kvscope::gpu::kvBytesPerElement(shape.dtype);
    shape.rowBytes = shape.keyDim * elementBytes;
    const int threads = 2;
    const std::int64_t tokenBytes = shape.mla ? shape.rowBytes : 2 * shape.rowBytes;

    std::vector<std::vector<std::uint16_t>> q(threads);
    std::vector<std::vector<float>> out(threads), lse(threads);
    for (int t = 0; t < threads; ++t) {
        q[size_t(t)].resize(std::size_t(shape.rows * shape.keyDim));
        fill(reinterpret_cast<std::uint8_t*>(q[size_t(t)].data()),
             std::int64_t(q[size_t(t)].size()), KvDtype::Bf16, 7u + unsigned(t),
             kvscope::gpu::num::kQuery, kvscope::gpu::num::kQueryScale);
        out[size_t(t)].resize(std::size_t(shape.rows * shape.valueDim));
        lse[size_t(t)].resize(std::size_t(shape.rows));
    }
    AbScratch* scratch[2][2] = {{abNewScratchA(), abNewScratchA()},
                                {abNewScratchB(), abNewScratchB()}};
    struct FreeScratch {
        AbScratch* (&s)[2][2];
        ~FreeScratch() {
            for (int t = 0; t < 2; ++t) {
                abFreeScratchA(s[0][t]);
                abFreeScratchB(s[1][t]);
            }
        }
    } freeScratch{scratch};
    // With --paired-values, B reads the L2-resident V as token pairs from a copy in that order
    // (so its outputs match A's); from DRAM it reads the plain rows as if paired, the same bytes
    // for the timing.
    std::vector<std::pair<const std::uint8_t*, std::unique_ptr<AlignedBytes>>> pairedCopies;
    const auto addPairedCopy = [&](const std::uint8_t* v, std::int64_t tokens) {
        auto c = std::make_unique<AlignedBytes>(std::size_t(tokens * shape.rowBytes));
        kvscope::gpu::detail::cpu::pairRows(v, c->data, tokens, shape.valueDim, elementBytes);
        pairedCopies.emplace_back(v, std::move(c));
    };
    using Run = std::function<void(int, const std::uint8_t*, const std::uint8_t*, std::int64_t)>;
    volatile float sink = 0;
    const std::vector<std::pair<const char*, Run>> variants = {
        {"read",
         [&](int, const std::uint8_t* k, const std::uint8_t* v, std::int64_t n) {
             sink = readRows(k, shape.mla ? k : v, n * shape.rowBytes);
         }},
        {"A",
         [&](int t, const std::uint8_t* k, const std::uint8_t* v, std::int64_t n) {
             abRunA(shape, q[size_t(t)].data(), k, v, n, out[size_t(t)].data(),
                    lse[size_t(t)].data(), scratch[0][t]);
         }},
        {"B", [&](int t, const std::uint8_t* k, const std::uint8_t* v, std::int64_t n) {
             for (const auto& [plain, paired] : pairedCopies)
                 if (v == plain)
                     v = paired->data;
             abRunB(shape, q[size_t(t)].data(), k, v, n, out[size_t(t)].data(),
                    lse[size_t(t)].data(), scratch[1][t]);
         }}};

    // K/V that fit in L2 (1 MiB of GQA K and V), then the two variants' outputs on them.
    const std::int64_t l2Tokens = shape.mla ? 512 : elementBytes == 4 ? 1024 : 2048;
    AlignedBytes kL2(std::size_t(l2Tokens * shape.rowBytes)),
        vL2(std::size_t(l2Tokens * shape.rowBytes));
    const std::int64_t l2Elems = l2Tokens * shape.keyDim;
    fill(kL2.data, l2Elems, shape.dtype, 1, kvscope::gpu::num::kKey);
    fill(vL2.data, l2Elems, shape.dtype, 1, kvscope::gpu::num::kValue);
    if (shape.pairedValuesB)
        addPairedCopy(vL2.data, l2Tokens);
    variants[1].second(0, kL2.data, vL2.data, l2Tokens);
    const std::vector<float> outA = out[0];
    variants[2].second(0, kL2.data, vL2.data, l2Tokens);
    double diff = 0, top = 0;
    for (std::size_t i = 0; i < outA.size(); ++i) {
        diff = std::max(diff, double(std::fabs(outA[i] - out[0][i])));
        top = std::max(top, double(std::fabs(outA[i])));
    }

    if (profile > 0) { // A and B in alternating batches of 10 runs: CPU time per token of each
        double ns[2] = {0, 0};
        for (int done = 0; done < profile; done += 10)
            for (int v = 1; v <= 2; ++v) {
                const double a = threadNs();
                for (int i = done; i < std::min(profile, done + 10); ++i)
                    variants[std::size_t(v)].second(0, kL2.data, vL2.data, l2Tokens);
                ns[v - 1] += threadNs() - a;
            }
        std::printf("K/V in L2, one thread: A %.1f, B %.1f ns per token (B / A %.3f)\n",
                    ns[0] / profile / double(l2Tokens), ns[1] / profile / double(l2Tokens),
                    ns[1] / ns[0]);
        return 0;
    }

    // Per thread: 768 MiB of K and V in segments, read in rotation (never from a cache).
    const std::int64_t segBytes = segment * shape.rowBytes;
    const std::int64_t segments = (std::int64_t(768) << 20) / (segBytes * (shape.mla ? 1 : 2));
    std::vector<std::unique_ptr<AlignedBytes>> kD, vD;
    for (int t = 0; t < threads; ++t) {
        kD.push_back(std::make_unique<AlignedBytes>(std::size_t(segments * segBytes)));
        vD.push_back(std::make_unique<AlignedBytes>(std::size_t(segments * segBytes)));
        const std::int64_t elems = segments * segment * shape.keyDim;
        fill(kD.back()->data, elems, shape.dtype, 3u + unsigned(t), kvscope::gpu::num::kKey);
        fill(vD.back()->data, elems, shape.dtype, 3u + unsigned(t), kvscope::gpu::num::kValue);
    }
    const std::size_t nv = variants.size();
    std::vector<double> cpuNs(nv), ratioBA;
    std::vector<std::vector<double>> wall(nv), overRead(nv);
    for (std::size_t v = 0; v < nv; ++v) {
        std::vector<double> c;
        for (int i = 0; i < 40; ++i) {
            const double a = threadNs();
            variants[v].second(0, kL2.data, vL2.data, l2Tokens);
            c.push_back((threadNs() - a) / double(l2Tokens));
        }
        cpuNs[v] = median(c, 0.0); // the fastest: the least disturbed
    }
    // The same with both threads at once, each on its own L2-resident copy (wall time): on this
    // project's VM, tdpbf16ps chains have at times run 2x slower per thread while the other
    // core ran them too (at other times not at all), and then the single-thread figure would
    // understate the compute beside the memory.
    std::vector<std::unique_ptr<AlignedBytes>> kL2t, vL2t;
    for (int t = 0; t < threads; ++t) {
        kL2t.push_back(std::make_unique<AlignedBytes>(std::size_t(l2Tokens * shape.rowBytes)));
        vL2t.push_back(std::make_unique<AlignedBytes>(std::size_t(l2Tokens * shape.rowBytes)));
        std::memcpy(kL2t.back()->data, kL2.data, std::size_t(l2Tokens * shape.rowBytes));
        std::memcpy(vL2t.back()->data, vL2.data, std::size_t(l2Tokens * shape.rowBytes));
        if (shape.pairedValuesB)
            addPairedCopy(vL2t.back()->data, l2Tokens);
    }
    std::vector<double> bothNs(nv);
    for (std::size_t v = 0; v < nv; ++v) {
        std::vector<double> per(threads);
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&, t, v] {
                std::vector<double> c;
                for (int i = 0; i < 40; ++i) {
                    const double a = wallNs();
                    variants[v].second(t, kL2t[size_t(t)]->data, vL2t[size_t(t)]->data, l2Tokens);
                    c.push_back((wallNs() - a) / double(l2Tokens));
                }
                per[size_t(t)] = median(c);
            });
        for (auto& th : pool)
            th.join();
        bothNs[v] = *std::max_element(per.begin(), per.end());
    }
    const int perRound = int(std::max<std::int64_t>(4, 65536 / segment));
    // The engine's pool, whose workers poll between jobs as in `measure`, rather than a thread
    // started per round (which had to wake an idle vCPU first on this project's VM).
    kvscope::gpu::detail::cpu::ThreadPool pool{unsigned(threads)};
    std::int64_t cursor = 0;
    for (int r = 0; r < rounds; ++r) {
        std::vector<double> ns(nv);
        for (std::size_t i = 0; i < nv; ++i) {
            const std::size_t v = (i + std::size_t(r)) % nv; // each variant in every position
            const double w0 = wallNs();
            pool.parallelFor(threads, [&](std::int64_t t) {
                for (int s = 0; s < perRound; ++s) {
                    const std::int64_t at = (cursor + s) % segments * segBytes;
                    variants[v].second(int(t), kD[size_t(t)]->data + at, vD[size_t(t)]->data + at,
                                       segment);
                }
            });
            cursor = (cursor + perRound) % segments;
            ns[v] = (wallNs() - w0) / double(perRound * segment);
        }
        for (std::size_t v = 0; v < nv; ++v) {
            wall[v].push_back(ns[v]);
            overRead[v].push_back(ns[v] / ns[0]);
        }
        ratioBA.push_back(ns[2] / ns[1]);
    }

    std::printf("kernel A/B: %s %d %s, %s, %lld-token segments, %d threads, %d rounds\n",
                shape.mla ? "MLA h" : "GQA g", shape.rows, shape.mla ? "(576/512)" : "(d 128)",
                kv.c_str(), static_cast<long long>(segment), threads, rounds);
    std::printf("outputs (K/V in L2): max |A - B| %.3g, max |A| %.3g\n", diff, top);
    std::printf("%-8s %16s %12s %16s %8s %8s\n", "variant", "L2 ns/token/thr", "L2 both thr",
                "DRAM ns/token/thr", "GB/s", "/ read");
    for (std::size_t v = 0; v < nv; ++v) {
        const double w = median(wall[v]);
        std::printf("%-8s %16.1f %12.1f %16.1f %8.1f %8.3f\n", variants[v].first, cpuNs[v],
                    bothNs[v], w, double(threads * tokenBytes) / w, median(overRead[v]));
    }
    std::printf("B / A per round: median %.3f, quartiles %.3f-%.3f\n", median(ratioBA),
                median(ratioBA, 0.25), median(ratioBA, 0.75));
    return 0;
}
