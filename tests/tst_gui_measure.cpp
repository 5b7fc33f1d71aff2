// The measurement overlay driven through the real MainWindow (offscreen), on the CPU backend:
// measured points on the roofline, a measurements file at start, cancelling, the newest job
// winning, measured steps on the step plot and the job built for the window's state.
#include "core/format.h"
#include "core/model/presets.h"
#include "core/model/weights.h"
#include "gpu/backend.h"
#include "gpu/measure_table.h"
#include "gpu/measurement_json.h"
#include "gpu/measureplan.h"
#include "testutils.h"
#include "testutils_gui.h"
#include "ui/features.h"
#include "ui/mainwindow.h"
#include "ui/measure.h"
#include "ui/rooflineplot.h"
#include "ui/stepplot.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

using namespace kvscope;
using namespace kvscope::ui;
using namespace kvscope::test;

namespace {

gpu::DecodeShape tinyShape(std::int64_t kvHeads, std::int64_t context) {
    gpu::DecodeShape s;
    s.kind = gpu::Attention::Gqa;
    s.batch = 1;
    s.qHeads = 4;
    s.kvHeads = kvHeads;
    s.headDim = 64;
    s.context = context;
    s.dtype = gpu::KvDtype::Fp32;
    return s;
}
} // namespace

class TstGuiMeasure : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Tools > Measure times the KV dtype the window shows: core's dtype maps to the kernels'
    // (Auto = the checkpoint's served 16-bit type), and layouts no kernel reads map to none.
    void measuredDtypeIsTheShownOne() {
        using kvscope::KvDtype;
        const auto bf16Model = kvscope::loadModel("llama-3-8b").value(); // torch_dtype bfloat16
        const auto fp16Model =
            kvscope::loadModelConfigFile(
                kvscope::test::fixture(QStringLiteral("configs/meta-llama__Llama-2-7b-hf.json")))
                .value(); // torch_dtype float16
        QVERIFY(kernelKvDtype(bf16Model, KvDtype::Auto) == kvscope::gpu::KvDtype::Bf16);
        QVERIFY(kernelKvDtype(fp16Model, KvDtype::Auto) == kvscope::gpu::KvDtype::Fp16);
        QVERIFY(kernelKvDtype(bf16Model, KvDtype::FP8) == kvscope::gpu::KvDtype::Fp8E4m3);
        QVERIFY(kernelKvDtype(bf16Model, KvDtype::FP16) == kvscope::gpu::KvDtype::Fp16);
        QVERIFY(kernelKvDtype(bf16Model, KvDtype::FP32) == kvscope::gpu::KvDtype::Fp32);
        for (KvDtype k : {KvDtype::NVFP4, KvDtype::FP8E5M2, KvDtype::FP8DsMla,
                          KvDtype::Int8PerTokenHead, KvDtype::FP8PerTokenHead})
            QVERIFY(!kernelKvDtype(bf16Model, k).has_value());
    }

    void measureOverlayOnCpu() {
        auto w = makeWindow();
        MeasureController* m = features(*w)->measure();
        MeasureJob job;
        job.backend = "cpu";
        job.shapes = {tinyShape(4, 256), tinyShape(1, 256)};
        job.variants = {"MHA", "MQA"};
        QSignalSpy done(m, &MeasureController::finished);
        m->start(job);
        QVERIFY(m->running());
        QVERIFY(done.wait(180000));
        QVERIFY2(done.front().at(0).toBool(), qPrintable(done.front().at(1).toString()));
        const auto points = w->rooflinePlot()->measuredPoints();
        QCOMPARE(points.size(), 2);
        QCOMPARE(points[0].variant, QStringLiteral("MHA"));
        QVERIFY(points[0].achievedFlopPerS > 0);
        QVERIFY(points[1].intensityFlopPerByte > points[0].intensityFlopPerByte);
        QVERIFY(points[0].tooltip.contains(QStringLiteral("µs")));
        // The table's figures: % of the point's own (paired) read ceiling and of the roof.
        const gpu::Measurement& mha = m->results().points.front();
        const gpu::RoofPlacement r = gpu::placePoint(mha, m->results().ceilings);
        QVERIFY2(points[0].tooltip.contains(
                     QStringLiteral("%1 % of the read ceiling")
                         .arg(QString::fromStdString(kvscope::fixed(100.0 * r.fractionRead, 0)))),
                 qPrintable(points[0].tooltip));
        QVERIFY2(points[0].tooltip.contains(QStringLiteral("paired with the repeats")),
                 qPrintable(points[0].tooltip));
        QVERIFY2(points[0].tooltip.contains(
                     QStringLiteral("%1 % of the roof")
                         .arg(QString::fromStdString(kvscope::fixed(100.0 * r.fractionRoof, 0)))),
                 qPrintable(points[0].tooltip));
        QVERIFY(m->results().ceilings.readBytesPerSecond > 0);
        w->renderNow();

        // JSON round trip into another window (the talk laptop).
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("m.json"));
        QString err;
        QVERIFY2(m->saveJson(path, &err), qPrintable(err));
        auto w2 = makeWindow();
        QVERIFY2(features(*w2)->measure()->loadJson(path, &err), qPrintable(err));
        QCOMPARE(w2->rooflinePlot()->measuredPoints().size(), 2);
        QVERIFY(
            !features(*w2)->measure()->loadJson(dir.filePath(QStringLiteral("none.json")), &err));
    }

    /// --measurements FILE (the talk laptop): a GPU server's file overlays the roofline at start;
    /// a missing file is a one-line banner error and the window keeps what it showed.
    void measurementsOptionOverlaysAFile() {
        gpu::MeasurementSet set;
        set.backend = "cuda";
        set.device = "NVIDIA H200";
        set.model = "llama-3-70b";
        set.ceilings.ok = true;
        set.ceilings.readBytesPerSecond = 4.4e12;
        set.ceilings.peakFlopPerSecond = {{"bf16", 7.5e14}, {"fp16", 7.5e14}};
        gpu::Measurement m;
        m.kernel = "cuda-gqa-mma-split";
        m.variant = "GQA-8";
        m.shape.kind = gpu::Attention::Gqa;
        m.shape.batch = 16;
        m.shape.qHeads = 8; // Llama-3-70B at TP=8: 8 query heads, 1 KV head per rank
        m.shape.kvHeads = 1;
        m.shape.headDim = 128;
        m.shape.context = 8192;
        m.shape.dtype = gpu::KvDtype::Bf16;
        const gpu::DecodeCounts c = gpu::countDecode(m.shape);
        m.bytes = c.bytes;
        m.flops = c.flops;
        m.medianSeconds = c.bytes / 4.0e12;
        m.repeats = 20;
        m.bytesPerSecond = m.bytes / m.medianSeconds;
        m.flopPerSecond = m.flops / m.medianSeconds;
        m.intensityFlopPerByte = c.intensity;
        m.maxRelError = 2.6e-3;
        m.errorBound = 1e-2;
        m.ok = true;
        set.points = {m};
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("h200.json"));
        std::string err;
        QVERIFY2(gpu::saveMeasurementJson(set, path.toStdString(), &err), err.c_str());

        auto w = std::make_unique<MainWindow>(MainWindow::Options{false, false});
        FeatureOptions o;
        o.measurementsPath = path;
        QString e;
        Features* f = installFeatures(*w, o, &e);
        QVERIFY2(e.isEmpty(), qPrintable(e));
        QCOMPARE(f->measure()->results().device, std::string("NVIDIA H200"));
        const auto points = w->rooflinePlot()->measuredPoints();
        QCOMPARE(points.size(), 1);
        QCOMPARE(points[0].variant, QStringLiteral("GQA-8"));
        QVERIFY(std::abs(points[0].intensityFlopPerByte - c.intensity) < 1e-9);

        o.measurementsPath = dir.filePath(QStringLiteral("missing.json"));
        installFeatures(*w, o, &e);
        QVERIFY2(e.startsWith(QStringLiteral("--measurements: ")), qPrintable(e));
        QVERIFY(!e.contains(QLatin1Char('\n')));
        QVERIFY(w->bannerVisible());
        QCOMPARE(w->rooflinePlot()->measuredPoints().size(), 1); // the loaded file stays
    }

    /// The callout naming the current configuration never hides a plotted point: a CPU's
    /// measured points sit two decades under a GPU roof, where its default corner is.
    void calloutLeavesPointsVisible() {
        auto w = makeWindow();
        QVERIFY(w->loadModelRef(QStringLiteral("llama-3-8b")));
        w->flushRefresh();
        QVector<MeasuredPoint> cpu;
        const double intensity[] = {1, 2, 4, 8, 16, 32},
                     achieved[] = {44e9, 85e9, 110e9, 170e9, 220e9, 240e9};
        for (int i = 0; i < 6; ++i)
            cpu.append({QStringLiteral("v%1").arg(i), intensity[i], achieved[i], {}});
        RooflinePlot* plot = w->rooflinePlot();
        plot->setMeasuredCeilings({60e9, 0.8e12});
        plot->setMeasuredPoints(cpu);
        w->renderNow();
        const QRectF box = plot->calloutRect();
        QVERIFY(!box.isEmpty());
        for (const MeasuredPoint& p : cpu) {
            const QPointF px(plot->xAxis->coordToPixel(p.intensityFlopPerByte),
                             plot->yAxis->coordToPixel(p.achievedFlopPerS));
            QVERIFY2(
                !box.contains(px),
                qPrintable(
                    QStringLiteral("%1 FLOP/B under the callout").arg(p.intensityFlopPerByte)));
        }
    }

    /// A CPU's measured points stretch the roofline's y axis down three decades more; at a talk's
    /// 1920x1080 the roof's and the ridge's labels above the roof still read apart, and the
    /// measured ceiling's label stays inside the plot, every label clear of points and lines.
    /// (At 1600x1000 the callout takes the top left and still touches the roof's label.)
    void measuredPointsKeepRoofLabelsApart() {
        const auto restore = appFontForScope();
        MainWindow w(MainWindow::Options{false, false});
        startWindow(w, {QStringLiteral("--model"), QStringLiteral("llama-3-8b")},
                    QSize(1920, 1080));
        if (QTest::currentTestFailed())
            return;
        QVector<MeasuredPoint> cpu;
        const double intensity[] = {1, 2, 4, 8, 16, 32},
                     achieved[] = {25e9, 50e9, 60e9, 110e9, 330e9, 520e9};
        for (int i = 0; i < 6; ++i)
            cpu.append({QStringLiteral("v%1").arg(i), intensity[i], achieved[i], {}});
        RooflinePlot* plot = w.rooflinePlot();
        plot->setMeasuredCeilings({31e9, 2.0e12});
        plot->setMeasuredPoints(cpu);
        w.renderNow();
        verifyLabelsClear(*plot, QStringLiteral("roofline"), 0);
    }

    void measureCancelAndNewestWins() {
        auto w = makeWindow();
        MeasureController* m = features(*w)->measure();
        MeasureJob big;
        big.shapes = {tinyShape(4, 4096), tinyShape(2, 4096), tinyShape(1, 4096)};
        big.variants = {"MHA", "GQA-2", "MQA"};
        QSignalSpy done(m, &MeasureController::finished);
        m->start(big);
        m->cancel();
        QVERIFY(done.wait(180000));
        QCOMPARE(done.size(), 1);
        QCOMPARE(done.front().at(0).toBool(), false);
        QCOMPARE(done.front().at(1).toString(), QStringLiteral("cancelled"));
        QVERIFY(!m->running());
        QVERIFY(w->bannerVisible());

        // Two requests in a row: only the newest reports.
        done.clear();
        MeasureJob small;
        small.ceilings = false;
        small.shapes = {tinyShape(1, 128)};
        small.variants = {"MQA"};
        m->start(big);
        m->start(small);
        QVERIFY(done.wait(180000));
        QTest::qWait(200);
        QCOMPARE(done.size(), 1);
        QVERIFY(done.front().at(0).toBool());
        QCOMPARE(w->rooflinePlot()->measuredPoints().size(), 1);
    }

    void measuredStepsFromAFileReachTheStepPlot() {
        auto w = makeWindow();
        QVERIFY(w->loadModelRef(QStringLiteral("llama-3-8b")));
        w->renderNow();
        gpu::MeasurementSet set;
        set.backend = "cpu";
        set.device = "test CPU";
        set.ceilings.ok = true;
        set.ceilings.readBytesPerSecond = 1e10;
        set.ceilings.peakFlopPerSecond["bf16"] = 1e11;
        gpu::StepMeasurement m; // 2 of Llama-3-8B's 32 layers at B = 4: 60 ms
        m.shape.modelLayers = 32;
        m.shape.batch = 4;
        m.medianSeconds = 0.06;
        m.roofSeconds = 0.03;
        m.ok = true;
        set.steps.push_back(m);
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("steps.json"));
        std::string err;
        QVERIFY2(gpu::saveMeasurementJson(set, path.toStdString(), &err), err.c_str());
        QString why;
        QVERIFY2(features(*w)->measure()->loadJson(path, &why), qPrintable(why));
        const auto& points = w->stepPlot()->measuredStepPoints();
        QCOMPARE(points.size(), std::size_t(1));
        QCOMPARE(points.front().msPerToken, 960.0); // 60 ms x 32 / 2
        QVERIFY(points.front().tooltip.contains(QStringLiteral("50.0% of the step roof")));
    }

    void measureJobForTheWindow() {
        auto w = makeWindow();
        QVERIFY(w->loadModelRef(QStringLiteral("llama-3-70b")));
        AppState s = w->state();
        s.deployment.tp = 8;
        QVERIFY(w->applyState(s));
        const MeasureJob job = features(*w)->measure()->jobForCurrentState();
        QVERIFY(!job.shapes.empty());
        QCOMPARE(job.shapes.size(), job.variants.size());
        for (const auto& sh : job.shapes) {
            QCOMPARE(sh.qHeads, std::int64_t(8)); // 64 query heads over TP=8
            QCOMPARE(sh.context, std::int64_t(8192));
        }
        // On a CPU the sweep ends with a short step sweep of the model's per-rank layer:
        // hidden 8192, 64/8 query and 8/8 KV heads, MLP 28672/8, 80 layers.
        if (!gpu::cudaCompiledIn()) {
            QCOMPARE(job.steps.size(), std::size_t(3));
            for (const auto& st : job.steps) {
                QCOMPARE(st.hidden, std::int64_t(8192));
                QCOMPARE(st.qHeads, std::int64_t(8));
                QCOMPARE(st.kvHeads, std::int64_t(1));
                QCOMPARE(st.intermediate, std::int64_t(3584));
                QCOMPARE(st.modelLayers, std::int64_t(80));
            }
        }
    }
};

QTEST_MAIN(TstGuiMeasure)
#include "tst_gui_measure.moc"
