// The CPU kernels below the engine: paths the engine's random inputs do not reach.
#include "gpu/cpu/amx_kernel.h"
#include "gpu/engine.h"
#include "gpu/numerics.h"

#include <QtTest>
#include <cmath>
#include <vector>

using namespace kvscope::gpu;

class TestCpuKernels : public QObject {
    Q_OBJECT

private Q_SLOTS:
    /// The AMX kernel's lazy rescale: the reference maximum moves only when a block's maximum
    /// passes it by more than 2^8, which the random decode inputs almost never do after the
    /// first block. Here the scores jump by 8.5 (log2 units) after the first 32 tokens, so the
    /// first block's accumulators and sums are rescaled by ~2^-8.5 together; the accumulators
    /// left unscaled put the output ~0.2 off (values in [0.5, 1.5]). One row group (8 rows) and
    /// two (20 rows).
    void amxRescalesWhenScoresJump() {
        if (!detail::cpuHasAmxKernel())
            QSKIP("this CPU has no AMX kernel");
        constexpr int D = 128, S = 200;
        const auto bf = [](double x) { return num::floatToBf16(float(x)); };
        std::vector<std::uint16_t> k(S * D), v(S * D);
        for (int t = 0; t < S; ++t)
            for (int j = 0; j < D; ++j) {
                k[t * D + j] = bf(j == 0   ? (t < 32 ? 0.0 : 8.5)
                                  : j == 1 ? ((t * 7) % 11 - 5) / 16.0
                                           : 0);
                v[t * D + j] = bf(1.0 + ((t * 13 + j * 7) % 17 - 8) / 16.0);
            }
        for (const int rows : {8, 20}) {
            std::vector<std::uint16_t> q(rows * D, 0);
            for (int r = 0; r < rows; ++r) {
                q[r * D] = bf(1.0);
                q[r * D + 1] = bf((r + 1) / 8.0);
            }
            std::vector<float> out(rows * D, std::nanf("")), lse(rows, std::nanf(""));
            detail::cpu::SegmentBf16 sg{q.data(),
                                        rows,
                                        reinterpret_cast<const std::uint8_t*>(k.data()),
                                        reinterpret_cast<const std::uint8_t*>(v.data()),
                                        2 * D,
                                        2 * D,
                                        0,
                                        S,
                                        KvDtype::Bf16,
                                        1.0f,
                                        out.data(),
                                        lse.data()};
            detail::cpu::ScratchAmx sc;
            QVERIFY(detail::cpu::attendAmx(sg, D, D, sc));
            for (int r = 0; r < rows; ++r) {
                std::vector<double> s(S), ref(D, 0.0);
                double mx = -1e300, sum = 0;
                for (int t = 0; t < S; ++t) {
                    s[t] = 0;
                    for (int j = 0; j < D; ++j)
                        s[t] +=
                            double(num::bf16ToFloat(q[r * D + j])) * num::bf16ToFloat(k[t * D + j]);
                    mx = std::max(mx, s[t]);
                }
                for (int t = 0; t < S; ++t) {
                    const double w = std::exp2(s[t] - mx);
                    sum += w;
                    for (int j = 0; j < D; ++j)
                        ref[j] += w * num::bf16ToFloat(v[t * D + j]);
                }
                for (int j = 0; j < D; ++j)
                    QVERIFY2(std::abs(out[r * D + j] - ref[j] / sum) <= 1e-2,
                             qPrintable(QStringLiteral("rows %1 row %2 col %3: %4 vs %5")
                                            .arg(rows)
                                            .arg(r)
                                            .arg(j)
                                            .arg(out[r * D + j])
                                            .arg(ref[j] / sum)));
                QVERIFY(std::abs(lse[r] - (mx + std::log2(sum))) <= 1e-2);
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestCpuKernels)
#include "tst_cpu_kernels.moc"
