// The GUI features driven through the real MainWindow (offscreen).
#include "core/engines/explain_log.h"
#include "core/features/export.h"
#include "core/features/story.h"
#include "core/format.h"
#include "ui/compare.h"
#include "ui/explainlog.h"
#include "ui/features.h"
#include "ui/mainwindow.h"
#include "ui/measure.h"
#include "ui/numberspanel.h"
#include "ui/plan.h"
#include "ui/presentation.h"
#include "ui/rooflineplot.h"
#include "ui/stepplot.h"
#include "ui/story.h"

#include <QAction>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QProcess>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <memory>

using namespace kvscope;
using namespace kvscope::ui;

namespace {
QString q(const std::string& s) {
    return QString::fromStdString(s);
}

std::unique_ptr<MainWindow> makeWindow() {
    auto w = std::make_unique<MainWindow>(MainWindow::Options{false, false});
    w->resize(1600, 1000);
    installFeatures(*w, FeatureOptions{});
    w->show();
    w->flushRefresh();
    return w;
}

/// The key numbers of a step that quote the step's own state match the window's report.
void checkKeyNumbers(const MainWindow& w, const StoryStep& step) {
    for (const auto& k : step.keyNumbers) {
        if (k.field.find('.') != std::string::npos || k.field == "crossover")
            continue; // compare.* / ratio.* quote the pinned side
        const auto v = reportNumber(w.report(), k.field);
        QVERIFY2(v.has_value(), k.field.c_str());
        const double tol = k.tolerance > 0 ? k.tolerance : 0.5;
        QVERIFY2(
            std::abs(*v - k.value) <= tol,
            qPrintable(
                QStringLiteral("%1: window %2, story %3").arg(q(k.field)).arg(*v).arg(k.value)));
    }
}

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

class TstGuiFeatures : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void storyStepsThroughTheChapter() {
        auto w = makeWindow();
        StoryController* story = features(*w)->story();
        QVERIFY(story->loadBuiltin(QStringLiteral("chapter")));
        QCOMPARE(story->index(), 0);
        for (int i = 0; i < story->count(); ++i) {
            QVERIFY(story->goTo(i));
            w->flushRefresh();
            QCOMPARE(story->index(), i);
            checkKeyNumbers(*w, story->story()->steps[static_cast<std::size_t>(i)]);
            if (QTest::currentTestFailed())
                return;
            QCOMPARE(story->captionText(),
                     q(story->story()->steps[static_cast<std::size_t>(i)].caption));
            // A step with compare_with pins it as A.
            QCOMPARE(features(*w)->compare()->pinned(),
                     story->story()->steps[static_cast<std::size_t>(i)].compareWith.has_value());
        }
    }

    void storyKeysMoveTheStep() {
        auto w = makeWindow();
        StoryController* story = features(*w)->story();
        QVERIFY(story->loadBuiltin(QStringLiteral("chapter")));
        w->activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(w.get()));
        QTest::keyClick(w.get(), Qt::Key_Right);
        QCOMPARE(story->index(), 1);
        QTest::keyClick(w.get(), Qt::Key_PageDown);
        QCOMPARE(story->index(), 2);
        QTest::keyClick(w.get(), Qt::Key_Space);
        QCOMPARE(story->index(), 3);
        QTest::keyClick(w.get(), Qt::Key_Left);
        QCOMPARE(story->index(), 2);
        QTest::keyClick(w.get(), Qt::Key_PageUp);
        QCOMPARE(story->index(), 1);
        QTest::keyClick(w.get(), Qt::Key_End);
        QCOMPARE(story->index(), story->count() - 1);
        QTest::keyClick(w.get(), Qt::Key_Right); // clamped at the last step
        QCOMPARE(story->index(), story->count() - 1);
        QTest::keyClick(w.get(), Qt::Key_Home);
        QCOMPARE(story->index(), 0);
        w->flushRefresh();
        checkKeyNumbers(*w, story->story()->steps[0]);
        // The window's numbers follow the step: step 3 (GQA-8) holds 162 requests.
        QTest::keyClick(w.get(), Qt::Key_Right);
        QTest::keyClick(w.get(), Qt::Key_Right);
        w->flushRefresh();
        QCOMPARE(w->report().maxConcurrency, std::int64_t(162));
        QVERIFY(story->keyNumberText().contains(QStringLiteral("162")));
        QCOMPARE(story->highlightedView(), QStringLiteral("capacity"));
        story->close();
        QVERIFY(!story->active());
    }

    void brokenStoryKeepsTheState_data() {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("expected");
        QTest::newRow("not json") << QStringLiteral("{\"steps\": [") << QString();
        QTest::newRow("bad tp") << QStringLiteral(
                                       R"({"title": "t", "steps": [{"title": "a", "caption": "c",
                "state": {"model": "llama-3-70b", "tp": 3}}]})")
                                << QStringLiteral("steps[0]");
        QTest::newRow("unknown model")
            << QStringLiteral(R"({"title": "t", "steps": [{"title": "a", "caption": "c",
                "state": {"model": "no-such-model"}}]})")
            << QStringLiteral("steps[0]");
    }
    void brokenStoryKeepsTheState() {
        QFETCH(QString, json);
        QFETCH(QString, expected);
        auto w = makeWindow();
        QVERIFY(w->loadModelRef(QStringLiteral("llama-3-8b")));
        const AppState before = w->state();
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("story.json"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(json.toUtf8());
        f.close();
        QString err;
        QVERIFY(!features(*w)->story()->loadFile(path, &err));
        QVERIFY(!err.isEmpty());
        QVERIFY(!err.contains(QLatin1Char('\n')));
        if (!expected.isEmpty())
            QVERIFY2(err.contains(expected), qPrintable(err));
        QVERIFY(w->bannerVisible());
        QVERIFY(!features(*w)->story()->active());
        QCOMPARE(w->state().modelRef, before.modelRef);
        QCOMPARE(w->state().deployment.tp, before.deployment.tp);
        // The same through installFeatures (what --story does).
        FeatureOptions o;
        o.storyPath = path;
        QString err2;
        installFeatures(*w, o, &err2);
        QVERIFY(err2.startsWith(QStringLiteral("--story: ")));
        QCOMPARE(w->state().modelRef, before.modelRef);
    }

    void stepOptionSelectsTheStep() {
        auto w = std::make_unique<MainWindow>(MainWindow::Options{false, false});
        FeatureOptions o;
        o.storyPath = QStringLiteral("chapter");
        o.step = 3;
        QString err;
        Features* f = installFeatures(*w, o, &err);
        QVERIFY2(err.isEmpty(), qPrintable(err));
        QCOMPARE(f->story()->index(), 2);
        w->flushRefresh();
        QCOMPARE(w->report().maxConcurrency, std::int64_t(162));
        o.step = 99;
        installFeatures(*w, o, &err);
        QVERIFY(err.startsWith(QStringLiteral("--step: ")));
    }

    void comparePinShowsRatios() {
        auto w = makeWindow();
        CompareController* c = features(*w)->compare();
        QVERIFY(w->loadModelRef(QStringLiteral("llama-3-70b")));
        AppState s = w->state();
        s.deployment.tp = 8;
        s.deployment.kvHeads = 64; // MHA
        QVERIFY(w->applyState(s));
        c->pinCurrent();
        QVERIFY(c->pinned());
        s.deployment.kvHeads.reset(); // GQA-8
        QVERIFY(w->applyState(s));
        QVERIFY(c->comparison().has_value());
        const auto* conc = c->comparison()->ratio("concurrency");
        QVERIFY(conc);
        QVERIFY(conc->ratio > 7.9);
        QCOMPARE(c->table()->rowCount(), static_cast<int>(c->comparison()->ratios.size()));
        QVERIFY(c->table()->rowCount() >= 5);
        // The B/A column shows core's phrase without the quantity the row already names.
        const QString shown = c->table()->item(2, 3)->text();
        QVERIFY2(!shown.isEmpty() && q(conc->phrase).startsWith(shown), qPrintable(shown));
        QVERIFY(c->dock()->isVisibleTo(w.get()));
        c->unpin();
        QVERIFY(!c->pinned());
    }

    void planDialogListsOptions() {
        auto w = makeWindow();
        PlanDialog dlg(w->state(), w.get());
        dlg.setContext(8192);
        dlg.setConcurrency(200);
        QVERIFY2(dlg.plan(), qPrintable(dlg.statusText()));
        QVERIFY(dlg.optionsTable()->rowCount() > 0);
        QVERIFY(dlg.rejectionsTable()->rowCount() > 0);
        QVERIFY(!dlg.optionsTable()->item(0, 1)->text().isEmpty());
    }

    void explainLogDialog_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<bool>("ok");
        const QDir dir(QStringLiteral(KVSCOPE_SOURCE_DIR "/tests/data/logs"));
        for (const QString& f : dir.entryList({QStringLiteral("*.log")}, QDir::Files))
            QTest::newRow(qPrintable(f))
                << dir.filePath(f) << !f.startsWith(QLatin1String("not_an_engine"));
    }
    void explainLogDialog() {
        QFETCH(QString, file);
        QFETCH(bool, ok);
        ExplainLogDialog dlg;
        QVERIFY(dlg.loadLogFile(file));
        QCOMPARE(dlg.explain(), ok);
        if (ok) {
            QVERIFY(dlg.termsTable()->rowCount() > 0);
            QVERIFY(!dlg.summaryText().isEmpty());
        } else {
            QVERIFY(!dlg.statusText().isEmpty());
            QCOMPARE(dlg.termsTable()->rowCount(), 0);
        }
    }

    // A folder of real logs: one row per log, and the median / worst line matches core's fleet.
    void explainLogDialogFolder() {
        ExplainLogDialog dlg;
        const QString data = QStringLiteral(KVSCOPE_SOURCE_DIR "/tests/data");
        dlg.setConfigDirs({data + QStringLiteral("/configs-logged"),
                           QStringLiteral(KVSCOPE_SOURCE_DIR "/tests/fixtures/configs-2026")});
        QVERIFY(!dlg.explainFolder(data + QStringLiteral("/no-such-folder")));
        QVERIFY(!dlg.statusText().isEmpty());
        const QString logs = data + QStringLiteral("/engine-logs/vllm-0.10.1.1-a100");
        QVERIFY(dlg.explainFolder(logs));
        QTableWidget* t = dlg.fleetTable();
        QCOMPARE(t->rowCount(), 2);
        QCOMPARE(t->item(0, 0)->text(), QStringLiteral("vllm-7B-1gpuA10080GB-0.5GRAM.log"));
        QCOMPARE(t->item(0, 1)->text(), QStringLiteral("vllm@0.10.1"));
        QCOMPARE(t->item(0, 2)->text(), QStringLiteral("464,848")); // "GPU KV cache size"
        ExplainOptions opt;
        opt.configDirs = {(data + QStringLiteral("/configs-logged")).toStdString(),
                          KVSCOPE_SOURCE_DIR "/tests/fixtures/configs-2026"};
        auto rows = explainFolder(logs.toStdString(), opt);
        QVERIFY(rows.ok());
        const FleetStats st = fleetStats(rows.value());
        QCOMPARE(st.explained, std::size_t(2));
        QVERIFY(dlg.fleetText().contains(
            QStringLiteral("median |error| %1%").arg(q(fixed(100.0 * st.medianAbsError, 2)))));
        QVERIFY(dlg.fleetText().contains(
            QStringLiteral("worst %1%").arg(q(fixed(100.0 * st.worstAbsError, 2)))));
        QVERIFY(dlg.fleetText().contains(q(st.worstFile)));
        for (int r = 0; r < t->rowCount(); ++r)
            QVERIFY(t->item(r, 4) && t->item(r, 4)->text().endsWith(QLatin1Char('%')));
    }

    // The pool section lists the chosen engine's pool terms one by one, each term's rule and
    // source in the tooltip, and follows the engine version.
    void numbersPanelPoolTerms_data() {
        QTest::addColumn<QString>("engine");
        QTest::addColumn<bool>("graphsSubtracted");
        QTest::newRow("vllm 0.19: graphs printed, not subtracted") << "vllm@0.19.0" << false;
        QTest::newRow("vllm 0.21: graphs subtracted (PR #30515)") << "vllm@0.21.0" << true;
        QTest::newRow("sglang 0.4.3") << "sglang@0.4.3" << false;
    }
    void numbersPanelPoolTerms() {
        QFETCH(QString, engine);
        QFETCH(bool, graphsSubtracted);
        auto w = makeWindow();
        AppState s = w->state();
        auto spec = parseEngineSpec(engine.toStdString());
        QVERIFY(spec.ok());
        s.deployment.engine = spec.value();
        s.deployment.poolModel = PoolModel::Vllm;
        QString err;
        QVERIFY2(w->applyState(s, &err), qPrintable(err));
        w->flushRefresh();
        const PoolBreakdown& p = w->report().pool;
        QVERIFY(!p.terms.empty());
        const QString text = w->numbersPanel()->valueText(QStringLiteral("poolBreakdown"));
        const QString tip = w->numbersPanel()->valueTip(QStringLiteral("poolBreakdown"));
        QVERIFY2(text.startsWith(engine + QStringLiteral(": ")), qPrintable(text));
        for (const PoolTerm& t : p.terms) {
            const QString gib = q(fixed(static_cast<double>(t.bytes) / 1073741824.0, 2));
            QVERIFY2(tip.contains(q(t.label) + QStringLiteral(": ") + gib + QStringLiteral(" GiB")),
                     qPrintable(tip));
            QVERIFY2(tip.contains(q(t.source)), t.key.c_str());
            if (t.key == "budget" || t.key == "pool")
                continue;
            QVERIFY2(text.contains((t.subtracted ? QStringLiteral("− ") : QString()) + q(t.label) +
                                   QStringLiteral(" ") + gib),
                     qPrintable(text));
            if (t.key == "cuda_graphs")
                QCOMPARE(t.subtracted, graphsSubtracted);
        }
        QCOMPARE(text.contains(QStringLiteral("not subtracted")),
                 engine.startsWith(QLatin1String("vllm")) && !graphsSubtracted);
    }

    void sessionRoundTrip() {
        auto w = makeWindow();
        QVERIFY(w->loadModelRef(QStringLiteral("llama-3-8b")));
        QVERIFY(w->loadGpuRef(QStringLiteral("a100-80gb")));
        AppState s = w->state();
        s.deployment.tp = 2;
        s.deployment.context = 32768;
        s.deployment.batch = 4;
        s.deployment.kvHeads = 2;
        QVERIFY(w->applyState(s));
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("s.json"));
        QString err;
        QVERIFY2(features(*w)->saveSession(path, &err), qPrintable(err));

        auto w2 = makeWindow();
        QVERIFY2(features(*w2)->openSession(path, &err), qPrintable(err));
        QCOMPARE(w2->state().modelRef, std::string("llama-3-8b"));
        QCOMPARE(w2->state().gpu.id, std::string("a100-80gb"));
        QCOMPARE(w2->state().deployment.tp, std::int64_t(2));
        QCOMPARE(w2->state().deployment.context, std::int64_t(32768));
        QCOMPARE(w2->state().deployment.batch, std::int64_t(4));
        QCOMPARE(w2->state().deployment.kvHeads, std::optional<std::int64_t>(2));
        QCOMPARE(w2->report().maxConcurrency, w->report().maxConcurrency);

        // A broken session leaves the state as it was.
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(R"({"kvscope_session": 1, "model": "llama-3-8b", "tp": 0})");
        f.close();
        QVERIFY(!features(*w2)->openSession(path, &err));
        QVERIFY2(err.contains(QStringLiteral("tp")), qPrintable(err));
        QCOMPARE(w2->state().deployment.tp, std::int64_t(2));
    }

    void exportPdfAndNumbers() {
        auto w = makeWindow();
        w->renderNow();
        QTemporaryDir dir;
        const QString pdf = dir.filePath(QStringLiteral("report.pdf"));
        QString err;
        QVERIFY2(features(*w)->exportPdf(pdf, &err), qPrintable(err));
        QFile f(pdf);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QVERIFY(f.size() > 2000);
        QCOMPARE(f.read(4), QByteArray("%PDF"));
        f.close();
        const QString pdftoppm = QStandardPaths::findExecutable(QStringLiteral("pdftoppm"));
        if (!pdftoppm.isEmpty()) {
            const QString prefix = dir.filePath(QStringLiteral("page"));
            QCOMPARE(QProcess::execute(pdftoppm, {QStringLiteral("-png"), QStringLiteral("-r"),
                                                  QStringLiteral("40"), QStringLiteral("-f"),
                                                  QStringLiteral("1"), QStringLiteral("-l"),
                                                  QStringLiteral("1"),
                                                  QStringLiteral("-singlefile"), pdf, prefix}),
                     0);
            QImage img(prefix + QStringLiteral(".png"));
            QVERIFY(!img.isNull());
            int dark = 0;
            for (int y = 0; y < img.height(); ++y)
                for (int x = 0; x < img.width(); ++x)
                    if (qGray(img.pixel(x, y)) < 160)
                        ++dark;
            QVERIFY2(dark > img.width() * img.height() / 100,
                     qPrintable(QStringLiteral("%1 dark pixels").arg(dark)));
        }
        for (const char* suffix : {"csv", "json", "md"}) {
            const QString path = dir.filePath(QStringLiteral("n.") + QLatin1String(suffix));
            QVERIFY2(features(*w)->exportNumbers(path, &err), qPrintable(err));
            QFile n(path);
            QVERIFY(n.open(QIODevice::ReadOnly));
            QVERIFY(n.readAll().contains("cell"));
        }
        QVERIFY(!features(*w)->exportNumbers(dir.filePath(QStringLiteral("n.xls")), &err));
        features(*w)->copyNumbers();
        QVERIFY(QGuiApplication::clipboard()->text().contains(QLatin1Char('|')));
    }

    void presentationModeAndHelp() {
        auto w = makeWindow();
        PresentationController* p = features(*w)->presentation();
        const double before = w->font().pointSizeF();
        p->setActive(true, false);
        QVERIFY(w->font().pointSizeF() > before * 1.2);
        QCOMPARE(w->palette().color(QPalette::Window), QColor(0, 0, 0));
        const QStringList lines = p->shortcutLines();
        QVERIFY(lines.join(QLatin1Char('\n')).contains(QStringLiteral("Next step")));
        QVERIFY(lines.join(QLatin1Char('\n')).contains(QStringLiteral("Presentation mode")));
        p->showHelp();
        QVERIFY(p->helpVisible());
        p->hideHelp();
        w->renderNow();
        p->setActive(false, false);
        QCOMPARE(w->font().pointSizeF(), before);
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
    /// F1 lists every shortcut of the window, generated from its actions: the features'
    /// (measure, pin A, presentation, plan) as well as the controls'.
    void shortcutListHasEveryAction() {
        auto w = makeWindow();
        QStringList keys;
        for (const auto& [key, text] : w->shortcutList()) {
            QVERIFY2(!text.isEmpty(), qPrintable(key));
            keys << key.split(QStringLiteral(", "));
        }
        for (const QString& k :
             {QStringLiteral("Ctrl+M"), QStringLiteral("A"), QStringLiteral("F5"),
              QStringLiteral("Ctrl+Shift+P"), QStringLiteral("F1"), QStringLiteral("H"),
              QStringLiteral("Esc"), QStringLiteral("L"), QStringLiteral("Ctrl+Shift+L")})
            QVERIFY2(keys.contains(k), qPrintable(k + QStringLiteral(" is missing")));
        // Every action with a shortcut anywhere in the window is listed.
        int withKeys = 0;
        for (QAction* a : w->findChildren<QAction*>())
            if (!a->shortcuts().isEmpty() && !a->isSeparator())
                for (const QKeySequence& k : a->shortcuts())
                    withKeys += keys.contains(k.toString(QKeySequence::NativeText)) ? 0 : 1;
        QCOMPARE(withKeys, 0);
    }

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

QTEST_MAIN(TstGuiFeatures)
#include "tst_gui_features.moc"
