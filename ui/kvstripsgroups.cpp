// Strip segments by layer group: see kvstripsgroups.h.
#include "ui/kvstripsgroups.h"

#include "core/format.h"
#include "ui/kvstripsgeometry.h"
#include "ui/kvstripsview.h"
#include "ui/textsprite.h"

#include <QFontMetricsF>
#include <QPainter>
#include <algorithm>
#include <array>

namespace kvscope::ui::strips {

namespace {

enum class Part { Fixed, Capped, Growing };
constexpr std::array<Part, 3> kOrder = {Part::Fixed, Part::Capped, Part::Growing};

double share(const GroupShares& s, Part part) {
    switch (part) {
    case Part::Fixed:
        return s.fixed;
    case Part::Capped:
        return s.capped;
    case Part::Growing:
        break;
    }
    return s.growing;
}

QString partName(Part part) {
    switch (part) {
    case Part::Fixed:
        return KvStripsView::tr("fixed state");
    case Part::Capped:
        return KvStripsView::tr("capped at the window");
    case Part::Growing:
        break;
    }
    return KvStripsView::tr("grows with S");
}

/// One segment: solid for the growing part, a lighter fill with a firm edge for the capped
/// part, dots over a faint fill for the fixed state (tells apart in grey on a projector too).
void paintPart(QPainter& p, const QRectF& r, const QColor& c, double alpha, bool dark, Part part) {
    QColor fill = c;
    p.setPen(Qt::NoPen);
    switch (part) {
    case Part::Growing:
        fill.setAlphaF(static_cast<float>(alpha * (dark ? 0.9 : 0.85)));
        p.setBrush(fill);
        p.drawRect(r);
        return;
    case Part::Capped:
        fill.setAlphaF(static_cast<float>(alpha * 0.45));
        p.setBrush(fill);
        p.drawRect(r);
        break;
    case Part::Fixed: {
        fill.setAlphaF(static_cast<float>(alpha * 0.2));
        p.setBrush(fill);
        p.drawRect(r);
        QColor dots = c;
        dots.setAlphaF(static_cast<float>(alpha * 0.95));
        p.setBrush(QBrush(dots, Qt::Dense5Pattern));
        p.drawRect(r);
        break;
    }
    }
    QColor edge = dark ? c.lighter(120) : c.darker(115);
    edge.setAlphaF(static_cast<float>(alpha));
    p.setPen(QPen(edge, 1));
    p.setBrush(Qt::NoBrush);
    p.drawRect(r.adjusted(0.5, 0.5, -0.5, -0.5));
}

} // namespace

GroupShares groupShares(const Report& r) {
    double growing = 0, capped = 0, fixed = 0;
    for (const auto& g : r.groupRequestBytesPerRank) {
        growing += static_cast<double>(g.growing);
        capped += static_cast<double>(g.capped);
        fixed += static_cast<double>(g.fixed);
    }
    const double total = growing + capped + fixed;
    if (!(total > 0))
        return {};
    return {growing / total, capped / total, fixed / total};
}

QStringList groupLegendEntries(const Report& r) {
    const GroupShares s = groupShares(r);
    QStringList out;
    if (!s.split())
        return out;
    for (Part part : kOrder)
        if (share(s, part) > 0)
            out << partName(part);
    return out;
}

void paintGroupedBody(QPainter& p, const QRectF& body, const QColor& c, double alpha, bool dark,
                      const GroupShares& s) {
    double y = body.top();
    for (Part part : kOrder) {
        const double h = body.height() * share(s, part);
        if (h <= 0)
            continue;
        // The last segment ends exactly at the body's end, whatever the rounding above.
        const double bottom =
            part == Part::Growing ? body.bottom() : std::min(body.bottom(), y + h);
        paintPart(p, QRectF(body.left(), y, body.width(), bottom - y), c, alpha, dark, part);
        y = bottom;
    }
}

double paintGroupLegend(QPainter& p, const Report& r, const QFont& font, const QColor& ink,
                        bool dark, double right, double y, bool measureOnly) {
    const GroupShares s = groupShares(r);
    if (!s.split())
        return 0;
    const QFontMetricsF fm(font);
    const double sw = fm.height() * 0.9, gap = fm.height() * 0.35, spacing = fm.height();
    double width = 0;
    for (Part part : kOrder)
        if (share(s, part) > 0)
            width += (width > 0 ? spacing : 0) + sw + gap + cachedAdvance(font, partName(part));
    if (measureOnly)
        return width;
    double x = right - width;
    p.setFont(font);
    const QColor swatch = dark ? QColor(170, 178, 190) : QColor(90, 98, 110);
    for (Part part : kOrder) {
        if (share(s, part) <= 0)
            continue;
        paintPart(p, QRectF(x, y - sw / 2, sw, sw), swatch, 1.0, dark, part);
        x += sw + gap;
        const QString name = partName(part);
        p.setPen(ink);
        const double w = cachedAdvance(font, name);
        drawCachedText(p, QRectF(x, y - fm.height() / 2, w + 2, fm.height()),
                       Qt::AlignLeft | Qt::AlignVCenter, name);
        x += w + spacing;
    }
    return width;
}

QString groupTipLine(const Report& r, double stripBytes) {
    const GroupShares s = groupShares(r);
    if (!s.split())
        return {};
    QStringList parts;
    for (Part part : kOrder)
        if (share(s, part) > 0)
            parts << KvStripsView::tr("%1 %2").arg(q(humanBytes(stripBytes * share(s, part))),
                                                   partName(part));
    return parts.join(QStringLiteral(" · "));
}

} // namespace kvscope::ui::strips
