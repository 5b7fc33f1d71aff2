#include "ui/kvstripsview.h"

#include "core/format.h"
#include "ui/theme.h"
#include "ui/tickers.h"

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

KvStripsView::Frame KvStripsView::layout(const QSize& size, double scaleBytes) const {
    Frame f;
    const Report& r = report_;
    if (r.tp <= 0 || r.qHeads <= 0)
        return f;
    const bool dk = isDark(this);
    const QFontMetricsF fm(font());
    const double line = fm.height();
    const double top = line * 1.6 + line * 1.25 * 2 + 14; // title + two caption lines
    const double W = size.width(), H = size.height();
    const int n = static_cast<int>(r.tp);
    const double areaW = std::max(60.0, W - kLeft - kRight);
    const double gap = std::clamp(areaW / n * 0.07, 2.0, 14.0);
    const double colW = (areaW - gap * (n - 1)) / n;
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

    const std::int64_t copies = std::max<std::int64_t>(1, r.kvCopies);
    const QString bytesText = q(humanBytes(stripBytes));
    const QString exactText = q(withCommas(static_cast<std::int64_t>(std::llround(stripBytes))));
    const QString holds = tr("%1 request(s) × %2 tokens on this GPU")
                              .arg(q(withCommas(r.batch)), q(withCommas(r.contextPerRank)));

    for (int rank = 0; rank < n; ++rank) {
        const double x0 = kLeft + rank * (colW + gap);
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
                it.tip = tr("<b>GPU %1 · MLA latent</b>%2<br>%3 wide per token per layer "
                            "(r %4 + d_rope %5)<br><b>%6</b> (%7 B)<br>%8")
                             .arg(rank)
                             .arg(it.copy ? tr(" (a copy: every GPU stores the whole latent)")
                                          : QString())
                             .arg(r.kvLoraRank + r.qkRopeHeadDim)
                             .arg(r.kvLoraRank)
                             .arg(r.qkRopeHeadDim)
                             .arg(bytesText, exactText, holds);
            } else {
                std::int64_t head, copy;
                if (r.kvReplicated) {
                    head = rank / copies;
                    copy = rank % copies;
                } else {
                    head = rank * kvpr + s;
                    copy = 0;
                }
                it.key = stripKey(head, copy);
                it.copy = copy > 0;
                it.label = stripW >= 44   ? tr("KV %1").arg(head)
                           : stripW >= 22 ? QString::number(head)
                                          : QString();
                it.tip = tr("<b>GPU %1 · KV head %2</b>%3<br>K %4 + V %5 wide per token per "
                            "layer<br><b>%6</b> (%7 B)<br>%8")
                             .arg(rank)
                             .arg(head)
                             .arg(it.copy ? tr(" — copy %1 of %2 (replicated: h_kv < TP)")
                                                .arg(copy + 1)
                                                .arg(copies)
                                          : (copies > 1 ? tr(" — stored on %1 GPUs").arg(copies)
                                                        : QString()))
                             .arg(r.keyDim)
                             .arg(r.valueDim)
                             .arg(bytesText, exactText, holds);
            }
            rankStrips.push_back(it.key);
            f.items.push_back(it);
        }
        // Query heads of this rank, fanning into their KV head.
        const double spacing = colW / static_cast<double>(qpr);
        const double rad = std::clamp(spacing * 0.34, 1.3, 7.0);
        const std::int64_t groupPerRank = std::max<std::int64_t>(1, qpr / kvpr);
        for (std::int64_t k = 0; k < qpr; ++k) {
            Item it;
            it.kind = Item::Query;
            it.rank = rank;
            it.color = c;
            const std::int64_t qi = rank * qpr + k;
            it.key = kQueryTag | static_cast<std::uint64_t>(qi);
            const double cx = x0 + spacing * (static_cast<double>(k) + 0.5);
            it.rect = QRectF(cx - rad, qY - rad, 2 * rad, 2 * rad);
            const std::size_t si =
                static_cast<std::size_t>(std::min<std::int64_t>(kvpr - 1, k / groupPerRank));
            it.target = rankStrips[si];
            it.tip = tr("query head %1 on GPU %2").arg(qi).arg(rank);
            f.items.push_back(it);
        }
    }
    return f;
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

    // Caption: what is drawn, in words a lecture hall reads from the back.
    const QFont titleFont = scaledFont(base, 1.6, true);
    p.setFont(titleFont);
    p.setPen(ink);
    const double titleH = QFontMetricsF(titleFont).height();
    const QString title = tr("%1 · %2 · TP = %3%4")
                              .arg(title_, q(r.variant))
                              .arg(r.tp)
                              .arg(r.dcp > 1 ? tr(" · DCP = %1").arg(r.dcp) : QString());
    // The per-GPU cell, big, top right; the title gets what is left, elided, never overlapped.
    const QString big =
        tr("%1 / token / GPU").arg(q(humanBytes(static_cast<double>(r.cellBytesPerTokenPerRank))));
    const double bigW = QFontMetricsF(titleFont).horizontalAdvance(big);
    const double titleW = std::max(40.0, size.width() - kRight - 16 - bigW - 24);
    p.drawText(QRectF(16, 8, titleW, titleH), Qt::AlignLeft | Qt::AlignVCenter,
               QFontMetricsF(titleFont).elidedText(title, Qt::ElideRight, titleW));
    p.setPen(accentColor(dk));
    p.drawText(QRectF(size.width() - kRight - bigW - 4, 8, bigW + 4, titleH),
               Qt::AlignRight | Qt::AlignVCenter, big);

    p.setFont(base);
    p.setPen(muted);
    const double capY = 8 + titleH + 4;
    QString line1;
    if (mla)
        line1 = tr("%1 query heads read one shared latent (r %2 + d_rope %3 = %4 wide) per token "
                   "per layer; every GPU stores it whole")
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
    p.drawText(QRectF(16, capY, size.width() - 32, line * 1.25), Qt::AlignLeft | Qt::AlignVCenter,
               fm.elidedText(line1, Qt::ElideRight, size.width() - 32));
    QString line2 =
        tr("Strip length ∝ bytes held: %1 request%2 × %3 tokens = %4 per strip")
            .arg(q(withCommas(r.batch)), r.batch == 1 ? QString() : QStringLiteral("s"),
                 q(withCommas(r.contextPerRank)),
                 q(humanBytes(static_cast<double>(r.step.kvBytes) /
                              static_cast<double>(std::max<std::int64_t>(1, r.kvHeadsPerRank)))));
    bool warn = false;
    if (r.kvReplicated && !mla) {
        line2 += tr("  ·  h_kv = %1 < TP = %2: each KV head copied on %3 GPUs (hatched), the "
                    "per-GPU cell stops shrinking")
                     .arg(r.kvHeads)
                     .arg(r.tp)
                     .arg(r.kvCopies);
        warn = true;
    } else if (mla && r.tp > 1) {
        line2 += tr("  ·  hatched = the same latent again on GPU 1…%1").arg(r.tp - 1);
    }
    p.setPen(warn ? warningColor(dk) : muted);
    p.drawText(QRectF(16, capY + line * 1.25, size.width() - 32, line * 1.25),
               Qt::AlignLeft | Qt::AlignVCenter,
               fm.elidedText(line2, Qt::ElideRight, size.width() - 32));

    // Ruler and grid over the strip area.
    const QRectF area = frame.stripArea;
    const QFont small = scaledFont(base, 0.9);
    p.setFont(small);
    const QFontMetricsF sfm(small);
    QColor grid = ink;
    grid.setAlpha(dk ? 36 : 26);
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

    // Rank columns: a tinted panel and a label per GPU.
    const int n = static_cast<int>(r.tp);
    const double areaW = area.width();
    const double gap = std::clamp(areaW / n * 0.07, 2.0, 14.0);
    const double colW = (areaW - gap * (n - 1)) / n;
    const QFont rankFont = scaledFont(base, n > 16 ? 0.85 : 1.05, true);
    p.setFont(rankFont);
    for (int rank = 0; rank < n; ++rank) {
        const double x0 = area.left() + rank * (colW + gap);
        QColor c = rankColor(rank, dk);
        QColor tint = c;
        tint.setAlpha(dk ? 34 : 22);
        p.setPen(Qt::NoPen);
        p.setBrush(tint);
        p.drawRoundedRect(
            QRectF(x0, area.top() - kCapH - 4 - 2, colW, area.height() + kCapH + 6 + 4), 6, 6);
        p.setPen(dk ? c.lighter(115) : c.darker(115));
        const QString label = colW >= 58 ? tr("GPU %1").arg(rank) : QString::number(rank);
        if (colW >= 12 || rank % 4 == 0)
            p.drawText(QRectF(x0 - 10, area.bottom() + 6, colW + 20, kBottom - 10),
                       Qt::AlignHCenter | Qt::AlignTop, label);
    }

    // Fans first (under the dots and strips).
    std::unordered_map<std::uint64_t, const Item*> byKey;
    for (const auto& it : items)
        byKey.emplace(it.key, &it);
    for (const auto& it : items) {
        if (it.kind != Item::Query)
            continue;
        auto s = byKey.find(it.target);
        if (s == byKey.end())
            continue;
        QColor c = it.color;
        c.setAlphaF(static_cast<float>(std::min(it.alpha, s->second->alpha) * (dk ? 0.7 : 0.55)));
        const QPointF a = it.rect.center() + QPointF(0, it.rect.height() / 2);
        const QRectF& sr = s->second->rect;
        const QPointF b(sr.center().x(), sr.top() - kCapH);
        QPainterPath path(a);
        path.cubicTo(QPointF(a.x(), (a.y() + b.y()) / 2), QPointF(b.x(), (a.y() + b.y()) / 2), b);
        p.setPen(QPen(c, it.key == hovered_ ? 2.5 : 1.3));
        p.setBrush(Qt::NoBrush);
        p.drawPath(path);
    }

    // Strips with their caps.
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
    // Query dots on top.
    for (const auto& it : items) {
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
        if (it.kind == Item::Query && it.rect.adjusted(-3, -3, 3, 3).contains(pos))
            return &it;
        if (it.kind == Item::Strip &&
            it.rect.adjusted(-2, -kCapH, 2, 0)
                .united(QRectF(it.rect.topLeft(), QSizeF(it.rect.width(), 8)))
                .contains(pos))
            return &it;
    }
    return nullptr;
}

void KvStripsView::mouseMoveEvent(QMouseEvent* e) {
    const Item* it = itemAt(e->position());
    const std::uint64_t key = it ? it->key : ~0ull;
    if (key != hovered_) {
        hovered_ = key;
        update();
    }
    if (it)
        QToolTip::showText(e->globalPosition().toPoint(), it->tip, this);
    else
        QToolTip::hideText();
}

void KvStripsView::leaveEvent(QEvent*) {
    hovered_ = ~0ull;
    update();
}

} // namespace kvscope::ui
