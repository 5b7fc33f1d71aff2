// The strips view's geometry: rank columns, KV strips, query fans or bundles, and the brace that
// stands for identical ranks past the ones drawn. Pure layout: nothing here paints.
#include "ui/kvstripsgeometry.h"
#include "ui/kvstripsview.h"
#include "ui/theme.h"
#include "ui/tickers.h"

#include <algorithm>

namespace kvscope::ui {

using namespace strips;

int KvStripsView::legibleRanks(double width) const {
    // A rank column needs about 64 px for its "GPU n" label, its strip caps and its fan to
    // read; 16 of them fit the central view at 1080p.
    const double areaW = std::max(60.0, width - kLeft - kRight);
    return std::clamp(static_cast<int>(areaW / 64.0), 4, 16);
}

KvStripsView::Frame KvStripsView::layout(const QSize& size, double scaleBytes) const {
    Frame f;
    const Report& r = report_;
    if (r.tp <= 0 || r.qHeads <= 0)
        return f;
    const QFontMetricsF fm(font());
    const double line = fm.height();
    const double top = line * 1.6 + line * 1.25 * 3 + 14; // title + three caption lines
    f.captionBottom = top;
    const double W = size.width(), H = size.height();
    Geometry g;
    g.ranks = static_cast<int>(r.tp);
    g.areaW = std::max(60.0, W - kLeft - kRight);
    const double areaW = g.areaW;
    // Past the ranks that fit legibly, the first few are drawn and a brace stands for the rest:
    // they hold the same bytes (MLA, MQA: the same data), so 128 hair-thin columns say nothing
    // one column and a count do not.
    const int legible = legibleRanks(W);
    g.collapsed = g.ranks > legible;
    const int slots = g.collapsed ? legible : g.ranks;
    g.drawn = g.collapsed ? std::min(8, legible / 2) : g.ranks;
    g.gap = std::clamp(areaW / slots * 0.07, 2.0, 14.0);
    g.colW = (areaW - g.gap * (slots - 1)) / slots;
    g.qY = top + 10;
    const double fanH = std::clamp(H * 0.12, 34.0, 86.0);
    g.stripTop = g.qY + fanH + kCapH;
    const double stripMax = std::max(40.0, H - kBottom - g.stripTop - 6);
    f.stripArea = QRectF(kLeft, g.stripTop, areaW, stripMax);

    g.mla = r.attention == AttentionKind::MLA;
    g.kvpr = std::max<std::int64_t>(1, r.kvHeadsPerRank);
    g.qpr = std::max<std::int64_t>(1, r.qHeadsPerRank);
    g.copies = std::max<std::int64_t>(1, r.kvCopies);
    const double stripBytes = static_cast<double>(r.step.kvBytes) / static_cast<double>(g.kvpr);
    f.scaleBytes = scaleBytes > 0 ? scaleBytes : niceBytesCeil(stripBytes * 1.15);
    const double elems = g.mla ? static_cast<double>(r.kvLoraRank + r.qkRopeHeadDim)
                               : static_cast<double>(r.keyDim + r.valueDim);
    g.slotW = g.colW / static_cast<double>(g.kvpr);
    const double pxPerElem = std::min(56.0 / 256.0, g.slotW * 0.72 / std::max(1.0, elems));
    g.stripW = std::clamp(pxPerElem * elems, 2.0, g.slotW * 0.86);
    g.len = std::clamp(stripBytes / f.scaleBytes * stripMax, 2.0, stripMax);
    f.stripLen = g.len;

    for (int rank = 0; rank < g.drawn; ++rank)
        layoutRank(f, g, rank);
    if (g.collapsed)
        f.columns.push_back(braceColumn(g));
    return f;
}

void KvStripsView::layoutRank(Frame& f, const Geometry& g, int rank) const {
    const Report& r = report_;
    const double x0 = kLeft + rank * (g.colW + g.gap);
    Column col;
    col.x = x0;
    col.w = g.colW;
    col.rank = col.lastRank = rank;
    f.columns.push_back(col);
    const QColor c = rankColor(rank, isDark(this));
    // KV strips of this rank.
    std::vector<std::uint64_t> rankStrips;
    for (std::int64_t s = 0; s < g.kvpr; ++s) {
        Item it;
        it.kind = Item::Strip;
        it.rank = rank;
        it.color = c;
        const double cx = x0 + g.slotW * (static_cast<double>(s) + 0.5);
        it.rect = QRectF(cx - g.stripW / 2, g.stripTop, g.stripW, g.len);
        if (g.mla) {
            it.key = kLatentTag | static_cast<std::uint64_t>(rank);
            it.copy = rank > 0;
            it.label = g.stripW > 60 ? tr("latent %1").arg(r.kvLoraRank + r.qkRopeHeadDim)
                                     : QStringLiteral("L");
        } else {
            it.head = g.headOf(r, rank, s);
            it.copyNo = r.kvReplicated ? rank % g.copies : 0;
            it.key = stripKey(it.head, it.copyNo);
            it.copy = it.copyNo > 0;
            it.label = g.stripW >= 44   ? tr("KV %1").arg(it.head)
                       : g.stripW >= 22 ? QString::number(it.head)
                                        : QString();
        }
        rankStrips.push_back(it.key);
        f.items.push_back(it);
    }
    layoutQueries(f, g, rank, rankStrips);
}

void KvStripsView::layoutQueries(Frame& f, const Geometry& g, int rank,
                                 const std::vector<std::uint64_t>& rankStrips) const {
    const double x0 = kLeft + rank * (g.colW + g.gap);
    const QColor c = rankColor(rank, isDark(this));
    // Query heads of this rank, fanning into their KV head; too many to tell apart (128 on one
    // GPU) and each KV head's group becomes one bundle with its count.
    const double spacing = g.colW / static_cast<double>(g.qpr);
    const std::int64_t groupPerRank = std::max<std::int64_t>(1, g.qpr / g.kvpr);
    if (spacing < 6.0) {
        for (std::int64_t s = 0; s < g.kvpr; ++s) {
            Item it;
            it.kind = Item::Bundle;
            it.rank = rank;
            it.color = c;
            it.head = rank * g.qpr + s * groupPerRank; // the bundle's first query head
            it.count = std::min(groupPerRank, g.qpr - s * groupPerRank);
            it.copyNo = s; // the strip it feeds
            it.key = kBundleTag | (static_cast<std::uint64_t>(rank) << 24) |
                     static_cast<std::uint64_t>(s);
            const double a = x0 + spacing * static_cast<double>(s * groupPerRank);
            const double b = a + spacing * static_cast<double>(it.count);
            it.rect = QRectF(a + 1, g.qY - 3.5, std::max(2.0, b - a - 2), 7);
            it.target = rankStrips[static_cast<std::size_t>(s)];
            it.label = QStringLiteral("%1 q").arg(it.count);
            f.items.push_back(it);
        }
        return;
    }
    const double rad = std::clamp(spacing * 0.34, 1.3, 7.0);
    for (std::int64_t k = 0; k < g.qpr; ++k) {
        Item it;
        it.kind = Item::Query;
        it.rank = rank;
        it.color = c;
        it.head = rank * g.qpr + k;
        it.key = kQueryTag | static_cast<std::uint64_t>(it.head);
        const double cx = x0 + spacing * (static_cast<double>(k) + 0.5);
        it.rect = QRectF(cx - rad, g.qY - rad, 2 * rad, 2 * rad);
        const std::size_t si =
            static_cast<std::size_t>(std::min<std::int64_t>(g.kvpr - 1, k / groupPerRank));
        it.target = rankStrips[si];
        f.items.push_back(it);
    }
}

KvStripsView::Column KvStripsView::braceColumn(const Geometry& g) const {
    const Report& r = report_;
    const int n = g.ranks, drawn = g.drawn;
    Column b;
    b.brace = true;
    b.rank = drawn;
    b.lastRank = n - 1;
    b.x = kLeft + drawn * (g.colW + g.gap);
    b.w = kLeft + g.areaW - b.x;
    const int rest = n - drawn;
    // Identical: every rank stores the same bytes of the same data (the latent, or MQA's one
    // head copied everywhere).
    b.identical = g.mla || r.kvHeads == 1;
    b.text = b.identical ? tr("× %1 identical ranks").arg(rest) : tr("× %1 more ranks").arg(rest);
    if (g.mla)
        b.subText = tr("each holds the whole latent");
    else if (b.identical)
        b.subText = tr("each holds KV head 0");
    else if (r.kvReplicated)
        b.subText = tr("KV heads %1…%2, each copied on %3 GPUs")
                        .arg(g.headOf(r, drawn, 0))
                        .arg(g.headOf(r, n - 1, 0))
                        .arg(g.copies);
    else if (g.kvpr == 1)
        b.subText = tr("each holds a KV head of its own (%1…%2)")
                        .arg(g.headOf(r, drawn, 0))
                        .arg(g.headOf(r, n - 1, 0));
    else
        b.subText = tr("each holds %1 KV heads of its own (%2…%3)")
                        .arg(g.kvpr)
                        .arg(g.headOf(r, drawn, 0))
                        .arg(g.headOf(r, n - 1, g.kvpr - 1));
    return b;
}

} // namespace kvscope::ui
