// What the GUI tests share: the real window with the features installed, shown offscreen, its
// first refresh done. (tests/testutils.h has the fixture folders and the preset loaders.)
#pragma once

#include "ui/features.h"
#include "ui/mainwindow.h"
#include "ui/plotwidget.h"

#include <QRectF>
#include <QString>
#include <QtTest/QtTest>
#include <memory>

namespace kvscope::test {

/// A window that neither reads nor writes QSettings and does not animate, at 1600 x 1000.
inline std::unique_ptr<ui::MainWindow> makeWindow() {
    auto w = std::make_unique<ui::MainWindow>(ui::MainWindow::Options{false, false});
    w->resize(1600, 1000);
    ui::installFeatures(*w, ui::FeatureOptions{});
    w->show();
    w->flushRefresh();
    return w;
}

inline QString rectText(const QRectF& r) {
    return QStringLiteral("%1,%2 %3x%4").arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height());
}

/// The roofline, capacity and intensity plots of `w` as a talk sees them: every label inside its
/// plot, off every point, and two labels overlapping by no more than `labelOverlap` px (0: not
/// even touching).
inline void verifyPlotLabelsClear(ui::MainWindow& w, double labelOverlap) {
    for (const char* name : {"roofline", "capacity", "intensity"}) {
        auto* plot = qobject_cast<ui::PlotWidget*>(w.viewWidget(QLatin1String(name)));
        QVERIFY(plot);
        const QRectF area = plot->axisRect()->rect();
        const auto points = plot->pointPixels();
        QVERIFY(!points.isEmpty());
        const auto labels = plot->labelRects();
        const QString where = QLatin1String(name);
        for (int i = 0; i < labels.size(); ++i) {
            QVERIFY2(area.adjusted(-2, -2, 2, 2).contains(labels[i]),
                     qPrintable(where + QStringLiteral(": label at %1 runs off the plot")
                                            .arg(rectText(labels[i]))));
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
        }
    }
}

} // namespace kvscope::test
