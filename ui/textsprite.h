// Text drawn from pixmaps: laying text out (harfbuzz shaping) on every paint was a fifth of a
// slider step, and most of a step's text is the same as the step before. A sprite is rendered
// once per text, font, colours, transform and sub-pixel phase, and stamped at a whole device
// pixel, so its pixels are those drawText would paint. Raster targets only: vector devices
// (PDF, SVG, printers) get the text itself (isRaster).
#pragma once

#include <QCache>
#include <QColor>
#include <QFont>
#include <QPen>
#include <QPixmap>
#include <QPointF>
#include <QRect>
#include <QString>
#include <algorithm>

class QPainter;
class QPaintDevice;

namespace kvscope::ui {

/// Everything a text sprite's pixels depend on but the painter's transform: the text drawn in
/// `rect` with `flags`, over an optional box (`box` stroked with `boxPen`, filled with
/// `boxFill`), in local coordinates.
struct TextLook {
    QFont font;
    QString text;
    QRectF rect;
    int flags = 0;
    QColor color;
    QRectF box; ///< empty: no box
    QPen boxPen = QPen(Qt::NoPen);
    QColor boxFill = Qt::transparent;
    bool operator==(const TextLook&) const = default;
};
size_t qHash(const TextLook& t, size_t seed = 0);

/// QFontMetrics(font[, device]).boundingRect(rect, flags, text), measured once per font, DPI,
/// rect, flags and text.
QRect cachedTextRect(const QFont& font, const QPaintDevice* device, const QRect& rect, int flags,
                     const QString& text);
/// QFontMetricsF(font).elidedText(text, mode, width), computed once per font, width and text.
QString cachedElided(const QFont& font, const QString& text, Qt::TextElideMode mode, double width);
/// QFontMetricsF(font).horizontalAdvance(text), once per font and text.
double cachedAdvance(const QFont& font, const QString& text);
/// Whether `p` paints pixels (a widget, pixmap or image) rather than vectors.
bool isRaster(const QPainter& p);

/// A device translation split into whole pixels, where a sprite is stamped, and the sub-pixel
/// phase it is rendered at, to 1/64 px (QFixed's step, so glyph positions round as drawText's
/// do). Text sprites and the plots' stamped lines and markers key their pixmaps on px, py.
struct PixelPhase {
    QPointF whole;
    int px = 0, py = 0; ///< the phase in 1/64 px
    QPointF phase() const { return {px / 64.0, py / 64.0}; }
};
PixelPhase pixelPhase(double dx, double dy);

/// Inserts a rendered sprite into `cache` at its cost in KiB (32-bit pixels). False when it is
/// larger than the whole cache: QCache has deleted it, so the caller paints directly.
template <class Key> bool cacheSprite(QCache<Key, QPixmap>& cache, const Key& key, QPixmap* img) {
    return cache.insert(key, img, std::max<qsizetype>(1, img->width() * img->height() / 256));
}

/// Paints `look` in `p`'s coordinates as drawRect(box) and drawText(rect, flags, text) would
/// (p's render hints), from a cached sprite on raster targets.
void drawText(QPainter& p, const TextLook& look);
/// p.drawText(rect, flags, text) in p's font and pen colour, from a sprite on raster targets.
void drawCachedText(QPainter& p, const QRectF& rect, int flags, const QString& text);

} // namespace kvscope::ui
