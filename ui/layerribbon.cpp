#include "ui/layerribbon.h"

#include "core/format.h"
#include "ui/theme.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>

namespace kvscope::ui {

namespace {
constexpr double kLeft = 84, kRight = 18, kMtpGap = 14; // aligned with the strips' ruler

QColor kindColor(LayerKind k, bool dark) {
    switch (k) {
    case LayerKind::Full:
        return dark ? QColor(0x56, 0xb4, 0xe9) : QColor(0x00, 0x72, 0xb2);
    case LayerKind::Sliding:
        return QColor(0xe6, 0x9f, 0x00);
    case LayerKind::Chunked:
        return QColor(0xcc, 0x79, 0xa7);
    case LayerKind::Mla:
        return QColor(0x00, 0x9e, 0x73);
    case LayerKind::Compressed:
        return dark ? QColor(0x7f, 0xd8, 0xbe) : QColor(0x00, 0x5f, 0x45);
    case LayerKind::Cross:
        return QColor(0xd5, 0x5e, 0x00);
    case LayerKind::Linear:
        return QColor(0xf0, 0xe4, 0x42);
    case LayerKind::Mamba:
        return QColor(0x88, 0x44, 0xaa);
    case LayerKind::None:
        break;
    }
    return QColor(0x99, 0x99, 0x99);
}
} // namespace

QString layerKindName(LayerKind k) {
    switch (k) {
    case LayerKind::Full:
        return QObject::tr("full");
    case LayerKind::Sliding:
        return QObject::tr("sliding");
    case LayerKind::Chunked:
        return QObject::tr("chunked");
    case LayerKind::Mla:
        return QObject::tr("MLA");
    case LayerKind::Compressed:
        return QObject::tr("compressed");
    case LayerKind::Cross:
        return QObject::tr("cross");
    case LayerKind::Linear:
        return QObject::tr("linear");
    case LayerKind::Mamba:
        return QObject::tr("Mamba");
    case LayerKind::None:
        break;
    }
    return QObject::tr("none");
}

std::vector<LayerKind> layerKindsFromModel(const ModelSpec& m) {
    const auto n = static_cast<std::size_t>(std::max<std::int64_t>(0, m.layers.value));
    std::vector<LayerKind> out(n, LayerKind::None);
    for (const LayerGroup& g : m.layerGroups)
        for (std::int64_t i : g.layers)
            if (i >= 0 && static_cast<std::size_t>(i) < n)
                out[static_cast<std::size_t>(i)] = g.kind;
    return out;
}

std::vector<std::int64_t> layerWindowsFromModel(const ModelSpec& m) {
    const auto n = static_cast<std::size_t>(std::max<std::int64_t>(0, m.layers.value));
    std::vector<std::int64_t> out(n, 0);
    for (const LayerGroup& g : m.layerGroups)
        for (std::int64_t i : g.layers)
            if (i >= 0 && static_cast<std::size_t>(i) < n)
                out[static_cast<std::size_t>(i)] = g.window.value_or(0);
    return out;
}

LayerRibbon::LayerRibbon(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void LayerRibbon::setLayers(std::vector<LayerKind> kinds, std::vector<std::int64_t> windows,
                            std::int64_t mtp) {
    if (kinds == kinds_ && windows == windows_ && mtp == mtp_)
        return;
    kinds_ = std::move(kinds);
    windows_ = std::move(windows);
    mtp_ = std::max<std::int64_t>(0, mtp);
    update();
}

QSize LayerRibbon::sizeHint() const {
    return {900, fontMetrics().height() * 2 + 12};
}
QSize LayerRibbon::minimumSizeHint() const {
    return {200, fontMetrics().height() * 2 + 12};
}

QRectF LayerRibbon::markRect(int i) const {
    const int n = static_cast<int>(kinds_.size());
    const double total = static_cast<double>(n + mtp_);
    if (total <= 0)
        return {};
    const double w = std::max(40.0, width() - kLeft - kRight - (mtp_ > 0 ? kMtpGap : 0));
    const double step = w / total;
    const double x = kLeft + step * i + (i >= n ? kMtpGap : 0);
    const double top = 4, h = fontMetrics().height() * 0.9;
    return {x, top, std::max(1.0, step - (step > 4 ? 1.0 : 0.0)), h};
}

void LayerRibbon::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().color(QPalette::Base));
    const bool dk = isDark(this);
    const int n = static_cast<int>(kinds_.size());
    p.setPen(mutedText(this));
    p.setFont(scaledFont(font(), 0.9));
    p.drawText(QRectF(0, 0, kLeft - 10, fontMetrics().height() + 4),
               Qt::AlignRight | Qt::AlignVCenter, tr("layers"));
    for (int i = 0; i < n + static_cast<int>(mtp_); ++i) {
        const QRectF r = markRect(i);
        if (i < n) {
            p.fillRect(r, kindColor(kinds_[static_cast<std::size_t>(i)], dk));
        } else {
            // The MTP layers: outlined, apart (no KV cache is counted for them).
            p.setPen(QPen(mutedText(this), 1, Qt::DashLine));
            p.setBrush(Qt::NoBrush);
            p.drawRect(r.adjusted(0.5, 0.5, -0.5, -0.5));
        }
    }
    // The legend: the kinds present, with their counts.
    double x = kLeft;
    const double y = markRect(0).bottom() + 3;
    const QFontMetricsF fm(p.font());
    for (int k = 0; k <= static_cast<int>(LayerKind::None); ++k) {
        const auto kind = static_cast<LayerKind>(k);
        const auto count = std::count(kinds_.begin(), kinds_.end(), kind);
        if (count == 0)
            continue;
        const QString text = tr("%1 %2").arg(layerKindName(kind)).arg(count);
        p.fillRect(QRectF(x, y + 3, 10, fm.height() - 6), kindColor(kind, dk));
        p.setPen(palette().color(QPalette::WindowText));
        p.drawText(QPointF(x + 14, y + fm.ascent()), text);
        x += 14 + fm.horizontalAdvance(text) + 14;
    }
    if (mtp_ > 0) {
        p.setPen(mutedText(this));
        p.drawText(QPointF(x, y + fm.ascent()), tr("MTP %1 (dashed, apart)").arg(mtp_));
    }
}

QString LayerRibbon::toolTipAt(const QPointF& pos) const {
    const int n = static_cast<int>(kinds_.size());
    for (int i = 0; i < n + static_cast<int>(mtp_); ++i) {
        if (!markRect(i).adjusted(-1, -2, 1, 2).contains(pos))
            continue;
        if (i >= n)
            return tr("multi-token-prediction layer %1 (not counted)").arg(i - n);
        const LayerKind k = kinds_[static_cast<std::size_t>(i)];
        const auto win =
            i < static_cast<int>(windows_.size()) ? windows_[static_cast<std::size_t>(i)] : 0;
        const QString w = QString::fromStdString(withCommas(win));
        if (k == LayerKind::Sliding && win > 0)
            return tr("layer %1: sliding window %2 tokens").arg(i).arg(w);
        if (k == LayerKind::Chunked && win > 0)
            return tr("layer %1: chunked, %2-token chunks").arg(i).arg(w);
        if (k == LayerKind::Compressed && win > 0)
            return tr("layer %1: compressed, one entry per %2 tokens").arg(i).arg(w);
        return tr("layer %1: %2").arg(i).arg(layerKindName(k));
    }
    return {};
}

void LayerRibbon::mouseMoveEvent(QMouseEvent* e) {
    const QString tip = toolTipAt(e->position());
    if (tip.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(e->globalPosition().toPoint(), tip, this);
}

} // namespace kvscope::ui
