// GUI tests, offscreen: sliders drive the numbers panel to core's values, every fixture config
// loads, a malformed config shows the banner and keeps the old model, and the screenshot is a
// real, non-blank window.
#include "core/features/schema.h"
#include "core/format.h"
#include "core/law/law.h"
#include "core/model/presets.h"
#include "testutils_gui.h"
#include "ui/features.h"
#include "ui/kvstripsview.h"
#include "ui/layerribbon.h"
#include "ui/mainwindow.h"
#include "ui/numberspanel.h"
#include "ui/plotwidget.h"
#include "ui/startup.h"
#include "ui/theme.h"
#include "ui/viewmodel.h"

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QScopeGuard>
#include <QScrollArea>
#include <QScrollBar>
#include <QSet>
#include <QSettings>
#include <QSlider>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>

using namespace kvscope;
using namespace kvscope::ui;
using namespace kvscope::test;

namespace {
QString q(const std::string& s) {
    return QString::fromStdString(s);
}

int indexOfKv(const ModelSpec& m, std::optional<std::int64_t> kv) {
    const auto choices = kvHeadChoices(m);
    const auto it = std::find(choices.begin(), choices.end(), kv);
    return it == choices.end() ? -1 : static_cast<int>(it - choices.begin());
}
} // namespace

class TestGui : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        applyTheme(ThemeMode::Light);
    }

    void slidersDriveNumbers_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<qlonglong>("kvHeads"); // 0 = the MLA latent
        QTest::addColumn<qlonglong>("tp");
        QTest::addColumn<QString>("cellModel");
        QTest::addColumn<QString>("cellRank");
        QTest::newRow("llama3-70b gqa8 tp1") << "llama-3-70b" << 8LL << 1LL << "320 KiB"
                                             << "320 KiB";
        QTest::newRow("llama3-70b gqa8 tp8") << "llama-3-70b" << 8LL << 8LL << "320 KiB"
                                             << "40 KiB";
        QTest::newRow("llama3-70b mha tp1") << "llama-3-70b" << 64LL << 1LL << "2.5 MiB"
                                            << "2.5 MiB";
        QTest::newRow("llama3-70b mha tp8") << "llama-3-70b" << 64LL << 8LL << "2.5 MiB"
                                            << "320 KiB";
        QTest::newRow("llama3-70b mqa tp8") << "llama-3-70b" << 1LL << 8LL << "40 KiB"
                                            << "40 KiB";
        QTest::newRow("deepseek-v3 mla tp16") << "deepseek-v3" << 0LL << 16LL << "68.6 KiB"
                                              << "68.6 KiB";
    }
    void slidersDriveNumbers() {
        QFETCH(QString, model);
        QFETCH(qlonglong, kvHeads);
        QFETCH(qlonglong, tp);
        QFETCH(QString, cellModel);
        QFETCH(QString, cellRank);

        MainWindow w(MainWindow::Options{false, false});
        w.resize(1600, 1000);
        w.show();
        QVERIFY(w.loadModelRef(model));
        w.flushRefresh();
        auto* kvSlider = w.findChild<QSlider*>(QStringLiteral("kvHeadsSlider"));
        auto* tpSlider = w.findChild<QSlider*>(QStringLiteral("tpSlider"));
        QVERIFY(kvSlider && tpSlider);

        const std::optional<std::int64_t> kv =
            kvHeads == 0 ? std::nullopt : std::optional<std::int64_t>(kvHeads);
        const int kvIndex = indexOfKv(w.state().model, kv);
        QVERIFY2(kvIndex >= 0, "h_kv is not a slider value");
        kvSlider->setValue(kvIndex);
        w.flushRefresh();
        const auto tps = tpChoices(w.state().model, w.state().deployment.kvHeads);
        const auto tpIt = std::find(tps.begin(), tps.end(), tp);
        QVERIFY2(tpIt != tps.end(), "TP is not a slider value");
        tpSlider->setValue(static_cast<int>(tpIt - tps.begin()));
        w.flushRefresh();

        QCOMPARE(w.state().deployment.tp, tp);
        // The panel shows the chapter's numbers, and exactly core's.
        const auto r = evaluate(w.state().model, w.state().gpu, w.state().deployment);
        QVERIFY(r.ok());
        QCOMPARE(w.numbersPanel()->valueText(QStringLiteral("cellModel")), cellModel);
        QCOMPARE(w.numbersPanel()->valueText(QStringLiteral("cellRank")), cellRank);
        QCOMPARE(w.numbersPanel()->valueText(QStringLiteral("cellRank")),
                 q(humanBytes(static_cast<double>(r->cellBytesPerTokenPerRank))));
        QCOMPARE(w.numbersPanel()->valueText(QStringLiteral("vllmTokens")), q(r->vllmLogTokens));
    }

    void shortcutsStepControls() {
        MainWindow w(MainWindow::Options{false, false});
        w.show();
        QVERIFY(w.loadModelRef(QStringLiteral("llama-3-70b")));
        w.flushRefresh();
        const auto before = w.state().deployment.context;
        w.controlsPanel()->step(Control::Context, +1);
        w.flushRefresh();
        QVERIFY(w.state().deployment.context > before);
        const auto tp = w.state().deployment.tp;
        w.controlsPanel()->step(Control::Tp, -1);
        w.flushRefresh();
        QVERIFY(w.state().deployment.tp < tp);
    }

    // The GQA paper names GQA by its KV groups ("GQA-8 means eight KV groups"): Llama-3-8B
    // (32 query heads, 8 KV heads) is GQA-8 with g = 4, and every view says so.
    void variantLabelsFollowThePaper() {
        MainWindow w(MainWindow::Options{false, false});
        w.resize(1600, 1000);
        w.show();
        QVERIFY(w.loadModelRef(QStringLiteral("llama-3-8b")));
        w.flushRefresh();
        QCOMPARE(q(w.report().variant), QStringLiteral("GQA-8"));
        QVERIFY2(w.windowTitle().contains(QStringLiteral("GQA-8 · g = 4")),
                 qPrintable(w.windowTitle()));
        auto* kvValue = w.findChild<QLabel*>(QStringLiteral("kvHeadsValue"));
        QVERIFY(kvValue);
        QCOMPARE(kvValue->text(), QStringLiteral("GQA-8 · g = 4"));
        QStringList labels;
        for (const auto& v : computeRoofline(w.state(), w.report()).variants)
            labels << q(v.label);
        QCOMPARE(labels, (QStringList{QStringLiteral("MHA"), QStringLiteral("GQA-16"),
                                      QStringLiteral("GQA-8"), QStringLiteral("GQA-4"),
                                      QStringLiteral("GQA-2"), QStringLiteral("MQA")}));
        // MHA and MQA keep their names and get no g.
        QCOMPARE(q(variantWithGroup(w.report().variant, 32, 8)), QStringLiteral("GQA-8 · g = 4"));
        QCOMPARE(q(variantWithGroup("MHA", 32, 32)), QStringLiteral("MHA"));
        QCOMPARE(q(variantWithGroup("MQA", 32, 1)), QStringLiteral("MQA"));
    }

    // No label of the roofline, capacity or intensity plot covers a plotted point, at the
    // states a talk projects.
    void plotLabelsLeavePointsVisible_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("kvHeads");
        QTest::addColumn<int>("tp");
        QTest::addColumn<QSize>("size");
        for (const QSize size : {QSize(1600, 1000), QSize(1920, 1080)}) {
            const QString at = QStringLiteral(" %1x%2").arg(size.width()).arg(size.height());
            QTest::newRow(qPrintable(QStringLiteral("default") + at))
                << "llama-3-70b" << 0 << 8 << size;
            QTest::newRow(qPrintable(QStringLiteral("deepseek-v3 tp16") + at))
                << "deepseek-v3" << 0 << 16 << size;
            QTest::newRow(qPrintable(QStringLiteral("deepseek-v3 tp128") + at))
                << "deepseek-v3" << 0 << 128 << size;
            QTest::newRow(qPrintable(QStringLiteral("llama-3.1-405b mqa tp128") + at))
                << "llama-3.1-405b" << 1 << 128 << size;
        }
    }
    void plotLabelsLeavePointsVisible() {
        // The app's own font (app/gui/main.cpp): labels are measured as a talk sees them.
        const auto restore = appFontForScope();
        QFETCH(QString, model);
        QFETCH(int, kvHeads);
        QFETCH(int, tp);
        QFETCH(QSize, size);
        MainWindow w(MainWindow::Options{false, false});
        w.resize(size);
        w.show();
        QVERIFY(w.loadModelRef(model));
        AppState s = w.state();
        if (kvHeads > 0)
            s.deployment.kvHeads = kvHeads;
        s.deployment.tp = tp;
        QVERIFY(w.applyState(s));
        w.renderNow();
        verifyPlotLabelsClear(w, 2);
    }

    // The numbers panel shows everything at 1600×1000 without scrolling, and no line of it is
    // cut (elided, or wrapped past its room): nor in presentation mode at 1920×1080.
    void numbersPanelFitsWithoutScrolling_data() {
        QTest::addColumn<QStringList>("flags");
        QTest::addColumn<QSize>("size");
        QTest::addColumn<bool>("present");
        const auto states = talkStates();
        for (const auto& [name, flags] : states) {
            QTest::newRow(qPrintable(QStringLiteral("%1 1600x1000").arg(QLatin1String(name))))
                << flags << QSize(1600, 1000) << false;
            QTest::newRow(
                qPrintable(QStringLiteral("%1 1920x1080 presenting").arg(QLatin1String(name))))
                << flags << QSize(1920, 1080) << true;
        }
    }
    void numbersPanelFitsWithoutScrolling() {
        QFETCH(QStringList, flags);
        QFETCH(QSize, size);
        QFETCH(bool, present);
        const auto restore = appFontForScope();
        StartupOptions o = parseStartup(QStringList{QStringLiteral("kvscope")} + flags);
        QVERIFY2(o.error.isEmpty(), qPrintable(o.error));
        o.present = present;
        MainWindow w(MainWindow::Options{false, false});
        w.resize(size);
        QString err;
        QVERIFY2(applyStartup(w, o, &err), qPrintable(err));
        installFeatures(w, FeatureOptions{{}, {}, o.present, {}, {}});
        w.show();
        w.resize(size);
        QCoreApplication::processEvents();
        w.renderNow();
        // Wrapped labels ask for their height once they know their width: let the layout
        // settle, then paint (a label knows it was cut once painted).
        for (int i = 0; i < 3; ++i)
            QCoreApplication::processEvents();
        w.grab();
        QScrollArea* scroll = nullptr;
        for (QWidget* p = w.numbersPanel()->parentWidget(); p && !scroll; p = p->parentWidget())
            scroll = qobject_cast<QScrollArea*>(p);
        QVERIFY(scroll);
        QCOMPARE(scroll->verticalScrollBar()->maximum(), 0);
        const QStringList cut = w.numbersPanel()->cutTexts();
        QVERIFY2(cut.isEmpty(),
                 qPrintable(QStringLiteral("cut: ") + cut.join(QStringLiteral(", "))));
        // The wrapped lines are whole: vLLM's concurrency line reads as vLLM prints it.
        QVERIFY(w.numbersPanel()
                    ->valueText(QStringLiteral("vllmConcurrency"))
                    .startsWith(QStringLiteral("Maximum concurrency for ")));
    }

    // The layer ribbon: one mark per layer, coloured by kind, the MTP layers apart.
    void layerRibbonFollowsTheModel() {
        MainWindow w(MainWindow::Options{false, false});
        w.resize(1600, 1000);
        w.show();
        QVERIFY(w.loadModelRef(QStringLiteral("gemma-2-9b")));
        w.renderNow();
        const ModelSpec& g = w.state().model;
        const auto& kinds = w.layerRibbon()->kinds();
        QCOMPARE(static_cast<std::int64_t>(kinds.size()), g.layers.value);
        QVERIFY(g.windowLayerCount() > 0); // Gemma-2 alternates sliding and full layers
        QCOMPARE(static_cast<std::int64_t>(
                     std::count(kinds.begin(), kinds.end(), ui::LayerKind::Sliding)),
                 g.windowLayerCount());
        QVERIFY(std::count(kinds.begin(), kinds.end(), ui::LayerKind::Full) > 0);
        QVERIFY(w.loadModelRef(QStringLiteral("deepseek-v3")));
        w.renderNow();
        const auto& ds = w.layerRibbon()->kinds();
        QCOMPARE(static_cast<std::int64_t>(ds.size()), w.state().model.layers.value);
        QVERIFY(std::all_of(ds.begin(), ds.end(),
                            [](ui::LayerKind k) { return k == ui::LayerKind::Mla; }));
        QCOMPARE(w.layerRibbon()->mtpLayers(), w.state().model.mtpLayers.value);
        QVERIFY(w.layerRibbon()->mtpLayers() >= 1); // num_nextn_predict_layers = 1
    }

    // The ribbon's marks per kind are core's layer groups, and the configs' own counts:
    // Gemma-3-27B 62 layers, every 6th full (transformers' default sliding_window_pattern 6);
    // gpt-oss-20b layer_types 12 sliding / 12 full; Nemotron-H-56B hybrid_override_pattern
    // 54 M (mamba), 10 * (attention), 54 - (MLP, no cache); Qwen3.5-35B-A3B layer_types 30
    // linear_attention (Gated DeltaNet) / 10 full_attention.
    void layerRibbonCountsAreTheLayerGroups_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("full");
        QTest::addColumn<int>("sliding");
        QTest::addColumn<int>("mamba");
        QTest::addColumn<int>("linear");
        QTest::addColumn<int>("none");
        QTest::newRow("gemma-3-27b") << "google__gemma-3-27b-it.json" << 10 << 52 << 0 << 0 << 0;
        QTest::newRow("gpt-oss-20b") << "openai__gpt-oss-20b.json" << 12 << 12 << 0 << 0 << 0;
        QTest::newRow("nemotron-h-56b")
            << "nvidia__Nemotron-H-56B-Base-8K.json" << 10 << 0 << 54 << 0 << 54;
        QTest::newRow("qwen3.5-35b-a3b") << "Qwen__Qwen3.5-35B-A3B.json" << 10 << 0 << 0 << 30 << 0;
    }
    void layerRibbonCountsAreTheLayerGroups() {
        QFETCH(QString, file);
        QFETCH(int, full);
        QFETCH(int, sliding);
        QFETCH(int, mamba);
        QFETCH(int, linear);
        QFETCH(int, none);
        MainWindow w(MainWindow::Options{false, false});
        w.resize(1600, 1000);
        w.show();
        QString err;
        QVERIFY2(
            w.loadModelRef(QDir(QStringLiteral(KVSCOPE_FIXTURES_2026_DIR)).filePath(file), &err),
            qPrintable(err));
        w.renderNow();
        const auto& kinds = w.layerRibbon()->kinds();
        const ModelSpec& m = w.state().model;
        QCOMPARE(static_cast<std::int64_t>(kinds.size()), m.layers.value);
        auto marks = [&](LayerKind k) {
            return static_cast<int>(std::count(kinds.begin(), kinds.end(), k));
        };
        for (int k = 0; k <= static_cast<int>(LayerKind::None); ++k) {
            const auto kind = static_cast<LayerKind>(k);
            std::int64_t inGroups = 0;
            for (const LayerGroup& g : m.layerGroups)
                if (g.kind == kind)
                    inGroups += g.count();
            if (kind == LayerKind::None) // layers no group names are none
                inGroups = m.layers.value - [&] {
                    std::int64_t named = 0;
                    for (const LayerGroup& g : m.layerGroups)
                        if (g.kind != LayerKind::None)
                            named += g.count();
                    return named;
                }();
            QVERIFY2(marks(kind) == inGroups, qPrintable(QStringLiteral("%1: ribbon %2, groups %3")
                                                             .arg(layerKindName(kind))
                                                             .arg(marks(kind))
                                                             .arg(inGroups)));
        }
        QCOMPARE(marks(LayerKind::Full), full);
        QCOMPARE(marks(LayerKind::Sliding), sliding);
        QCOMPARE(marks(LayerKind::Mamba), mamba);
        QCOMPARE(marks(LayerKind::Linear), linear);
        QCOMPARE(marks(LayerKind::None), none);
    }

    void fixtureLoads_data() {
        QTest::addColumn<QString>("path");
        const QDir dir(QStringLiteral(KVSCOPE_FIXTURES_DIR));
        const auto files = dir.entryList({QStringLiteral("*.json")}, QDir::Files, QDir::Name);
        QVERIFY2(!files.isEmpty(), "no fixture configs found");
        for (const QString& f : files)
            QTest::newRow(qPrintable(f)) << dir.filePath(f);
    }
    void fixtureLoads() {
        QFETCH(QString, path);
        MainWindow w(MainWindow::Options{false, false});
        w.show();
        QString err;
        QVERIFY2(w.loadModelRef(path, &err), qPrintable(err));
        w.flushRefresh();
        QVERIFY(!w.bannerVisible());
        QCOMPARE(q(w.state().modelRef), path);
        QVERIFY(w.numbersPanel()->valueText(QStringLiteral("cellModel")) != QStringLiteral("—"));
    }

    void malformedKeepsModel_data() {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("field"); // empty: any field, the banner just has to show
        QTest::newRow("not json") << QByteArray("{ \"num_hidden_layers\": 32, oops") << QString();
        QTest::newRow("negative heads")
            << QByteArray(R"({"num_hidden_layers": 32, "num_attention_heads": -4,
                            "hidden_size": 4096, "vocab_size": 32000})")
            << QStringLiteral("num_attention_heads");
        QTest::newRow("kv heads not dividing heads")
            << QByteArray(R"({"num_hidden_layers": 32, "num_attention_heads": 32,
                            "num_key_value_heads": 5, "hidden_size": 4096,
                            "vocab_size": 32000})")
            << QStringLiteral("num_key_value_heads");
    }
    void malformedKeepsModel() {
        QFETCH(QByteArray, json);
        QFETCH(QString, field);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("config.json"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(json);
        f.close();

        MainWindow w(MainWindow::Options{false, false});
        w.show();
        QVERIFY(w.loadModelRef(QStringLiteral("llama-3-70b")));
        w.flushRefresh();
        const std::string before = w.state().modelRef;
        const QString cell = w.numbersPanel()->valueText(QStringLiteral("cellRank"));

        QString err;
        QVERIFY(!w.loadModelRef(path, &err));
        w.flushRefresh();
        QVERIFY(w.bannerVisible());
        if (!field.isEmpty())
            QVERIFY2(w.bannerText().contains(field), qPrintable(w.bannerText()));
        QCOMPARE(w.state().modelRef, before);
        QCOMPARE(w.numbersPanel()->valueText(QStringLiteral("cellRank")), cell);
    }

    void refusedStateKeepsOld() {
        MainWindow w(MainWindow::Options{false, false});
        QVERIFY(w.loadModelRef(QStringLiteral("llama-3-70b")));
        AppState s = w.state();
        s.deployment.tp = 3; // 64 % 3 != 0: vLLM refuses it
        QString err;
        QVERIFY(!w.applyState(s, &err));
        QVERIFY(!err.isEmpty());
        QVERIFY(w.state().deployment.tp != 3);
    }

    void screenshotNotBlank() {
        QTemporaryDir dir;
        StartupOptions o = parseStartup({QStringLiteral("kvscope"), QStringLiteral("--screenshot"),
                                         dir.filePath(QStringLiteral("k.png")),
                                         QStringLiteral("--tp"), QStringLiteral("8")});
        QVERIFY2(o.error.isEmpty(), qPrintable(o.error));
        QCOMPARE(runScreenshot(o), 0);
        const QImage img(dir.filePath(QStringLiteral("k.png")));
        QVERIFY(!img.isNull());
        QVERIFY(img.width() >= 1280 && img.height() >= 800);
        QSet<QRgb> colours;
        for (int y = 0; y < img.height(); y += 7)
            for (int x = 0; x < img.width(); x += 7)
                colours.insert(img.pixel(x, y));
        QVERIFY2(colours.size() > 50, "the screenshot looks blank");
    }

    // The GUI takes the schema's flags, spelled as kvscope-cli spells them, including the ones
    // it once lacked; the old --util still works and says once that it is deprecated.
    void startupFlagsAreTheSchemas() {
        std::vector<std::string> lines;
        auto previous = setDeprecationSink([&](const std::string& l) { lines.push_back(l); });
        const StartupOptions o = parseStartup(
            {QStringLiteral("kvscope"), QStringLiteral("--model"), QStringLiteral("llama-3-70b"),
             QStringLiteral("--tp"), QStringLiteral("8"), QStringLiteral("--util"),
             QStringLiteral("0.8"), QStringLiteral("--weight-dtype"), QStringLiteral("fp8"),
             QStringLiteral("--pool-gib=30"), QStringLiteral("--block-size"), QStringLiteral("32"),
             QStringLiteral("--max-num-batched-tokens"), QStringLiteral("4096")});
        setDeprecationSink(previous);
        QVERIFY2(o.error.isEmpty(), qPrintable(o.error));
        QCOMPARE(lines.size(), std::size_t(1));
        QVERIFY(QString::fromStdString(lines[0]).contains(QLatin1String("--gpu-mem-util")));
        MainWindow w(MainWindow::Options{false, false});
        QString err;
        QVERIFY2(applyStartup(w, o, &err), qPrintable(err));
        const Deployment& d = w.state().deployment;
        QCOMPARE(d.tp, std::int64_t(8));
        QCOMPARE(d.gpuMemUtil, 0.8);
        QVERIFY(d.weightDtype == WeightDtype::FP8);
        QVERIFY(d.poolGiB && *d.poolGiB == 30.0);
        QCOMPARE(d.blockSize, std::int64_t(32));
        QCOMPARE(d.maxNumBatchedTokens, std::int64_t(4096));
        // Range checks come from the same rows as the CLI's.
        QCOMPARE(parseStartup({QStringLiteral("kvscope"), QStringLiteral("--gpu-mem-util"),
                               QStringLiteral("1.5")})
                     .error,
                 QStringLiteral("--gpu-mem-util: must be in (0, 1], got 1.5"));
    }

    // Closing saves the whole state as one session value; the next window restores every
    // field, the ones earlier builds lost included (weight dtype, pool, block size, max
    // batched tokens, a custom GPU's fp8 peak and driver memory).
    void settingsRestoreEverything() {
        QSettings().clear();
        AppState saved;
        {
            MainWindow w(MainWindow::Options{true, false});
            AppState s = w.state();
            s.deployment.weightDtype = WeightDtype::FP8;
            s.deployment.poolGiB = 33.5;
            s.deployment.blockSize = 32;
            s.deployment.maxNumBatchedTokens = 4096;
            s.deployment.gpuMemUtil = 0.8;
            s.gpu.id = "custom";
            s.gpu.name = "Lab H100";
            s.gpu.peakFp8FlopPerS = 2000e12;
            s.gpu.driverMemoryBytes = 85'000'000'000;
            QString err;
            QVERIFY2(w.applyState(s, &err), qPrintable(err));
            saved = w.state();
            w.show();
            QVERIFY(w.close());
        }
        QVERIFY(QSettings().contains(QStringLiteral("session")));
        MainWindow w(MainWindow::Options{true, false});
        const AppState& r = w.state();
        QCOMPARE(r.modelRef, saved.modelRef);
        QVERIFY(r.deployment.weightDtype == WeightDtype::FP8);
        QVERIFY(r.deployment.poolGiB && *r.deployment.poolGiB == 33.5);
        QCOMPARE(r.deployment.blockSize, std::int64_t(32));
        QCOMPARE(r.deployment.maxNumBatchedTokens, std::int64_t(4096));
        QCOMPARE(r.deployment.gpuMemUtil, 0.8);
        QCOMPARE(r.deployment.tp, saved.deployment.tp);
        QCOMPARE(r.gpu.name, std::string("Lab H100"));
        QCOMPARE(r.gpu.peakFp8FlopPerS, 2000e12);
        QVERIFY(std::abs(r.gpu.driverMemoryBytes - 85'000'000'000LL) <= 1);
        QCOMPARE(r.gpu.bandwidthBytesPerS, saved.gpu.bandwidthBytesPerS);
        QSettings().clear();
    }

    void startupFlagsRefuseNonsense() {
        QVERIFY(!parseStartup(
                     {QStringLiteral("kvscope"), QStringLiteral("--tp"), QStringLiteral("eight")})
                     .error.isEmpty());
        QVERIFY(!parseStartup(
                     {QStringLiteral("kvscope"), QStringLiteral("--size"), QStringLiteral("big")})
                     .error.isEmpty());
        MainWindow w(MainWindow::Options{false, false});
        StartupOptions o = parseStartup({QStringLiteral("kvscope"), QStringLiteral("--model"),
                                         QStringLiteral("llama-3-70b"), QStringLiteral("--tp"),
                                         QStringLiteral("3")});
        QString err;
        QVERIFY(!applyStartup(w, o, &err));
        QVERIFY(!err.isEmpty());
        // --measurements takes a file; without one it is an error, not a silent no-op.
        QCOMPARE(parseStartup({QStringLiteral("kvscope"), QStringLiteral("--measurements"),
                               QStringLiteral("h200.json")})
                     .measurements,
                 QStringLiteral("h200.json"));
        QVERIFY(!parseStartup({QStringLiteral("kvscope"), QStringLiteral("--measurements")})
                     .error.isEmpty());
    }
};

QTEST_MAIN(TestGui)
#include "tst_gui.moc"
