#include "ui/plotwidget.h"

#include "ui/textsprite.h"
#include "ui/theme.h"

#include <QHash>
#include <QTransform>
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <unordered_map>
#include <vector>

#if KVSCOPE_HAVE_SVG
#include <QSvgGenerator>
#endif

namespace kvscope::ui {

namespace {

bool vectorOrUncached(const QCPPainter* painter) {
    return painter->modes() & (QCPPainter::pmVectorized | QCPPainter::pmNoCaching);
}

/// Everything a legend icon's pixels depend on, or nothing for a plottable whose icon is not
/// known here (drawn directly then).
std::vector<double> legendIconKey(const QCPAbstractPlottable* p, const QCPLegend* legend,
                                  const QCustomPlot* plot) {
    auto penKey = [](std::vector<double>& k, const QPen& pen) {
        k.insert(k.end(), {double(pen.style()), pen.widthF(), double(pen.color().rgba()),
                           double(pen.capStyle()), double(pen.joinStyle())});
    };
    auto brushKey = [](std::vector<double>& k, const QBrush& b) {
        k.insert(k.end(), {double(b.style()), double(b.color().rgba())});
    };
    std::vector<double> k{double(plot->antialiasedElements()),
                          double(plot->notAntialiasedElements()),
                          double(legend->iconSize().width()),
                          double(legend->iconSize().height()),
                          double(p->antialiased()),
                          double(p->antialiasedFill()),
                          double(p->antialiasedScatters())};
    penKey(k, legend->iconBorderPen());
    penKey(k, p->pen());
    brushKey(k, p->brush());
    if (const auto* g = qobject_cast<const QCPGraph*>(p)) {
        const QCPScatterStyle& s = g->scatterStyle();
        if (s.shape() == QCPScatterStyle::ssPixmap || s.shape() == QCPScatterStyle::ssCustom)
            return {};
        k.insert(k.end(), {1, double(g->lineStyle()), double(s.shape()), s.size(),
                           double(s.isPenDefined())});
        penKey(k, s.pen());
        brushKey(k, s.brush());
    } else if (qobject_cast<const QCPBars*>(p)) {
        k.push_back(2);
    } else {
        return {};
    }
    return k;
}

/// Paints `paint` (QCustomPlot drawing in `painter`'s coordinates, inside `bounds`) from a
/// pixmap rendered once per `key` and sub-pixel phase (1/64 px) with the same antialiasing,
/// stamped at a whole pixel.
void stamp(QCPPainter* painter, const QRect& bounds, std::vector<double> key,
           const std::function<void(QCPPainter*)>& paint) {
    const QTransform t = painter->transform();
    const double dpr = painter->device() ? painter->device()->devicePixelRatioF() : 1.0;
    if (t.type() > QTransform::TxTranslate || dpr != 1.0) {
        paint(painter);
        return;
    }
    const QPointF whole(std::floor(t.dx()), std::floor(t.dy()));
    const int px = static_cast<int>(std::lround((t.dx() - whole.x()) * 64));
    const int py = static_cast<int>(std::lround((t.dy() - whole.y()) * 64));
    const bool aa = painter->antialiasing();
    key.insert(key.end(), {double(px), double(py), double(aa), double(bounds.width()),
                           double(bounds.height())});
    struct KeyHash {
        size_t operator()(const std::vector<double>& k) const noexcept {
            return qHashRange(k.begin(), k.end());
        }
    };
    static std::unordered_map<std::vector<double>, QPixmap, KeyHash> sprites;
    auto hit = sprites.find(key);
    if (hit == sprites.end()) {
        if (sprites.size() > 256)
            sprites.clear();
        QPixmap pm(bounds.size());
        pm.fill(Qt::transparent);
        QCPPainter sp(&pm);
        sp.setAntialiasing(aa);
        // The target's state: its antialiasing flag, and its transform but for whole pixels.
        sp.setTransform(
            QTransform::fromTranslate(px / 64.0 - bounds.left(), py / 64.0 - bounds.top()));
        paint(&sp);
        sp.end();
        hit = sprites.emplace(std::move(key), pm).first;
    }
    painter->setTransform(
        QTransform::fromTranslate(whole.x() + bounds.left(), whole.y() + bounds.top()));
    painter->drawPixmap(QPointF(0, 0), hit->second);
    painter->setTransform(t);
}

/// A legend entry whose text is measured and drawn from the caches; the icon is drawn as
/// QCPPlottableLegendItem draws it.
class SpriteLegendItem : public QCPPlottableLegendItem {
public:
    using QCPPlottableLegendItem::QCPPlottableLegendItem;

protected:
    void draw(QCPPainter* painter) override {
        if (!mPlottable)
            return;
        if (vectorOrUncached(painter)) {
            QCPPlottableLegendItem::draw(painter);
            return;
        }
        const QFont font = getFont();
        const QColor color = getTextColor();
        const QString name = mPlottable->name();
        const QSize iconSize = mParentLegend->iconSize();
        const QRect tr = cachedTextRect(font, painter->device(), QRect(0, 0, 0, iconSize.height()),
                                        Qt::TextDontClip, name);
        const int textHeight = qMax(tr.height(), iconSize.height());
        const QRect at(mRect.x() + iconSize.width() + mParentLegend->iconTextPadding(), mRect.y(),
                       tr.width(), textHeight);
        painter->setFont(font);
        painter->setPen(QPen(color));
        drawCachedText(*painter, at, Qt::TextDontClip, name);
        // The icon and its border as QCPPlottableLegendItem draws them (the plottable's
        // drawLegendIcon is for that class only), its own text left out, from a sprite.
        auto drawIcon = [&](QCPPainter* p) {
            mPlottable->setName(QString());
            QCPPlottableLegendItem::draw(p);
            mPlottable->setName(name);
        };
        const std::vector<double> key = legendIconKey(mPlottable, mParentLegend, mParentPlot);
        if (key.empty()) {
            drawIcon(painter);
            return;
        }
        stamp(painter, QRect(mRect.topLeft(), iconSize).adjusted(-4, -4, 4, 4), key, drawIcon);
    }
    QSize minimumOuterSizeHint() const override {
        if (!mPlottable)
            return {};
        const QSize iconSize = mParentLegend->iconSize();
        const QRect tr = cachedTextRect(getFont(), nullptr, QRect(0, 0, 0, iconSize.height()),
                                        Qt::TextDontClip, mPlottable->name());
        return QSize(iconSize.width() + mParentLegend->iconTextPadding() + tr.width() +
                         mMargins.left() + mMargins.right(),
                     qMax(tr.height(), iconSize.height()) + mMargins.top() + mMargins.bottom());
    }
};

} // namespace

void SpriteText::draw(QCPPainter* painter) {
    // Brushes here are solid colours (a label's backdrop); any other one is drawn directly.
    if (vectorOrUncached(painter) ||
        (mainBrush().style() != Qt::NoBrush && mainBrush().style() != Qt::SolidPattern)) {
        QCPItemText::draw(painter);
        return;
    }
    // QCPItemText::draw, with the text laid out once per text rather than at each replot.
    const QPointF pos(position->pixelPosition());
    QTransform transform = painter->transform();
    transform.translate(pos.x(), pos.y());
    if (!qFuzzyIsNull(mRotation))
        transform.rotate(mRotation);
    const QFont font = mainFont();
    painter->setFont(font);
    QRect tr =
        cachedTextRect(font, painter->device(), QRect(), Qt::TextDontClip | mTextAlignment, mText);
    QRect boxRect =
        tr.adjusted(-mPadding.left(), -mPadding.top(), mPadding.right(), mPadding.bottom());
    const QPointF textPos = getTextDrawPoint(QPointF(0, 0), boxRect, mPositionAlignment);
    tr.moveTopLeft(textPos.toPoint() + QPoint(mPadding.left(), mPadding.top()));
    boxRect.moveTopLeft(textPos.toPoint());
    const double clipPad = mainPen().widthF();
    const QRect bounding = boxRect.adjusted(-clipPad, -clipPad, clipPad, clipPad);
    if (!transform.mapRect(bounding).intersects(painter->transform().mapRect(clipRect())))
        return;
    painter->setTransform(transform);
    const QPen pen = mainPen();
    const QBrush brush = mainBrush();
    const bool box = (brush.style() != Qt::NoBrush && brush.color().alpha() != 0) ||
                     (pen.style() != Qt::NoPen && pen.color().alpha() != 0);
    if (box)
        applyDefaultAntialiasingHint(painter);
    TextLook look;
    look.font = font;
    look.text = mText;
    look.rect = tr;
    look.flags = Qt::TextDontClip | mTextAlignment;
    look.color = mainColor();
    if (box) {
        look.box = boxRect;
        look.boxPen = pen;
        look.boxFill = brush.style() == Qt::NoBrush ? QColor(Qt::transparent) : brush.color();
    }
    drawText(*painter, look);
}

void SpriteTitle::draw(QCPPainter* painter) {
    if (vectorOrUncached(painter)) {
        QCPTextElement::draw(painter);
        return;
    }
    const QFont font = mainFont();
    const QColor color = mainTextColor();
    mTextBoundingRect = cachedTextRect(font, painter->device(), mRect, mTextFlags, mText);
    painter->setFont(font);
    painter->setPen(QPen(color));
    drawCachedText(*painter, mRect, mTextFlags, mText);
}

QSize SpriteTitle::minimumOuterSizeHint() const {
    QSize s = cachedTextRect(mFont, nullptr, QRect(), Qt::TextDontClip, mText).size();
    s.rwidth() += mMargins.left() + mMargins.right();
    s.rheight() += mMargins.top() + mMargins.bottom();
    return s;
}

QSize SpriteTitle::maximumOuterSizeHint() const {
    QSize s = cachedTextRect(mFont, nullptr, QRect(), Qt::TextDontClip, mText).size();
    s.setWidth(QWIDGETSIZE_MAX);
    s.rheight() += mMargins.top() + mMargins.bottom();
    return s;
}

void PlotWidget::adoptLegendItems() {
    for (QCPLegend* lg : {legend}) {
        bool plain = false;
        for (int i = 0; i < lg->itemCount() && !plain; ++i)
            plain = lg->item(i) && !dynamic_cast<SpriteLegendItem*>(lg->item(i)) &&
                    qobject_cast<QCPPlottableLegendItem*>(lg->item(i));
        if (!plain)
            continue;
        QList<QCPAbstractPlottable*> order;
        for (int i = 0; i < lg->itemCount(); ++i)
            if (auto* it = qobject_cast<QCPPlottableLegendItem*>(lg->item(i)))
                order.append(it->plottable());
        lg->clearItems();
        for (QCPAbstractPlottable* p : order)
            lg->addItem(new SpriteLegendItem(lg, p));
    }
}

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

void MarkerGraph::drawScatterPlot(QCPPainter* painter, const QVector<QPointF>& scatters,
                                  const QCPScatterStyle& style) const {
    if (painter->modes() & (QCPPainter::pmVectorized | QCPPainter::pmNoCaching) ||
        style.shape() == QCPScatterStyle::ssPixmap || scatters.isEmpty()) {
        QCPGraph::drawScatterPlot(painter, scatters, style);
        return;
    }
    applyScattersAntialiasingHint(painter);
    const bool aa = painter->antialiasing();
    const QPen pen = style.isPenDefined() ? style.pen() : mPen;
    const double dpr = painter->device() ? painter->device()->devicePixelRatioF() : 1.0;
    // Everything the shape's pixels depend on, as numbers (formatting them into a string cost
    // more than the markers). The sprites are shared: a replot makes its graphs anew.
    using Key = std::array<double, 9>;
    struct KeyHash {
        size_t operator()(const Key& k) const noexcept { return qHashRange(k.begin(), k.end()); }
    };
    static std::unordered_map<Key, QPixmap, KeyHash> sprites;
    const Key key{double(style.shape()),
                  style.size(),
                  double(pen.color().rgba()),
                  pen.widthF(),
                  double(pen.style()),
                  style.brush().style() == Qt::NoBrush ? 0.0 : double(style.brush().color().rgba()),
                  double(style.brush().style()),
                  dpr,
                  double(aa)};
    // An odd-sized square sprite centred on a pixel centre, as the shape sits on its point.
    const int half = static_cast<int>(std::ceil(style.size() / 2 + pen.widthF() + 1));
    auto hit = sprites.find(key);
    if (hit == sprites.end()) {
        if (sprites.size() > 256)
            sprites.clear();
        const int side = 2 * half + 1;
        QPixmap pm(QSize(side, side) * dpr);
        pm.setDevicePixelRatio(dpr);
        pm.fill(Qt::transparent);
        QCPPainter pp(&pm);
        pp.setAntialiasing(aa);
        style.applyTo(&pp, mPen);
        style.drawShape(&pp, half + 0.5, half + 0.5);
        pp.end();
        hit = sprites.emplace(key, pm).first;
    }
    const QPixmap& sprite = hit->second;
    for (const QPointF& s : scatters)
        painter->drawPixmap(QPointF(std::floor(s.x()) - half, std::floor(s.y()) - half), sprite);
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
    // Vertical marker lines (the current TP, the crossover, the 10% batch): a label across
    // one reads as struck through.
    QVector<double> lines;
    for (int i = 0; i < itemCount(); ++i)
        if (auto* l = qobject_cast<QCPItemStraightLine*>(item(i));
            l && l->visible() && l->point1->coords().x() == l->point2->coords().x())
            lines.append(l->point1->pixelPosition().x());
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
            for (double x : lines)
                cost += x > r.left() + 1 && x < r.right() - 1 ? 1 : 0;
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
