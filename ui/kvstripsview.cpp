#include "ui/kvstripsview.h"

#include "core/format.h"
#include "ui/theme.h"
#include "ui/tickers.h"
#include "ui/viewmodel.h"

#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace kvscope::ui {

namespace {

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

constexpr std::uint64_t kQueryTag = 1ull << 56;
constexpr std::uint64_t kStripTag = 2ull << 56;
constexpr std::uint64_t kLatentTag = 3ull << 56;
constexpr std::uint64_t kBundleTag = 4ull << 56;

std::uint64_t stripKey(std::int64_t head, std::int64_t copy) {
    return kStripTag | (static_cast<std::uint64_t>(head) << 24) | static_cast<std::uint64_t>(copy);
}

// Layout constants (pixels at 1x); the view scales its fonts with the widget font.
constexpr double kLeft = 84, kRight = 18, kBottom = 40, kCapH = 18;

double lerp(double a, double b, double t) {
    return a + (b - a) * t;
}
QRectF lerp(const QRectF& a, const QRectF& b, double t) {
    return {lerp(a.x(), b.x(), t), lerp(a.y(), b.y(), t), lerp(a.width(), b.width(), t),
            lerp(a.height(), b.height(), t)};
}
QColor lerp(const QColor& a, const QColor& b, double t) {
    return QColor::fromRgbF(static_cast<float>(lerp(a.redF(), b.redF(), t)),
                            static_cast<float>(lerp(a.greenF(), b.greenF(), t)),
                            static_cast<float>(lerp(a.blueF(), b.blueF(), t)));
}

} // namespace

KvStripsView::KvStripsView(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setAttribute(Qt::WA_OpaquePaintEvent);
    anim_.setStartValue(0.0);
    anim_.setEndValue(1.0);
    anim_.setDuration(240);
    anim_.setEasingCurve(QEasingCurve::OutCubic);
    connect(&anim_, &QVariantAnimation::valueChanged, this, [this](const QVariant& v) {
        t_ = v.toDouble();
        update();
    });
}

void KvStripsView::setReport(const Report& report, const QString& modelTitle) {
    const bool modelChanged =
        modelTitle != title_ || report.layers != report_.layers || report.qHeads != report_.qHeads;
    report_ = report;
    title_ = modelTitle;
    hasReport_ = true;
    if (modelChanged)
        scaleBytes_ = 0;
    relayout(animated_ && isVisible());
}

void KvStripsView::finishAnimation() {
    anim_.stop();
    t_ = 1.0;
    update();
}

void KvStripsView::resizeEvent(QResizeEvent*) {
    relayout(false);
}

void KvStripsView::changeEvent(QEvent* e) {
    QWidget::changeEvent(e);
    if (e->type() == QEvent::PaletteChange || e->type() == QEvent::FontChange)
        relayout(false);
}

std::vector<KvStripsView::Item> KvStripsView::interpolated() const {
    if (t_ >= 1.0)
        return to_.items;
    std::unordered_map<std::uint64_t, const Item*> from;
    for (const auto& it : from_)
        from.emplace(it.key, &it);
    std::vector<Item> out;
    out.reserve(to_.items.size() + from_.size());
    std::unordered_map<std::uint64_t, bool> present;
    for (const auto& it : to_.items) {
        present.emplace(it.key, true);
        Item cur = it;
        auto f = from.find(it.key);
        if (f != from.end()) {
            cur.rect = lerp(f->second->rect, it.rect, t_);
            cur.color = lerp(f->second->color, it.color, t_);
            cur.alpha = lerp(f->second->alpha, it.alpha, t_);
        } else {
            // New items grow from their cap and fade in.
            QRectF start = it.rect;
            if (it.kind == Item::Strip)
                start.setHeight(0);
            cur.rect = lerp(start, it.rect, t_);
            cur.alpha = it.alpha * t_;
        }
        out.push_back(cur);
    }
    for (const auto& it : from_) {
        if (present.count(it.key))
            continue;
        Item gone = it;
        gone.alpha = it.alpha * (1.0 - t_);
        if (it.kind == Item::Strip)
            gone.rect.setHeight(it.rect.height() * (1.0 - t_));
        out.push_back(gone);
    }
    return out;
}

void KvStripsView::relayout(bool animate) {
    if (!hasReport_)
        return;
    std::vector<Item> current = interpolated();
    // Ruler scale with hysteresis, so a growing context visibly lengthens the strips before
    // the ruler rescales.
    const double stripBytes =
        static_cast<double>(report_.step.kvBytes) /
        static_cast<double>(std::max<std::int64_t>(1, report_.kvHeadsPerRank));
    if (scaleBytes_ <= 0 || stripBytes > scaleBytes_ || stripBytes < scaleBytes_ / 12)
        scaleBytes_ = niceBytesCeil(stripBytes * 1.15);
    to_ = layout(size(), scaleBytes_);
    if (animate && !current.empty()) {
        from_ = std::move(current);
        anim_.stop();
        t_ = 0.0;
        anim_.start();
    } else {
        anim_.stop();
        from_.clear();
        t_ = 1.0;
    }
    update();
}

int KvStripsView::legibleRanks(double width) const {
    // A rank column needs about 64 px for its "GPU n" label, its strip caps and its fan to
    // read; 16 of them fit the central view at 1080p.
    const double areaW = std::max(60.0, width - kLeft - kRight);
    return std::clamp(static_cast<int>(areaW / 64.0), 4, 16);
}

QString KvStripsView::collapsedText() const {
    for (const Column& c : to_.columns)
        if (c.brace)
            return c.text;
    return {};
}

KvStripsView::Frame KvStripsView::layout(const QSize& size, double scaleBytes) const {
    Frame f;
    const Report& r = report_;
    if (r.tp <= 0 || r.qHeads <= 0)
        return f;
    const bool dk = isDark(this);
    const QFontMetricsF fm(font());
    const double line = fm.height();
    const double top = line * 1.6 + line * 1.25 * 3 + 14; // title + three caption lines
    f.captionBottom = top;
    const double W = size.width(), H = size.height();
    const int n = static_cast<int>(r.tp);
    const double areaW = std::max(60.0, W - kLeft - kRight);
    // Past the ranks that fit legibly, the first few are drawn and a brace stands for the rest:
    // they hold the same bytes (MLA, MQA: the same data), so 128 hair-thin columns say nothing
    // one column and a count do not.
    const int legible = legibleRanks(W);
    const bool collapsed = n > legible;
    const int slots = collapsed ? legible : n;
    const int drawn = collapsed ? std::min(8, legible / 2) : n;
    const double gap = std::clamp(areaW / slots * 0.07, 2.0, 14.0);
    const double colW = (areaW - gap * (slots - 1)) / slots;
    const double qY = top + 10;
    const double fanH = std::clamp(H * 0.12, 34.0, 86.0);
    const double stripTop = qY + fanH + kCapH;
    const double stripMax = std::max(40.0, H - kBottom - stripTop - 6);
    f.stripArea = QRectF(kLeft, stripTop, areaW, stripMax);

    const bool mla = r.attention == AttentionKind::MLA;
    const std::int64_t kvpr = std::max<std::int64_t>(1, r.kvHeadsPerRank);
    const std::int64_t qpr = std::max<std::int64_t>(1, r.qHeadsPerRank);
    const double stripBytes = static_cast<double>(r.step.kvBytes) / static_cast<double>(kvpr);
    const double scale = scaleBytes > 0 ? scaleBytes : niceBytesCeil(stripBytes * 1.15);
    f.scaleBytes = scale;

    const double elems = mla ? static_cast<double>(r.kvLoraRank + r.qkRopeHeadDim)
                             : static_cast<double>(r.keyDim + r.valueDim);
    const double slotW = colW / static_cast<double>(kvpr);
    const double pxPerElem = std::min(56.0 / 256.0, slotW * 0.72 / std::max(1.0, elems));
    const double stripW = std::clamp(pxPerElem * elems, 2.0, slotW * 0.86);
    const double len = std::clamp(stripBytes / scale * stripMax, 2.0, stripMax);
    f.stripLen = len;

    const std::int64_t copies = std::max<std::int64_t>(1, r.kvCopies);
    auto headOf = [&](std::int64_t rank, std::int64_t s) {
        return r.kvReplicated ? rank / copies : rank * kvpr + s;
    };

    for (int rank = 0; rank < drawn; ++rank) {
        const double x0 = kLeft + rank * (colW + gap);
        Column col;
        col.x = x0;
        col.w = colW;
        col.rank = col.lastRank = rank;
        f.columns.push_back(col);
        const QColor c = rankColor(rank, dk);
        // KV strips of this rank.
        std::vector<std::uint64_t> rankStrips;
        for (std::int64_t s = 0; s < kvpr; ++s) {
            Item it;
            it.kind = Item::Strip;
            it.rank = rank;
            it.color = c;
            const double cx = x0 + slotW * (static_cast<double>(s) + 0.5);
            it.rect = QRectF(cx - stripW / 2, stripTop, stripW, len);
            if (mla) {
                it.key = kLatentTag | static_cast<std::uint64_t>(rank);
                it.copy = rank > 0;
                it.label = stripW > 60 ? tr("latent %1").arg(r.kvLoraRank + r.qkRopeHeadDim)
                                       : QStringLiteral("L");
            } else {
                it.head = headOf(rank, s);
                it.copyNo = r.kvReplicated ? rank % copies : 0;
                it.key = stripKey(it.head, it.copyNo);
                it.copy = it.copyNo > 0;
                it.label = stripW >= 44   ? tr("KV %1").arg(it.head)
                           : stripW >= 22 ? QString::number(it.head)
                                          : QString();
            }
            rankStrips.push_back(it.key);
            f.items.push_back(it);
        }
        // Query heads of this rank, fanning into their KV head; too many to tell apart (128
        // on one GPU) and each KV head's group becomes one bundle with its count.
        const double spacing = colW / static_cast<double>(qpr);
        const std::int64_t groupPerRank = std::max<std::int64_t>(1, qpr / kvpr);
        if (spacing < 6.0) {
            for (std::int64_t s = 0; s < kvpr; ++s) {
                Item it;
                it.kind = Item::Bundle;
                it.rank = rank;
                it.color = c;
                it.head = rank * qpr + s * groupPerRank; // the bundle's first query head
                it.count = std::min(groupPerRank, qpr - s * groupPerRank);
                it.copyNo = s; // the strip it feeds
                it.key = kBundleTag | (static_cast<std::uint64_t>(rank) << 24) |
                         static_cast<std::uint64_t>(s);
                const double a = x0 + spacing * static_cast<double>(s * groupPerRank);
                const double b = a + spacing * static_cast<double>(it.count);
                it.rect = QRectF(a + 1, qY - 3.5, std::max(2.0, b - a - 2), 7);
                it.target = rankStrips[static_cast<std::size_t>(s)];
                it.label = QStringLiteral("%1 q").arg(it.count);
                f.items.push_back(it);
            }
            continue;
        }
        const double rad = std::clamp(spacing * 0.34, 1.3, 7.0);
        for (std::int64_t k = 0; k < qpr; ++k) {
            Item it;
            it.kind = Item::Query;
            it.rank = rank;
            it.color = c;
            it.head = rank * qpr + k;
            it.key = kQueryTag | static_cast<std::uint64_t>(it.head);
            const double cx = x0 + spacing * (static_cast<double>(k) + 0.5);
            it.rect = QRectF(cx - rad, qY - rad, 2 * rad, 2 * rad);
            const std::size_t si =
                static_cast<std::size_t>(std::min<std::int64_t>(kvpr - 1, k / groupPerRank));
            it.target = rankStrips[si];
            f.items.push_back(it);
        }
    }
    if (collapsed) {
        Column b;
        b.brace = true;
        b.rank = drawn;
        b.lastRank = n - 1;
        b.x = kLeft + drawn * (colW + gap);
        b.w = kLeft + areaW - b.x;
        const int rest = n - drawn;
        // Identical: every rank stores the same bytes of the same data (the latent, or MQA's
        // one head copied everywhere).
        const bool identical = mla || r.kvHeads == 1;
        b.identical = identical;
        b.text = identical ? tr("× %1 identical ranks").arg(rest) : tr("× %1 more ranks").arg(rest);
        if (mla)
            b.subText = tr("each holds the whole latent");
        else if (identical)
            b.subText = tr("each holds KV head 0");
        else if (r.kvReplicated)
            b.subText = tr("KV heads %1…%2, each copied on %3 GPUs")
                            .arg(headOf(drawn, 0))
                            .arg(headOf(n - 1, 0))
                            .arg(copies);
        else if (kvpr == 1)
            b.subText = tr("each holds a KV head of its own (%1…%2)")
                            .arg(headOf(drawn, 0))
                            .arg(headOf(n - 1, 0));
        else
            b.subText = tr("each holds %1 KV heads of its own (%2…%3)")
                            .arg(kvpr)
                            .arg(headOf(drawn, 0))
                            .arg(headOf(n - 1, kvpr - 1));
        f.columns.push_back(b);
    }
    return f;
}

QString KvStripsView::tipFor(const Item& it) const {
    const Report& r = report_;
    const std::int64_t kvpr = std::max<std::int64_t>(1, r.kvHeadsPerRank);
    const double stripBytes = static_cast<double>(r.step.kvBytes) / static_cast<double>(kvpr);
    const QString bytesText = q(humanBytes(stripBytes));
    const QString exactText = q(withCommas(static_cast<std::int64_t>(std::llround(stripBytes))));
    const QString holds = tr("%1 request(s) × %2 tokens on this GPU")
                              .arg(q(withCommas(r.batch)), q(withCommas(r.contextPerRank)));
    const std::int64_t copies = std::max<std::int64_t>(1, r.kvCopies);
    switch (it.kind) {
    case Item::Query:
        return tr("query head %1 on GPU %2").arg(it.head).arg(it.rank);
    case Item::Bundle:
        return tr("<b>%1 query heads</b> (%2…%3) on GPU %4<br>all read %5")
            .arg(it.count)
            .arg(it.head)
            .arg(it.head + it.count - 1)
            .arg(it.rank)
            .arg(r.attention == AttentionKind::MLA
                     ? tr("the shared latent")
                     : tr("KV head %1")
                           .arg(r.kvReplicated ? it.rank / copies : it.rank * kvpr + it.copyNo));
    case Item::Strip:
        break;
    }
    if (r.attention == AttentionKind::MLA)
        return tr("<b>GPU %1 · MLA latent</b>%2<br>%3 wide per token per layer "
                  "(r %4 + d_rope %5)<br><b>%6</b> (%7 B)<br>%8")
            .arg(it.rank)
            .arg(it.copy ? tr(" (a copy: every GPU stores the whole latent)") : QString())
            .arg(r.kvLoraRank + r.qkRopeHeadDim)
            .arg(r.kvLoraRank)
            .arg(r.qkRopeHeadDim)
            .arg(bytesText, exactText, holds);
    return tr("<b>GPU %1 · KV head %2</b>%3<br>K %4 + V %5 wide per token per "
              "layer<br><b>%6</b> (%7 B)<br>%8")
        .arg(it.rank)
        .arg(it.head)
        .arg(it.copy ? tr(" — copy %1 of %2 (replicated: h_kv < TP)").arg(it.copyNo + 1).arg(copies)
                     : (copies > 1 ? tr(" — stored on %1 GPUs").arg(copies) : QString()))
        .arg(r.keyDim)
        .arg(r.valueDim)
        .arg(bytesText, exactText, holds);
}

QString KvStripsView::braceTip(const Column& c) const {
    const Report& r = report_;
    const std::int64_t kvpr = std::max<std::int64_t>(1, r.kvHeadsPerRank);
    const double stripBytes = static_cast<double>(r.step.kvBytes) / static_cast<double>(kvpr);
    return tr("<b>GPU %1 … %2</b>: %3, %4<br>each holds %5 strip(s) of <b>%6</b> (%7 B), "
              "%8 (%9 B) per GPU in all<br>%10 request(s) × %11 tokens on each GPU")
        .arg(c.rank)
        .arg(c.lastRank)
        .arg(c.text, c.subText)
        .arg(kvpr)
        .arg(q(humanBytes(stripBytes)),
             q(withCommas(static_cast<std::int64_t>(std::llround(stripBytes)))),
             q(humanBytes(static_cast<double>(r.step.kvBytes))), q(withCommas(r.step.kvBytes)),
             q(withCommas(r.batch)), q(withCommas(r.contextPerRank)));
}

void KvStripsView::paintEvent(QPaintEvent*) {
    QPainter p(this);
    paintFrame(p, size(), to_, interpolated());
}

void KvStripsView::paintTo(QPainter& p, const QSize& size) {
    const Frame f = layout(size, scaleBytes_);
    paintFrame(p, size, f, f.items);
}

void KvStripsView::paintFrame(QPainter& p, const QSize& size, const Frame& frame,
                              const std::vector<Item>& items) const {
    const bool dk = isDark(this);
    const QPalette& pal = palette();
    p.fillRect(QRect(QPoint(0, 0), size), pal.color(QPalette::Base));
    p.setRenderHint(QPainter::Antialiasing, true);
    p.setRenderHint(QPainter::TextAntialiasing, true);
    const QColor ink = pal.color(QPalette::WindowText);
    const QColor muted = mutedText(this);
    if (!hasReport_) {
        p.setPen(muted);
        p.drawText(QRect(QPoint(0, 0), size), Qt::AlignCenter, tr("No model loaded"));
        return;
    }
    const Report& r = report_;
    const bool mla = r.attention == AttentionKind::MLA;
    const QFont base = font();
    const QFontMetricsF fm(base);
    const double line = fm.height();

    // Caption: what is drawn, in words a lecture hall reads from the back. Nothing is cut
    // silently: a line too long for the view is elided and its full text is the caption's
    // tooltip.
    QStringList elided;
    const QFont titleFont = scaledFont(base, 1.6, true);
    const QFontMetricsF tfm(titleFont);
    p.setFont(titleFont);
    p.setPen(ink);
    const double titleH = tfm.height();
    const QString title = tr("%1 · %2 · TP = %3%4")
                              .arg(title_, q(variantWithGroup(r)))
                              .arg(r.tp)
                              .arg(r.dcp > 1 ? tr(" · DCP = %1").arg(r.dcp) : QString());
    // The per-GPU cell, big, top right; the title gets what is left, never overlapped. A title
    // that does not fit drops the g first, then the model's parenthetical, then elides.
    const QString big =
        tr("%1 / token / GPU").arg(q(humanBytes(static_cast<double>(r.cellBytesPerTokenPerRank))));
    const double bigW = tfm.horizontalAdvance(big);
    const double titleW = std::max(40.0, size.width() - kRight - 16 - bigW - 24);
    QString shown = title;
    if (tfm.horizontalAdvance(shown) > titleW) {
        QString model = title_;
        const QString shortTitle = tr("%1 · %2 · TP = %3%4")
                                       .arg(model, q(r.variant))
                                       .arg(r.tp)
                                       .arg(r.dcp > 1 ? tr(" · DCP = %1").arg(r.dcp) : QString());
        shown = shortTitle;
        if (tfm.horizontalAdvance(shown) > titleW && model.contains(QStringLiteral(" ("))) {
            model = model.left(model.indexOf(QStringLiteral(" (")));
            shown = tr("%1 · %2 · TP = %3%4")
                        .arg(model, q(r.variant))
                        .arg(r.tp)
                        .arg(r.dcp > 1 ? tr(" · DCP = %1").arg(r.dcp) : QString());
        }
        if (tfm.horizontalAdvance(shown) > titleW)
            shown = tfm.elidedText(shown, Qt::ElideRight, titleW);
        elided << title;
    }
    p.drawText(QRectF(16, 8, titleW, titleH), Qt::AlignLeft | Qt::AlignVCenter, shown);
    p.setPen(accentColor(dk));
    p.drawText(QRectF(size.width() - kRight - bigW - 4, 8, bigW + 4, titleH),
               Qt::AlignRight | Qt::AlignVCenter, big);

    p.setFont(base);
    const double capY = 8 + titleH + 4;
    QString line1;
    if (mla)
        line1 = tr("%1 query heads share one latent per token per layer: r %2 + d_rope %3 = %4 "
                   "wide")
                    .arg(r.qHeads)
                    .arg(r.kvLoraRank)
                    .arg(r.qkRopeHeadDim)
                    .arg(r.kvLoraRank + r.qkRopeHeadDim);
    else
        line1 = tr("%1 query heads → %2 KV head%3 (g = %4) · %5 KV head%6 per GPU · strip = K+V "
                   "of one KV head")
                    .arg(r.qHeads)
                    .arg(r.kvHeads)
                    .arg(r.kvHeads == 1 ? QString() : QStringLiteral("s"))
                    .arg(q(fixed(r.groupSize, r.groupSize == std::floor(r.groupSize) ? 0 : 2)))
                    .arg(r.kvHeadsPerRank)
                    .arg(r.kvHeadsPerRank == 1 ? QString() : QStringLiteral("s"));
    const QString line2 =
        tr("Strip length ∝ bytes held: %1 request%2 × %3 tokens = %4 per strip")
            .arg(q(withCommas(r.batch)), r.batch == 1 ? QString() : QStringLiteral("s"),
                 q(withCommas(r.contextPerRank)),
                 q(humanBytes(static_cast<double>(r.step.kvBytes) /
                              static_cast<double>(std::max<std::int64_t>(1, r.kvHeadsPerRank)))));
    QString line3;
    bool warn = false;
    if (r.kvReplicated && !mla) {
        line3 = tr("h_kv = %1 < TP = %2: each KV head copied on %3 GPUs (hatched), the per-GPU "
                   "cell stops shrinking")
                    .arg(r.kvHeads)
                    .arg(r.tp)
                    .arg(r.kvCopies);
        warn = true;
    } else if (mla && r.tp > 1) {
        line3 = tr("Hatched = the same latent again on GPU 1…%1").arg(r.tp - 1);
    }
    const double lineW = size.width() - 32;
    auto drawLine = [&](int i, const QString& text, const QColor& color) {
        if (text.isEmpty())
            return;
        p.setPen(color);
        const QString e = fm.elidedText(text, Qt::ElideRight, lineW);
        if (e != text)
            elided << text;
        p.drawText(QRectF(16, capY + line * 1.25 * i, lineW, line * 1.25),
                   Qt::AlignLeft | Qt::AlignVCenter, e);
    };
    drawLine(0, line1, muted);
    drawLine(1, line2, muted);
    drawLine(2, line3, warn ? warningColor(dk) : muted);
    captionTip_ = elided.isEmpty() ? QString() : elided.join(QStringLiteral("<br>"));

    // Ruler and grid over the strip area.
    const QRectF area = frame.stripArea;
    const QFont small = scaledFont(base, 0.9);
    p.setFont(small);
    const QFontMetricsF sfm(small);
    QColor grid = ink;
    grid.setAlpha(dk ? 36 : 26);
    p.setRenderHint(QPainter::Antialiasing, false); // horizontal hairlines: crisp and cheap
    for (int i = 0; i <= 4; ++i) {
        const double y = area.top() + area.height() * i / 4.0;
        p.setPen(QPen(grid, 1));
        p.drawLine(QPointF(area.left() - 6, y), QPointF(area.right(), y));
        p.setPen(muted);
        const QString label =
            i == 0 ? QStringLiteral("0") : q(humanBytes(frame.scaleBytes * i / 4.0));
        p.drawText(QRectF(0, y - sfm.height() / 2, kLeft - 10, sfm.height()),
                   Qt::AlignRight | Qt::AlignVCenter, label);
    }
    p.setRenderHint(QPainter::Antialiasing, true);

    // Rank columns: a tinted panel and a label per GPU; the brace for the collapsed ranks.
    const QFont rankFont = scaledFont(base, 1.05, true);
    p.setFont(rankFont);
    const double panelTop = area.top() - kCapH - 4 - 2;
    const double panelH = area.height() + kCapH + 6 + 4;
    for (const Column& col : frame.columns) {
        if (col.brace) {
            // A stack of rank panels, the count big in the middle and what each holds below:
            // replication reads at a glance.
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
            p.drawText(QRectF(textBox.left(), textBox.top(), textBox.width(), cfm.height()),
                       Qt::AlignLeft | Qt::AlignVCenter,
                       QStringLiteral("× %1").arg(col.lastRank - col.rank + 1));
            const QFont kindFont = scaledFont(base, 1.25, true);
            const QFontMetricsF kfm(kindFont);
            p.setFont(kindFont);
            const double ky = textBox.top() + cfm.height();
            p.drawText(QRectF(textBox.left(), ky, textBox.width(), kfm.height()),
                       Qt::AlignLeft | Qt::AlignVCenter,
                       kfm.elidedText(col.identical ? tr("identical ranks") : tr("more ranks"),
                                      Qt::ElideRight, textBox.width()));
            p.setFont(scaledFont(base, 1.1));
            p.setPen(muted);
            p.drawText(QRectF(textBox.left(), ky + kfm.height() + 4, textBox.width(),
                              textBox.bottom() - ky - kfm.height() - 4),
                       Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, col.subText);
            p.setFont(rankFont);
            p.setPen(dk ? c.lighter(115) : c.darker(115));
            p.drawText(QRectF(col.x, area.bottom() + 6, col.w, kBottom - 10),
                       Qt::AlignHCenter | Qt::AlignTop,
                       tr("GPU %1 … %2").arg(col.rank).arg(col.lastRank));
            continue;
        }
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
        p.drawText(QRectF(col.x - 10, area.bottom() + 6, col.w + 20, kBottom - 10),
                   Qt::AlignHCenter | Qt::AlignTop, label);
    }

    // Fans first (under the dots and strips).
    std::unordered_map<std::uint64_t, const Item*> byKey;
    for (const auto& it : items)
        byKey.emplace(it.key, &it);
    for (const auto& it : items) {
        if (it.kind != Item::Query && it.kind != Item::Bundle)
            continue;
        auto s = byKey.find(it.target);
        if (s == byKey.end())
            continue;
        QColor c = it.color;
        c.setAlphaF(static_cast<float>(std::min(it.alpha, s->second->alpha) * (dk ? 0.7 : 0.55)));
        const QRectF& sr = s->second->rect;
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

    // Strips with their caps: axis-aligned, drawn without antialiasing (see the panels).
    p.setRenderHint(QPainter::Antialiasing, false);
    const QFont capFont = scaledFont(base, 0.85, true);
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
            p.drawText(cap, Qt::AlignCenter,
                       QFontMetricsF(capFont).elidedText(it.label, Qt::ElideRight, cap.width()));
        }
    }
    p.setRenderHint(QPainter::Antialiasing, true);
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
            p.drawText(QRectF(it.rect.center().x() - 60, it.rect.top() - cfm.height() - 1, 120,
                              cfm.height()),
                       Qt::AlignHCenter | Qt::AlignBottom,
                       cfm.horizontalAdvance(it.label) <= it.rect.width() + 16
                           ? it.label
                           : QString::number(it.count));
            continue;
        }
        if (it.kind != Item::Query || it.alpha <= 0.01)
            continue;
        QColor c = it.color;
        c.setAlphaF(static_cast<float>(it.alpha));
        p.setPen(QPen(pal.color(QPalette::Base), it.rect.width() > 6 ? 1.2 : 0.5));
        p.setBrush(c);
        p.drawEllipse(it.key == hovered_ ? it.rect.adjusted(-2, -2, 2, 2) : it.rect);
    }
}

const KvStripsView::Item* KvStripsView::itemAt(const QPointF& pos) const {
    for (const auto& it : to_.items) {
        if ((it.kind == Item::Query || it.kind == Item::Bundle) &&
            it.rect.adjusted(-3, -3, 3, 3).contains(pos))
            return &it;
        if (it.kind == Item::Strip &&
            it.rect.adjusted(-2, -kCapH, 2, 0)
                .united(QRectF(it.rect.topLeft(), QSizeF(it.rect.width(), 8)))
                .contains(pos))
            return &it;
    }
    return nullptr;
}

QString KvStripsView::toolTipAt(const QPointF& pos) const {
    if (const Item* it = itemAt(pos))
        return tipFor(*it);
    for (const Column& c : to_.columns)
        if (c.brace && pos.x() >= c.x && pos.x() <= c.x + c.w &&
            pos.y() >= to_.stripArea.top() - kCapH - 8 && pos.y() <= to_.stripArea.bottom() + 6)
            return braceTip(c);
    // The caption lines, whose full text the view may have elided.
    if (pos.y() < to_.captionBottom && !captionTip_.isEmpty())
        return captionTip_;
    return {};
}

void KvStripsView::mouseMoveEvent(QMouseEvent* e) {
    const Item* it = itemAt(e->position());
    const std::uint64_t key = it ? it->key : ~0ull;
    if (key != hovered_) {
        hovered_ = key;
        update();
    }
    const QString tip = toolTipAt(e->position());
    if (!tip.isEmpty())
        QToolTip::showText(e->globalPosition().toPoint(), tip, this);
    else
        QToolTip::hideText();
}

void KvStripsView::leaveEvent(QEvent*) {
    hovered_ = ~0ull;
    update();
}

} // namespace kvscope::ui
