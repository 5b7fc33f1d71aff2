// The strips view's painting, back to front: the caption, the ruler, the rank panels and the
// brace, the fans, the strips, the query dots. It paints a Frame (kvstripslayout.cpp) and
// computes no geometry of its own.
#include "core/format.h"
#include "ui/kvstripsgeometry.h"
#include "ui/kvstripsgroups.h"
#include "ui/kvstripsview.h"
#include "ui/textsprite.h"
#include "ui/theme.h"
#include "ui/viewmodel.h"

#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace kvscope::ui {

using namespace strips;

namespace {

QString titleText(const QString& model, const QString& variant, const Report& r) {
    return KvStripsView::tr("%1 · %2 · TP = %3%4")
        .arg(model, variant)
        .arg(r.tp)
        .arg(r.dcp > 1 ? KvStripsView::tr(" · DCP = %1").arg(r.dcp) : QString());
}

// The three caption lines: the head layout, what a strip's length means, and replication.
QString headsLine(const Report& r) {
    if (r.attention == AttentionKind::MLA)
        return KvStripsView::tr("%1 query heads share one latent per token per layer: r %2 + "
                                "d_rope %3 = %4 wide")
            .arg(r.qHeads)
            .arg(r.kvLoraRank)
            .arg(r.qkRopeHeadDim)
            .arg(r.kvLoraRank + r.qkRopeHeadDim);
    return KvStripsView::tr("%1 query heads → %2 KV head%3 (g = %4) · %5 KV head%6 per GPU · "
                            "strip = K+V of one KV head")
        .arg(r.qHeads)
        .arg(r.kvHeads)
        .arg(r.kvHeads == 1 ? QString() : QStringLiteral("s"))
        .arg(q(fixed(r.groupSize, r.groupSize == std::floor(r.groupSize) ? 0 : 2)))
        .arg(r.kvHeadsPerRank)
        .arg(r.kvHeadsPerRank == 1 ? QString() : QStringLiteral("s"));
}

QString lengthLine(const Report& r) {
    return KvStripsView::tr("Strip length ∝ bytes held: %1 request%2 × %3 tokens = %4 per strip")
        .arg(q(withCommas(r.batch)), r.batch == 1 ? QString() : QStringLiteral("s"),
             q(withCommas(r.contextPerRank)),
             q(humanBytes(static_cast<double>(r.step.kvBytes) /
                          static_cast<double>(std::max<std::int64_t>(1, r.kvHeadsPerRank)))));
}

QString replicationLine(const Report& r, bool* warn) {
    const bool mla = r.attention == AttentionKind::MLA;
    *warn = r.kvReplicated && !mla;
    if (*warn)
        return KvStripsView::tr("h_kv = %1 < TP = %2: each KV head copied on %3 GPUs (hatched), "
                                "the per-GPU cell stops shrinking")
            .arg(r.kvHeads)
            .arg(r.tp)
            .arg(r.kvCopies);
    if (mla && r.tp > 1)
        return KvStripsView::tr("Hatched = the same latent again on GPU 1…%1").arg(r.tp - 1);
    return {};
}

} // namespace

void KvStripsView::paintFrame(QPainter& p, const QSize& size, const Frame& frame,
                              const std::vector<Item>& items) const {
    p.fillRect(QRect(QPoint(0, 0), size), palette().color(QPalette::Base));
    p.setRenderHint(QPainter::Antialiasing, true);
    p.setRenderHint(QPainter::TextAntialiasing, true);
    if (!hasReport_) {
        p.setPen(mutedText(this));
        p.drawText(QRect(QPoint(0, 0), size), Qt::AlignCenter, tr("No model loaded"));
        return;
    }
    paintCaption(p, size);
    paintGroupKey(p, size);
    paintRuler(p, frame);
    paintColumns(p, frame);
    paintFansCached(p, size, items);
    paintStrips(p, items);
    paintQueries(p, items);
}

// Caption: what is drawn, in words a lecture hall reads from the back. Nothing is cut silently:
// a line too long for the view is elided and its full text is the caption's tooltip.
void KvStripsView::paintCaption(QPainter& p, const QSize& size) const {
    const Report& r = report_;
    const bool dk = isDark(this);
    const QColor ink = palette().color(QPalette::WindowText);
    const QColor muted = mutedText(this);
    const QFont base = font();
    const QFontMetricsF fm(base);
    const double line = fm.height();
    QStringList elided;
    const QFont titleFont = scaledFont(base, 1.6, true);
    const QFontMetricsF tfm(titleFont);
    p.setFont(titleFont);
    p.setPen(ink);
    const double titleH = tfm.height();
    const QString title = titleText(title_, q(variantWithGroup(r)), r);
    // The per-GPU cell, big, top right; the title gets what is left, never overlapped. A title
    // that does not fit drops the g first, then the model's parenthetical, then elides.
    const QString big =
        tr("%1 / token / GPU").arg(q(humanBytes(static_cast<double>(r.cellBytesPerTokenPerRank))));
    const double bigW = cachedAdvance(titleFont, big);
    const double titleW = std::max(40.0, size.width() - kRight - 16 - bigW - 24);
    // Then a config file's "org__" prefix (google__gemma-3-27b-it), then the model's name is
    // elided, never the variant and TP after it (the full title is the tooltip).
    QString shown = title;
    if (cachedAdvance(titleFont, shown) > titleW) {
        QString model = title_;
        shown = titleText(model, q(r.variant), r);
        if (cachedAdvance(titleFont, shown) > titleW && model.contains(QStringLiteral(" (")))
            shown =
                titleText(model = model.left(model.indexOf(QStringLiteral(" ("))), q(r.variant), r);
        if (cachedAdvance(titleFont, shown) > titleW && withoutOrg(model) != model)
            shown = titleText(model = withoutOrg(model), q(r.variant), r);
        if (cachedAdvance(titleFont, shown) > titleW) {
            const double rest = cachedAdvance(titleFont, titleText(QString(), q(r.variant), r));
            shown = titleText(
                cachedElided(titleFont, model, Qt::ElideRight, std::max(30.0, titleW - rest)),
                q(r.variant), r);
        }
        elided << title;
    }
    drawCachedText(p, QRectF(16, 8, titleW, titleH), Qt::AlignLeft | Qt::AlignVCenter, shown);
    p.setPen(accentColor(dk));
    drawCachedText(p, QRectF(size.width() - kRight - bigW - 4, 8, bigW + 4, titleH),
                   Qt::AlignRight | Qt::AlignVCenter, big);

    p.setFont(base);
    const double capY = 8 + titleH + 4;
    const double lineW = size.width() - 32;
    auto drawLine = [&](int i, const QString& text, const QColor& color) {
        if (text.isEmpty())
            return;
        p.setPen(color);
        const QString e = cachedElided(base, text, Qt::ElideRight, lineW);
        if (e != text)
            elided << text;
        drawCachedText(p, QRectF(16, capY + line * 1.25 * i, lineW, line * 1.25),
                       Qt::AlignLeft | Qt::AlignVCenter, e);
    };
    bool warn = false;
    const QString third = replicationLine(r, &warn);
    drawLine(0, headsLine(r), muted);
    drawLine(1, lengthLine(r), muted);
    drawLine(2, third, warn ? warningColor(dk) : muted);
    captionTip_ = elided.isEmpty() ? QString() : elided.join(QStringLiteral("<br>"));
}

// The layer-group key, right-aligned on a caption row with room for it: the third row (after
// the replication warning, when there is one), else the second, else just below the caption.
void KvStripsView::paintGroupKey(QPainter& p, const QSize& size) const {
    const Report& r = report_;
    const QFont base = font();
    const double keyW = paintGroupLegend(p, r, base, QColor(), false, 0, 0, true);
    if (keyW <= 0)
        return;
    const QFontMetricsF fm(base);
    const double line = fm.height();
    const double capY = 8 + QFontMetricsF(scaledFont(base, 1.6, true)).height() + 4;
    const double right = size.width() - kRight;
    const double room = size.width() - 32 - keyW - 24;
    bool warn = false;
    int row = 3;
    if (cachedAdvance(base, replicationLine(r, &warn)) <= room)
        row = 2;
    else if (cachedAdvance(base, lengthLine(r)) <= room)
        row = 1;
    paintGroupLegend(p, r, base, palette().color(QPalette::WindowText), isDark(this), right,
                     capY + line * 1.25 * (row + 0.5));
}

// Ruler and grid over the strip area.
void KvStripsView::paintRuler(QPainter& p, const Frame& frame) const {
    const bool dk = isDark(this);
    const QColor muted = mutedText(this);
    const QRectF area = frame.stripArea;
    const QFont small = scaledFont(font(), 0.9);
    p.setFont(small);
    const QFontMetricsF sfm(small);
    QColor grid = palette().color(QPalette::WindowText);
    grid.setAlpha(dk ? 36 : 26);
    p.setRenderHint(QPainter::Antialiasing, false); // horizontal hairlines: crisp and cheap
    for (int i = 0; i <= 4; ++i) {
        const double y = area.top() + area.height() * i / 4.0;
        p.setPen(QPen(grid, 1));
        p.drawLine(QPointF(area.left() - 6, y), QPointF(area.right(), y));
        p.setPen(muted);
        const QString label =
            i == 0 ? QStringLiteral("0") : q(humanBytes(frame.scaleBytes * i / 4.0));
        drawCachedText(p, QRectF(0, y - sfm.height() / 2, kLeft - 10, sfm.height()),
                       Qt::AlignRight | Qt::AlignVCenter, label);
    }
    p.setRenderHint(QPainter::Antialiasing, true);
}

// Rank columns: a tinted panel and a label per GPU; the brace for the collapsed ranks.
void KvStripsView::paintColumns(QPainter& p, const Frame& frame) const {
    const bool dk = isDark(this);
    const QRectF area = frame.stripArea;
    const QFont rankFont = scaledFont(font(), 1.05, true);
    const double panelTop = area.top() - kCapH - 4 - 2;
    const double panelH = area.height() + kCapH + 6 + 4;
    for (const Column& col : frame.columns) {
        if (col.brace) {
            paintBrace(p, frame, col);
            continue;
        }
        p.setFont(rankFont);
        QColor c = rankColor(col.rank, dk);
        QColor tint = c;
        tint.setAlpha(dk ? 34 : 22);
        // Axis-aligned fills go without antialiasing: the rasteriser's span fill, not its
        // coverage path, for the largest areas the view paints.
        p.setRenderHint(QPainter::Antialiasing, false);
        p.fillRect(QRectF(col.x, panelTop, col.w, panelH), tint);
        p.setRenderHint(QPainter::Antialiasing, true);
        p.setPen(dk ? c.lighter(115) : c.darker(115));
        const QString label = col.w >= 58 ? tr("GPU %1").arg(col.rank) : QString::number(col.rank);
        drawCachedText(p, QRectF(col.x - 10, area.bottom() + 6, col.w + 20, kBottom - 10),
                       Qt::AlignHCenter | Qt::AlignTop, label);
    }
}

// A stack of rank panels, the count big in the middle and what each holds below: replication
// reads at a glance.
void KvStripsView::paintBrace(QPainter& p, const Frame& frame, const Column& col) const {
    const bool dk = isDark(this);
    const QColor ink = palette().color(QPalette::WindowText);
    const QFont base = font();
    const QRectF area = frame.stripArea;
    const double panelTop = area.top() - kCapH - 4 - 2;
    const double panelH = area.height() + kCapH + 6 + 4;
    QColor c = rankColor(col.rank, dk);
    p.setRenderHint(QPainter::Antialiasing, false);
    for (int k = 2; k >= 0; --k) {
        QColor tint = rankColor(col.rank + k, dk);
        tint.setAlpha(dk ? 30 : 20);
        p.setPen(QPen(tint.darker(dk ? 60 : 110), 1));
        p.setBrush(tint);
        p.drawRect(QRectF(col.x + k * 8, panelTop + k * 5, col.w - 18, panelH - 12));
    }
    p.setRenderHint(QPainter::Antialiasing, true);
    // The brace over the stack.
    const double by = panelTop - 2, bx0 = col.x + 4, bx1 = col.x + col.w - 4;
    const double mid = (bx0 + bx1) / 2;
    QPainterPath brace(QPointF(bx0, by + 8));
    brace.quadTo(QPointF(bx0, by), QPointF(bx0 + 10, by));
    brace.lineTo(QPointF(mid - 10, by));
    brace.quadTo(QPointF(mid, by), QPointF(mid, by - 8));
    brace.quadTo(QPointF(mid, by), QPointF(mid + 10, by));
    brace.lineTo(QPointF(bx1 - 10, by));
    brace.quadTo(QPointF(bx1, by), QPointF(bx1, by + 8));
    p.setPen(QPen(ink, 2));
    p.setBrush(Qt::NoBrush);
    p.drawPath(brace);
    // A ghost strip as long as every drawn one: the same bytes on each of these GPUs.
    QColor ghost = c;
    ghost.setAlpha(dk ? 90 : 70);
    const double gw = std::min(40.0, col.w * 0.12);
    const QRectF ghostRect(col.x + 14, area.top(), gw, frame.stripLen);
    p.setPen(QPen(c, 1.2, Qt::DashLine));
    p.setBrush(QBrush(ghost, Qt::BDiagPattern));
    p.drawRect(ghostRect);
    const QRectF textBox(ghostRect.right() + 10, area.top() + 8,
                         col.x + col.w - ghostRect.right() - 30, area.height() * 0.7);
    const QFont countFont = scaledFont(base, 2.2, true);
    const QFontMetricsF cfm(countFont);
    p.setFont(countFont);
    p.setPen(ink);
    drawCachedText(p, QRectF(textBox.left(), textBox.top(), textBox.width(), cfm.height()),
                   Qt::AlignLeft | Qt::AlignVCenter,
                   QStringLiteral("× %1").arg(col.lastRank - col.rank + 1));
    const QFont kindFont = scaledFont(base, 1.25, true);
    const QFontMetricsF kfm(kindFont);
    p.setFont(kindFont);
    const double ky = textBox.top() + cfm.height();
    drawCachedText(p, QRectF(textBox.left(), ky, textBox.width(), kfm.height()),
                   Qt::AlignLeft | Qt::AlignVCenter,
                   cachedElided(kindFont, col.identical ? tr("identical ranks") : tr("more ranks"),
                                Qt::ElideRight, textBox.width()));
    p.setFont(scaledFont(base, 1.1));
    p.setPen(mutedText(this));
    drawCachedText(p,
                   QRectF(textBox.left(), ky + kfm.height() + 4, textBox.width(),
                          textBox.bottom() - ky - kfm.height() - 4),
                   Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, col.subText);
    p.setFont(scaledFont(base, 1.05, true));
    p.setPen(dk ? c.lighter(115) : c.darker(115));
    drawCachedText(p, QRectF(col.x, area.bottom() + 6, col.w, kBottom - 10),
                   Qt::AlignHCenter | Qt::AlignTop,
                   tr("GPU %1 … %2").arg(col.rank).arg(col.lastRank));
}

void KvStripsView::paintFansCached(QPainter& p, const QSize& size,
                                   const std::vector<Item>& items) const {
    const std::vector<Fan> fans = fansOf(items);
    if (!p.paintEngine() || p.paintEngine()->type() != QPaintEngine::Raster) {
        paintFans(p, fans); // printing or SVG: the vector curves
        return;
    }
    // The fans hang from the query dots to the strips' caps, whose tops stay put while a
    // context or batch step stretches the strips: they are drawn once per geometry and
    // stamped from a pixmap (stroking the antialiased curves was a tenth of a step).
    const double dpr = p.device()->devicePixelRatioF();
    // The key as raw numbers: formatting them into a string cost more than the curves.
    std::vector<double> key{double(size.width()), double(size.height()), dpr, double(isDark(this)),
                            double(hovered_)};
    // The pixmap covers the fans only (dots to caps), not the view: stamping a view-sized
    // pixmap at every paint cost as much as the curves.
    double x0 = 1e300, y0 = 1e300, x1 = -1e300, y1 = -1e300;
    for (const auto& [q, strip] : fans) {
        const QRectF& r = q->rect;
        const QRectF& sr = strip->rect;
        key.insert(key.end(), {double(q->key), r.left(), r.top(), r.width(), r.height(),
                               double(q->color.rgba()), std::min(q->alpha, strip->alpha), sr.left(),
                               sr.width(), sr.top()});
        x0 = std::min({x0, r.left(), sr.left()}), x1 = std::max({x1, r.right(), sr.right()});
        y0 = std::min({y0, r.top(), sr.top() - kCapH}), y1 = std::max({y1, r.bottom(), sr.top()});
    }
    if (x0 > x1)
        return;
    // Whole pixels, with room for the pens: the curves land on the pixels they would.
    const QRect area = QRectF(QPointF(x0, y0), QPointF(x1, y1))
                           .adjusted(-4, -4, 4, 4)
                           .toAlignedRect()
                           .intersected(QRect(QPoint(0, 0), size));
    if (area.isEmpty())
        return;
    // A few geometries kept: a drag goes back over the states it passed.
    auto hit =
        std::find_if(fans_.begin(), fans_.end(), [&](const FansSprite& f) { return f.key == key; });
    if (hit == fans_.end()) {
        QPixmap pm(area.size() * dpr);
        pm.setDevicePixelRatio(dpr);
        pm.fill(Qt::transparent);
        QPainter fp(&pm);
        fp.setRenderHints(p.renderHints());
        fp.translate(-area.topLeft());
        paintFans(fp, fans);
        fp.end();
        if (fans_.size() >= 8)
            fans_.pop_back();
        fans_.insert(fans_.begin(), FansSprite{std::move(key), area.topLeft(), pm});
        hit = fans_.begin();
    }
    p.drawPixmap(QPointF(hit->at), hit->pixmap);
}

std::vector<KvStripsView::Fan> KvStripsView::fansOf(const std::vector<Item>& items) {
    std::unordered_map<std::uint64_t, const Item*> byKey;
    for (const auto& it : items)
        byKey.emplace(it.key, &it);
    std::vector<Fan> out;
    for (const auto& it : items) {
        if (it.kind != Item::Query && it.kind != Item::Bundle)
            continue;
        if (auto s = byKey.find(it.target); s != byKey.end())
            out.emplace_back(&it, s->second);
    }
    return out;
}

void KvStripsView::paintFans(QPainter& p, const std::vector<Fan>& fans) const {
    const bool dk = isDark(this);
    // Fans first (under the dots and strips).
    for (const auto& [q, strip] : fans) {
        const Item& it = *q;
        QColor c = it.color;
        c.setAlphaF(static_cast<float>(std::min(it.alpha, strip->alpha) * (dk ? 0.7 : 0.55)));
        const QRectF& sr = strip->rect;
        const QPointF b(sr.center().x(), sr.top() - kCapH);
        if (it.kind == Item::Bundle) {
            // One band from the bundle's span to its strip's cap.
            const double y0 = it.rect.bottom(), ym = (y0 + b.y()) / 2;
            const double hw = std::max(1.5, std::min(sr.width(), it.rect.width()) / 2 - 1);
            QPainterPath band(QPointF(it.rect.left(), y0));
            band.cubicTo(QPointF(it.rect.left(), ym), QPointF(b.x() - hw, ym),
                         QPointF(b.x() - hw, b.y()));
            band.lineTo(QPointF(b.x() + hw, b.y()));
            band.cubicTo(QPointF(b.x() + hw, ym), QPointF(it.rect.right(), ym),
                         QPointF(it.rect.right(), y0));
            band.closeSubpath();
            QColor fill = c;
            fill.setAlphaF(c.alphaF() * 0.55f);
            p.setPen(QPen(c, it.key == hovered_ ? 2.0 : 1.0));
            p.setBrush(fill);
            p.drawPath(band);
            continue;
        }
        const QPointF a = it.rect.center() + QPointF(0, it.rect.height() / 2);
        QPainterPath path(a);
        path.cubicTo(QPointF(a.x(), (a.y() + b.y()) / 2), QPointF(b.x(), (a.y() + b.y()) / 2), b);
        p.setPen(QPen(c, it.key == hovered_ ? 2.5 : 1.3));
        p.setBrush(Qt::NoBrush);
        p.drawPath(path);
    }
}

void KvStripsView::paintStrips(QPainter& p, const std::vector<Item>& items) const {
    const bool dk = isDark(this);
    const QColor ink = palette().color(QPalette::WindowText);
    const QFont base = font();
    // Strips with their caps: axis-aligned, drawn without antialiasing (see the panels).
    p.setRenderHint(QPainter::Antialiasing, false);
    const QFont capFont = scaledFont(base, 0.85, true);
    const GroupShares shares = groupShares(report_);
    for (const auto& it : items) {
        if (it.kind != Item::Strip || it.alpha <= 0.01)
            continue;
        QColor c = it.color;
        const double a = it.alpha;
        const QRectF body = it.rect;
        const QRectF cap(body.left(), body.top() - kCapH, body.width(), kCapH);
        QColor capC = dk ? c : c.darker(112);
        capC.setAlphaF(static_cast<float>(a));
        p.setPen(Qt::NoPen);
        p.setBrush(capC);
        p.drawRoundedRect(cap, 3, 3);
        if (it.copy) {
            QColor fill = c;
            fill.setAlphaF(static_cast<float>(a * 0.22));
            p.setBrush(fill);
            p.drawRect(body);
            QColor hatch = c;
            hatch.setAlphaF(static_cast<float>(a * 0.9));
            QBrush hb(hatch, Qt::BDiagPattern);
            p.setBrush(hb);
            p.drawRect(body);
            p.setPen(QPen(hatch, 1.2, Qt::DashLine));
            p.setBrush(Qt::NoBrush);
            p.drawRect(body.adjusted(0.5, 0, -0.5, -0.5));
        } else if (shares.split()) {
            paintGroupedBody(p, body, c, a, dk, shares);
        } else {
            QColor fill = c;
            fill.setAlphaF(static_cast<float>(a * (dk ? 0.9 : 0.85)));
            p.setBrush(fill);
            p.drawRect(body);
        }
        if (it.key == hovered_) {
            p.setPen(QPen(ink, 2));
            p.setBrush(Qt::NoBrush);
            p.drawRect(body.united(cap).adjusted(-1, -1, 1, 1));
        }
        if (!it.label.isEmpty() && cap.width() >= 12) {
            p.setFont(capFont);
            p.setPen(Qt::white);
            drawCachedText(p, cap, Qt::AlignCenter,
                           cachedElided(capFont, it.label, Qt::ElideRight, cap.width()));
        }
    }
    p.setRenderHint(QPainter::Antialiasing, true);
}

void KvStripsView::paintQueries(QPainter& p, const std::vector<Item>& items) const {
    const QPalette& pal = palette();
    const QColor ink = pal.color(QPalette::WindowText);
    const QFont base = font();
    // Query dots (and bundles with their count) on top.
    const QFont countFont = scaledFont(base, 0.85, true);
    for (const auto& it : items) {
        if (it.kind == Item::Bundle && it.alpha > 0.01) {
            QColor c = it.color;
            c.setAlphaF(static_cast<float>(it.alpha));
            p.setPen(Qt::NoPen);
            p.setBrush(c);
            p.drawRoundedRect(it.rect, 3, 3);
            p.setFont(countFont);
            p.setPen(ink);
            const QFontMetricsF cfm(countFont);
            drawCachedText(p,
                           QRectF(it.rect.center().x() - 60, it.rect.top() - cfm.height() - 1, 120,
                                  cfm.height()),
                           Qt::AlignHCenter | Qt::AlignBottom,
                           cachedAdvance(countFont, it.label) <= it.rect.width() + 16
                               ? it.label
                               : QString::number(it.count));
            continue;
        }
        if (it.kind != Item::Query || it.alpha <= 0.01)
            continue;
        QColor c = it.color;
        c.setAlphaF(static_cast<float>(it.alpha));
        const QPen pen(pal.color(QPalette::Base), it.rect.width() > 6 ? 1.2 : 0.5);
        const QRectF r = it.key == hovered_ ? it.rect.adjusted(-2, -2, 2, 2) : it.rect;
        if (p.paintEngine() && p.paintEngine()->type() != QPaintEngine::Raster) {
            p.setPen(pen); // printing or SVG: the vector shape
            p.setBrush(c);
            p.drawEllipse(r);
            continue;
        }
        const double m = std::ceil(pen.widthF()) + 1; // the sprite's margin (see dotSprite)
        p.drawPixmap(QPointF(std::round(r.left()) - m, std::round(r.top()) - m),
                     dotSprite(r, c, pen, p));
    }
}

const QPixmap& KvStripsView::dotSprite(const QRectF& r, const QColor& fill, const QPen& pen,
                                       const QPainter& p) const {
    const double dpr = p.device() ? p.device()->devicePixelRatioF() : 1.0;
    // The dot's offset within its pixel is part of its look: the sprite keeps it, so a dot
    // lands where drawEllipse would put it.
    const double fx = r.left() - std::round(r.left()), fy = r.top() - std::round(r.top());
    const DotKey key{r.width(),    r.height(), double(fill.rgba()), double(pen.color().rgba()),
                     pen.widthF(), dpr,        std::round(fx * 4),  std::round(fy * 4)};
    auto hit = dotSprites_.find(key);
    if (hit != dotSprites_.end())
        return hit->second;
    if (dotSprites_.size() > 512) // an animation's fades each make a look of their own
        dotSprites_.clear();
    const int margin = static_cast<int>(std::ceil(pen.widthF())) + 1;
    QPixmap pm(QSize(static_cast<int>(std::ceil(r.width())) + 2 * margin,
                     static_cast<int>(std::ceil(r.height())) + 2 * margin) *
               dpr);
    pm.setDevicePixelRatio(dpr);
    pm.fill(Qt::transparent);
    QPainter sp(&pm);
    sp.setRenderHint(QPainter::Antialiasing, true);
    sp.setPen(pen);
    sp.setBrush(fill);
    sp.drawEllipse(QRectF(QPointF(margin + std::round(fx * 4) / 4, margin + std::round(fy * 4) / 4),
                          r.size()));
    sp.end();
    return dotSprites_.emplace(key, pm).first->second;
}

} // namespace kvscope::ui
