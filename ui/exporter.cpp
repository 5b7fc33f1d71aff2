#include "ui/exporter.h"

#include "ui/kvstripsview.h"
#include "ui/plotwidget.h"

#include <QFileInfo>
#include <QImage>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QPixmap>
#include <QWidget>

#if KVSCOPE_HAVE_SVG
#include <QSvgGenerator>
#endif

namespace kvscope::ui {

namespace {
// Paints the widget: the strips draw themselves as vectors; others render their widget tree.
void paintWidget(QWidget* w, QPainter& p, const QSize& size) {
    if (auto* strips = qobject_cast<KvStripsView*>(w))
        strips->paintTo(p, size);
    else
        w->render(&p, QPoint(), QRegion(), QWidget::DrawChildren | QWidget::DrawWindowBackground);
}
} // namespace

QString exportFilter() {
#if KVSCOPE_HAVE_SVG
    return QObject::tr("PNG image (*.png);;SVG vector image (*.svg);;PDF document (*.pdf)");
#else
    return QObject::tr("PNG image (*.png);;PDF document (*.pdf)");
#endif
}

bool exportWidget(QWidget* w, const QString& path, QString* error) {
    auto fail = [error](const QString& why) {
        if (error)
            *error = why;
        return false;
    };
    if (!w)
        return fail(QObject::tr("nothing to export"));
    const QString suffix = QFileInfo(path).suffix().toLower();
    const QSize size = w->size();
    if (auto* plot = qobject_cast<PlotWidget*>(w)) {
        if (suffix == QLatin1String("svg") && !KVSCOPE_HAVE_SVG)
            return fail(QObject::tr("this build has no SVG support (Qt Svg missing)"));
        if (!plot->exportTo(path))
            return fail(QObject::tr("could not write %1").arg(path));
        return true;
    }
    if (suffix == QLatin1String("pdf")) {
        QPdfWriter pdf(path);
        pdf.setResolution(96);
        pdf.setPageSize(
            QPageSize(QSizeF(size.width() * 0.75, size.height() * 0.75), QPageSize::Point));
        pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
        QPainter p;
        if (!p.begin(&pdf))
            return fail(QObject::tr("could not write %1").arg(path));
        paintWidget(w, p, size);
        p.end();
        return true;
    }
    if (suffix == QLatin1String("svg")) {
#if KVSCOPE_HAVE_SVG
        QSvgGenerator gen;
        gen.setFileName(path);
        gen.setSize(size);
        gen.setViewBox(QRect(QPoint(0, 0), size));
        gen.setTitle(QStringLiteral("kvscope"));
        QPainter p;
        if (!p.begin(&gen))
            return fail(QObject::tr("could not write %1").arg(path));
        paintWidget(w, p, size);
        p.end();
        return true;
#else
        return fail(QObject::tr("this build has no SVG support (Qt Svg missing)"));
#endif
    }
    if (suffix != QLatin1String("png") && suffix != QLatin1String("jpg"))
        return fail(
            QObject::tr("unknown export format '.%1' (use .png, .svg or .pdf)").arg(suffix));
    const QPixmap pm = w->grab();
    if (pm.isNull() || !pm.save(path))
        return fail(QObject::tr("could not write %1").arg(path));
    return true;
}

} // namespace kvscope::ui
