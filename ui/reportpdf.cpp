#include "ui/reportpdf.h"

#include "core/features/report_fields.h"
#include "ui/compare.h"
#include "ui/mainwindow.h"
#include "ui/qstrings.h"

#include <QDateTime>
#include <QFile>
#include <QPageLayout>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>

namespace kvscope::ui {

namespace {
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
/// The number pages: the field list's rows in three columns, a heading per section.
void paintNumbers(QPdfWriter& pdf, QPainter& p, const QRectF& page, QFont font,
                  const std::vector<PdfRow>& rows) {
    const double unit = page.height() / 100.0;
    const int columns = 3;
    const double gap = unit * 2;
    const double colW = (page.width() - gap * (columns - 1)) / columns;
    const double rowH = unit * 2.05;
    font.setPixelSize(static_cast<int>(unit * 1.45));
    QFont bold = font;
    bold.setBold(true);
    const int perColumn = static_cast<int>(page.height() / rowH);
    int slot = perColumn * columns; // starts a page on the first row
    for (const PdfRow& row : rows) {
        if (slot >= perColumn * columns) {
            pdf.newPage();
            slot = 0;
        }
        const double x = (slot / perColumn) * (colW + gap);
        const double y = (slot % perColumn) * rowH;
        const QRectF cell(x, y, colW, rowH);
        p.setPen(Qt::black);
        if (row.heading) {
            p.setFont(bold);
            p.drawText(cell, Qt::AlignLeft | Qt::AlignBottom, row.label.toUpper());
        } else {
            if (slot % 2 == 0)
                p.fillRect(cell, QColor(242, 242, 242));
            p.setFont(font);
            p.drawText(cell.adjusted(unit * 0.4, 0, -colW * 0.34, 0),
                       Qt::AlignLeft | Qt::AlignVCenter,
                       QFontMetrics(font).elidedText(row.label, Qt::ElideRight,
                                                     static_cast<int>(colW * 0.64)));
            p.drawText(cell.adjusted(colW * 0.64, 0, -unit * 0.4, 0),
                       Qt::AlignRight | Qt::AlignVCenter, row.value);
        }
        ++slot;
    }
}

} // namespace

std::vector<PdfRow> reportPdfRows(const ModelSpec& m, const GpuSpec& gpu, const Report& r) {
    std::vector<PdfRow> out;
    std::string section;
    for (const ReportField& f : reportFields(r, &m, &gpu)) {
        if (f.section != section) {
            section = f.section;
            out.push_back({q(section), QString(), QString(), true});
        }
        out.push_back({q(f.label), q(formatFieldHuman(f)), q(f.key), false});
    }
    return out;
}

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

    // Page 1: strips above, roofline and capacity below.
    const double top = unit * 9;
    const double h = page.height() - top;
    paintView(p, w.viewWidget(QStringLiteral("strips")), QRectF(0, top, page.width(), h * 0.45));
    const double plotTop = top + h * 0.48;
    paintView(p, w.viewWidget(QStringLiteral("roofline")),
              QRectF(0, plotTop, page.width() / 2 - unit, h * 0.52));
    paintView(p, w.viewWidget(QStringLiteral("capacity")),
              QRectF(page.width() / 2 + unit, plotTop, page.width() / 2 - unit, h * 0.52));
    paintNumbers(pdf, p, page, small, reportPdfRows(w.state().model, w.state().gpu, w.report()));
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
