// The timing harness's bookkeeping on a scripted engine: the CPU engine computes (so the
// reference check passes), while the repeats' times and the read-ceiling pieces between them
// are scripted, so the paired ceiling and the fraction of read are known exactly.
#include "decode_shapes.h"
#include "gpu/backend.h"
#include "gpu/engine.h"
#include "gpu/measurement_json.h"
#include "wrapped_engine.h"

#include <QtTest>
#include <vector>

using namespace kvscope::gpu;
using kvscope::gpu::testing::gqa;

namespace {

/// Pieces read 200, 210, 220, ... MB/s in call order (kernels "k0" / "k1" in turn); repeat r
/// runs at kFractions[r] of the piece after it, the fastest of the pieces around it. With
/// disturbedSpots > 0 it also takes spot ceilings: the first disturbedSpots of them read a peak
/// of 0.1 GFLOP/s (a neighbour held the cores), the rest 1 TFLOP/s.
class ScriptedEngine final : public kvscope::gpu::testing::WrappedCpuEngine {
public:
    explicit ScriptedEngine(int disturbedSpots = 0) : disturbedSpots_(disturbedSpots) {}
    static constexpr double kFractions[7] = {0.60, 0.58, 0.56, 0.54, 0.52, 0.50, 0.48};
    static double pieceRate(int i) { return (20.0 + i) * 1e7; } // slow: 80 ms repeats

    std::string backendName() const override { return "scripted"; }
    Ceilings measureCeilings(const Progress&) override {
        Ceilings c;
        c.ok = true;
        c.readBytesPerSecond = 1e10;
        return c;
    }
    bool ceilingPiece(int which, double, double* read, std::string* kernel) override {
        *read = pieceRate(pieces_++);
        *kernel = "k" + std::to_string(which % 2);
        return true;
    }
    bool spotCeilings(KvDtype, double, double* read, double* peak, std::string* kernel) override {
        if (disturbedSpots_ == 0)
            return false;
        *read = 1e10;
        *peak = spots_++ < disturbedSpots_ ? 1e8 : 1e12;
        *kernel = "spot";
        return true;
    }
    std::int64_t cacheBytes() const override { return 1 << 20; }
    std::string prepare(const DecodeShape& s, int sets, std::uint64_t seed) override {
        bytes_ = countDecode(s).bytes;
        return inner_->prepare(s, sets, seed);
    }
    std::string timeRun(int set, double* t) override {
        const int r = repeats_++;
        *t = bytes_ / (kFractions[r % 7] * pieceRate(r + 1)); // the piece after this repeat
        return inner_->run(set);
    }
    std::string kernelName() const override { return "scripted"; }

private:
    double bytes_ = 0;
    int pieces_ = 0, repeats_ = 0, spots_ = 0, disturbedSpots_ = 0;
};

} // namespace

class TestHarness : public QObject {
    Q_OBJECT

private Q_SLOTS:
    /// Seven repeats (0.2 s pass after four: the minimum of seven rules), eight pieces. Each
    /// repeat's ceiling is the piece after it (the fastest around it); the median fraction is
    /// 0.54 (repeat 3, against 240 MB/s), so the paired ceiling is 240 MB/s, not the fastest
    /// piece (270 MB/s), and k1 gave four of the seven repeats their ceiling.
    void pairsEveryRepeatWithItsNeighbouringPieces() {
        auto b = detail::makeHarnessBackend(std::make_unique<ScriptedEngine>());
        const Measurement m = b->measure(gqa(8, 2, 64, 20000, 1, KvDtype::Bf16));
        QVERIFY2(m.ok, m.error.c_str());
        QCOMPARE(m.repeats, 7);
        QCOMPARE(m.pairedPieces, 8);
        QCOMPARE(m.attempts, 1);
        QVERIFY2(std::abs(m.readCeilingPaired / 24e7 - 1) < 1e-9,
                 qPrintable(QString::number(m.readCeilingPaired)));
        QCOMPARE(m.readCeiling(), m.readCeilingPaired);
        QCOMPARE(m.readCeilingKernel, std::string("k1"));
        const RoofPlacement r = placeOnRoof(m, m.readCeiling(), 0);
        QVERIFY2(std::abs(r.fractionRead - 0.54) < 1e-9,
                 qPrintable(QString::number(r.fractionRead)));
        QVERIFY(!r.aboveCeiling);
    }

    /// A point above its own roof is timed again: the first attempt's peak spots (before and
    /// after) read 0.1 GFLOP/s, under the scripted point's ~0.5 GFLOP/s, so that attempt loses
    /// to the second, whose spots read 1 TFLOP/s. With every spot disturbed the point is kept
    /// as measured, above its roof and marked unstable (the table flags it).
    void timesAgainAPointAboveItsRoof() {
        const DecodeShape shape = gqa(8, 2, 64, 20000, 1, KvDtype::Bf16);
        auto b = detail::makeHarnessBackend(std::make_unique<ScriptedEngine>(2));
        const Measurement m = b->measure(shape);
        QVERIFY2(m.ok, m.error.c_str());
        QCOMPARE(m.attempts, 2);
        QCOMPARE(m.peakCeiling(), 1e12);
        QVERIFY(!placeOnRoof(m, m.readCeiling(), m.peakCeiling()).aboveCeiling);
        QVERIFY(!m.unstable);

        auto always = detail::makeHarnessBackend(std::make_unique<ScriptedEngine>(1000));
        const Measurement d = always->measure(shape);
        QVERIFY2(d.ok, d.error.c_str());
        QCOMPARE(d.attempts, 2);
        QCOMPARE(d.peakCeiling(), 1e8);
        QVERIFY(placeOnRoof(d, d.readCeiling(), d.peakCeiling()).aboveCeiling);
        QVERIFY(d.unstable);
    }

    /// What an H200 measured with scripts/gpu-check.sh (tests/data/measurements): each file
    /// loads, its read ceiling is the best of the eight-kernel family and under the L2 line,
    /// every point was paired with pieces and sits under its own ceilings, and the Llama-3-70B
    /// sweep keeps the order the chapter predicts (MHA nearest the roof, MQA furthest).
    void h200MeasurementsStayUnderTheirCeilings_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("points");
        for (auto [name, n] : {std::pair{"h200-llama70b-bf16", 7},
                               {"h200-llama70b-fp8", 7},
                               {"h200-llama8b-fp16", 6},
                               {"h200-llama8b-b1-bf16", 6},
                               {"h200-dsv3-tp8", 9},
                               {"h200-dsv3-tp1", 9}})
            QTest::newRow(name) << QString::fromLatin1(name) << n;
    }
    void h200MeasurementsStayUnderTheirCeilings() {
        QFETCH(QString, file);
        QFETCH(int, points);
        const std::string path = std::string(KVSCOPE_SOURCE_DIR) + "/tests/data/measurements/" +
                                 file.toStdString() + ".json";
        MeasurementSet set;
        std::string err;
        QVERIFY2(loadMeasurementJson(path, &set, &err), err.c_str());
        QCOMPARE(set.backend, std::string("cuda"));
        QCOMPARE(set.device, std::string("NVIDIA H200"));
        const Ceilings& c = set.ceilings;
        QVERIFY(c.readBytesPerSecond > 4.3e12 && c.readBytesPerSecond < 4.8e12); // HBM3e 4.8 TB/s
        QCOMPARE(int(c.readFamily.size()), 8);
        QCOMPARE(c.readFamily.front().value, c.readBytesPerSecond);
        QVERIFY(c.l2ReadBytesPerSecond > 3 * c.readBytesPerSecond);
        QCOMPARE(int(set.points.size()), points);
        for (const Measurement& m : set.points) {
            QVERIFY2(m.ok && m.maxRelError < m.errorBound, m.variant.c_str());
            QCOMPARE(m.pairedPieces, m.repeats + 1);
            const double peak = m.peakCeiling() > 0 ? m.peakCeiling() : c.peakFor(m.shape.dtype);
            const RoofPlacement r = placeOnRoof(m, m.readCeiling(), peak);
            QVERIFY2(!r.aboveCeiling,
                     qPrintable(QString::fromStdString(m.variant) + QLatin1Char(' ') +
                                QString::number(r.fractionRead)));
            QVERIFY(m.bytesPerSecond <= (1 + kCeilingTolerance) * c.readBytesPerSecond);
        }
        if (file == QLatin1String("h200-llama70b-bf16")) {
            const auto fraction = [&](std::size_t i) {
                return placeOnRoof(set.points[i], set.points[i].readCeiling(), 0).fractionRead;
            };
            QCOMPARE(set.points.front().variant, std::string("MHA"));
            QCOMPARE(set.points.back().variant, std::string("MQA"));
            QVERIFY(fraction(0) > 0.9);                             // 95.5% when measured
            QVERIFY(fraction(set.points.size() - 1) < fraction(0)); // 49%: latency-bound g 64
        }
    }
};

QTEST_GUILESS_MAIN(TestHarness)
#include "tst_harness.moc"
