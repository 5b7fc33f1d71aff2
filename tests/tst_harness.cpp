// The timing harness's bookkeeping on a scripted engine: the CPU engine computes (so the
// reference check passes), while the repeats' times and the read-ceiling pieces between them
// are scripted, so the paired ceiling and the fraction of read are known exactly.
#include "decode_shapes.h"
#include "gpu/backend.h"
#include "gpu/engine.h"
#include "wrapped_engine.h"

#include <QtTest>
#include <vector>

using namespace kvscope::gpu;
using kvscope::gpu::testing::gqa;

namespace {

/// Pieces read 200, 210, 220, ... MB/s in call order (kernels "k0" / "k1" in turn); repeat r
/// runs at kFractions[r] of the piece after it, the fastest of the pieces around it.
class ScriptedEngine final : public kvscope::gpu::testing::WrappedCpuEngine {
public:
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
    int pieces_ = 0, repeats_ = 0;
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
};

QTEST_GUILESS_MAIN(TestHarness)
#include "tst_harness.moc"
