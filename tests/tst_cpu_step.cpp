// The CPU step backend: a scaled decode step (norms, QKV, attention over the cache, O, MLP) on
// fresh random inputs against the fp64 reference, the counts against a real model's layer, the
// error values, and a timed point that must stay under its roof.
#include "gpu/measurement_json.h"
#include "gpu/step.h"

#include <QtTest>
#include <cmath>

using namespace kvscope::gpu;
Q_DECLARE_METATYPE(kvscope::gpu::StepShape)

namespace {

StepShape tiny(std::int64_t d, std::int64_t h, std::int64_t kv, std::int64_t dh, std::int64_t w,
               bool gated, std::int64_t batch, std::int64_t context, KvDtype dtype) {
    StepShape s;
    s.layers = 2;
    s.modelLayers = 2;
    s.hidden = d;
    s.qHeads = h;
    s.kvHeads = kv;
    s.headDim = dh;
    s.intermediate = w;
    s.gated = gated;
    s.batch = batch;
    s.context = context;
    s.kvDtype = dtype;
    return s;
}

/// Llama-3-8B's layer (config.json: hidden 4096, 32 heads, 8 KV heads, head dim 128,
/// intermediate 14336, SiLU-gated MLP) at TP = 1.
StepShape llama3_8b(std::int64_t batch, std::int64_t context) {
    StepShape s = tiny(4096, 32, 8, 128, 14336, true, batch, context, KvDtype::Bf16);
    s.modelLayers = 32;
    return s;
}

} // namespace

class TestCpuStep : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void selfCheck_data() {
        QTest::addColumn<StepShape>("shape");
        // Batch blocks of 4 plus every remainder, a GEMM inner width that is not a multiple
        // of 32 (masked tail), every KV dtype (bf16/fp8 on the bf16 kernel, fp16/fp32 on the
        // portable one), MHA/GQA/MQA, a plain MLP, splits, and a context of the new token only.
        QTest::newRow("gqa-2 bf16 gated B3 S300")
            << tiny(256, 4, 2, 64, 512, true, 3, 300, KvDtype::Bf16);
        QTest::newRow("mha fp32 B5 S70") << tiny(192, 2, 2, 128, 320, true, 5, 70, KvDtype::Fp32);
        QTest::newRow("mqa fp8 plain d200 B1 S1030")
            << tiny(200, 4, 1, 64, 200, false, 1, 1030, KvDtype::Fp8E4m3);
        QTest::newRow("gqa-1 fp16 B6 S1") << tiny(128, 2, 1, 64, 256, true, 6, 1, KvDtype::Fp16);
        // Inner widths past one 1024-wide K chunk of the GEMM, the last chunk masked.
        QTest::newRow("gqa-2 d1100 w1300 bf16 B5 S64")
            << tiny(1100, 4, 2, 64, 1300, true, 5, 64, KvDtype::Bf16);
        QTest::newRow("gqa-2 d_h256 bf16 B8 S600")
            << tiny(512, 4, 2, 256, 352, true, 8, 600, KvDtype::Bf16);
    }
    void selfCheck() {
        QFETCH(StepShape, shape);
        std::string err;
        auto backend = makeStepBackend("cpu", &err);
        QVERIFY2(backend, err.c_str());
        const StepMeasurement m = backend->selfCheckStep(shape);
        QVERIFY2(m.ok, m.error.c_str());
        QVERIFY(std::isfinite(m.maxRelError));
        QVERIFY(m.maxRelError <= kStepErrorBound);
        // bf16 activations between kernels cost about 1e-3 relative; anything near the bound
        // means an indexing slip hides in the noise.
        QVERIFY2(m.maxRelError < 1e-2, std::to_string(m.maxRelError).c_str());
        qInfo("%s: rel error %.2e (%s)", describe(shape).c_str(), m.maxRelError, m.kernel.c_str());
    }

    void countsOfLlama3_8bLayer() {
        // Per layer, bf16: q 4096x4096, k and v 1024x4096, o 4096x4096, gate/up/down
        // 3x4096x14336, two 4096-wide norms = 218,112,000 parameters = 436,224,000 bytes.
        const StepCounts c = countStep([] {
            StepShape s = llama3_8b(16, 4096);
            s.layers = 1;
            return s;
        }());
        QCOMPARE(c.weightBytes, 436224000.0);
        // KV: 16 requests x 4096 tokens x 2 x 8 heads x 128 x 2 bytes.
        QCOMPARE(c.kvBytes, 16.0 * 4096 * 2 * 8 * 128 * 2);
        // GEMMs: 2 FLOPs per multiply-add over the 218,103,808 matrix parameters, per request.
        QCOMPARE(c.gemmFlops, 2.0 * 218103808.0 * 16);
        // Attention: 2·B·h·S·(d_k + d_v).
        QCOMPARE(c.attentionFlops, 2.0 * 16 * 32 * 4096 * 256);
        // Activations per token: QKV (4096 + 6144), Q/O (8192), o_proj (4096 + 4096), new K/V
        // (2048), residual 8·4096, MLP 2·4096 + 6·14336 elements, 2 bytes each.
        const double perToken =
            (4096 + 6144) + 8192 + 8192 + 2048 + 8 * 4096 + 2 * 4096 + 6 * 14336;
        QCOMPARE(c.activationBytes, 16.0 * perToken * 2);
        QCOMPARE(c.bytes, c.weightBytes + c.kvBytes + c.activationBytes);
    }

    void badShapes() {
        std::string err;
        auto backend = makeStepBackend("cpu", &err);
        QVERIFY(backend);
        StepShape s = tiny(256, 6, 4, 64, 512, true, 1, 16, KvDtype::Bf16);
        QCOMPARE(QString::fromStdString(backend->supports(s)).left(8), QStringLiteral("kvHeads:"));
        const StepMeasurement m = backend->selfCheckStep(s);
        QVERIFY(!m.ok);
        QVERIFY(m.error.find("kvHeads") != std::string::npos);
        s = tiny(256, 4, 2, 96, 512, true, 1, 16, KvDtype::Bf16);
        QVERIFY(backend->supports(s).find("headDim") != std::string::npos);
        s = tiny(256, 4, 2, 64, 512, true, 0, 16, KvDtype::Bf16);
        QVERIFY(backend->supports(s).find("batch") != std::string::npos);
        QVERIFY(!makeStepBackend("tpu", &err));
        QVERIFY(err.find("tpu") != std::string::npos);
    }

    void jsonRoundTrip() {
        MeasurementSet set;
        set.backend = "cpu";
        set.device = "test";
        set.ceilings.ok = true;
        set.ceilings.readBytesPerSecond = 2e10;
        set.ceilings.peakFlopPerSecond["bf16"] = 1e11;
        // A file without steps (as older versions wrote) loads with none.
        MeasurementSet back;
        std::string err;
        QVERIFY2(fromJson(toJson(set), &back, &err), err.c_str());
        QVERIFY(back.steps.empty());
        StepMeasurement m;
        m.shape = llama3_8b(16, 4096);
        m.counts = countStep(m.shape);
        m.medianSeconds = 0.25;
        m.minSeconds = 0.24;
        m.maxSeconds = 0.3;
        m.roofSeconds = 0.05;
        m.readCeiling = 2e10;
        m.peak = 1e11;
        m.computeBound = true;
        m.kernel = "cpu-step-bf16dot";
        m.ok = true;
        set.steps.push_back(m);
        QVERIFY2(fromJson(toJson(set), &back, &err), err.c_str());
        QCOMPARE(back.steps.size(), std::size_t(1));
        const StepMeasurement& b = back.steps[0];
        QCOMPARE(b.shape.hidden, 4096);
        QCOMPARE(b.shape.intermediate, 14336);
        QCOMPARE(b.shape.modelLayers, 32);
        QCOMPARE(b.medianSeconds, 0.25);
        QCOMPARE(b.counts.bytes, m.counts.bytes);
        QCOMPARE(b.fractionOfRoof, 0.2);
        QVERIFY(b.computeBound);
        QCOMPARE(b.scaledSeconds(), 0.25 * 32 / 2);
        // A broken field is named.
        std::string text = toJson(set);
        const auto at = text.find("\"median_s\": 0.25");
        QVERIFY(at != std::string::npos);
        text.replace(at, 16, "\"median_s\": -1.0");
        QVERIFY(!fromJson(text, &back, &err));
        QVERIFY2(err.find("steps[0].median_s") != std::string::npos, err.c_str());
    }

    void timedPointUnderRoof() {
        std::string err;
        auto backend = makeStepBackend("cpu", &err);
        QVERIFY(backend);
        for (std::int64_t b : {1, 8}) {
            const StepShape s = tiny(1024, 8, 2, 128, 2816, true, b, 1024, KvDtype::Bf16);
            const StepMeasurement m = backend->measureStep(s);
            QVERIFY2(m.ok, m.error.c_str());
            QVERIFY(m.repeats >= 5);
            QVERIFY(m.minSeconds > 0 && m.minSeconds <= m.medianSeconds &&
                    m.medianSeconds <= m.maxSeconds);
            QVERIFY(m.readCeiling > 0 && m.peak > 0);
            QCOMPARE(m.counts.bytes, countStep(s).bytes);
            QVERIFY(m.roofSeconds > 0);
            qInfo("%s: %.3f ms, %.1f GB/s, %.1f GFLOP/s, %.0f%% of roof (%s bound), %d copies",
                  describe(s).c_str(), m.medianSeconds * 1e3, m.bytesPerSecond / 1e9,
                  m.flopPerSecond / 1e9, 100 * m.fractionOfRoof,
                  m.computeBound ? "compute" : "memory", m.weightSets);
            QVERIFY2(m.medianSeconds * (1 + kCeilingTolerance) >= m.roofSeconds,
                     "a step beat its roof: the counts or the ceilings are wrong");
            QVERIFY(!m.aboveRoof);
        }
    }
};

QTEST_GUILESS_MAIN(TestCpuStep)
#include "tst_cpu_step.moc"
