// The GUI features driven through the real MainWindow (offscreen): story mode, compare, plan,
// explain-log, the numbers panel's pool terms, sessions, PDF/numbers export, presentation mode
// and the F1 list of shortcuts. The measurement overlay is tst_gui_measure.cpp.
#include "core/engines/explain_log.h"
#include "core/features/export.h"
#include "core/features/story.h"
#include "core/format.h"
#include "testutils.h"
#include "testutils_gui.h"
#include "ui/compare.h"
#include "ui/explainlog.h"
#include "ui/features.h"
#include "ui/mainwindow.h"
#include "ui/numberspanel.h"
#include "ui/plan.h"
#include "ui/presentation.h"
#include "ui/qstrings.h"
#include "ui/story.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QDialog>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QImage>
#include <QMenu>
#include <QProcess>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>
#include <cmath>
#include <functional>

using namespace kvscope;
using namespace kvscope::ui;
using namespace kvscope::test;

namespace {

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
        // Each side named as the GQA paper does, g beside a GQA (MHA keeps its name).
        QVERIFY2(c->text().contains(QStringLiteral("(MHA)")), qPrintable(c->text()));
        QVERIFY2(c->text().contains(QStringLiteral("(GQA-8 · g = 8)")), qPrintable(c->text()));
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
        const QDir dir(testDataDir() + QStringLiteral("/logs"));
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
        const QString data = testDataDir();
        QStringList configDirs;
        for (const std::string& d : logConfigDirs())
            configDirs << q(d);
        dlg.setConfigDirs(configDirs);
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
        opt.configDirs = logConfigDirs();
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

    /// F1 opens that list: the dialog's table has the generated rows, in order.
    void f1DialogShowsTheGeneratedList() {
        auto w = makeWindow();
        const auto list = w->shortcutList();
        QAction* help = nullptr;
        for (QAction* a : w->menu(QStringLiteral("Help"))->actions())
            if (a->shortcuts().contains(QKeySequence(QKeySequence::HelpContents)))
                help = a;
        QVERIFY(help);
        QList<QPair<QString, QString>> shown;
        bool closed = false;
        std::function<void(int)> closeWhenShown = [&](int triesLeft) {
            for (QWidget* top : QApplication::topLevelWidgets()) {
                auto* dlg = qobject_cast<QDialog*>(top);
                auto* t =
                    dlg ? dlg->findChild<QTableWidget*>(QStringLiteral("shortcutTable")) : nullptr;
                if (!t || !dlg->isVisible())
                    continue;
                for (int r = 0; r < t->rowCount(); ++r)
                    shown.append({t->item(r, 0)->text(), t->item(r, 1)->text()});
                closed = true;
                dlg->reject();
                return;
            }
            if (triesLeft > 0)
                QTimer::singleShot(20, w.get(), [&, triesLeft] { closeWhenShown(triesLeft - 1); });
        };
        QTimer::singleShot(0, w.get(), [&] { closeWhenShown(250); });
        help->trigger(); // modal: returns once the dialog is closed
        QVERIFY(closed);
        QCOMPARE(shown, list);
        // The presentation overlay's help lists the same shortcuts.
        const QStringList lines = features(*w)->presentation()->shortcutLines();
        QCOMPARE(lines.size(), list.size());
        for (qsizetype i = 0; i < list.size(); ++i)
            QCOMPARE(lines[i], list[i].first + QLatin1Char('\t') + list[i].second);
    }
};

QTEST_MAIN(TstGuiFeatures)
#include "tst_gui_features.moc"
