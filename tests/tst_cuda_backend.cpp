// CUDA measurement backend: every kernel, knob and dtype against the double reference on the
// GPU, the ceilings, and one real measurement. Registered with CTest only where a GPU exists.
#include "decode_shapes.h"
#include "gpu/backend.h"

#include <QtTest>
#include <cmath>

using namespace kvscope::gpu;
using kvscope::gpu::testing::gqa;
using kvscope::gpu::testing::mla;
Q_DECLARE_METATYPE(kvscope::gpu::DecodeShape)

namespace {} // namespace

class TestCudaBackend : public QObject {
    Q_OBJECT
    std::unique_ptr<Backend> backend_;

private Q_SLOTS:
    void initTestCase() {
        std::string err;
        backend_ = makeBackend("cuda", &err);
        if (!backend_)
            QSKIP(qPrintable(QStringLiteral("no usable GPU: ") + QString::fromStdString(err)));
        const auto devs = backend_->devices();
        QVERIFY(!devs.empty());
        qInfo("device: %s, %d SMs, L2 %lld MiB", devs[0].name.c_str(), devs[0].multiprocessors,
              static_cast<long long>(devs[0].lastCacheBytes >> 20));
    }

    void selfCheck_data() {
        QTest::addColumn<DecodeShape>("shape");
        for (KvDtype dt : {KvDtype::Bf16, KvDtype::Fp16, KvDtype::Fp8E4m3}) {
            const std::string n(dtypeName(dt));
            QTest::newRow(("mha d128 split " + n).c_str()) << gqa(32, 32, 128, 3000, 1, dt);
            QTest::newRow(("gqa-8 d128 " + n).c_str()) << gqa(64, 8, 128, 4097, 2, dt);
            QTest::newRow(("gqa-8 d128 no split " + n).c_str()) << gqa(32, 4, 128, 512, 128, dt);
            QTest::newRow(("gqa-6 d64 " + n).c_str()) << gqa(12, 2, 64, 777, 1, dt);
            QTest::newRow(("gqa-20 d128 " + n).c_str()) << gqa(40, 2, 128, 2048, 1, dt);
            QTest::newRow(("mqa g64 d64 " + n).c_str()) << gqa(64, 1, 64, 1500, 1, dt);
            QTest::newRow(("mqa g128 d128 " + n).c_str()) << gqa(128, 1, 128, 1024, 1, dt);
            QTest::newRow(("gqa-8 d256 " + n).c_str()) << gqa(16, 2, 256, 1300, 1, dt);
            QTest::newRow(("mqa g64 d256 " + n).c_str()) << gqa(64, 1, 256, 600, 1, dt);
            QTest::newRow(("tiny context " + n).c_str()) << gqa(8, 8, 64, 5, 3, dt);
            QTest::newRow(("mla h16 " + n).c_str()) << mla(16, 2000, 1, dt);
            QTest::newRow(("mla h128 " + n).c_str()) << mla(128, 1100, 2, dt);
            QTest::newRow(("mla h20 " + n).c_str()) << mla(20, 333, 1, dt);
            QTest::newRow(("mla h16 no split " + n).c_str()) << mla(16, 300, 300, dt);
        }
    }
    void selfCheck() {
        QFETCH(DecodeShape, shape);
        const Measurement m = backend_->selfCheck(shape);
        QVERIFY2(m.ok, m.error.c_str());
        QVERIFY(m.maxRelError <= errorBoundFor(shape.dtype));
        QVERIFY(m.maxRelError > 1e-6); // 16-bit outputs: a zero error means nothing was compared
    }

    void unsupported() {
        QVERIFY(!backend_->supports(gqa(32, 8, 128, 100, 1, KvDtype::Fp32)).empty());
        QVERIFY(!backend_->supports(gqa(256, 1, 128, 100, 1, KvDtype::Bf16)).empty()); // g = 256
        QVERIFY(backend_->supports(gqa(64, 64, 128, 1ll << 29, 4096, KvDtype::Bf16))
                    .find("too large") != std::string::npos);
    }

    void ceilingsAndMeasurement() {
        const Ceilings c = backend_->measureCeilings();
        QVERIFY2(c.ok, c.error.c_str());
        QVERIFY(c.readBytesPerSecond > 1e11);
        QVERIFY2(c.peakFor(KvDtype::Bf16) > 1e13, c.error.c_str());
        // The ceiling is the best of the read family, which is reported best first; the
        // L2-resident read is the inner line, above it.
        QVERIFY(c.readFamily.size() >= 8);
        QCOMPARE(c.readFamily.front().value, c.readBytesPerSecond);
        for (std::size_t i = 1; i < c.readFamily.size(); ++i)
            QVERIFY(c.readFamily[i].value <= c.readFamily[i - 1].value);
        QVERIFY(c.l2ReadBytesPerSecond > c.readBytesPerSecond);
        const DecodeShape s = gqa(64, 8, 128, 8192, 16, KvDtype::Bf16);
        const Measurement m = backend_->measure(s);
        QVERIFY2(m.ok, m.error.c_str());
        QVERIFY(m.medianSeconds > 0 && std::isfinite(m.medianSeconds));
        // Every repeat is paired with a read piece before and after it; the point stays under its
        // own ceiling (and under the family's best) within the 3% tolerance.
        QCOMPARE(m.pairedPieces, m.repeats + 1);
        QVERIFY(m.readCeilingPaired > 0);
        const RoofPlacement r = placeOnRoof(m, m.readCeiling(), c.peakFor(s.dtype));
        QVERIFY2(!r.aboveCeiling, qPrintable(QString::number(r.fractionRead)));
        QVERIFY(m.bytesPerSecond < (1 + kCeilingTolerance) * c.readBytesPerSecond);
        qInfo(
            "read %.0f GB/s, bf16 peak %.0f TFLOP/s; gqa-8 d128 bf16 B16 S8192: %.0f GB/s (%.0f%%)",
            c.readBytesPerSecond / 1e9, c.peakFor(KvDtype::Bf16) / 1e12, m.bytesPerSecond / 1e9,
            100 * m.bytesPerSecond / c.readBytesPerSecond);
    }
};

QTEST_GUILESS_MAIN(TestCudaBackend)
#include "tst_cuda_backend.moc"
