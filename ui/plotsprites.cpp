// The plots' cached drawing: markers, lines, labels, titles and legend entries stamped from
// pixmaps rendered once per look (a replot redraws every plot element, and most of them are
// the same as the replot before). Vector exports (PDF, SVG) draw the elements themselves.
#include "ui/plotwidget.h"
#include "ui/textsprite.h"

#include <QCache>
#include <QTransform>
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <unordered_map>
#include <vector>

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

struct StampKey {
    std::vector<double> v;
    bool operator==(const StampKey&) const = default;
};
size_t qHash(const StampKey& k, size_t seed = 0) {
    return qHashRange(k.v.begin(), k.v.end(), seed);
}

/// Paints `paint` (QCustomPlot drawing in `painter`'s coordinates, inside `bounds`) from a
/// pixmap rendered once per `key` and sub-pixel phase (1/64 px) with the same antialiasing,
/// stamped at a whole pixel.
void stamp(QCPPainter* painter, const QRect& bounds, std::vector<double> key,
           const std::function<void(QCPPainter*)>& paint) {
    const QTransform t = painter->transform();
    const double dpr = painter->device() ? painter->device()->devicePixelRatioF() : 1.0;
    if (t.type() > QTransform::TxTranslate || dpr != 1.0 || bounds.isEmpty()) {
        paint(painter);
        return;
    }
    const PixelPhase ph = pixelPhase(t.dx(), t.dy());
    const bool aa = painter->antialiasing();
    key.insert(key.end(), {double(ph.px), double(ph.py), double(aa), double(bounds.x()),
                           double(bounds.y()), double(bounds.width()), double(bounds.height())});
    StampKey k{std::move(key)};
    static QCache<StampKey, QPixmap> sprites(32 * 1024); // KiB
    const QPixmap* pm = sprites.object(k);
    if (!pm) {
        auto* img = new QPixmap(bounds.size());
        img->fill(Qt::transparent);
        QCPPainter sp(img);
        sp.setAntialiasing(aa);
        // The target's state: its antialiasing flag, and its transform but for whole pixels.
        sp.setTransform(QTransform::fromTranslate(ph.phase().x() - bounds.left(),
                                                  ph.phase().y() - bounds.top()));
        paint(&sp);
        sp.end();
        pm = img;
        if (!cacheSprite(sprites, k, img)) {
            paint(painter); // larger than the whole cache
            return;
        }
    }
    painter->setTransform(
        QTransform::fromTranslate(ph.whole.x() + bounds.left(), ph.whole.y() + bounds.top()));
    painter->drawPixmap(QPointF(0, 0), *pm);
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

void MarkerGraph::drawLinePlot(QCPPainter* painter, const QVector<QPointF>& lines) const {
    // A graph's line is stroked again at every replot, although most replots move one graph
    // of several (a TP step moves the current-TP line, not the curves): the stroke is stamped
    // from a pixmap keyed by its pixels' inputs, the points as drawn included.
    const QPen pen = painter->pen();
    if (vectorOrUncached(painter) || lines.size() < 2 || pen.style() == Qt::NoPen ||
        pen.color().alpha() == 0 || pen.style() == Qt::CustomDashLine ||
        pen.brush().style() != Qt::SolidPattern) {
        QCPGraph::drawLinePlot(painter, lines);
        return;
    }
    applyDefaultAntialiasingHint(painter);
    std::vector<double> key{3,
                            double(pen.style()),
                            pen.widthF(),
                            double(pen.color().rgba()),
                            double(pen.capStyle()),
                            double(pen.joinStyle()),
                            pen.miterLimit(),
                            pen.dashOffset(),
                            double(pen.isCosmetic())};
    key.reserve(key.size() + 2 * static_cast<std::size_t>(lines.size()) + 8);
    double x0 = 1e300, y0 = 1e300, x1 = -1e300, y1 = -1e300; // QRectF::united skips points
    for (const QPointF& pt : lines) {
        key.push_back(pt.x());
        key.push_back(pt.y());
        if (!std::isfinite(pt.x()) || !std::isfinite(pt.y()))
            continue;
        x0 = std::min(x0, pt.x()), x1 = std::max(x1, pt.x());
        y0 = std::min(y0, pt.y()), y1 = std::max(y1, pt.y());
    }
    if (x0 > x1) {
        QCPGraph::drawLinePlot(painter, lines);
        return;
    }
    const QRectF r(QPointF(x0, y0), QPointF(x1, y1));
    const double m = std::max(1.0, pen.widthF()) * std::max(2.0, pen.miterLimit()) + 3;
    QRect bounds = r.adjusted(-m, -m, m, m).toAlignedRect();
    if (painter->hasClipping())
        bounds &= painter->clipBoundingRect().toAlignedRect().adjusted(-2, -2, 2, 2);
    stamp(painter, bounds, std::move(key), [&](QCPPainter* p) {
        p->setPen(pen);
        p->setBrush(Qt::NoBrush);
        QCPGraph::drawLinePlot(p, lines);
    });
}

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

QPointF SpriteText::anchorPixelPosition(int anchorId) const {
    const QPointF pos(position->pixelPosition());
    QTransform transform;
    transform.translate(pos.x(), pos.y());
    if (!qFuzzyIsNull(mRotation))
        transform.rotate(mRotation);
    const QRect tr =
        cachedTextRect(mainFont(), nullptr, QRect(), Qt::TextDontClip | mTextAlignment, mText);
    QRectF box =
        QRectF(tr).adjusted(-mPadding.left(), -mPadding.top(), mPadding.right(), mPadding.bottom());
    box.moveTopLeft(getTextDrawPoint(QPointF(0, 0), box, mPositionAlignment).toPoint());
    const QPolygonF p = transform.map(QPolygonF(box));
    switch (anchorId) {
    case aiTopLeft:
        return p.at(0);
    case aiTop:
        return (p.at(0) + p.at(1)) * 0.5;
    case aiTopRight:
        return p.at(1);
    case aiRight:
        return (p.at(1) + p.at(2)) * 0.5;
    case aiBottomRight:
        return p.at(2);
    case aiBottom:
        return (p.at(2) + p.at(3)) * 0.5;
    case aiBottomLeft:
        return p.at(3);
    case aiLeft:
        return (p.at(3) + p.at(0)) * 0.5;
    default:
        return QCPItemText::anchorPixelPosition(anchorId);
    }
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

} // namespace kvscope::ui
