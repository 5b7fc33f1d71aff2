// GUI tests, offscreen: the pool picker offers every engine release kvscope models plus the
// datasheet pool, the PP slider splits the layers into stages, both change the report, and a
// saved session brings both back.
#include "core/engines/engine.h"
#include "core/engines/engines.h"
#include "core/features/session.h"
#include "core/law/law.h"
#include "ui/controlspanel.h"
#include "ui/mainwindow.h"
#include "ui/numberspanel.h"
#include "ui/session.h"
#include "ui/theme.h"

#include <QComboBox>
#include <QLabel>
#include <QSettings>
#include <QSlider>
#include <QStandardPaths>
#include <QTest>

using namespace kvscope;
using namespace kvscope::ui;

namespace {

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

QComboBox* poolCombo(const MainWindow& w) {
    return w.controlsPanel()->findChild<QComboBox*>(QStringLiteral("poolModelCombo"));
}

/// Picks a pool-picker item the way a click does (activated, not only the current index).
bool pick(MainWindow& w, const QString& value) {
    QComboBox* c = poolCombo(w);
    const int i = c ? c->findData(value) : -1;
    if (i < 0)
        return false;
    c->setCurrentIndex(i);
    Q_EMIT c->activated(i);
    w.flushRefresh();
    return true;
}

/// Moves the PP slider to `pp` stages.
bool setPp(MainWindow& w, std::int64_t pp) {
    QSlider* s = w.controlsPanel()->slider(Control::Pp);
    if (!s)
        return false;
    s->setValue(static_cast<int>(pp - 1)); // the choices are 1, 2, 3, ...
    w.flushRefresh();
    return w.state().deployment.pp == pp;
}

} // namespace

class TestGuiEngine : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        applyTheme(ThemeMode::Light);
    }

    // A fresh window starts from the default release's own utilisation, as `kvscope-cli size`
    // does: vLLM 0.21 raised it to 0.92 (PR #38284).
    void defaultStateUsesTheEngineUtil() {
        MainWindow w(MainWindow::Options{false, false});
        const Deployment& d = w.state().deployment;
        QCOMPARE(d.engine, defaultEngine());
        QCOMPARE(d.gpuMemUtil, 0.92);
        QCOMPARE(d.gpuMemUtil, defaultGpuMemUtil(d.engine));
    }

    // The picker lists core's releases, newest vLLM first and selected by default, then the
    // datasheet pool.
    void pickerListsTheModelledReleases() {
        MainWindow w(MainWindow::Options{false, false});
        QComboBox* c = poolCombo(w);
        QVERIFY(c);
        const auto releases = modeledEngineReleases();
        QCOMPARE(c->count(), static_cast<int>(releases.size()) + 1);
        for (std::size_t i = 0; i < releases.size(); ++i) {
            QCOMPARE(c->itemData(static_cast<int>(i)).toString(), q(releases[i].spec.text()));
            QCOMPARE(c->itemText(static_cast<int>(i)), q(releases[i].label));
        }
        QCOMPARE(c->itemData(c->count() - 1).toString(), QStringLiteral("datasheet"));
        QCOMPARE(releases.front().spec, defaultEngine());
        QCOMPARE(c->currentData().toString(), q(w.state().deployment.engine.text()));
        QVERIFY(c->findData(QStringLiteral("sglang@0.4.3")) >= 0);
    }

    // SGLang sizes the pool as mem_fraction_static × free memory − weights: another pool, other
    // terms, and the numbers panel says which engine.
    void pickSglangChangesTheReport() {
        MainWindow w(MainWindow::Options{false, false});
        QVERIFY(w.loadModelRef(QStringLiteral("llama-3-8b")));
        w.flushRefresh();
        const Report before = w.report();
        QVERIFY(before.pool.engine.isVllm());
        QVERIFY(pick(w, QStringLiteral("sglang@0.4.3")));
        const Report& r = w.report();
        QCOMPARE(q(w.state().deployment.engine.text()), QStringLiteral("sglang@0.4.3"));
        QCOMPARE(q(r.pool.engine.text()), QStringLiteral("sglang@0.4.3"));
        // server_args.py (0.4.3): the default fraction by TP (0.88 at TP 1 … 0.81 at TP 8).
        const std::int64_t tp = w.state().deployment.tp;
        QCOMPARE(r.pool.memFractionStatic, tp >= 8 ? 0.81 : tp >= 4 ? 0.85 : tp >= 2 ? 0.87 : 0.88);
        QVERIFY(r.pool.poolBytes != before.pool.poolBytes);
        QVERIFY(engineTokens(r) != engineTokens(before));
        QVERIFY(w.numbersPanel()
                    ->valueText(QStringLiteral("poolBreakdown"))
                    .startsWith(QStringLiteral("sglang@0.4.3: ")));
        // And back to a vLLM release, and to the datasheet pool.
        QVERIFY(pick(w, QStringLiteral("vllm@0.19.0")));
        QCOMPARE(q(w.report().pool.engine.text()), QStringLiteral("vllm@0.19.0"));
        QVERIFY(pick(w, QStringLiteral("datasheet")));
        QVERIFY(w.state().deployment.poolModel == PoolModel::Datasheet);
    }

    // Two stages: each holds half of Llama-3-8B's 32 layers (get_pp_indices) and sizes its own
    // pool; the report's pool is the limiting stage's.
    void ppSliderSplitsTheLayers() {
        MainWindow w(MainWindow::Options{false, false});
        QVERIFY(w.loadModelRef(QStringLiteral("llama-3-8b")));
        w.flushRefresh();
        const Report before = w.report();
        QCOMPARE(before.pool.pp, std::int64_t(1));
        QVERIFY(setPp(w, 2));
        const Report& r = w.report();
        QCOMPARE(r.pool.pp, std::int64_t(2));
        QCOMPARE(r.pool.stageLayers, std::int64_t(16));
        QVERIFY(r.pool.weightBytes < before.pool.weightBytes);
        QVERIFY(engineTokens(r) != engineTokens(before));
        QCOMPARE(w.controlsPanel()->findChild<QLabel*>(QStringLiteral("ppValue"))->text(),
                 QStringLiteral("2"));
    }

    // Closing saves the session (core/features/session.cpp, the schema's engine and pp rows);
    // the next window comes back with SGLang 0.4.3 picked and two stages.
    void sessionRestoresEngineAndPp() {
        QSettings().clear();
        {
            MainWindow w(MainWindow::Options{true, false});
            QVERIFY(w.loadModelRef(QStringLiteral("llama-3-8b")));
            QVERIFY(pick(w, QStringLiteral("sglang@0.4.3")));
            QVERIFY(setPp(w, 2));
            const std::string json = sessionToJson(sessionFromState(w.state()));
            QVERIFY2(json.find("\"engine\": \"sglang@0.4.3\"") != std::string::npos, json.c_str());
            QVERIFY2(json.find("\"pp\": 2") != std::string::npos, json.c_str());
            w.show();
            QVERIFY(w.close());
        }
        MainWindow w(MainWindow::Options{true, false});
        w.flushRefresh();
        QCOMPARE(q(w.state().deployment.engine.text()), QStringLiteral("sglang@0.4.3"));
        QCOMPARE(w.state().deployment.pp, std::int64_t(2));
        QCOMPARE(q(w.report().pool.engine.text()), QStringLiteral("sglang@0.4.3"));
        QCOMPARE(poolCombo(w)->currentData().toString(), QStringLiteral("sglang@0.4.3"));
        QCOMPARE(w.controlsPanel()->slider(Control::Pp)->value(), 1);
        QSettings().clear();
    }
};

QTEST_MAIN(TestGuiEngine)
#include "tst_gui_engine.moc"
