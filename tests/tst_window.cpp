// The window as a speaker projects it (offscreen), beyond tst_gui's states: the 2026 configs
// (Nemotron-H, Gemma-3, gpt-oss), in light and dark, at 1920×1080 and 1600×1000: no plot label
// covers a point, touches another label or runs off its plot; the
// brace of collapsed ranks paints its count; hybrid models' strips split by layer group; the
// model panel's provenance is never cut; the
// screenshots of those states (and presenting) are drawn, not blank.
#include "core/format.h"
#include "testutils_gui.h"
#include "ui/features.h"
#include "ui/kvstripsgroups.h"
#include "ui/kvstripsview.h"
#include "ui/mainwindow.h"
#include "ui/plotwidget.h"
#include "ui/presentation.h"
#include "ui/startup.h"
#include "ui/theme.h"

#include <QApplication>
#include <QHeaderView>
#include <QImage>
#include <QPainter>
#include <QScopeGuard>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>

using namespace kvscope;
using namespace kvscope::ui;
using namespace kvscope::test;

namespace {

QString fixture(const char* name) {
    return QStringLiteral(KVSCOPE_FIXTURES_2026_DIR "/") + QLatin1String(name);
}

// The states a talk shows, as startup flags.
void addTalkStates() {
    QTest::addColumn<QStringList>("flags");
    QTest::addColumn<QSize>("size");
    QTest::addColumn<bool>("dark");
    const auto states = talkStates();
    for (const QSize size : {QSize(1920, 1080), QSize(1600, 1000)})
        for (bool dark : {false, true})
            for (const auto& [name, flags] : states)
                QTest::newRow(
                    qPrintable(QStringLiteral("%1 %2x%3 %4")
                                   .arg(QLatin1String(name))
                                   .arg(size.width())
                                   .arg(size.height())
                                   .arg(dark ? QStringLiteral("dark") : QStringLiteral("light"))))
                    << flags << size << dark;
}

} // namespace

class TestWindow : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void init() { applyTheme(ThemeMode::Light); }
    void cleanup() { applyTheme(ThemeMode::Light); }

    void plotLabelsStayClear_data() { addTalkStates(); }
    void plotLabelsStayClear() {
        QFETCH(QStringList, flags);
        QFETCH(QSize, size);
        QFETCH(bool, dark);
        const auto restore = appFontForScope();
        applyTheme(dark ? ThemeMode::Dark : ThemeMode::Light);
        MainWindow w(MainWindow::Options{false, false});
        startWindow(w, flags, size);
        if (QTest::currentTestFailed())
            return;
        w.renderNow();
        verifyPlotLabelsClear(w, 0);
    }

    // A config file's model is named after its file ("google__gemma-3-27b-it"): the TP plots'
    // legends show the name without the org, as a preset's title reads.
    void configModelLegendWithoutOrg() {
        StartupOptions o =
            parseStartup(QStringList{QStringLiteral("kvscope"), QStringLiteral("--model"),
                                     fixture("google__gemma-3-27b-it.json")});
        QVERIFY2(o.error.isEmpty(), qPrintable(o.error));
        MainWindow w(MainWindow::Options{false, false});
        QString err;
        QVERIFY2(applyStartup(w, o, &err), qPrintable(err));
        w.show();
        w.renderNow();
        for (const char* view : {"capacity", "intensity"}) {
            auto* plot = qobject_cast<PlotWidget*>(w.viewWidget(QLatin1String(view)));
            QVERIFY(plot && plot->graphCount() > 0);
            const QString name = plot->graph(0)->name();
            QVERIFY2(name.startsWith(QLatin1String("gemma-3-27b-it ")), qPrintable(name));
            QVERIFY2(!name.contains(QLatin1String("__")), qPrintable(name));
        }
    }

    // Presentation mode at 1920×1080: the markers grow (size and ring, from a regenerated
    // sprite: the point's box holds more of the ring's colour than in the normal window) and
    // no label of the enlarged type covers a point, crosses a line or runs off its plot.
    void presentationMarkersAndLabels_data() {
        QTest::addColumn<QStringList>("flags");
        QTest::newRow("default") << QStringList{};
        QTest::newRow("deepseek-v3 tp128")
            << QStringList{QStringLiteral("--model"), QStringLiteral("deepseek-v3"),
                           QStringLiteral("--tp"), QStringLiteral("128")};
        QTest::newRow("gemma-3-27b")
            << QStringList{QStringLiteral("--model"), fixture("google__gemma-3-27b-it.json")};
    }
    void presentationMarkersAndLabels() {
        QFETCH(QStringList, flags);
        const auto restore = appFontForScope();
        StartupOptions o = parseStartup(QStringList{QStringLiteral("kvscope")} + flags);
        QVERIFY2(o.error.isEmpty(), qPrintable(o.error));
        MainWindow w(MainWindow::Options{false, false});
        w.resize(1920, 1080);
        QString err;
        QVERIFY2(applyStartup(w, o, &err), qPrintable(err));
        Features* features = installFeatures(w, FeatureOptions{});
        w.show();
        w.renderNow();
        auto* cap = qobject_cast<PlotWidget*>(w.viewWidget(QStringLiteral("capacity")));
        QVERIFY(cap && cap->graphCount() > 0);
        QCPGraph* g = cap->graph(0);
        const double size = g->scatterStyle().size();
        const double ring = g->scatterStyle().pen().widthF();
        // Ink of the ring's colour in a box around the first point.
        auto ink = [&] {
            const QImage img = cap->grab().toImage();
            const QColor c = g->scatterStyle().pen().color();
            const QPointF pt = cap->pointPixels().front();
            const double dpr = img.devicePixelRatio();
            int n = 0;
            for (int y = int((pt.y() - 14) * dpr); y <= int((pt.y() + 14) * dpr); ++y)
                for (int x = int((pt.x() - 14) * dpr); x <= int((pt.x() + 14) * dpr); ++x) {
                    if (!img.rect().contains(x, y))
                        continue;
                    const QColor p = img.pixelColor(x, y);
                    n += std::abs(p.red() - c.red()) + std::abs(p.green() - c.green()) +
                             std::abs(p.blue() - c.blue()) <
                         60;
                }
            return n;
        };
        const int before = ink();
        QVERIFY(before > 0);
        features->presentation()->setActive(true, false);
        QCoreApplication::processEvents();
        w.renderNow();
        g = cap->graph(0);
        QCOMPARE(g->scatterStyle().size(), size * 1.4);
        QVERIFY(g->scatterStyle().pen().widthF() >= std::max(1.5, ring * 1.5) - 1e-9);
        const int after = ink();
        QVERIFY2(after > before * 1.5,
                 qPrintable(QStringLiteral("ring ink %1 -> %2").arg(before).arg(after)));
        verifyPlotLabelsClear(w, 0);
    }

    // Screenshots of the states a speaker projects are real windows, light and dark.
    void screenshotsAtTalkStatesNotBlank_data() {
        QTest::addColumn<QStringList>("flags");
        const auto states = talkStates();
        for (const auto& [name, flags] : states)
            for (const char* theme : {"light", "dark"})
                for (const char* size : {"1920x1080", "1600x1000", "1920x1080 present"}) {
                    QStringList f = flags;
                    f << QStringLiteral("--theme") << QLatin1String(theme)
                      << QStringLiteral("--size")
                      << QString::fromLatin1(size).section(QLatin1Char(' '), 0, 0);
                    if (QLatin1String(size).endsWith(QLatin1String("present")))
                        f << QStringLiteral("--present");
                    QTest::newRow(qPrintable(
                        QStringLiteral("%1 %2 %3")
                            .arg(QLatin1String(name), QLatin1String(theme), QLatin1String(size))))
                        << f;
                }
    }
    void screenshotsAtTalkStatesNotBlank() {
        QFETCH(QStringList, flags);
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("k.png"));
        StartupOptions o = parseStartup(
            QStringList{QStringLiteral("kvscope"), QStringLiteral("--screenshot"), path} + flags);
        QVERIFY2(o.error.isEmpty(), qPrintable(o.error));
        if (o.theme)
            applyTheme(*o.theme == QLatin1String("dark") ? ThemeMode::Dark : ThemeMode::Light);
        QCOMPARE(runScreenshot(o), 0);
        applyTheme(ThemeMode::Light);
        const QImage img(path);
        QCOMPARE(img.size(), o.size);
        // The whole window, and each of the strips (top middle) and the plots (bottom row):
        // each drawn, not a flat ground.
        auto colours = [&img](const QRect& r) {
            QSet<QRgb> out;
            for (int y = r.top(); y <= r.bottom(); y += 5)
                for (int x = r.left(); x <= r.right(); x += 5)
                    out.insert(img.pixel(x, y));
            return out.size();
        };
        const int w = img.width(), h = img.height();
        QVERIFY2(colours(img.rect()) > 50, "the screenshot looks blank");
        QVERIFY2(colours(QRect(w / 4, h / 8, w / 2, h / 4)) > 20, "the strips look blank");
        for (int i = 0; i < 3; ++i)
            QVERIFY2(colours(QRect(w * i / 4 + w / 16, h * 6 / 10, w / 5, h / 4)) > 12,
                     qPrintable(QStringLiteral("plot %1 looks blank").arg(i)));
    }

    // Past the ranks that fit legibly, identical ranks collapse into a brace with a count, and
    // hovering it still tells the exact bytes each of them holds.
    void stripsCollapseIdenticalRanks_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("kvHeads"); // 0: the model's own
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("holds");
        QTest::newRow("deepseek-v3 mla tp128") << "deepseek-v3" << 0 << "identical ranks"
                                               << "each holds the whole latent";
        QTest::newRow("llama-3.1-405b mqa tp128") << "llama-3.1-405b" << 1 << "identical ranks"
                                                  << "each holds KV head 0";
        QTest::newRow("llama-3.1-405b gqa8 tp128") << "llama-3.1-405b" << 0 << "more ranks"
                                                   << "each copied on 16 GPUs";
    }
    void stripsCollapseIdenticalRanks() {
        QFETCH(QString, model);
        QFETCH(int, kvHeads);
        QFETCH(QString, kind);
        QFETCH(QString, holds);
        MainWindow w(MainWindow::Options{false, false});
        w.resize(1920, 1080);
        w.show();
        QVERIFY(w.loadModelRef(model));
        AppState s = w.state();
        if (kvHeads > 0)
            s.deployment.kvHeads = kvHeads;
        s.deployment.tp = 128;
        QString err;
        QVERIFY2(w.applyState(s, &err), qPrintable(err));
        w.renderNow();
        KvStripsView* strips = w.stripsView();
        const int drawn = 128 - strips->collapsedText().section(QLatin1Char(' '), 1, 1).toInt();
        QVERIFY2(drawn >= 4 && drawn <= 8, qPrintable(strips->collapsedText()));
        QVERIFY(strips->legibleRanks(strips->width()) <= 16);
        QCOMPARE(strips->collapsedText(), QStringLiteral("× %1 %2").arg(128 - drawn).arg(kind));
        // The brace's tooltip: what each collapsed GPU holds, to the byte.
        QString tip;
        for (int x = strips->width() - 40; x > 0 && tip.isEmpty(); x -= 10) {
            const QString t = strips->toolTipAt(QPointF(x, strips->height() * 0.6));
            if (t.contains(QStringLiteral("GPU %1 … 127").arg(drawn)))
                tip = t;
        }
        QVERIFY2(tip.contains(holds), qPrintable(tip));
        QVERIFY2(tip.contains(QString::fromStdString(withCommas(w.report().step.kvBytes))),
                 qPrintable(tip));
        // At TP 8 every rank is drawn.
        s.deployment.tp = 8;
        QVERIFY(w.applyState(s));
        w.renderNow();
        QVERIFY(strips->collapsedText().isEmpty());
    }

    // At TP 128 the brace stands for the collapsed ranks, and its count is painted: the brace's
    // box holds ink, not only its tint.
    void collapsedRanksPaintTheirCount_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("kvHeads");
        QTest::addColumn<QSize>("size");
        QTest::addColumn<bool>("dark");
        for (const QSize size : {QSize(1920, 1080), QSize(1600, 1000)})
            for (bool dark : {false, true}) {
                const QString at =
                    QStringLiteral(" %1x%2 %3")
                        .arg(size.width())
                        .arg(size.height())
                        .arg(dark ? QStringLiteral("dark") : QStringLiteral("light"));
                QTest::newRow(qPrintable(QStringLiteral("deepseek-v3") + at))
                    << "deepseek-v3" << 0 << size << dark;
                QTest::newRow(qPrintable(QStringLiteral("llama-3.1-405b mqa") + at))
                    << "llama-3.1-405b" << 1 << size << dark;
            }
    }
    void collapsedRanksPaintTheirCount() {
        QFETCH(QString, model);
        QFETCH(int, kvHeads);
        QFETCH(QSize, size);
        QFETCH(bool, dark);
        applyTheme(dark ? ThemeMode::Dark : ThemeMode::Light);
        MainWindow w(MainWindow::Options{false, false});
        w.resize(size);
        w.show();
        QVERIFY(w.loadModelRef(model));
        AppState s = w.state();
        if (kvHeads > 0)
            s.deployment.kvHeads = kvHeads;
        s.deployment.tp = 128;
        QVERIFY(w.applyState(s));
        w.renderNow();
        KvStripsView* strips = w.stripsView();
        const QString count = strips->collapsedText();
        QVERIFY2(count.startsWith(QStringLiteral("× ")), qPrintable(count));
        // Where the brace's tooltip answers is the brace; find its horizontal span.
        int x0 = -1, x1 = -1;
        for (int x = 0; x < strips->width(); x += 4)
            if (strips->toolTipAt(QPointF(x, strips->height() * 0.6))
                    .contains(QStringLiteral(" … 127"))) {
                x0 = x0 < 0 ? x : x0;
                x1 = x;
            }
        QVERIFY(x0 >= 0 && x1 - x0 > 100);
        QImage img(strips->size(), QImage::Format_ARGB32);
        QPainter p(&img);
        strips->paintTo(p, strips->size());
        p.end();
        // The count is big, bold, in the text colour: count such pixels in the brace's box.
        const QColor ink = strips->palette().color(QPalette::WindowText);
        int inked = 0;
        for (int y = 0; y < img.height(); ++y)
            for (int x = x0; x <= x1; ++x) {
                const QColor c = img.pixelColor(x, y);
                inked += std::abs(c.red() - ink.red()) + std::abs(c.green() - ink.green()) +
                             std::abs(c.blue() - ink.blue()) <
                         60;
            }
        QVERIFY2(inked > 400, qPrintable(QStringLiteral("%1 ink pixels").arg(inked)));
    }

    // Hybrid strips split by what their bytes do as S grows, with a key. One request at
    // S 8,192 on one GPU, from the configs: Gemma-3-27B TP 2 holds 8 KV heads of K+V 128 wide in
    // bf16 (4,096 B per token per layer): 10 full layers grow (10 × 8,192 × 4,096 B), 52
    // sliding layers stop at the 1,024-token window. Nemotron-H-56B TP 4: 2 KV heads (1,024 B
    // per token per layer) in its 10 attention layers grow, its 54 Mamba layers hold a fixed
    // state. Llama-3-8B (one group, full attention) stays one solid strip, without a key.
    void stripsSplitByLayerGroup_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("tp");
        QTest::addColumn<QStringList>("key");
        QTest::addColumn<qint64>("growingBytes");
        QTest::newRow("gemma-3-27b tp2")
            << fixture("google__gemma-3-27b-it.json") << 2
            << QStringList{QStringLiteral("capped at the window"), QStringLiteral("grows with S")}
            << qint64(10) * 8192 * 4096;
        QTest::newRow("nemotron-h-56b tp4")
            << fixture("nvidia__Nemotron-H-56B-Base-8K.json") << 4
            << QStringList{QStringLiteral("fixed state"), QStringLiteral("grows with S")}
            << qint64(10) * 8192 * 1024;
        QTest::newRow("llama-3-8b tp1") << "llama-3-8b" << 1 << QStringList{} << qint64(0);
    }
    void stripsSplitByLayerGroup() {
        QFETCH(QString, model);
        QFETCH(int, tp);
        QFETCH(QStringList, key);
        QFETCH(qint64, growingBytes);
        MainWindow w(MainWindow::Options{false, false});
        w.resize(1600, 1000);
        w.show();
        QVERIFY(w.loadModelRef(model));
        AppState s = w.state();
        s.deployment.tp = tp;
        s.deployment.context = 8192;
        s.deployment.batch = 1;
        QVERIFY(w.applyState(s));
        w.renderNow();
        const Report& r = w.report();
        QCOMPARE(strips::groupLegendEntries(r), key);
        const strips::GroupShares shares = strips::groupShares(r);
        if (growingBytes > 0)
            QCOMPARE(std::llround(shares.growing * static_cast<double>(r.requestBytesPerRank)),
                     static_cast<long long>(growingBytes));
        // KV head 0's strip, found by its tooltip: its top and its tip are painted alike only
        // when nothing is split.
        KvStripsView* view = w.stripsView();
        view->finishAnimation();
        const auto isHead0 = [view](double px, double py) {
            return view->toolTipAt(QPointF(px, py)).contains(QStringLiteral("KV head 0<"));
        };
        int x0 = -1, x1 = -1, y0 = -1, y1 = -1;
        for (int px = 0; px < view->width(); ++px)
            if (isHead0(px, view->height() * 0.4)) {
                x0 = x0 < 0 ? px : x0;
                x1 = px;
            }
        const int x = (x0 + x1) / 2;
        for (int py = 0; x0 >= 0 && py < view->height(); ++py)
            if (isHead0(x, py)) {
                y0 = y0 < 0 ? py : y0;
                y1 = py;
            }
        QVERIFY2(x >= 0 && y1 - y0 > 60, "KV head 0's strip not found");
        const QString tip = view->toolTipAt(QPointF(x, (y0 + y1) / 2.0));
        for (const QString& part : key)
            QVERIFY2(tip.contains(part), qPrintable(tip));
        QImage img(view->size(), QImage::Format_ARGB32);
        QPainter p(&img);
        view->paintTo(p, view->size());
        p.end();
        const QColor top = img.pixelColor(x, y0 + (y1 - y0) / 5);
        const QColor tip2 = img.pixelColor(x, y1 - 4);
        const int diff = std::abs(top.red() - tip2.red()) + std::abs(top.green() - tip2.green()) +
                         std::abs(top.blue() - tip2.blue());
        if (key.isEmpty())
            QVERIFY2(diff < 12,
                     qPrintable(QStringLiteral("one strip, colours %1 apart").arg(diff)));
        else
            QVERIFY2(diff > 40,
                     qPrintable(QStringLiteral("segments, colours only %1 apart").arg(diff)));
    }

    // The model panel's "From" column: every provenance is shown whole (wrapped), its tooltip
    // the same text; a row is as tall as its wrapped text.
    void provenanceIsNeverCut_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QSize>("size");
        for (const QSize size : {QSize(1920, 1080), QSize(1600, 1000)}) {
            const QString at = QStringLiteral(" %1x%2").arg(size.width()).arg(size.height());
            QTest::newRow(qPrintable(QStringLiteral("deepseek-v3") + at)) << "deepseek-v3" << size;
            QTest::newRow(qPrintable(QStringLiteral("nemotron-h-56b") + at))
                << fixture("nvidia__Nemotron-H-56B-Base-8K.json") << size;
            QTest::newRow(qPrintable(QStringLiteral("gpt-oss-20b") + at))
                << fixture("openai__gpt-oss-20b.json") << size;
        }
    }
    void provenanceIsNeverCut() {
        QFETCH(QString, model);
        QFETCH(QSize, size);
        MainWindow w(MainWindow::Options{false, false});
        w.resize(size);
        w.show();
        QVERIFY(w.loadModelRef(model));
        w.renderNow();
        auto* tree = w.findChild<QTreeWidget*>(QStringLiteral("geometryTree"));
        QVERIFY(tree);
        QTest::qWait(0);
        const int width = tree->header()->sectionSize(2);
        QVERIFY(width > 40);
        int wrapped = 0;
        for (int i = 0; i < tree->topLevelItemCount(); ++i) {
            QTreeWidgetItem* it = tree->topLevelItem(i);
            QString text = it->text(2);
            QCOMPARE(text.remove(QChar(0x200b)), it->toolTip(2));
            const QFontMetrics fm(it->font(2));
            const QRect need = fm.boundingRect(QRect(0, 0, width - 6, 1 << 16),
                                               Qt::AlignLeft | Qt::TextWordWrap, it->text(2));
            const QRect row = tree->visualItemRect(it);
            QVERIFY2(row.height() >= need.height(),
                     qPrintable(QStringLiteral("%1: row %2 px, text %3 px")
                                    .arg(it->toolTip(2))
                                    .arg(row.height())
                                    .arg(need.height())));
            wrapped += need.height() > fm.height();
        }
        Q_UNUSED(wrapped);
    }
};

QTEST_MAIN(TestWindow)
#include "tst_window.moc"
