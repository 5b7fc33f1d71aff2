#include "ui/kvstripsview.h"

#include "core/format.h"
#include "ui/kvstripsgeometry.h"
#include "ui/kvstripsgroups.h"
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

using namespace strips;

namespace {

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
    const QString drawn = drawnKey(report, modelTitle);
    if (hasReport_ && drawn == drawn_) {
        report_ = report; // the same picture: only the tooltips' other numbers may differ
        return;
    }
    const bool modelChanged =
        modelTitle != title_ || report.layers != report_.layers || report.qHeads != report_.qHeads;
    report_ = report;
    title_ = modelTitle;
    drawn_ = drawn;
    hasReport_ = true;
    if (modelChanged)
        scaleBytes_ = 0;
    relayout(animated_ && isVisible());
}

QString KvStripsView::drawnKey(const Report& r, const QString& title) {
    QString k = title + QLatin1Char('|') + q(r.variant);
    for (std::int64_t v :
         {static_cast<std::int64_t>(r.attention), r.layers, r.qHeads, r.kvHeads, r.keyDim,
          r.valueDim, r.kvLoraRank, r.qkRopeHeadDim, r.tp, r.dcp, r.qHeadsPerRank, r.kvHeadsPerRank,
          static_cast<std::int64_t>(r.kvReplicated), r.kvCopies, r.cellBytesPerTokenPerRank,
          r.batch, r.contextPerRank, r.step.kvBytes})
        k += QLatin1Char('|') + QString::number(v);
    return k + QLatin1Char('|') + QString::number(r.groupSize);
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

QString KvStripsView::collapsedText() const {
    for (const Column& c : to_.columns)
        if (c.brace)
            return c.text;
    return {};
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
    const QString groups = groupTipLine(r, stripBytes);
    return tr("<b>GPU %1 · KV head %2</b>%3<br>K %4 + V %5 wide per token per "
              "layer<br><b>%6</b> (%7 B)%9<br>%8")
        .arg(it.rank)
        .arg(it.head)
        .arg(it.copy ? tr(" — copy %1 of %2 (replicated: h_kv < TP)").arg(it.copyNo + 1).arg(copies)
                     : (copies > 1 ? tr(" — stored on %1 GPUs").arg(copies) : QString()))
        .arg(r.keyDim)
        .arg(r.valueDim)
        .arg(bytesText, exactText, holds, groups.isEmpty() ? QString() : tr("<br>") + groups);
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
