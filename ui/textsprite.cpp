#include "ui/textsprite.h"

#include <QCache>
#include <QFontMetrics>
#include <QHash>
#include <QPaintEngine>
#include <QPainter>
#include <QPixmap>
#include <QTransform>
#include <algorithm>
#include <cmath>

namespace kvscope::ui {

namespace {

size_t hashRect(const QRectF& r, size_t seed) {
    return qHashMulti(seed, r.x(), r.y(), r.width(), r.height());
}

struct MetricsKey {
    QFont font;
    int dpi = 0;
    QRect rect;
    int flags = 0;
    QString text;
    bool operator==(const MetricsKey&) const = default;
};
size_t qHash(const MetricsKey& k, size_t seed = 0) {
    return qHashMulti(seed, k.font, k.dpi, k.rect.x(), k.rect.y(), k.rect.width(), k.rect.height(),
                      k.flags, k.text);
}

struct SpriteKey {
    TextLook look;
    double m11, m12, m21, m22; ///< the painter's transform but for its translation
    int phaseX, phaseY;        ///< its sub-pixel translation, in 1/64 px
    bool aa;
    bool operator==(const SpriteKey&) const = default;
};
size_t qHash(const SpriteKey& k, size_t seed = 0) {
    return qHashMulti(seed, k.look, k.m11, k.m12, k.m21, k.m22, k.phaseX, k.phaseY, k.aa);
}

/// A bounded memo: cleared when it grows past `limit` (an animation's fades each make a look of
/// their own).
template <typename K, typename V, typename F>
const V& memo(QHash<K, V>& h, const K& k, F compute, qsizetype limit = 4096) {
    auto hit = h.constFind(k);
    if (hit != h.constEnd())
        return *hit;
    if (h.size() > limit)
        h.clear();
    return *h.insert(k, compute());
}

void paintLook(QPainter& p, const TextLook& t) {
    p.setFont(t.font);
    if (!t.box.isEmpty()) {
        p.setPen(t.boxPen);
        p.setBrush(t.boxFill.alpha() ? QBrush(t.boxFill) : QBrush(Qt::NoBrush));
        p.drawRect(t.box);
    }
    p.setBrush(Qt::NoBrush);
    p.setPen(QPen(t.color));
    p.drawText(t.rect, t.flags, t.text);
}

} // namespace

size_t qHash(const TextLook& t, size_t seed) {
    seed = hashRect(t.rect, hashRect(t.box, seed));
    return qHashMulti(seed, t.font, t.text, t.flags, t.color.rgba(), int(t.boxPen.style()),
                      t.boxPen.widthF(), t.boxPen.color().rgba(), t.boxFill.rgba());
}

QRect cachedTextRect(const QFont& font, const QPaintDevice* device, const QRect& r, int flags,
                     const QString& text) {
    static QHash<MetricsKey, QRect> rects;
    return memo(rects, MetricsKey{font, device ? device->logicalDpiY() : 0, r, flags, text}, [&] {
        const QFontMetrics fm = device ? QFontMetrics(font, device) : QFontMetrics(font);
        return fm.boundingRect(r, flags, text);
    });
}

QString cachedElided(const QFont& font, const QString& text, Qt::TextElideMode mode, double width) {
    static QHash<MetricsKey, QString> elided;
    // The width to 1/64 px, QFixed's step (elidedText's own resolution).
    const MetricsKey k{font, int(mode), QRect(0, 0, static_cast<int>(std::lround(width * 64)), 0),
                       0, text};
    return memo(elided, k, [&] { return QFontMetricsF(font).elidedText(text, mode, width); });
}

double cachedAdvance(const QFont& font, const QString& text) {
    static QHash<MetricsKey, double> advances;
    return memo(advances, MetricsKey{font, 0, QRect(), 0, text},
                [&] { return QFontMetricsF(font).horizontalAdvance(text); });
}

PixelPhase pixelPhase(double dx, double dy) {
    PixelPhase ph;
    ph.whole = QPointF(std::floor(dx), std::floor(dy));
    ph.px = static_cast<int>(std::lround((dx - ph.whole.x()) * 64));
    ph.py = static_cast<int>(std::lround((dy - ph.whole.y()) * 64));
    return ph;
}

bool isRaster(const QPainter& p) {
    return p.paintEngine() && p.paintEngine()->type() == QPaintEngine::Raster;
}

// The sprite is rendered at the target's sub-pixel phase (to 1/64 px, QFixed's step, so glyph
// positions round as drawText's do) and stamped at a whole device pixel.
void drawText(QPainter& p, const TextLook& look) {
    const double dpr = p.device() ? p.device()->devicePixelRatioF() : 1.0;
    const QTransform logical = p.transform();
    const QTransform dev = logical * QTransform::fromScale(dpr, dpr);
    if (!isRaster(p) || dev.type() > QTransform::TxRotate) {
        paintLook(p, look);
        return;
    }
    const QTransform linear(dev.m11(), dev.m12(), dev.m21(), dev.m22(), 0, 0);
    const PixelPhase ph = pixelPhase(dev.dx(), dev.dy());
    const QPointF phase = ph.phase();
    // Glyphs overhang their advance; a box's pen straddles its edge.
    const double m = 2 + QFontMetricsF(look.font).height() / 4 + look.boxPen.widthF();
    const QRectF bounds =
        (look.box.isEmpty() ? look.rect : look.rect.united(look.box)).adjusted(-m, -m, m, m);
    const QRect box = linear.mapRect(bounds).translated(phase).toAlignedRect();
    if (box.isEmpty())
        return;
    const bool aa = p.testRenderHint(QPainter::Antialiasing);
    const SpriteKey key{look,         linear.m11(), linear.m12(), linear.m21(),
                        linear.m22(), ph.px,        ph.py,        aa};
    static QCache<SpriteKey, QPixmap> sprites(16 * 1024); // KiB
    const QPixmap* pm = sprites.object(key);
    if (!pm) {
        auto* img = new QPixmap(box.size());
        img->fill(Qt::transparent);
        QPainter sp(img);
        sp.setRenderHint(QPainter::Antialiasing, aa);
        sp.setTransform(linear *
                        QTransform::fromTranslate(phase.x() - box.left(), phase.y() - box.top()));
        paintLook(sp, look);
        sp.end();
        pm = img;
        if (!cacheSprite(sprites, key, img))
            pm = nullptr;
    }
    if (!pm) {
        paintLook(p, look);
        return;
    }
    // Device pixels: undo the device's scale, then move by whole pixels only.
    p.setTransform(QTransform::fromScale(1 / dpr, 1 / dpr) *
                   QTransform::fromTranslate((ph.whole.x() + box.left()) / dpr,
                                             (ph.whole.y() + box.top()) / dpr));
    p.drawPixmap(QPointF(0, 0), *pm);
    p.setTransform(logical);
}

void drawCachedText(QPainter& p, const QRectF& rect, int flags, const QString& text) {
    if (text.isEmpty())
        return;
    // Drawn relative to the rect's corner: a label that moves keeps its sprite.
    const QTransform t0 = p.transform();
    p.translate(rect.topLeft());
    TextLook look;
    look.font = p.font();
    look.text = text;
    look.rect = QRectF(QPointF(0, 0), rect.size());
    look.flags = flags;
    look.color = p.pen().color();
    drawText(p, look);
    p.setTransform(t0);
}

} // namespace kvscope::ui
