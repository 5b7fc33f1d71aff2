#include "ui/plotwidget.h"

#include "ui/theme.h"

#include <QHash>
#include <QTransform>
#include <algorithm>
#include <cmath>

#if KVSCOPE_HAVE_SVG
#include <QSvgGenerator>
#endif

namespace kvscope::ui {

PlotWidget::PlotWidget(QWidget* parent) : QCustomPlot(parent) {
    setNoAntialiasingOnDrag(false);
    setAntialiasedElements(QCP::aeAll);
    setPlottingHint(QCP::phCacheLabels, true);
    // QCustomPlot repaints synchronously after each replot by default: three plots meant three
    // flushes of the window per slider step. update() folds them into the one paint pass.
    setPlottingHint(QCP::phImmediateRefresh, false);
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
    connect(this, &QCustomPlot::afterLayout, this, &PlotWidget::placeFloating);
    connect(this, &QCustomPlot::beforeReplot, this, &PlotWidget::adoptLegendItems);
}

QCPGraph* PlotWidget::addGraph(QCPAxis* keyAxis, QCPAxis* valueAxis) {
    if (!keyAxis)
        keyAxis = xAxis;
    if (!valueAxis)
        valueAxis = yAxis;
    auto* g = new MarkerGraph(keyAxis, valueAxis);
    g->setName(QLatin1String("Graph ") + QString::number(graphCount() - 1));
    return g;
}

QSizeF PlotWidget::textBoxSize(const QCPItemText* t) {
    // QCPItemText lays its text out again for every anchor asked; placing floating labels asks
    // for every label's box at every layout. A label's box depends on its font, alignment and
    // text only, so it is measured once (the same call QCPItemText::anchorPixelPosition makes).
    static QHash<QString, QSize> sizes;
    const QFont& font = t->selected() ? t->selectedFont() : t->font();
    const QString key = font.key() + QLatin1Char('|') + QString::number(int(t->textAlignment())) +
                        QLatin1Char('|') + t->text();
    auto hit = sizes.constFind(key);
    if (hit == sizes.constEnd()) {
        if (sizes.size() > 4096)
            sizes.clear();
        hit = sizes.insert(
            key, QFontMetrics(font)
                     .boundingRect(0, 0, 0, 0, Qt::TextDontClip | t->textAlignment(), t->text())
                     .size());
    }
    const QMargins pad = t->padding();
    return QSizeF(hit->width() + pad.left() + pad.right(),
                  hit->height() + pad.top() + pad.bottom());
}

QRectF PlotWidget::itemRect(const QCPItemText* t) {
    // The box QCPItemText's anchors describe: aligned on its position, then rotated about it.
    const QSizeF box = textBoxSize(t);
    const Qt::Alignment a = t->positionAlignment();
    QPointF tl(0, 0);
    if (a & Qt::AlignHCenter)
        tl.rx() -= box.width() / 2.0;
    else if (a & Qt::AlignRight)
        tl.rx() -= box.width();
    if (a & Qt::AlignVCenter)
        tl.ry() -= box.height() / 2.0;
    else if (a & Qt::AlignBottom)
        tl.ry() -= box.height();
    const QPointF pos = t->position->pixelPosition();
    QTransform tr;
    tr.translate(pos.x(), pos.y());
    if (!qFuzzyIsNull(t->rotation()))
        tr.rotate(t->rotation());
    return tr.map(QPolygonF(QRectF(tl, box))).boundingRect();
}

QVector<QRectF> PlotWidget::labelRects() const {
    QVector<QRectF> out;
    for (int i = 0; i < itemCount(); ++i)
        if (auto* t = qobject_cast<QCPItemText*>(item(i)); t && t->visible())
            out.append(itemRect(t));
    return out;
}

QVector<QPointF> PlotWidget::pointPixels() const {
    QVector<QPointF> out;
    for (int i = 0; i < graphCount(); ++i) {
        QCPGraph* g = graph(i);
        if (g->scatterStyle().isNone() || !g->visible())
            continue;
        for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it)
            out.append(
                {g->keyAxis()->coordToPixel(it->key), g->valueAxis()->coordToPixel(it->value)});
    }
    return out;
}

QVector<QLineF> PlotWidget::lineSegments() const {
    QVector<QLineF> out;
    const QRectF ar = axisRect()->rect();
    for (int i = 0; i < itemCount(); ++i) {
        if (!item(i)->visible())
            continue;
        if (auto* l = qobject_cast<QCPItemLine*>(item(i))) {
            out.append(QLineF(l->start->pixelPosition(), l->end->pixelPosition()));
        } else if (auto* s = qobject_cast<QCPItemStraightLine*>(item(i))) {
            // Infinite: extended far past the axis rect (every plot clips it there).
            const QPointF a = s->point1->pixelPosition(), b = s->point2->pixelPosition();
            const QPointF d = b - a;
            const double len = std::hypot(d.x(), d.y());
            if (len <= 0)
                continue;
            const double reach = (ar.width() + ar.height()) * 2 / len;
            out.append(QLineF(a - d * reach, a + d * reach));
        }
    }
    for (int i = 0; i < graphCount(); ++i) {
        QCPGraph* g = graph(i);
        if (!g->visible() || g->lineStyle() == QCPGraph::lsNone || g->pen().style() == Qt::NoPen)
            continue;
        QPointF prev;
        bool first = true;
        for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) {
            const QPointF p(g->keyAxis()->coordToPixel(it->key),
                            g->valueAxis()->coordToPixel(it->value));
            if (!first)
                out.append(QLineF(prev, p));
            prev = p;
            first = false;
        }
    }
    return out;
}

bool PlotWidget::crosses(const QLineF& segment, const QRectF& box) {
    // Liang-Barsky: clip the segment to the box shrunk by a pixel; anything left crosses.
    const QRectF r = box.adjusted(1, 1, -1, -1);
    if (r.isEmpty())
        return false;
    const QPointF p = segment.p1(), d = segment.p2() - segment.p1();
    double t0 = 0, t1 = 1;
    const double pq[4][2] = {{-d.x(), p.x() - r.left()},
                             {d.x(), r.right() - p.x()},
                             {-d.y(), p.y() - r.top()},
                             {d.y(), r.bottom() - p.y()}};
    for (const auto& [dp, q] : pq) {
        if (dp == 0) {
            if (q < 0)
                return false;
            continue;
        }
        const double t = q / dp;
        if (dp < 0)
            t0 = std::max(t0, t);
        else
            t1 = std::min(t1, t);
        if (t0 > t1)
            return false;
    }
    return true;
}

std::vector<PlotWidget::Spot> PlotWidget::besideLine(double x, double gap,
                                                     std::initializer_list<Height> heights) {
    std::vector<Spot> spots;
    spots.reserve(2 * heights.size());
    for (const Height& h : heights) {
        spots.push_back({x * gap, h.y, Qt::AlignLeft | h.vertical});
        spots.push_back({x / gap, h.y, Qt::AlignRight | h.vertical});
    }
    return spots;
}

void PlotWidget::addWarningBand(double x0, double y0, double y1) {
    const bool dk = dark();
    QColor shade = warningColor(dk);
    shade.setAlpha(dk ? 38 : 28);
    auto* r = new QCPItemRect(this);
    r->topLeft->setType(QCPItemPosition::ptPlotCoords);
    r->bottomRight->setType(QCPItemPosition::ptPlotCoords);
    r->topLeft->setCoords(x0, y1);
    r->bottomRight->setCoords(xAxis->range().upper, y0);
    r->setPen(Qt::NoPen);
    r->setBrush(shade);
    r->setLayer(QStringLiteral("grid"));
}

void PlotWidget::addFloating(QCPItemText* label, std::vector<Spot> spots) {
    if (label && !spots.empty())
        floating_.push_back({label, std::move(spots)});
}

void PlotWidget::placeFloating() {
    floating_.erase(std::remove_if(floating_.begin(), floating_.end(),
                                   [](const auto& f) { return f.first.isNull(); }),
                    floating_.end());
    if (floating_.empty())
        return;
    const QRectF ar = axisRect()->rect();
    const QVector<QPointF> points = pointPixels();
    // Marker lines (the current TP, the crossover, the ridge) and the curves: a label across
    // one reads as struck through.
    const QVector<QLineF> lines = lineSegments();
    QVector<QRectF> taken;
    for (int i = 0; i < itemCount(); ++i) {
        auto* t = qobject_cast<QCPItemText*>(item(i));
        if (!t || !t->visible() ||
            std::any_of(floating_.begin(), floating_.end(),
                        [t](const auto& f) { return f.first == t; }))
            continue;
        taken.append(itemRect(t));
    }
    for (auto& [label, spots] : floating_) {
        const QSizeF box = textBoxSize(label);
        const Spot* best = &spots.front();
        int bestCost = -1;
        for (const Spot& s : spots) {
            const QPointF a(xAxis->coordToPixel(s.x), yAxis->coordToPixel(s.y));
            QRectF r;
            if (label->rotation() == -90) {
                // Vertical text, read bottom to top: AlignLeft rises from the anchor,
                // AlignRight hangs below it.
                const double up = s.align & Qt::AlignRight ? 0 : box.width();
                r = QRectF(a.x() - box.height() / 2, a.y() - up, box.height(), box.width());
            } else {
                const double x = s.align & Qt::AlignRight     ? a.x() - box.width()
                                 : s.align & Qt::AlignHCenter ? a.x() - box.width() / 2
                                                              : a.x();
                const double y = s.align & Qt::AlignBottom    ? a.y() - box.height()
                                 : s.align & Qt::AlignVCenter ? a.y() - box.height() / 2
                                                              : a.y();
                r = QRectF(QPointF(x, y), box);
            }
            int cost = ar.contains(r) ? 0 : 1000; // clipped text is worse than a covered point
            for (const QPointF& pt : points)
                cost += r.adjusted(-7, -7, 7, 7).contains(pt) ? 10 : 0;
            // Labels keep a few pixels apart: two boxes that touch read as one.
            for (const QRectF& l : taken)
                cost += r.adjusted(-4, -4, 4, 4).intersects(l) ? 3 : 0;
            // Crossing a line is the mildest fault: better than touching a label.
            for (const QLineF& l : lines)
                cost += crosses(l, r) ? 1 : 0;
            if (bestCost < 0 || cost < bestCost) {
                bestCost = cost;
                best = &s;
            }
            if (cost == 0)
                break;
        }
        label->position->setCoords(best->x, best->y);
        label->setPositionAlignment(best->align);
        taken.append(itemRect(label));
    }
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
    auto* t = new SpriteText(this);
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
