// The "Decode step" view (ui/stepplot.*): it draws every KV layout of the model against batch
// from core's step, marks the batch where KV reaches 10% of the step, and is docked in the
// window, following its state.
#include "core/law/step.h"
#include "core/model/presets.h"
#include "ui/mainwindow.h"
#include "ui/stepplot.h"

#include <QtTest/QtTest>

using namespace kvscope;
using namespace kvscope::ui;

namespace {

AppState state(const char* modelId, const char* gpuId, std::int64_t tp, std::int64_t batch) {
    AppState s;
    s.modelRef = modelId;
    auto m = loadModel(modelId);
    auto g = loadGpu(gpuId);
    if (!m.ok() || !g.ok())
        qFatal("preset missing");
    s.model = m.value();
    s.gpu = g.value();
    s.deployment.tp = tp;
    s.deployment.batch = batch;
    s.deployment.context = 8192;
    return s;
}

} // namespace

class TestStepPlot : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void llamaCurvesAndTenPercentBatch() {
        const AppState s = state("llama-3-70b", "h200", 2, 6);
        auto r = evaluate(s.model, s.gpu, s.deployment);
        QVERIFY(r.ok());
        StepPlot plot;
        plot.resize(800, 500);
        plot.setState(s, r.value());
        // 7 layouts (MHA, GQA-2 … GQA-32, MQA) × batches 1, 2, 4, 6 (current), 8, … 1024.
        QCOMPARE(plot.rows().size(), std::size_t(7 * 12));
        QCOMPARE(plot.currentKvHeads(), qint64(8));
        // The chapter's 10%: six 8k requests on Llama-3-70B at TP 2 (tst_step has the 5%).
        QVERIFY(plot.tenPercentBatch().has_value());
        QCOMPARE(*plot.tenPercentBatch(), qint64(6));
        // The KV share plus one curve per layout.
        QCOMPARE(plot.graphCount(), 1 + 7);
        // Every point is core's number for that layout and batch.
        for (const auto& row : plot.rows()) {
            QVERIFY(row.step.has_value());
            Deployment d = s.deployment;
            d.batch = row.batch;
            d.kvHeads = row.kvHeads;
            QCOMPARE(evaluate(s.model, s.gpu, d)->step.timeLowerBoundS, row.step->timeLowerBoundS);
        }
        plot.setMode(StepPlot::Mode::Bytes);
        QCOMPARE(plot.plottableCount(), 3); // weights, KV, activations stacked
        plot.setMode(StepPlot::Mode::Throughput);
        QCOMPARE(plot.graphCount(), 1 + 7);
    }

    void currentLabelStaysInsideANarrowPlot() {
        // At 340 px the point at B = 64 leaves room for its two-line label on neither side; it
        // moves to a corner of the plot rather than running off the axis' left edge.
        for (std::int64_t batch : {1, 8, 64}) {
            const AppState s = state("llama-3-8b", "h100-sxm", 1, batch);
            auto r = evaluate(s.model, s.gpu, s.deployment);
            QVERIFY(r.ok());
            StepPlot plot;
            plot.setState(s, r.value());
            plot.resize(340, 320);
            plot.show();
            plot.replot();
            QCoreApplication::processEvents();
            const QString key = QStringLiteral("B = %1\n").arg(batch);
            const QCPItemText* label = nullptr;
            for (int i = 0; i < plot.itemCount(); ++i)
                if (auto* t = qobject_cast<QCPItemText*>(plot.item(i));
                    t && t->text().contains(key))
                    label = t;
            QVERIFY2(label, qPrintable(key));
            const QRectF box(label->topLeft->pixelPosition(), label->bottomRight->pixelPosition());
            QVERIFY2(QRectF(plot.axisRect()->rect()).adjusted(-1, -1, 1, 1).contains(box),
                     qPrintable(QStringLiteral("B = %1: label at x %2..%3, plot from %4")
                                    .arg(batch)
                                    .arg(box.left())
                                    .arg(box.right())
                                    .arg(plot.axisRect()->rect().left())));
        }
    }

    void legendNamesFitANarrowDock() {
        // A docked tab at 1600x1000 gives the plot about 340 px: the legend takes fewer columns
        // rather than cutting the layouts' names ("GQA-16") short; a wide plot keeps four.
        const AppState s = state("llama-3-70b", "h200", 2, 6);
        auto r = evaluate(s.model, s.gpu, s.deployment);
        QVERIFY(r.ok());
        StepPlot plot;
        plot.setState(s, r.value());
        for (int width : {340, 800}) {
            plot.resize(width, 320);
            plot.show();
            QApplication::processEvents();
            plot.replot(QCustomPlot::rpImmediateRefresh);
            int entries = 0; // the grid's cells; the last row's may be empty
            for (int i = 0; i < plot.legend->itemCount(); ++i) {
                const QCPAbstractLegendItem* item = plot.legend->item(i);
                if (!item)
                    continue;
                ++entries;
                QVERIFY2(item->outerRect().width() >= item->minimumOuterSizeHint().width(),
                         qPrintable(QStringLiteral("entry %1 cut at width %2").arg(i).arg(width)));
                QVERIFY(plot.rect().contains(item->outerRect()));
            }
            QCOMPARE(entries, 1 + 7); // the KV share and the seven layouts
            if (width == 800)
                QCOMPARE(plot.legend->wrap(), 4);
            else
                QVERIFY(plot.legend->wrap() < 4);
        }
    }

    void measuredStepsOverlayScaled() {
        const AppState s = state("llama-3-8b", "h200", 1, 16);
        auto r = evaluate(s.model, s.gpu, s.deployment);
        QVERIFY(r.ok());
        StepPlot plot;
        plot.resize(800, 500);
        plot.setState(s, r.value());
        const int curves = plot.graphCount();
        // A measured step of 2 of Llama-3-8B's 32 layers: 50 ms -> 800 ms per token, and a
        // point of another model (hidden 8192) that must not be drawn on this one.
        gpu::StepMeasurement m;
        m.shape.layers = 2;
        m.shape.modelLayers = 32;
        m.shape.hidden = 4096;
        m.shape.batch = 16;
        m.counts = gpu::countStep(m.shape);
        m.medianSeconds = 0.05;
        m.roofSeconds = 0.04;
        m.fractionOfRoof = 0.8;
        m.ok = true;
        gpu::StepMeasurement other = m;
        other.shape.hidden = 8192;
        plot.setMeasuredSteps({m, other}, "test CPU");
        QCOMPARE(plot.measuredStepPoints().size(), std::size_t(1));
        const auto& p = plot.measuredStepPoints().front();
        QCOMPARE(p.batch, qint64(16));
        QCOMPARE(p.msPerToken, 800.0);
        QCOMPARE(p.tokensPerSPerGpu, 20.0);
        QVERIFY(p.tooltip.contains(QStringLiteral("80.0% of the step roof")));
        QVERIFY(p.tooltip.contains(QStringLiteral("2 of 32 layers")));
        QCOMPARE(plot.graphCount(), curves + 1);
        plot.setMeasuredSteps({}, "");
        QCOMPARE(plot.graphCount(), curves);
    }

    void mlaModelLeadsWithTheLatent() {
        const AppState s = state("deepseek-v3", "h200", 8, 1);
        auto r = evaluate(s.model, s.gpu, s.deployment);
        QVERIFY(r.ok());
        StepPlot plot;
        plot.setState(s, r.value());
        QCOMPARE(plot.currentKvHeads(), qint64(0));
        QCOMPARE(plot.rows().front().variant, std::string("MLA latent"));
        // DeepSeek-V3's latent is already 10.9% of the step at batch 1.
        QCOMPARE(*plot.tenPercentBatch(), qint64(1));
    }

    void dockedInTheWindow() {
        MainWindow w(MainWindow::Options{false, false});
        auto* plot = w.findChild<StepPlot*>(QStringLiteral("stepPlot"));
        QVERIFY(plot);
        QVERIFY(w.findChild<QDockWidget*>(QStringLiteral("stepDock")));
        QCOMPARE(w.viewWidget(QStringLiteral("step")), static_cast<QWidget*>(plot));
        w.flushRefresh();
        QVERIFY(!plot->rows().empty());
    }

    // Behind the "Intensity vs TP" tab the plot keeps a new state without rebuilding (a slider
    // step pays nothing for it); raising its tab draws that state. Llama-3-70B has 7 KV layouts
    // (64 heads: MHA, GQA-32 … GQA-2, MQA), Llama-3-8B 6 (32 heads).
    void offScreenStateIsDrawnWhenRaised() {
        MainWindow w(MainWindow::Options{false, false});
        w.resize(1600, 1000);
        w.show();
        QVERIFY(w.loadModelRef(QStringLiteral("llama-3-70b")));
        auto* dock = w.findChild<QDockWidget*>(QStringLiteral("stepDock"));
        auto* plot = w.findChild<StepPlot*>(QStringLiteral("stepPlot"));
        QVERIFY(dock && plot);
        dock->raise();
        QTRY_COMPARE(plot->graphCount(), 1 + 7);
        w.findChild<QDockWidget*>(QStringLiteral("intensityDock"))->raise();
        QApplication::processEvents();
        QVERIFY(w.loadModelRef(QStringLiteral("llama-3-8b")));
        w.flushRefresh();
        QCOMPARE(plot->graphCount(), 1 + 7); // off screen: not rebuilt
        dock->raise();
        QTRY_COMPARE(plot->graphCount(), 1 + 6);
        QCOMPARE(plot->currentKvHeads(), qint64(8));
    }
};

QTEST_MAIN(TestStepPlot)
#include "tst_stepplot.moc"
