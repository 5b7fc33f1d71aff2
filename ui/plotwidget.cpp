#include "ui/plotwidget.h"

#include "ui/theme.h"

#if KVSCOPE_HAVE_SVG
#include <QSvgGenerator>
#endif

namespace kvscope::ui {

PlotWidget::PlotWidget(QWidget* parent) : QCustomPlot(parent) {
    setNoAntialiasingOnDrag(false);
    setAntialiasedElements(QCP::aeAll);
    setPlottingHint(QCP::phCacheLabels, true);
    setMinimumSize(320, 220);
    // Legend in its own row under the axis rect: it can never cover a point.
    bottomLegend_ = legend;
    bottomLegend_->setVisible(true);
    auto* sub = new QCPLayoutGrid;
    plotLayout()->addElement(1, 0, sub);
    plotLayout()->setRowStretchFactor(1, 0.001);
    axisRect()->insetLayout()->take(bottomLegend_);
    sub->addElement(0, 0, bottomLegend_);
    bottomLegend_->setFillOrder(QCPLegend::foColumnsFirst);
    bottomLegend_->setWrap(4);
    bottomLegend_->setBorderPen(Qt::NoPen);
    bottomLegend_->setBrush(Qt::NoBrush);
    sub->setMargins(QMargins(0, 0, 0, 4));
}

void PlotWidget::setDragging(bool dragging) {
    setAntialiasedElements(dragging ? QCP::aeNone : QCP::aeAll);
    if (!dragging)
        requestReplot();
}

bool PlotWidget::dark() const {
    return isDark(this);
}
QColor PlotWidget::textColor() const {
    return palette().color(QPalette::WindowText);
}
QColor PlotWidget::mutedColor() const {
    return mutedText(this);
}
QColor PlotWidget::gridColor() const {
    QColor c = palette().color(QPalette::WindowText);
    c.setAlpha(dark() ? 40 : 30);
    return c;
}

QFont PlotWidget::labelFont(double factor, bool bold) const {
    return scaledFont(font(), factor, bold);
}

void PlotWidget::styleAxes() {
    setBackground(palette().color(QPalette::Base));
    axisRect()->setBackground(palette().color(QPalette::Base));
    for (QCPAxis* a : {xAxis, yAxis, xAxis2, yAxis2}) {
        a->setBasePen(QPen(mutedColor(), 1));
        a->setTickPen(QPen(mutedColor(), 1));
        a->setSubTickPen(QPen(mutedColor(), 1));
        a->setTickLabelColor(textColor());
        a->setLabelColor(textColor());
        a->setTickLabelFont(labelFont(1.0));
        a->setLabelFont(labelFont(1.1, true));
        a->grid()->setPen(QPen(gridColor(), 1, Qt::SolidLine));
        QColor sub = gridColor();
        sub.setAlpha(sub.alpha() / 2);
        a->grid()->setSubGridPen(QPen(sub, 1, Qt::DotLine));
        a->grid()->setZeroLinePen(Qt::NoPen);
    }
    xAxis->grid()->setSubGridVisible(false);
    yAxis->grid()->setSubGridVisible(false);
    legend->setFont(labelFont(1.0));
    legend->setTextColor(textColor());
}

QCPItemText* PlotWidget::addLabel(double x, double y, const QString& text, Qt::Alignment align,
                                  const QColor& color, double fontFactor, bool bold) {
    auto* t = new QCPItemText(this);
    t->position->setType(QCPItemPosition::ptPlotCoords);
    t->position->setCoords(x, y);
    t->setPositionAlignment(align);
    t->setText(text);
    t->setColor(color);
    t->setFont(labelFont(fontFactor, bold));
    t->setClipToAxisRect(true);
    return t;
}

void PlotWidget::changeEvent(QEvent* e) {
    QCustomPlot::changeEvent(e);
    if (e->type() == QEvent::PaletteChange || e->type() == QEvent::FontChange) {
        rebuild();
        requestReplot();
    }
}

bool PlotWidget::exportTo(const QString& path, int width, int height) {
    const QString lower = path.toLower();
    const int w = width > 0 ? width : this->width();
    const int h = height > 0 ? height : this->height();
    if (lower.endsWith(QLatin1String(".pdf")))
        return savePdf(path, w, h);
#if KVSCOPE_HAVE_SVG
    if (lower.endsWith(QLatin1String(".svg"))) {
        QSvgGenerator gen;
        gen.setFileName(path);
        gen.setSize(QSize(w, h));
        gen.setViewBox(QRect(0, 0, w, h));
        gen.setTitle(QStringLiteral("kvscope"));
        QCPPainter painter;
        if (!painter.begin(&gen))
            return false;
        toPainter(&painter, w, h);
        return painter.end();
    }
#endif
    return savePng(path, w, h, 2.0);
}

} // namespace kvscope::ui
