// What the GUI tests share: the real window with the features installed, shown offscreen, its
// first refresh done. (tests/testutils.h has the fixture folders and the preset loaders.)
#pragma once

#include "ui/features.h"
#include "ui/mainwindow.h"
#include "ui/plotwidget.h"
#include "ui/startup.h"

#include <QApplication>
#include <QCoreApplication>
#include <QDockWidget>
#include <QLineF>
#include <QRectF>
#include <QScopeGuard>
#include <QString>
#include <QStringList>
#include <QtTest/QtTest>
#include <memory>

namespace kvscope::test {

/// The app's own font (app/gui/main.cpp: 10.5 pt) until the returned guard goes.
[[nodiscard]] inline auto appFontForScope() {
    const QFont before = QApplication::font();
    QFont f = before;
    f.setPointSizeF(10.5);
    QApplication::setFont(f);
    return qScopeGuard([before] { QApplication::setFont(before); });
}

/// `w` at `size`, shown and started from the command line `flags` as the app starts (the
/// caller checks QTest::currentTestFailed() after).
inline void startWindow(ui::MainWindow& w, const QStringList& flags, QSize size) {
    const ui::StartupOptions o = ui::parseStartup(QStringList{QStringLiteral("kvscope")} + flags);
    QVERIFY2(o.error.isEmpty(), qPrintable(o.error));
    w.resize(size);
    w.show();
    QString err;
    QVERIFY2(ui::applyStartup(w, o, &err), qPrintable(err));
}

/// A window that neither reads nor writes QSettings and does not animate, at 1600 x 1000.
inline std::unique_ptr<ui::MainWindow> makeWindow() {
    auto w = std::make_unique<ui::MainWindow>(ui::MainWindow::Options{false, false});
    w->resize(1600, 1000);
    ui::installFeatures(*w, ui::FeatureOptions{});
    w->show();
    w->flushRefresh();
    return w;
}

/// The states a talk projects, as startup flags (kvscope's state flags): DeepSeek-V3 at TP 128,
/// Llama-3.1-405B's MQA what-if at TP 128, the 2026 hybrids Nemotron-H-56B, Gemma-3-27B and
/// gpt-oss-20b, and the default (Llama-3-70B).
inline QList<QPair<const char*, QStringList>> talkStates() {
    const auto model = [](const QString& m, const QStringList& rest = {}) {
        return QStringList{QStringLiteral("--model"), m} + rest;
    };
    const auto fixture = [](const char* name) {
        return QStringLiteral(KVSCOPE_FIXTURES_2026_DIR "/") + QLatin1String(name);
    };
    const QStringList tp128{QStringLiteral("--tp"), QStringLiteral("128")};
    return {{"deepseek-v3 tp128", model(QStringLiteral("deepseek-v3"), tp128)},
            {"llama-3.1-405b mqa tp128",
             model(QStringLiteral("llama-3.1-405b"),
                   tp128 + QStringList{QStringLiteral("--h-kv"), QStringLiteral("1")})},
            {"nemotron-h-56b", model(fixture("nvidia__Nemotron-H-56B-Base-8K.json"))},
            {"gemma-3-27b", model(fixture("google__gemma-3-27b-it.json"))},
            {"gpt-oss-20b", model(fixture("openai__gpt-oss-20b.json"))},
            {"default", {}}};
}

inline QString rectText(const QRectF& r) {
    return QStringLiteral("%1,%2 %3x%4").arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height());
}

/// One plot's labels as a talk sees them: every label inside the plot, off every point, across
/// no line unless boxed (a marker line, a ceiling, a curve; an arrow only where it leaves
/// this label), and
/// two labels overlapping by no more than `labelOverlap` px (0: not even touching).
inline void verifyLabelsClear(ui::PlotWidget& plot, const QString& where, double labelOverlap) {
    QVERIFY2(plot.isVisible() && plot.width() > 300,
             qPrintable(where + QStringLiteral(": not laid out (%1 px wide)").arg(plot.width())));
    const QRectF area = plot.axisRect()->rect();
    const auto points = plot.pointPixels();
    QVERIFY(!points.isEmpty());
    const auto labels = plot.labelRects();
    // A boxed label (an opaque ground drawn over the plot) hides what runs behind it: it is
    // not struck through. labelRects() lists the visible text items in item order.
    QVector<bool> boxed;
    for (int i = 0; i < plot.itemCount(); ++i)
        if (auto* t = qobject_cast<QCPItemText*>(plot.item(i)); t && t->visible())
            boxed.append(t->brush().style() != Qt::NoBrush && t->brush().color().alpha() == 255);
    QCOMPARE(boxed.size(), labels.size());
    const auto lines = plot.lineSegments();
    QVERIFY(!lines.isEmpty());
    for (int i = 0; i < labels.size(); ++i) {
        QVERIFY2(
            area.adjusted(-2, -2, 2, 2).contains(labels[i]),
            qPrintable(where +
                       QStringLiteral(": label at %1 runs off the plot").arg(rectText(labels[i]))));
        const QRectF inner =
            labels[i].adjusted(labelOverlap, labelOverlap, -labelOverlap, -labelOverlap);
        for (int j = i + 1; j < labels.size(); ++j)
            QVERIFY2(!inner.intersects(labels[j]),
                     qPrintable(where + QStringLiteral(": labels touch (%1 and %2)")
                                            .arg(rectText(labels[i]), rectText(labels[j]))));
        for (const QPointF& pt : points)
            QVERIFY2(!labels[i].adjusted(2, 2, -2, -2).contains(pt),
                     qPrintable(where + QStringLiteral(": label at %1 covers %2,%3")
                                            .arg(rectText(labels[i]))
                                            .arg(pt.x())
                                            .arg(pt.y())));
        const QRectF near = labels[i].adjusted(-3, -3, 3, 3);
        for (const QLineF& l : boxed[i] ? QVector<QLineF>{} : lines) {
            if (near.contains(l.p1()))
                continue; // an arrow leaving this label
            QVERIFY2(!ui::PlotWidget::crosses(l, labels[i].adjusted(1, 1, -1, -1)),
                     qPrintable(where + QStringLiteral(": label at %1 crosses the line "
                                                       "%2,%3 - %4,%5")
                                            .arg(rectText(labels[i]))
                                            .arg(l.x1())
                                            .arg(l.y1())
                                            .arg(l.x2())
                                            .arg(l.y2())));
        }
    }
}

/// The roofline, capacity, intensity and decode-step plots of `w` (the step plot's tab is
/// brought to the front and laid out at its docked size, then put back).
inline void verifyPlotLabelsClear(ui::MainWindow& w, double labelOverlap) {
    for (const char* name : {"roofline", "capacity", "intensity"}) {
        auto* plot = qobject_cast<ui::PlotWidget*>(w.viewWidget(QLatin1String(name)));
        QVERIFY(plot);
        verifyLabelsClear(*plot, QLatin1String(name), labelOverlap);
        if (QTest::currentTestFailed())
            return;
    }
    auto* step = qobject_cast<ui::PlotWidget*>(w.viewWidget(QStringLiteral("step")));
    QVERIFY(step);
    auto* stepDock = w.findChild<QDockWidget*>(QStringLiteral("stepDock"));
    auto* intensityDock = w.findChild<QDockWidget*>(QStringLiteral("intensityDock"));
    QVERIFY(stepDock && intensityDock);
    stepDock->raise();
    QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
    QCoreApplication::processEvents();
    w.renderNow();
    verifyLabelsClear(*step, QStringLiteral("step"), labelOverlap);
    intensityDock->raise();
    QCoreApplication::processEvents();
}

} // namespace kvscope::test
