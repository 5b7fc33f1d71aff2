#include "ui/reportpdf.h"

#include "core/features/export.h"
#include "ui/compare.h"
#include "ui/mainwindow.h"

#include <QDateTime>
#include <QFile>
#include <QPageLayout>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>

namespace kvscope::ui {

namespace {
QString q(const std::string& s) {
    return QString::fromStdString(s);
}

/// Paints a view into `target`, keeping its aspect (QWidget::render keeps text and lines as
/// vectors on a PDF device).
void paintView(QPainter& p, QWidget* view, const QRectF& target) {
    if (!view || view->width() <= 0 || view->height() <= 0)
        return;
    const double s = std::min(target.width() / view->width(), target.height() / view->height());
    const QSizeF size(view->width() * s, view->height() * s);
    const QPointF at(target.left() + (target.width() - size.width()) / 2, target.top());
    p.save();
    p.translate(at);
    p.scale(s, s);
    view->render(&p, QPoint(), QRegion(), QWidget::DrawChildren);
    p.restore();
    p.setPen(QPen(Qt::lightGray, 0));
    p.drawRect(QRectF(at, size));
}
} // namespace

bool writeReportPdf(MainWindow& w, const QString& path, QString* error) {
    w.renderNow();
    QPdfWriter pdf(path);
    pdf.setCreator(QStringLiteral("kvscope"));
    pdf.setTitle(QStringLiteral("kvscope report"));
    pdf.setResolution(150);
    pdf.setPageLayout(QPageLayout(QPageSize(QPageSize::A4), QPageLayout::Landscape,
                                  QMarginsF(12, 12, 12, 12), QPageLayout::Millimeter));
    QPainter p;
    if (!p.begin(&pdf)) {
        if (error)
            *error = QStringLiteral("could not write %1").arg(path);
        return false;
    }
    const QRectF page(QPointF(0, 0), QSizeF(pdf.width(), pdf.height()));
    const double unit = page.height() / 100.0;
    QFont title = w.font();
    title.setPixelSize(static_cast<int>(unit * 3.6));
    title.setBold(true);
    QFont body = w.font();
    body.setPixelSize(static_cast<int>(unit * 1.9));
    QFont small = body;
    small.setPixelSize(static_cast<int>(unit * 1.55));

    p.setFont(title);
    p.setPen(Qt::black);
    p.drawText(QRectF(0, 0, page.width(), unit * 5), Qt::AlignLeft | Qt::AlignVCenter,
               stateTitle(w.state()));
    p.setFont(small);
    p.setPen(Qt::darkGray);
    p.drawText(QRectF(0, unit * 5, page.width(), unit * 3), Qt::AlignLeft | Qt::AlignVCenter,
               QStringLiteral("%1 · kvscope · %2")
                   .arg(q(w.report().variant), QDateTime::currentDateTime().toString(Qt::ISODate)));

    // Left 62 %: strips above, roofline and capacity below. Right: the numbers.
    const double top = unit * 9;
    const double leftW = page.width() * 0.62;
    const double h = page.height() - top;
    paintView(p, w.viewWidget(QStringLiteral("strips")), QRectF(0, top, leftW, h * 0.42));
    const double plotTop = top + h * 0.45;
    paintView(p, w.viewWidget(QStringLiteral("roofline")),
              QRectF(0, plotTop, leftW / 2 - unit, h * 0.55));
    paintView(p, w.viewWidget(QStringLiteral("capacity")),
              QRectF(leftW / 2 + unit, plotTop, leftW / 2 - unit, h * 0.55));

    const auto numbers = reportNumbers(w.report());
    const double x0 = leftW + unit * 2;
    const double colW = page.width() - x0;
    const double rowH = std::min(unit * 2.6, h / std::max<double>(1, numbers.size()));
    QFont cell = small;
    cell.setPixelSize(static_cast<int>(std::min(unit * 1.55, rowH * 0.72)));
    p.setFont(cell);
    double y = top;
    int row = 0;
    for (const ReportNumber& n : numbers) {
        if (row++ % 2 == 0)
            p.fillRect(QRectF(x0, y, colW, rowH), QColor(242, 242, 242));
        p.setPen(Qt::black);
        p.drawText(QRectF(x0 + unit * 0.5, y, colW * 0.6, rowH), Qt::AlignLeft | Qt::AlignVCenter,
                   q(n.label));
        p.drawText(QRectF(x0 + colW * 0.6, y, colW * 0.4 - unit * 0.5, rowH),
                   Qt::AlignRight | Qt::AlignVCenter, q(formatNumberHuman(n)));
        y += rowH;
    }
    p.end();
    QFile f(path);
    if (!f.exists() || f.size() == 0) {
        if (error)
            *error = QStringLiteral("could not write %1").arg(path);
        return false;
    }
    return true;
}

} // namespace kvscope::ui
