// CPU measurement backend: every variant and dtype against the double reference, the harness's
// own checks (poisoned outputs, mismatches), counting, error values, JSON and a real timing.
#include "decode_shapes.h"
#include "gpu/backend.h"
#include "gpu/cpu/amx_kernel.h"
#include "gpu/cpu/portable_kernel.h"
#include "gpu/engine.h"
#include "gpu/measurement_json.h"
#include "wrapped_engine.h"

#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <cstring>

using namespace kvscope::gpu;
using kvscope::gpu::testing::gqa;
using kvscope::gpu::testing::mla;
Q_DECLARE_METATYPE(kvscope::gpu::DecodeShape)

namespace {

/// The fp32 lanes a kernel name's width token says (avx512 16, avx2 8, vec4 4: the portable
/// kernels' "cpu-gqa-avx2", the FMA chains' "fma-avx2-c12"), 0 when it names none.
int lanesNamed(const std::string& name) {
    for (std::size_t at = 0; at <= name.size();) {
        const std::size_t end = std::min(name.find('-', at), name.size());
        const std::string token = name.substr(at, end - at);
        if (token == "avx512" || token == "avx2" || token == "vec4")
            return token == "avx512" ? 16 : token == "avx2" ? 8 : 4;
        at = end + 1;
    }
    return 0;
}

/// Wraps the CPU engine and breaks it on purpose, to prove the harness notices.
class BrokenEngine final : public kvscope::gpu::testing::WrappedCpuEngine {
public:
    enum Fault { SkipRun, OffByOne };
    explicit BrokenEngine(Fault f) : fault_(f) {}
    std::string backendName() const override { return "broken"; }
    std::string prepare(const DecodeShape& s, int sets, std::uint64_t seed) override {
        return inner_->prepare(s, sets, seed + (fault_ == OffByOne ? 1 : 0)); // wrong inputs
    }
    std::string run(int set) override {
        return fault_ == SkipRun ? std::string() : inner_->run(set);
    }
    std::string kernelName() const override { return "broken"; }

private:
    Fault fault_;
};

} // namespace

class TestCpuBackend : public QObject {
    Q_OBJECT

private:
    std::unique_ptr<Backend> shared_; // one backend whose ceilings are measured once
    Ceilings sharedCeilings_;
    const Ceilings& sharedCeilings() {
        if (!shared_) {
            shared_ = cpu();
            sharedCeilings_ = shared_->measureCeilings();
        }
        return sharedCeilings_;
    }

    std::unique_ptr<Backend> cpu() {
        std::string err;
        auto b = makeBackend("cpu", &err);
        if (!b)
            qFatal("cpu backend: %s", err.c_str());
        return b;
    }

private Q_SLOTS:
    void counts_data() {
        QTest::addColumn<DecodeShape>("shape");
        QTest::addColumn<double>("intensity");
        const std::int64_t longS = 1 << 20;
        // docs/formulas.md §5 / §7: GQA-8 bf16 -> 2g/b = 8; fp8 -> 16; MHA bf16 -> 1.
        QTest::newRow("gqa-8 d128 bf16 long") << gqa(64, 8, 128, longS, 1, KvDtype::Bf16) << 8.0;
        QTest::newRow("gqa-8 d128 fp8 long") << gqa(64, 8, 128, longS, 1, KvDtype::Fp8E4m3) << 16.0;
        QTest::newRow("mha d128 bf16 long") << gqa(64, 64, 128, longS, 1, KvDtype::Bf16) << 1.0;
        QTest::newRow("mqa d128 fp32 long") << gqa(64, 1, 128, longS, 1, KvDtype::Fp32) << 32.0;
        // DeepSeek-V3: 2·h·(2r + d_rope) / (b·(r + d_rope)) = 242 (TP=1), 30 (TP=8), 15 (TP=16).
        QTest::newRow("mla h128 bf16 long")
            << mla(128, longS, 1, KvDtype::Bf16) << 2.0 * 128 * 1088 / (2.0 * 576);
        QTest::newRow("mla h16 bf16 long")
            << mla(16, longS, 1, KvDtype::Bf16) << 2.0 * 16 * 1088 / (2.0 * 576);
        QTest::newRow("mla h8 bf16 long")
            << mla(8, longS, 1, KvDtype::Bf16) << 2.0 * 8 * 1088 / (2.0 * 576);
    }
    void counts() {
        QFETCH(DecodeShape, shape);
        QFETCH(double, intensity);
        const DecodeCounts c = countDecode(shape);
        QVERIFY2(std::abs(c.intensity - intensity) / intensity < 2e-3,
                 qPrintable(QStringLiteral("%1 vs %2").arg(c.intensity).arg(intensity)));
    }
    void chapterNumbers() {
        // The chapter's rounded figures.
        QCOMPARE(std::lround(countDecode(mla(128, 1 << 24, 1, KvDtype::Bf16)).intensity), 242L);
        QCOMPARE(std::lround(countDecode(mla(16, 1 << 24, 1, KvDtype::Bf16)).intensity),
                 30L); // TP=8
        QCOMPARE(std::lround(countDecode(mla(8, 1 << 24, 1, KvDtype::Bf16)).intensity),
                 15L); // TP=16
        // Exact counts for a known shape: 4·B·h·S·d FLOPs; KV B·S·2·h_kv·d·b; Q and O B·h·d·2.
        const DecodeCounts c = countDecode(gqa(32, 8, 128, 4096, 2, KvDtype::Bf16));
        QCOMPARE(c.flops, 134217728.0);
        QCOMPARE(c.kvBytes, 33554432.0);
        QCOMPARE(c.qBytes, 16384.0);
        QCOMPARE(c.outBytes, 16384.0);
        QCOMPARE(c.bytes, 33554432.0 + 32768.0);
        // MLA: 2·B·h·S·(2r + d_rope) and B·S·(r + d_rope)·b.
        const DecodeCounts m = countDecode(mla(16, 1000, 3, KvDtype::Fp8E4m3));
        QCOMPARE(m.flops, 2.0 * 3 * 16 * 1000 * 1088);
        QCOMPARE(m.kvBytes, 3.0 * 1000 * 576);
        QCOMPARE(m.qBytes, 3.0 * 16 * 576 * 2);
        QCOMPARE(m.outBytes, 3.0 * 16 * 512 * 2);
    }

    void dtypes() {
        QCOMPARE(kvBytesPerElement(KvDtype::Fp8E4m3), 1);
        QCOMPARE(kvBytesPerElement(KvDtype::Fp32), 4);
        QCOMPARE(activationBytesPerElement(KvDtype::Fp8E4m3), 2);
        QCOMPARE(parseDtype("fp8").value(), KvDtype::Fp8E4m3);
        QCOMPARE(parseDtype("bfloat16").value(), KvDtype::Bf16);
        QVERIFY(!parseDtype("int4"));
        QCOMPARE(QString::fromStdString(describe(gqa(32, 4, 128, 4096, 1, KvDtype::Bf16))),
                 QStringLiteral("gqa-8 h32 d128 bf16 B1 S4096"));
    }

    void selfCheck_data() {
        QTest::addColumn<DecodeShape>("shape");
        for (KvDtype dt : {KvDtype::Bf16, KvDtype::Fp16, KvDtype::Fp8E4m3, KvDtype::Fp32}) {
            const std::string n(dtypeName(dt));
            QTest::newRow(("mha d64 " + n).c_str()) << gqa(8, 8, 64, 700, 2, dt);
            QTest::newRow(("gqa-8 d128 " + n).c_str()) << gqa(32, 4, 128, 1500, 1, dt);
            QTest::newRow(("gqa-3 d128 " + n).c_str()) << gqa(12, 4, 128, 333, 2, dt);
            QTest::newRow(("mqa d256 " + n).c_str()) << gqa(16, 1, 256, 1100, 1, dt);
            // 16 and 32 rows per stream: the bf16 kernel's rows-in-lanes path, every register
            // block of its interleaved-V P·V (d 64: 4 x 64, d 128: 4 x 96 + 8 x 32).
            QTest::newRow(("gqa-16 d64 " + n).c_str()) << gqa(32, 2, 64, 777, 1, dt);
            QTest::newRow(("mqa d128 " + n).c_str()) << gqa(32, 1, 128, 555, 2, dt);
            // 8 rows: the half-lanes path (8 rows x 2 per vector), with odd partial tiles.
            QTest::newRow(("gqa-8 d64 " + n).c_str()) << gqa(16, 2, 64, 29, 1, dt);
            QTest::newRow(("gqa-8 d256 " + n).c_str()) << gqa(16, 2, 256, 45, 2, dt);
            QTest::newRow(("mla h16 " + n).c_str()) << mla(16, 900, 2, dt);
        }
    }
    void selfCheck() {
        QFETCH(DecodeShape, shape);
        auto b = cpu();
        const Measurement m = b->selfCheck(shape);
        QVERIFY2(m.ok, m.error.c_str());
        QVERIFY(std::isfinite(m.maxRelError));
        QVERIFY(m.maxRelError <= errorBoundFor(shape.dtype));
        // The bound is not vacuous: 16-bit outputs cannot be exact, fp32 nearly is.
        if (shape.dtype != KvDtype::Fp32)
            QVERIFY(m.maxRelError > 1e-6);
        else
            QVERIFY(m.maxRelError < 1e-5);
        QCOMPARE(m.flops, countDecode(shape).flops);
    }

    /// Every CPU kernel for bf16/fp8 KV: the AMX kernel (groups of 8+ query rows by default,
    /// every group under KVSCOPE_CPU_KERNEL=amx), the AVX512_BF16 dot-product kernel (smaller
    /// groups by default, every group under =bf16dot), and the portable fp32 kernel (=fp32) at
    /// every vector width this CPU runs (KVSCOPE_CPU_VECTOR: 16 AVX-512, 8 AVX2, 4 anything).
    /// Shapes on tile edges: contexts shorter than, equal to and one past a 16/32-token tile,
    /// odd group sizes, more than 16 query rows per stream (several AMX row tiles, MLA h 20),
    /// one stream split across threads (S 8191: 8 splits merged by log-sum-exp), batches of 3,
    /// and runs of full blocks (S 8191, S 300), whose V the AMX kernel interleaves one block
    /// ahead.
    /// fp16 and fp32 KV always take the portable kernel. The vdpbf16ps kernel's row streams and
    /// the portable kernel also read gathered tiles (KVSCOPE_CPU_GATHER=1; a check alone reads
    /// contiguous ones, a timed point whichever ran faster).
    void everyKernel_data() {
        QTest::addColumn<DecodeShape>("shape");
        QTest::addColumn<QByteArray>("kernel"); // KVSCOPE_CPU_KERNEL, empty: the default
        QTest::addColumn<int>("width");         // 0: the CPU's widest
        QTest::addColumn<bool>("gather");       // KVSCOPE_CPU_GATHER=1
        auto rows = [](KvDtype dt, const QByteArray& kernel, int width, bool gather = false) {
            const std::string n = std::string(dtypeName(dt)) + " " +
                                  (kernel.isEmpty() ? std::string("auto") : kernel.toStdString()) +
                                  (width ? " x" + std::to_string(width) : std::string()) +
                                  (gather ? " gathered" : "");
            auto row = [&](const char* name, const DecodeShape& s) {
                QTest::newRow((std::string(name) + " " + n).c_str())
                    << s << kernel << width << gather;
            };
            row("gqa-5 S1", gqa(10, 2, 64, 1, 1, dt));
            row("gqa-8 S17", gqa(16, 2, 128, 17, 1, dt));
            row("gqa-7 S32", gqa(14, 2, 256, 32, 1, dt));
            row("gqa-4 S33", gqa(8, 2, 128, 33, 3, dt));
            row("gqa-9 S8191", gqa(9, 1, 128, 8191, 1, dt));
            row("gqa-17 S65", gqa(34, 2, 64, 65, 1, dt));
            row("gqa-40 S31", gqa(40, 1, 256, 31, 2, dt));
            row("mla h3 S47", mla(3, 47, 2, dt));
            row("mla h20 S70", mla(20, 70, 1, dt));
            row("mla h12 S40", mla(12, 40, 1, dt)); // more rows than 4 or 8 lanes, narrow layout
            row("gqa-24 S300", gqa(24, 1, 128, 300, 1, dt)); // 64-token blocks (2 row groups)
            row("mla h16 S300", mla(16, 300, 1, dt));        // 2 gathered 128-token blocks, then 44
        };
        for (KvDtype dt : {KvDtype::Bf16, KvDtype::Fp8E4m3})
            for (const char* k : {"", "amx", "bf16dot"})
                rows(dt, k, 0);
        for (int width : {16, 8, 4})
            for (KvDtype dt : {KvDtype::Bf16, KvDtype::Fp8E4m3, KvDtype::Fp16, KvDtype::Fp32})
                rows(dt, "fp32", width);
        for (KvDtype dt : {KvDtype::Bf16, KvDtype::Fp8E4m3})
            rows(dt, "bf16dot", 0, true);
        for (KvDtype dt : {KvDtype::Fp16, KvDtype::Fp32})
            rows(dt, "fp32", 0, true);
    }
    void everyKernel() {
        QFETCH(DecodeShape, shape);
        QFETCH(QByteArray, kernel);
        QFETCH(int, width);
        QFETCH(bool, gather);
        if (!kernel.isEmpty())
            qputenv("KVSCOPE_CPU_KERNEL", kernel);
        if (width)
            qputenv("KVSCOPE_CPU_VECTOR", QByteArray::number(width));
        if (gather)
            qputenv("KVSCOPE_CPU_GATHER", "1");
        auto b = cpu();
        const Measurement m = b->selfCheck(shape);
        qunsetenv("KVSCOPE_CPU_KERNEL");
        qunsetenv("KVSCOPE_CPU_VECTOR");
        qunsetenv("KVSCOPE_CPU_GATHER");
        QVERIFY2(m.ok, m.error.c_str());
        QVERIFY(m.maxRelError <= errorBoundFor(shape.dtype));
        // Not vacuous: 16-bit outputs of a mix of tokens are not exact (S 1 copies one row).
        QVERIFY(m.maxRelError > 1e-6 || shape.dtype == KvDtype::Fp32 || shape.context == 1);
        const bool bf16Family = shape.dtype == KvDtype::Bf16 || shape.dtype == KvDtype::Fp8E4m3;
        const std::int64_t rows = shape.kind == Attention::Mla ? shape.qHeads : shape.groupSize();
        const auto ran = [&](const char* suffix) {
            return m.kernel.size() >= std::strlen(suffix) &&
                   m.kernel.compare(m.kernel.size() - std::strlen(suffix), std::string::npos,
                                    suffix) == 0;
        };
        // Gathered tiles where the kernel reads them: every portable stream, the vdpbf16ps
        // kernel's streams that score in rows (not 8 rows in half lanes or 16k in lanes).
        // The portable kernel also serves bf16 and fp8 where the CPU has no AVX512_BF16 kernel.
        const bool hasBf16Dot = detail::cpuFp8VectorMismatch() != -2;
        const bool portable = kernel == "fp32" || !bf16Family || !hasBf16Dot;
        const bool rowStream = rows % 16 != 0 && rows != 8;
        QCOMPARE(m.kernel.find("-gathered-") != std::string::npos,
                 gather && (portable || (kernel == "bf16dot" && rowStream)));
        if (portable) {
            QVERIFY2(!ran("-bf16dot") && !ran("-amx"), m.kernel.c_str());
            // The width that ran: the one asked for, or narrower on a CPU without it.
            const int ranWidth = lanesNamed(m.kernel.substr(m.kernel.rfind('-') + 1));
            QVERIFY2(ranWidth > 0 && (width == 0 || ranWidth <= width), m.kernel.c_str());
            return;
        }
        // The kernel asked for ran where the CPU has it; the default picks by group size.
        const bool amx =
            detail::cpuHasAmxKernel() &&
            (kernel == "amx" || (kernel.isEmpty() && rows >= detail::cpu::amxMinRows(shape.dtype)));
        if (amx)
            QVERIFY2(ran("-amx"), m.kernel.c_str());
        else
            QVERIFY2(ran("-bf16dot"), m.kernel.c_str());
    }

    void harnessCatchesUnwrittenOutput() {
        auto b = detail::makeHarnessBackend(std::make_unique<BrokenEngine>(BrokenEngine::SkipRun));
        const Measurement m = b->selfCheck(gqa(8, 2, 64, 300, 1, KvDtype::Bf16));
        QVERIFY(!m.ok);
        QVERIFY2(m.error.find("not written") != std::string::npos, m.error.c_str());
    }
    void harnessCatchesWrongResult() {
        auto b = detail::makeHarnessBackend(std::make_unique<BrokenEngine>(BrokenEngine::OffByOne));
        const Measurement m = b->selfCheck(gqa(8, 2, 64, 300, 1, KvDtype::Bf16));
        QVERIFY(!m.ok);
        QVERIFY2(m.error.find("mismatch") != std::string::npos, m.error.c_str());
        QVERIFY(m.maxRelError > 0.05); // different random inputs: an O(1) error
    }

    void errorValues_data() {
        QTest::addColumn<DecodeShape>("shape");
        QTest::addColumn<QString>("field");
        QTest::newRow("kv heads do not divide")
            << gqa(32, 5, 128, 100, 1, KvDtype::Bf16) << QStringLiteral("kv_heads");
        QTest::newRow("head dim 96")
            << gqa(32, 8, 96, 100, 1, KvDtype::Bf16) << QStringLiteral("head_dim");
        QTest::newRow("batch 0") << gqa(32, 8, 128, 100, 0, KvDtype::Bf16)
                                 << QStringLiteral("batch");
        QTest::newRow("context 0")
            << gqa(32, 8, 128, 0, 1, KvDtype::Bf16) << QStringLiteral("context");
        QTest::newRow("too large")
            << gqa(64, 64, 128, 1ll << 30, 64, KvDtype::Bf16) << QStringLiteral("too large");
        QTest::newRow("mla rank 500") << [] {
            DecodeShape s = mla(16, 100, 1, KvDtype::Bf16);
            s.kvLoraRank = 500;
            return s;
        }() << QStringLiteral("kv_lora_rank");
    }
    void errorValues() {
        QFETCH(DecodeShape, shape);
        QFETCH(QString, field);
        auto b = cpu();
        const std::string why = b->supports(shape);
        QVERIFY2(QString::fromStdString(why).contains(field), why.c_str());
        QVERIFY(why.find('\n') == std::string::npos);
        const Measurement m = b->measure(shape);
        QVERIFY(!m.ok);
        QCOMPARE(m.error, why);
    }

    void factory() {
        std::string err;
        QVERIFY(!makeBackend("tpu", &err));
        QVERIFY(err.find("unknown backend") != std::string::npos);
        err.clear();
        auto c = makeBackend("cuda", &err);
        if (!c) // no GPU here: a clear one-line message, never a crash
            QVERIFY(!err.empty() && err.find("cuda") != std::string::npos &&
                    err.find('\n') == std::string::npos);
        QCOMPARE(cudaCompiledIn(), bool(KVSCOPE_HAVE_CUDA));
    }

    void cancel() {
        auto b = cpu();
        int calls = 0;
        const Measurement m = b->measure(gqa(8, 2, 64, 2000, 1, KvDtype::Bf16),
                                         [&](double, const std::string&) { return ++calls < 2; });
        QVERIFY(!m.ok);
        QCOMPARE(m.error, std::string("cancelled"));
    }

    void realMeasurement() {
        const Ceilings c = sharedCeilings();
        Backend* b = shared_.get();
        QVERIFY2(c.ok, c.error.c_str());
        QVERIFY(c.readBytesPerSecond > 1e8 && std::isfinite(c.readBytesPerSecond));
        for (KvDtype d : {KvDtype::Bf16, KvDtype::Fp16, KvDtype::Fp8E4m3, KvDtype::Fp32})
            QVERIFY(c.peakFor(d) > 1e8);
        const DecodeShape s = gqa(16, 2, 128, 8192, 1, KvDtype::Bf16);
        const Measurement m = b->measure(s);
        QVERIFY2(m.ok, m.error.c_str());
        QVERIFY(m.medianSeconds > 0 && std::isfinite(m.medianSeconds));
        QVERIFY(m.repeats >= 7);
        QCOMPARE(m.bytes, countDecode(s).bytes);
        QVERIFY(std::abs(m.bytesPerSecond - m.bytes / m.medianSeconds) < 1e-6 * m.bytesPerSecond);
        QVERIFY(m.flopPerSecond > 0 && std::isfinite(m.flopPerSecond));
        QVERIFY(std::abs(m.intensityFlopPerByte - 8.0) < 0.01); // GQA-8 bf16
        // A memory-bound kernel cannot beat the machine's read ceiling by much (caches aside).
        QVERIFY2(m.bytesPerSecond < 3.0 * c.readBytesPerSecond,
                 qPrintable(QStringLiteral("%1 vs ceiling %2")
                                .arg(m.bytesPerSecond)
                                .arg(c.readBytesPerSecond)));
        qInfo("cpu: read ceiling %.2f GB/s, gqa-8 d128 bf16 S8192: %.2f GB/s (%.0f%%), %.3f ms",
              c.readBytesPerSecond / 1e9, m.bytesPerSecond / 1e9,
              100 * m.bytesPerSecond / c.readBytesPerSecond, m.medianSeconds * 1e3);
        // Absorbed MLA is compute-bound (I = 30 at h 16): it must stay under the peak measured
        // for its dtype around it. (With vdpbf16ps the kernel beat the fp32 FMA peak: %roof
        // read 117%.)
        const Measurement mm = b->measure(mla(16, 4096, 1, KvDtype::Bf16));
        QVERIFY2(mm.ok, mm.error.c_str());
        QVERIFY(mm.peakCeiling() > 1e8);
        QVERIFY2(mm.flopPerSecond <= (1 + kCeilingTolerance) * mm.peakCeiling(),
                 qPrintable(QStringLiteral("%1 FLOP/s vs bf16 peak %2 (%3)")
                                .arg(mm.flopPerSecond)
                                .arg(mm.peakCeiling())
                                .arg(QString::fromStdString(c.peakKernel))));
    }

    /// The read ceiling is the maximum of a family (streams, unroll, widths, prefetch, thread
    /// counts), every member named; the L2-resident reads are faster than DRAM's.
    void ceilingFamilies() {
        const Ceilings& c = sharedCeilings();
        QVERIFY2(c.ok, c.error.c_str());
        QVERIFY(c.readFamily.size() >= 5);
        double best = 0;
        for (const auto& f : c.readFamily) {
            QVERIFY(!f.kernel.empty() && f.value > 0);
            best = std::max(best, f.value);
        }
        QCOMPARE(c.readBytesPerSecond, best);
        QVERIFY2(c.readKernel.find(c.readFamily.front().kernel.substr(
                     0, c.readFamily.front().kernel.find(' '))) == 0,
                 c.readKernel.c_str());
#if defined(__linux__)
        // Which pages the ceilings read (the kernels' inputs are allocated the same way).
        QVERIFY2(c.readKernel.find(" pages") != std::string::npos, c.readKernel.c_str());
#endif
        QVERIFY(!c.peakFamily.empty());
        for (KvDtype d : {KvDtype::Bf16, KvDtype::Fp16, KvDtype::Fp8E4m3, KvDtype::Fp32}) {
            const std::string key(dtypeName(d));
            QVERIFY2(c.peakKernelFor.count(key), key.c_str());
            double winner = 0;
            for (const auto& f : c.peakFamily)
                if (f.kernel == c.peakKernelFor.at(key))
                    winner = f.value;
            QCOMPARE(c.peakFor(d), winner);
        }
        if (c.l2ReadBytesPerSecond > 0)
            QVERIFY2(c.l2ReadBytesPerSecond > c.readBytesPerSecond,
                     qPrintable(QStringLiteral("L2 %1 vs DRAM %2")
                                    .arg(c.l2ReadBytesPerSecond)
                                    .arg(c.readBytesPerSecond)));
    }

    /// The portable kernel narrowed to half the CPU's widest vectors (KVSCOPE_CPU_VECTOR) is
    /// placed against the FMA chains of its own width: its peak is the best chain no wider
    /// than it, and a compute-bound point on it stays under that peak.
    void narrowVectorsHaveTheirOwnPeak() {
        const int widest = detail::cpu::portableWidth();
        if (widest < 8)
            QSKIP("no vector width narrower than this CPU's widest but 4");
        const int narrow = widest / 2;
        qputenv("KVSCOPE_CPU_VECTOR", QByteArray::number(narrow));
        auto b = cpu();
        const Ceilings c = b->measureCeilings();
        const Measurement m = b->measure(gqa(32, 1, 128, 4096, 1, KvDtype::Fp16)); // MQA, I 32
        qunsetenv("KVSCOPE_CPU_VECTOR");
        QVERIFY2(c.ok, c.error.c_str());
        const auto narrowFma = [&](const std::string& kernel) {
            return kernel.rfind("fma-", 0) == 0 && lanesNamed(kernel) > 0 &&
                   lanesNamed(kernel) <= narrow;
        };
        double bestNarrow = 0;
        for (const auto& f : c.peakFamily)
            if (narrowFma(f.kernel))
                bestNarrow = std::max(bestNarrow, f.value);
        for (KvDtype d : {KvDtype::Fp16, KvDtype::Fp32}) {
            const std::string& k = c.peakKernelFor.at(std::string(dtypeName(d)));
            QVERIFY2(narrowFma(k), k.c_str());
            QCOMPARE(c.peakFor(d), bestNarrow);
        }
        QVERIFY2(c.peakKernel.find(std::to_string(narrow) + " lanes wide") != std::string::npos,
                 c.peakKernel.c_str());
        QVERIFY2(m.ok, m.error.c_str());
        QVERIFY2(lanesNamed(m.kernel.substr(m.kernel.rfind('-') + 1)) == narrow, m.kernel.c_str());
        const RoofPlacement r = placeOnRoof(m, m.readCeiling(), m.peakCeiling());
        QVERIFY2(!r.aboveCeiling, qPrintable(QStringLiteral("%1 GFLOP/s against a roof of %2")
                                                 .arg(m.flopPerSecond / 1e9)
                                                 .arg(r.roof / 1e9)));
    }

    /// No measured point sits above its read ceiling (paired with its repeats) or its roof by
    /// more than the tolerance, on every variant and dtype; and its inputs rotate through sets
    /// whose total is several times the last cache.
    void noPointAboveItsCeiling_data() {
        // One row per kernel path (vdpbf16ps MHA, AMX GQA-8 / MQA / MLA, fp8 decoded on both,
        // the portable kernel in fp16 and fp32): the ceilings and the rotation are the same
        // for every row, so more rows of one path add minutes, not coverage.
        QTest::addColumn<DecodeShape>("shape");
        QTest::newRow("mha bf16") << gqa(8, 8, 128, 2048, 1, KvDtype::Bf16);
        QTest::newRow("gqa-8 bf16") << gqa(32, 4, 128, 2048, 1, KvDtype::Bf16);
        QTest::newRow("mqa bf16") << gqa(32, 1, 128, 4096, 1, KvDtype::Bf16);
        QTest::newRow("mla h16 bf16") << mla(16, 2048, 1, KvDtype::Bf16);
        QTest::newRow("mha fp8_e4m3") << gqa(8, 8, 128, 2048, 1, KvDtype::Fp8E4m3);
        QTest::newRow("mqa fp8_e4m3") << gqa(32, 1, 128, 4096, 1, KvDtype::Fp8E4m3);
        QTest::newRow("gqa-4 fp16") << gqa(32, 8, 128, 2048, 1, KvDtype::Fp16);
        QTest::newRow("mla h16 fp32") << mla(16, 2048, 1, KvDtype::Fp32);
    }
    void noPointAboveItsCeiling() {
        QFETCH(DecodeShape, shape);
        sharedCeilings();
        const Measurement m = shared_->measure(shape);
        QVERIFY2(m.ok, m.error.c_str());
        QVERIFY(m.readCeilingBefore > 0 && m.readCeilingAfter > 0);
        QVERIFY(m.peakBefore > 0 && m.peakAfter > 0);
        QCOMPARE(m.pairedPieces, m.repeats + 1); // a ceiling piece around every repeat
        QCOMPARE(m.readCeiling(), m.readCeilingPaired);
        QVERIFY(!m.readCeilingKernel.empty());
        QVERIFY(m.minSeconds <= m.medianSeconds && m.medianSeconds <= m.maxSeconds);
        const RoofPlacement r = placeOnRoof(m, m.readCeiling(), m.peakCeiling());
        QVERIFY2(!r.aboveCeiling,
                 qPrintable(QStringLiteral("%1: %2 GB/s (ceiling %3), %4 GFLOP/s (roof %5): "
                                           "%6% of read, %7% of roof")
                                .arg(QString::fromStdString(m.kernel))
                                .arg(m.bytesPerSecond / 1e9)
                                .arg(m.readCeiling() / 1e9)
                                .arg(m.flopPerSecond / 1e9)
                                .arg(r.roof / 1e9)
                                .arg(100 * r.fractionRead)
                                .arg(100 * r.fractionRoof)));
        const double llc = double(shared_->devices().front().lastCacheBytes);
        const double budget = double(detail::makeCpuEngine()->memoryBudgetBytes());
        if (llc > 0 && 4 * llc + countDecode(shape).bytes <= budget)
            QVERIFY2(m.inputSetBytes >= 4 * llc,
                     qPrintable(QStringLiteral("%1 sets, %2 bytes vs LLC %3")
                                    .arg(m.inputSets)
                                    .arg(m.inputSetBytes)
                                    .arg(llc)));
    }

    /// The vector fp8 -> bf16 conversion of the AVX512_BF16 kernel, all 256 codes: the decode
    /// tests draw inputs in [-1, 1), which never reach the codes >= 0x40 (|x| >= 2).
    void fp8VectorConversionIsExact() {
        const int mismatch = detail::cpuFp8VectorMismatch();
        if (mismatch == -2)
            QSKIP("this CPU has no AVX512_BF16 kernel");
        QCOMPARE(mismatch, -1);
    }

    /// The portable kernel's fp8 -> fp32 decoder (the kernel of CPUs without AVX512_BF16), all
    /// 256 codes at every vector width this CPU has, against the scalar reference bit for bit.
    void portableFp8DecodeIsExact() {
        int widths = 0;
        for (const int w : {4, 8, 16}) {
            const int mismatch = detail::cpuPortableFp8Mismatch(w);
            if (mismatch == -2)
                continue;
            ++widths;
            QVERIFY2(mismatch == -1, qPrintable(QStringLiteral("width %1: code 0x%2 differs")
                                                    .arg(w)
                                                    .arg(mismatch, 2, 16, QLatin1Char('0'))));
        }
        QVERIFY(widths >= 1); // the 4-wide build runs everywhere
        QCOMPARE(detail::cpuPortableFp8Mismatch(5), -2);
    }

    void jsonRoundTrip() {
        sharedCeilings();
        Backend* b = shared_.get();
        MeasurementSet set;
        set.backend = "cpu";
        set.device = "test cpu";
        set.model = "llama-3-8b";
        set.ceilings.readBytesPerSecond = 2.5e10;
        set.ceilings.peakFlopPerSecond = {{"bf16", 4e11}, {"fp32", 4e11}};
        set.ceilings.l2ReadBytesPerSecond = 1.2e11;
        set.ceilings.l3ReadBytesPerSecond = 6e10;
        set.ceilings.readFamily = {{"read-avx512-s4-u2 x2", 2.5e10}, {"read-vec4-s2-u2 x1", 1e10}};
        set.ceilings.peakKernelFor = {{"bf16", "vdpbf16ps-c12"}};
        Measurement m = b->measure(gqa(32, 8, 128, 1024, 1, KvDtype::Fp8E4m3));
        QVERIFY2(m.ok, m.error.c_str());
        m.variant = "GQA-8"; // 32 query heads, 8 KV groups
        set.points.push_back(m);
        Measurement ml = b->measure(mla(16, 512, 1, KvDtype::Bf16));
        QVERIFY2(ml.ok, ml.error.c_str());
        ml.variant = "MLA";
        set.points.push_back(ml);
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("m.json")).toStdString();
        std::string err;
        QVERIFY2(saveMeasurementJson(set, path, &err), err.c_str());
        MeasurementSet back;
        QVERIFY2(loadMeasurementJson(path, &back, &err), err.c_str());
        QCOMPARE(back.backend, set.backend);
        QCOMPARE(back.device, set.device);
        QCOMPARE(back.model, set.model);
        QCOMPARE(back.ceilings.readBytesPerSecond, 2.5e10);
        QCOMPARE(back.ceilings.peakFor(KvDtype::Bf16), 4e11);
        QCOMPARE(int(back.points.size()), 2);
        const Measurement& p = back.points[0];
        QCOMPARE(p.variant, std::string("GQA-8"));
        QCOMPARE(p.shape.kind, Attention::Gqa);
        QCOMPARE(p.shape.qHeads, std::int64_t(32));
        QCOMPARE(p.shape.kvHeads, std::int64_t(8));
        QCOMPARE(p.shape.headDim, std::int64_t(128));
        QCOMPARE(p.shape.context, std::int64_t(1024));
        QCOMPARE(p.shape.dtype, KvDtype::Fp8E4m3);
        QCOMPARE(p.medianSeconds, m.medianSeconds);
        QCOMPARE(p.bytes, m.bytes);
        QCOMPARE(p.flops, m.flops);
        QCOMPARE(p.maxRelError, m.maxRelError);
        QCOMPARE(p.kernel, m.kernel);
        QCOMPARE(p.minSeconds, m.minSeconds);
        QCOMPARE(p.maxSeconds, m.maxSeconds);
        QCOMPARE(p.readCeilingBefore, m.readCeilingBefore);
        QCOMPARE(p.readCeilingAfter, m.readCeilingAfter);
        QCOMPARE(p.peakAfter, m.peakAfter);
        QCOMPARE(p.readCeilingKernel, m.readCeilingKernel);
        QVERIFY(m.readCeilingPaired > 0);
        QCOMPARE(p.readCeilingPaired, m.readCeilingPaired);
        QCOMPARE(p.pairedPieces, m.pairedPieces);
        QCOMPARE(p.inputSets, m.inputSets);
        QCOMPARE(p.unstable, m.unstable);
        QCOMPARE(back.ceilings.l2ReadBytesPerSecond, 1.2e11);
        QCOMPARE(back.ceilings.l3ReadBytesPerSecond, 6e10);
        QCOMPARE(int(back.ceilings.readFamily.size()), 2);
        QCOMPARE(back.ceilings.readFamily[1].kernel, std::string("read-vec4-s2-u2 x1"));
        QCOMPARE(back.ceilings.readFamily[1].value, 1e10);
        QCOMPARE(back.ceilings.peakKernelFor.at("bf16"), std::string("vdpbf16ps-c12"));
        const Measurement& q = back.points[1];
        QCOMPARE(q.shape.kind, Attention::Mla);
        QCOMPARE(q.shape.kvLoraRank, std::int64_t(512));
        QCOMPARE(q.shape.ropeDim, std::int64_t(64));
        QCOMPARE(q.intensityFlopPerByte, ml.intensityFlopPerByte);
    }

    void jsonErrors_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("field");
        const QString ceil = QStringLiteral(
            R"("ceilings": {"read_bytes_per_s": 1e10, "peak_flop_per_s": {"bf16": 1e12}})");
        const QString point = QStringLiteral(
            R"({"variant": "GQA-8", "attention": "gqa", "q_heads": 64, "kv_heads": 8, "head_dim": 128,
                "context": 8192, "batch": 1, "kv_dtype": "bf16", "median_s": 1e-4, "bytes": 1e8, "flops": 8e8,
                "bytes_per_s": 1e12, "flop_per_s": 8e12, "intensity_flop_per_byte": 8, "max_rel_error": 0.002})");
        auto doc = [&](const QString& head, const QString& c, const QString& p) {
            return QStringLiteral("{%1, %2, \"points\": [%3]}").arg(head, c, p);
        };
        const QString head = QStringLiteral(R"("backend": "cpu", "device": "x")");
        QTest::newRow("not json") << QStringLiteral("{") << QStringLiteral("not valid JSON");
        QTest::newRow("missing backend") << doc(QStringLiteral(R"("device": "x")"), ceil, point)
                                         << QStringLiteral("backend: missing");
        QTest::newRow("negative bandwidth")
            << doc(head,
                   QStringLiteral(R"("ceilings": {"read_bytes_per_s": -1, "peak_flop_per_s": {}})"),
                   point)
            << QStringLiteral("ceilings.read_bytes_per_s");
        QTest::newRow("unknown peak dtype")
            << doc(head,
                   QStringLiteral(
                       R"("ceilings": {"read_bytes_per_s": 1, "peak_flop_per_s": {"int4": 1}})"),
                   point)
            << QStringLiteral("ceilings.peak_flop_per_s.int4");
        QTest::newRow("negative l2 ceiling")
            << doc(head,
                   QStringLiteral(R"("ceilings": {"read_bytes_per_s": 1, "peak_flop_per_s": {},
                                      "l2_read_bytes_per_s": -5})"),
                   point)
            << QStringLiteral("ceilings.l2_read_bytes_per_s: must be a non-negative number");
        QTest::newRow("read family not an array")
            << doc(head,
                   QStringLiteral(R"("ceilings": {"read_bytes_per_s": 1, "peak_flop_per_s": {},
                                      "read_family": 3})"),
                   point)
            << QStringLiteral("ceilings.read_family: must be an array");
        QString badMin = point;
        badMin.replace(QStringLiteral("\"median_s\": 1e-4,"),
                       QStringLiteral("\"median_s\": 1e-4, \"min_s\": \"fast\","));
        QTest::newRow("min_s not a number")
            << doc(head, ceil, badMin) << QStringLiteral("points[0].min_s: must be a number");
        QString noMedian = point;
        noMedian.replace(QStringLiteral("\"median_s\": 1e-4,"), QString());
        QTest::newRow("missing median")
            << doc(head, ceil, noMedian) << QStringLiteral("points[0].median_s: missing");
        QString badDtype = point;
        badDtype.replace(QStringLiteral("\"bf16\""), QStringLiteral("\"int8\""));
        QTest::newRow("bad kv dtype")
            << doc(head, ceil, badDtype) << QStringLiteral("points[0].kv_dtype");
        QString badKind = point;
        badKind.replace(QStringLiteral("\"gqa\""), QStringLiteral("\"sparse\""));
        QTest::newRow("bad attention")
            << doc(head, ceil, badKind) << QStringLiteral("points[0].attention");
        QString badHeads = point;
        badHeads.replace(QStringLiteral("\"kv_heads\": 8"), QStringLiteral("\"kv_heads\": 7"));
        QTest::newRow("kv heads not dividing")
            << doc(head, ceil, badHeads) << QStringLiteral("points[0].kv_heads");
    }
    void jsonErrors() {
        QFETCH(QString, text);
        QFETCH(QString, field);
        MeasurementSet out;
        std::string err;
        QVERIFY(!fromJson(text.toStdString(), &out, &err));
        QVERIFY2(QString::fromStdString(err).contains(field), err.c_str());
        QVERIFY(err.find('\n') == std::string::npos);
    }
    void jsonValidDocumentLoads() {
        const std::string text = R"({"backend": "cuda", "device": "NVIDIA H200",
            "ceilings": {"read_bytes_per_s": 4.4e12, "peak_flop_per_s": {"bf16": 7.5e14}},
            "points": [{"variant": "MLA", "attention": "mla", "q_heads": 128, "kv_heads": 1, "head_dim": 576,
              "context": 8192, "batch": 4, "kv_dtype": "bf16", "median_s": 5e-4, "bytes": 3.8e7, "flops": 9.1e9,
              "bytes_per_s": 7.6e10, "flop_per_s": 1.8e13, "intensity_flop_per_byte": 239.5, "max_rel_error": 0.002}]})";
        MeasurementSet out;
        std::string err;
        QVERIFY2(fromJson(text, &out, &err), err.c_str());
        QCOMPARE(out.points.size(), std::size_t(1));
        QCOMPARE(out.points[0].shape.kind, Attention::Mla);
        QCOMPARE(out.points[0].shape.qHeads, std::int64_t(128));
        QCOMPARE(out.ceilings.peakFor(KvDtype::Bf16), 7.5e14);
    }
};

QTEST_GUILESS_MAIN(TestCpuBackend)
#include "tst_cpu_backend.moc"
