// The CPU kernels below the engine: paths the engine's random inputs do not reach.
#include "gpu/cpu/amx_kernel.h"
#include "gpu/cpu/bf16_kernel.h"
#include "gpu/cpu/bf16_simd.h"
#include "gpu/cpu/buffer.h"
#include "gpu/cpu/ceiling_kernels.h"
#include "gpu/cpu/ceilings.h"
#include "gpu/cpu/inputs.h"
#include "gpu/cpu/portable_kernel.h"
#include "gpu/cpu/row_map.h"
#include "gpu/cpu/thread_pool.h"
#include "gpu/engine.h"
#include "gpu/numerics.h"

#include <QtTest>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace kvscope::gpu;

namespace {

/// fp64 attention of one query row over S tokens of D-wide keys and values (log2-domain scores
/// sum_j q(j) k(t, j), weights 2^(score - max)): the normalised output row and the log2-sum-exp.
struct ReferenceRow {
    std::vector<double> out;
    double lse = 0;
};
template <class Q, class K, class V> ReferenceRow referenceRow(int S, int D, Q q, K k, V v) {
    std::vector<double> s(S);
    double mx = -1e300, sum = 0;
    for (int t = 0; t < S; ++t) {
        s[t] = 0;
        for (int j = 0; j < D; ++j)
            s[t] += q(j) * k(t, j);
        mx = std::max(mx, s[t]);
    }
    ReferenceRow ref{std::vector<double>(D, 0.0), 0};
    for (int t = 0; t < S; ++t) {
        const double w = std::exp2(s[t] - mx);
        sum += w;
        for (int j = 0; j < D; ++j)
            ref.out[j] += w * v(t, j);
    }
    for (double& o : ref.out)
        o /= sum;
    ref.lse = mx + std::log2(sum);
    return ref;
}

} // namespace

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
                const ReferenceRow ref = referenceRow(
                    S, D, [&](int j) { return double(num::bf16ToFloat(q[r * D + j])); },
                    [&](int t, int j) { return double(num::bf16ToFloat(k[t * D + j])); },
                    [&](int t, int j) { return double(num::bf16ToFloat(v[t * D + j])); });
                for (int j = 0; j < D; ++j)
                    QVERIFY2(std::abs(out[r * D + j] - ref.out[j]) <= 1e-2,
                             qPrintable(QStringLiteral("rows %1 row %2 col %3: %4 vs %5")
                                            .arg(rows)
                                            .arg(r)
                                            .arg(j)
                                            .arg(out[r * D + j])
                                            .arg(ref.out[j])));
                QVERIFY(std::abs(lse[r] - ref.lse) <= 1e-2);
            }
        }
    }

    /// The portable kernel's lazy rescale (narrow layout: the reference maximum moves only when
    /// a tile passes it by more than 8 in log2 units) and its lane-wise softmax (wide layout):
    /// scores grow by 0.3 per token over 200 tokens, so the reference moves several times and
    /// every tile between moves has weights up to 2^8; fp32 KV, so the output matches the fp64
    /// reference to ~1e-6. Rows 1, 3, 7, 8 (narrow below the width: rows read from the cache)
    /// and 20, 22 (rows in lanes: K decoded), at every vector width this CPU runs; 3, 7 and 22
    /// leave remainders under every P·V row block.
    void portableRescalesAsScoresGrow_data() {
        QTest::addColumn<int>("width");
        QTest::addColumn<int>("rows");
        for (int width : {16, 8, 4})
            if (width <= detail::cpu::portableWidth())
                for (int rows : {1, 3, 7, 8, 20, 22})
                    QTest::addRow("x%d rows %d", width, rows) << width << rows;
    }
    void portableRescalesAsScoresGrow() {
        QFETCH(int, width);
        QFETCH(int, rows);
        constexpr int D = 128, S = 200;
        std::vector<float> k(S * D, 0.0f), v(S * D);
        for (int t = 0; t < S; ++t) {
            k[t * D] = 0.3f * float(t);
            k[t * D + 1] = float((t * 7) % 11 - 5) / 16.0f;
            for (int j = 0; j < D; ++j)
                v[t * D + j] = 1.0f + float((t * 13 + j * 7) % 17 - 8) / 16.0f;
        }
        std::vector<float> q(rows * D, 0.0f);
        for (int r = 0; r < rows; ++r) {
            q[r * D] = 1.0f;
            q[r * D + 1] = float(r + 1) / 8.0f;
        }
        std::vector<float> out(rows * D, std::nanf("")), lse(rows, std::nanf(""));
        const detail::cpu::Segment sg{q.data(),
                                      rows,
                                      D,
                                      D,
                                      reinterpret_cast<const std::uint8_t*>(k.data()),
                                      reinterpret_cast<const std::uint8_t*>(v.data()),
                                      4 * D,
                                      4 * D,
                                      0,
                                      S,
                                      KvDtype::Fp32,
                                      out.data(),
                                      lse.data()};
        detail::cpu::Scratch sc;
        const detail::cpu::PortableKernel kernel = detail::cpu::portableKernel(width, D, D);
        QVERIFY(kernel);
        kernel(sg, sc);
        for (int r = 0; r < rows; ++r) {
            const ReferenceRow ref = referenceRow(
                S, D, [&](int j) { return double(q[r * D + j]); },
                [&](int t, int j) { return double(k[t * D + j]); },
                [&](int t, int j) { return double(v[t * D + j]); });
            for (int j = 0; j < D; ++j)
                QVERIFY2(std::abs(out[r * D + j] - ref.out[j]) <= 1e-5 * std::abs(ref.out[j]),
                         qPrintable(QStringLiteral("row %1 col %2: %3 vs %4")
                                        .arg(r)
                                        .arg(j)
                                        .arg(out[r * D + j])
                                        .arg(ref.out[j])));
            QVERIFY(std::abs(lse[r] - ref.lse) <= 1e-4);
        }
    }

    /// Both fp8 decoders (VBMI, and the vpermi2w one the kernels fall back to) against the
    /// scalar table on a partial tile: n rows of every code (NaN 0x7f/0xff included), an odd
    /// source stride, rows n.. zero, nothing written past the tile. Widths of the kernels
    /// (64..576) and masked VBMI tails (32, 96); tiles of the vdpbf16ps kernel (32 rows) and
    /// of AMX MLA (64).
    void fp8DecodersMatchTable_data() {
        QTest::addColumn<int>("width");
        QTest::addColumn<int>("n");
        QTest::addColumn<int>("rows");
        QTest::newRow("w64 n9 of 32") << 64 << 9 << 32;
        QTest::newRow("w128 n31 of 32") << 128 << 31 << 32;
        QTest::newRow("w256 n2 of 32") << 256 << 2 << 32;
        QTest::newRow("w576 n33 of 64") << 576 << 33 << 64;
        QTest::newRow("w32 n9 of 32") << 32 << 9 << 32;
        QTest::newRow("w96 n5 of 32") << 96 << 5 << 32;
    }
    void fp8DecodersMatchTable() {
#if KVSCOPE_HAVE_BF16_KERNEL
        QFETCH(int, width);
        QFETCH(int, n);
        QFETCH(int, rows);
        if (!detail::cpu::cpuHasBf16Dot())
            QSKIP("this CPU has no AVX512_BF16 kernel");
        const int stride = width + 7;
        std::vector<std::uint8_t> src(std::size_t(n) * stride);
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < width; ++j)
                src[std::size_t(i) * stride + j] = std::uint8_t((i * width + j) * 37 + 11);
        const std::uint16_t* table = detail::cpu::fp8ToBf16Table();
        int codes = 0; // distinct codes seen: every one of the 256 when n * width >= 256
        for (int c = 0; c < 256; ++c)
            for (int i = 0; i < n; ++i)
                if (std::memchr(&src[std::size_t(i) * stride], c, std::size_t(width))) {
                    ++codes;
                    break;
                }
        QCOMPARE(codes, std::min(256, n * width));
        using detail::cpu::Fp8Decoder;
        for (const Fp8Decoder dec : {Fp8Decoder::Table, Fp8Decoder::Vbmi}) {
            if (dec == Fp8Decoder::Vbmi && !detail::cpu::cpuHasVbmi())
                continue;
            const int tile = rows * width;
            std::vector<std::uint16_t> dst(std::size_t(tile + 64), 0xaaaa);
            detail::cpu::stageFp8Rows(src.data(), stride, n, rows, width, dst.data(), dec);
            for (int e = 0; e < tile + 64; ++e) {
                const int i = e / width, j = e % width;
                const std::uint16_t want = e >= tile ? 0xaaaa
                                           : i >= n  ? 0
                                                     : table[src[std::size_t(i) * stride + j]];
                QVERIFY2(dst[std::size_t(e)] == want,
                         qPrintable(QStringLiteral("%1 decoder, row %2 col %3: %4 vs %5")
                                        .arg(dec == Fp8Decoder::Vbmi ? QStringLiteral("vbmi")
                                                                     : QStringLiteral("table"))
                                        .arg(i)
                                        .arg(j)
                                        .arg(dst[std::size_t(e)], 0, 16)
                                        .arg(want, 0, 16)));
            }
        }
#else
        QSKIP("this build has no AVX512_BF16 kernel");
#endif
    }

    /// Both fp8 kernels give the same bits with either decoder (KVSCOPE_CPU_FP8=table forces
    /// the vpermi2w one; the default is VBMI where the CPU has it): every non-NaN code in K
    /// and V, partial last tiles, GQA (AMX: V staged by the VBMI decoder) and MLA (V = the
    /// staged K).
    void fp8KernelsMatchAcrossDecoders_data() {
        QTest::addColumn<bool>("amx");
        QTest::addColumn<int>("keyDim");
        QTest::addColumn<int>("valueDim");
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("tokens");
        for (const bool amx : {false, true}) {
            const std::string k = amx ? "amx " : "bf16dot ";
            QTest::newRow((k + "gqa d64 r5 S33").c_str()) << amx << 64 << 64 << 5 << 33;
            QTest::newRow((k + "gqa d128 r2 S100").c_str()) << amx << 128 << 128 << 2 << 100;
            QTest::newRow((k + "gqa d256 r8 S31").c_str()) << amx << 256 << 256 << 8 << 31;
            QTest::newRow((k + "mla r3 S70").c_str()) << amx << 576 << 512 << 3 << 70;
        }
    }
    void fp8KernelsMatchAcrossDecoders() {
        QFETCH(bool, amx);
        QFETCH(int, keyDim);
        QFETCH(int, valueDim);
        QFETCH(int, rows);
        QFETCH(int, tokens);
        if (amx ? !detail::cpuHasAmxKernel() : !detail::cpu::cpuHasBf16Dot())
            QSKIP("this CPU has no such kernel");
        const bool mla = keyDim != valueDim;
        std::vector<std::uint8_t> k(std::size_t(tokens) * keyDim), v(k.size());
        for (std::size_t i = 0; i < k.size(); ++i) {
            k[i] = std::uint8_t(i * 37 + 11);
            v[i] = std::uint8_t(i * 53 + 5);
            for (std::uint8_t* x : {&k[i], &v[i]})
                if ((*x & 0x7f) == 0x7f) // NaN
                    *x = std::uint8_t(*x - 1);
        }
        std::vector<std::uint16_t> q(std::size_t(rows) * keyDim);
        for (std::size_t i = 0; i < q.size(); ++i)
            q[i] = num::floatToBf16(float(int(i * 29 % 31) - 15) / 16.0f);
        const auto run = [&](const char* fp8Env, std::vector<float>& out, std::vector<float>& lse) {
            if (fp8Env)
                qputenv("KVSCOPE_CPU_FP8", fp8Env);
            out.assign(std::size_t(rows) * valueDim, std::nanf(""));
            lse.assign(std::size_t(rows), std::nanf(""));
            detail::cpu::SegmentBf16 sg{
                q.data(),         rows,   k.data(),   mla ? k.data() : v.data(),
                keyDim,           keyDim, 0,          tokens,
                KvDtype::Fp8E4m3, 1e-4f,  out.data(), lse.data()};
            detail::cpu::ScratchAmx sa;
            detail::cpu::ScratchBf16 sb;
            const bool ran = amx ? detail::cpu::attendAmx(sg, keyDim, valueDim, sa)
                                 : detail::cpu::attendBf16(sg, keyDim, valueDim, sb);
            qunsetenv("KVSCOPE_CPU_FP8");
            return ran;
        };
        std::vector<float> out, lse, outTable, lseTable;
        QVERIFY(run(nullptr, out, lse));
        QVERIFY(run("table", outTable, lseTable));
        for (const float x : out)
            QVERIFY(std::isfinite(x));
        QVERIFY(std::memcmp(out.data(), outTable.data(), out.size() * sizeof(float)) == 0);
        QVERIFY(std::memcmp(lse.data(), lseTable.data(), lse.size() * sizeof(float)) == 0);
        // The default is the VBMI decoder where the CPU has it: the comparison is not vacuous.
        QCOMPARE(detail::cpu::fp8Decoder() == detail::cpu::Fp8Decoder::Vbmi,
                 bool(detail::cpu::cpuHasVbmi()));
    }
    /// V stored in token pairs (SegmentBf16::valuesPaired) gives the same bits as plain V rows:
    /// the vdpbf16ps kernel's rows-in-lanes P·V (streams of 16k rows, and of 8 in half lanes)
    /// sums the same products in the same order, only without the per-tile interleave, and the
    /// AMX kernel's tile products take the same pairs (V tiles loaded where the pairs are, or
    /// decoded / padded into scratch, instead of interleaved). bf16 and fp8, a segment from an
    /// even t0 with a partial last block; paired V a kernel does not take (an odd t0 or token
    /// count; for the vdpbf16ps kernel streams scored in rows) is refused, not misread.
    void pairedValuesMatchPlainRows_data() {
        QTest::addColumn<bool>("amx");
        QTest::addColumn<int>("dtype");
        QTest::addColumn<int>("dim");
        QTest::addColumn<int>("rows");
        for (const bool amx : {false, true})
            for (const KvDtype d : {KvDtype::Bf16, KvDtype::Fp8E4m3}) {
                const std::string n =
                    std::string(amx ? "amx " : "") + (d == KvDtype::Bf16 ? "bf16 " : "fp8 ");
                if (amx) { // fp8 runs on AMX from 1 row, bf16 from 3 (amxMinRows)
                    QTest::newRow((n + "d128 r1").c_str()) << amx << int(d) << 128 << 1;
                    QTest::newRow((n + "d256 r3").c_str()) << amx << int(d) << 256 << 3;
                    QTest::newRow((n + "d128 r4").c_str()) << amx << int(d) << 128 << 4;
                }
                QTest::newRow((n + "d64 r8").c_str()) << amx << int(d) << 64 << 8;
                QTest::newRow((n + "d256 r8").c_str()) << amx << int(d) << 256 << 8;
                QTest::newRow((n + "d128 r16").c_str()) << amx << int(d) << 128 << 16;
                QTest::newRow((n + "d64 r32").c_str()) << amx << int(d) << 64 << 32;
                QTest::newRow((n + "d256 r48").c_str()) << amx << int(d) << 256 << 48;
            }
    }
    void pairedValuesMatchPlainRows() {
        QFETCH(bool, amx);
        QFETCH(int, dtype);
        QFETCH(int, dim);
        QFETCH(int, rows);
        if (amx ? !detail::cpuHasAmxKernel() : !detail::cpu::cpuHasBf16Dot())
            QSKIP(amx ? "this CPU or build has no AMX kernel"
                      : "this CPU has no AVX512_BF16 kernel");
        if (!amx && !detail::cpu::bf16PairedValues(rows, dim))
            QSKIP("paired values switched off (KVSCOPE_CPU_PAIRED_V=0, or KVSCOPE_CPU_HALF=0 at 8 "
                  "rows)");
        const KvDtype dt = KvDtype(dtype);
        // 120 tokens: 3 tiles of 32 + 24 (vdpbf16ps), 1 block of 64 + 56 or 3 of 32 + 24 (AMX)
        const int eb = kvBytesPerElement(dt), tokens = 150, t0 = 6, t1 = 126;
        std::vector<std::uint8_t> k(std::size_t(tokens) * dim * eb), v(k.size()), paired(v.size());
        detail::cpu::fillInputs(dt, k.data(), 0, tokens * dim, 3, num::kKey, 1.0f);
        detail::cpu::fillInputs(dt, v.data(), 0, tokens * dim, 3, num::kValue, 1.0f);
        for (int t = 0; t < tokens; ++t)
            for (int j = 0; j < dim; ++j)
                std::memcpy(&paired[std::size_t(((t / 2 * dim + j) * 2 + t % 2) * eb)],
                            &v[std::size_t((t * dim + j) * eb)], std::size_t(eb));
        std::vector<std::uint16_t> q(std::size_t(rows) * dim);
        detail::cpu::fillInputs(KvDtype::Bf16, reinterpret_cast<std::uint8_t*>(q.data()), 0,
                                std::int64_t(q.size()), 5, num::kQuery, num::kQueryScale);
        const auto run = [&](const std::uint8_t* values, bool pairedRows, int from, int to,
                             int rowCount, std::vector<float>& out, std::vector<float>& lse) {
            out.assign(std::size_t(rowCount) * dim, std::nanf(""));
            lse.assign(std::size_t(rowCount), std::nanf(""));
            detail::cpu::SegmentBf16 sg{q.data(),   rowCount,   k.data(),  values, dim * eb,
                                        dim * eb,   from,       to,        dt,     0.125f,
                                        out.data(), lse.data(), pairedRows};
            if (amx) {
                detail::cpu::ScratchAmx sa;
                return detail::cpu::attendAmx(sg, dim, dim, sa);
            }
            detail::cpu::ScratchBf16 sc;
            return detail::cpu::attendBf16(sg, dim, dim, sc);
        };
        std::vector<float> out, lse, outPaired, lsePaired;
        QVERIFY(run(v.data(), false, t0, t1, rows, out, lse));
        QVERIFY(run(paired.data(), true, t0, t1, rows, outPaired, lsePaired));
        for (const float x : outPaired)
            QVERIFY(std::isfinite(x));
        QVERIFY(std::memcmp(out.data(), outPaired.data(), out.size() * sizeof(float)) == 0);
        QVERIFY(std::memcmp(lse.data(), lsePaired.data(), lse.size() * sizeof(float)) == 0);
        QVERIFY(!run(paired.data(), true, t0 + 1, t1, rows, outPaired, lsePaired));
        QVERIFY(!run(paired.data(), true, t0, t1 - 1, rows, outPaired, lsePaired));
        if (!amx)
            QVERIFY(!run(paired.data(), true, t0, t1, 4, outPaired, lsePaired));
    }

    /// The next tile's lines are handed to the compute calls at the rate of their work: a g 16
    /// tile (32 tokens of 256-byte K and V rows: 128 line pairs) makes 3 score calls of 32 loop
    /// iterations and 6 P·V calls of 16; from the second tile on, the pairs handed out follow
    /// the units done to within one, never more than one pair per iteration, each line once and
    /// in order. MLA's shared K/V tile (576 lines) goes out as pairs of K lines (here over calls
    /// of twice the iterations, so that one pair per iteration keeps up). A gathered tile (8
    /// runs of 4 tokens, 8 KiB apart here) goes out round the runs: line j of the order is line
    /// j / 8 of run j % 8.
    void spreadTilePacesTheNextTile_data() {
        QTest::addColumn<bool>("shared");
        QTest::addColumn<bool>("gathered");
        QTest::newRow("gqa") << false << false;
        QTest::newRow("mla") << true << false;
        QTest::newRow("gqa gathered") << false << true;
        QTest::newRow("mla gathered") << true << true;
    }
    void spreadTilePacesTheNextTile() {
        QFETCH(bool, shared);
        QFETCH(bool, gathered);
        using namespace detail::cpu;
        const int rowBytes = shared ? 1152 : 256, lines = 32 * rowBytes / 64;
        const std::int64_t runStride = gathered ? 8192 + 4 * rowBytes : 0;
        std::vector<std::uint8_t> k(std::size_t(gathered ? 8 * runStride : 32 * rowBytes)),
            v(k.size());
        NextTile nt{k.data(), shared ? k.data() : v.data(), lines, shared};
        if (gathered) {
            nt.shift = 3;
            nt.kRunStride = nt.vRunStride = runStride;
        }
        // Line q of K (or V) in the order it goes out.
        const auto expected = [&](const std::vector<std::uint8_t>& base, int q) {
            return gathered ? base.data() + (q % 8) * runStride + (q / 8) * 64
                            : base.data() + 64 * q;
        };
        const int pairs = shared ? lines / 2 : lines;
        const int scale = shared ? 2 : 1;
        const std::vector<int> calls = {32 * scale, 32 * scale, 32 * scale, 16 * scale, 16 * scale,
                                        16 * scale, 16 * scale, 16 * scale, 16 * scale};
        const int total = 192 * scale;
        SpreadTile st;
        for (int tile = 0; tile < 3; ++tile) {
            st.begin(nt, 32);
            std::vector<const std::uint8_t*> seen;
            int units = 0;
            for (int u : calls) {
                LineBatch b;
                st.take(u, b);
                QVERIFY(b.n >= 0 && b.n <= u);
                for (int i = 0; i < b.n; ++i) {
                    seen.push_back(b.lineA(i));
                    seen.push_back(b.lineB(i));
                }
                units += u;
                if (tile > 0)
                    QVERIFY2(std::abs(int(seen.size() / 2) - pairs * units / total) <= 1,
                             qPrintable(QStringLiteral("%1 pairs after %2 units")
                                            .arg(seen.size() / 2)
                                            .arg(units)));
            }
            st.finish();
            if (tile == 0)
                continue;
            QCOMPARE(int(seen.size()), 2 * pairs);
            for (int j = 0; j < pairs; ++j) {
                QCOMPARE(seen[std::size_t(2 * j)], expected(k, shared ? 2 * j : j));
                QCOMPARE(seen[std::size_t(2 * j + 1)],
                         shared ? expected(k, 2 * j + 1) : expected(v, j));
            }
        }
    }

    /// Every index of every job runs exactly once, whether the workers were still polling
    /// (jobs back to back) or had gone to sleep (a pause longer than the spin time), with more
    /// threads than this machine has cores; the pool stops from either state.
    void threadPoolRunsEveryItemOnce() {
        namespace cpu = detail::cpu;
        const auto pauseToSleep = cpu::ThreadPool::spinTime() * 3 + std::chrono::milliseconds(5);
        for (const bool sleepFirst : {false, true}) {
            cpu::ThreadPool pool(4);
            for (int job = 0; job < 60; ++job) {
                if (sleepFirst && job % 20 == 0)
                    std::this_thread::sleep_for(pauseToSleep);
                const std::int64_t n = 1 + job * 7;
                std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
                pool.parallelFor(n, [&](std::int64_t i) { hits[std::size_t(i)].fetch_add(1); });
                for (std::int64_t i = 0; i < n; ++i)
                    QCOMPARE(hits[std::size_t(i)].load(), 1);
            }
            if (sleepFirst)
                std::this_thread::sleep_for(pauseToSleep); // destroyed while the workers sleep
        }
    }
    /// Buffers from 2 MiB on start on a 2 MiB boundary (so transparent huge pages can back all
    /// of them), smaller ones on a cache line; every byte asked for is writable, and a move
    /// hands the memory over.
    void buffersAlignForHugePages() {
        namespace cpu = detail::cpu;
        cpu::Buffer small;
        QVERIFY(small.allocate(100));
        QCOMPARE(small.bytes, std::size_t(100));
        QCOMPARE(reinterpret_cast<std::uintptr_t>(small.data) % 64, std::uintptr_t(0));
        const std::size_t n = 5 * cpu::kHugePage + 3;
        cpu::Buffer large;
        QVERIFY(large.allocate(n));
        QCOMPARE(large.bytes, n);
        const std::uintptr_t want = cpu::hugePagesEnabled() ? cpu::kHugePage : 64;
        QCOMPARE(reinterpret_cast<std::uintptr_t>(large.data) % want, std::uintptr_t(0));
        large.data[0] = 1;
        large.data[n - 1] = 2;
        cpu::Buffer moved(std::move(large));
        QVERIFY(!large.data);
        QCOMPARE(moved.bytes, n);
        QCOMPARE(int(moved.data[n - 1]), 2);
        cpu::Buffer empty;
        QVERIFY(empty.allocate(0));
        QVERIFY(empty.data != nullptr);
    }
    /// A ceiling piece read from a point's own inputs stays inside them: each region ends at a
    /// PROT_NONE guard page, so a read rounded up past a small region faults here.
    void ceilingPieceStaysInsideItsRegions() {
        namespace cpu = detail::cpu;
        cpu::ThreadPool pool(2);
        cpu::CeilingMeter meter(pool, cpu::lastLevelCacheBytes(), cpu::cacheLevelBytes(2),
                                256ll << 20);
        const std::int64_t page = sysconf(_SC_PAGESIZE), granule = cpu::kReadGranule;
        const std::int64_t mapped = 4 * granule + page;
        void* m = mmap(nullptr, std::size_t(mapped), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        QVERIFY(m != MAP_FAILED);
        auto* base = static_cast<std::uint8_t*>(m);
        std::memset(base, 0x3c, std::size_t(4 * granule));
        QCOMPARE(mprotect(base + 4 * granule, std::size_t(page), PROT_NONE), 0);
        const std::uint8_t* end = base + 4 * granule;
        double read = 0;
        std::string kernel;
        // Half a granule (a tiny shape's K): nothing whole to read, so no piece.
        QVERIFY(!meter.pieceOf(0, {{end - granule / 2, granule / 2}}, &read, &kernel));
        // 2.5 granules: one whole granule per thread of two, the rest left out.
        QVERIFY(meter.pieceOf(1, {{end - 5 * granule / 2, 5 * granule / 2}}, &read, &kernel));
        QVERIFY(read > 0);
        QVERIFY(!kernel.empty());
        munmap(m, std::size_t(mapped));
    }
};

QTEST_GUILESS_MAIN(TestCpuKernels)
#include "tst_cpu_kernels.moc"
