#include "ui/rooflineplot.h"

#include "core/format.h"
#include "ui/theme.h"
#include "ui/tickers.h"

#include <QToolTip>
#include <algorithm>
#include <cmath>

namespace kvscope::ui {

namespace {
QString q(const std::string& s) {
    return QString::fromStdString(s);
}
double decadeFloor(double v) {
    return std::pow(10.0, std::floor(std::log10(v)));
}
QString intensityText(double i) {
    return q(fixed(i, i < 10 ? 1 : 0));
}
QString percentText(double f) {
    return q(fixed(f * 100.0, f < 0.1 ? 1 : 0)) + QLatin1Char('%');
}
} // namespace

RooflinePlot::RooflinePlot(QWidget* parent) : PlotWidget(parent) {
    setMouseTracking(true);
    xAxis->setScaleType(QCPAxis::stLogarithmic);
    yAxis->setScaleType(QCPAxis::stLogarithmic);
    xAxis->setTicker(QSharedPointer<SiLogTicker>::create());
    yAxis->setTicker(QSharedPointer<SiLogTicker>::create());
    xAxis->setLabel(tr("decode-attention intensity (FLOP / byte)"));
    legend->setVisible(false); // every line and point is labelled where it is
    yAxis->setLabel(tr("attainable FLOP/s"));
    connect(this, &QCustomPlot::afterLayout, this, &RooflinePlot::fitCallout);
    rebuild();
}

void RooflinePlot::setData(const RooflineData& data) {
    if (hasData_ && data == data_)
        return; // nothing moved (a context or batch step leaves this plot as it is)
    data_ = data;
    hasData_ = true;
    rebuild();
    requestReplot();
}

void RooflinePlot::setMeasuredPoints(const QVector<MeasuredPoint>& points) {
    measured_ = points;
    rebuild();
    requestReplot();
}

void RooflinePlot::setMeasuredCeilings(const MeasuredCeilings& ceilings) {
    ceilings_ = ceilings;
    rebuild();
    requestReplot();
}

void RooflinePlot::setMeasuredVisible(bool visible) {
    if (visible == measuredVisible_)
        return;
    measuredVisible_ = visible;
    rebuild();
    requestReplot();
    Q_EMIT measuredVisibleChanged(visible);
}

QRectF RooflinePlot::calloutRect() const {
    if (!callout_)
        return {};
    return QRectF(callout_->topLeft->pixelPosition(), callout_->bottomRight->pixelPosition());
}

void RooflinePlot::fitCallout() {
    // A narrow plot (presentation fonts, four docks across 1080p) shrinks the callout's font
    // rather than clipping its left edge.
    if (!callout_)
        return;
    QFont f = calloutFont_;
    const int textWidth = QFontMetrics(f).boundingRect(QRect(), 0, callout_->text()).width() + 14;
    const int room = axisRect()->width() * 94 / 100;
    if (room > 80 && textWidth > room)
        f.setPointSizeF(f.pointSizeF() * room / textWidth);

    // Candidate corners, in order of preference: under the flat roof (bottom right), above the
    // slope (top left, where nothing but rising labels is drawn), then mid right. A CPU's
    // measured points sit far below a GPU's roof, right where the first corner is.
    struct Place {
        double rx, ry;
        Qt::Alignment align;
        bool arrowFromBottom;
    };
    static const Place places[] = {
        {0.97, 0.96, Qt::AlignRight | Qt::AlignBottom, false},
        {0.03, 0.04, Qt::AlignLeft | Qt::AlignTop, true},
        {0.97, 0.55, Qt::AlignRight | Qt::AlignVCenter, false},
    };
    const QRect ar = axisRect()->rect();
    auto rectFor = [&](const Place& p, const QSizeF& box) {
        const QPointF a(ar.left() + p.rx * ar.width(), ar.top() + p.ry * ar.height());
        const double x = p.align & Qt::AlignRight ? a.x() - box.width() : a.x();
        const double y = p.align & Qt::AlignBottom    ? a.y() - box.height()
                         : p.align & Qt::AlignVCenter ? a.y() - box.height() / 2
                                                      : a.y();
        return QRectF(QPointF(x, y), box);
    };
    // What the callout must not hide: every plotted point (3 each) and every other label (1).
    QVector<QPointF> points;
    for (const auto& v : data_.variants)
        if (v.intensityFlopPerByte > 0 && v.attainableFlopPerS > 0)
            points.append({xAxis->coordToPixel(v.intensityFlopPerByte),
                           yAxis->coordToPixel(v.attainableFlopPerS)});
    if (measuredVisible_)
        for (const auto& m : measured_)
            if (m.intensityFlopPerByte > 0 && m.achievedFlopPerS > 0)
                points.append({xAxis->coordToPixel(m.intensityFlopPerByte),
                               yAxis->coordToPixel(m.achievedFlopPerS)});
    QVector<QRectF> labels;
    for (int i = 0; i < itemCount(); ++i) {
        auto* t = qobject_cast<QCPItemText*>(item(i));
        if (!t || t == callout_)
            continue;
        const QPointF c[4] = {t->topLeft->pixelPosition(), t->topRight->pixelPosition(),
                              t->bottomLeft->pixelPosition(), t->bottomRight->pixelPosition()};
        double x0 = c[0].x(), x1 = x0, y0 = c[0].y(), y1 = y0; // rotated labels too
        for (const QPointF& p : c) {
            x0 = std::min(x0, p.x()), x1 = std::max(x1, p.x());
            y0 = std::min(y0, p.y()), y1 = std::max(y1, p.y());
        }
        labels.append(QRectF(QPointF(x0, y0), QPointF(x1, y1)));
    }
    // The first corner that hides nothing, at full size, else at 90% or 80% of it, else with
    // its list of coinciding variants wrapped (a narrow dock: the box is most of the axis
    // width); else the text, corner and size that hide least.
    const Place* best = &places[0];
    double bestScale = 1.0;
    QString bestText = calloutTexts_.isEmpty() ? callout_->text() : calloutTexts_.front();
    int bestCost = -1;
    for (const QString& text : calloutTexts_) {
        for (const double scale : {1.0, 0.9, 0.8}) {
            QFont fs = f;
            fs.setPointSizeF(f.pointSizeF() * scale);
            const QRect tb = QFontMetrics(fs).boundingRect(QRect(), 0, text);
            const QSizeF box(tb.width() + 14, tb.height() + 8);
            for (const Place& p : places) {
                const QRectF r = rectFor(p, box).adjusted(-6, -6, 6, 6);
                int cost = 0;
                for (const QPointF& pt : points)
                    cost += r.contains(pt) ? 3 : 0;
                for (const QRectF& l : labels)
                    cost += r.intersects(l) ? 1 : 0;
                if (bestCost < 0 || cost < bestCost) {
                    bestCost = cost;
                    best = &p;
                    bestScale = scale;
                    bestText = text;
                }
                if (cost == 0)
                    break;
            }
            if (bestCost == 0)
                break;
        }
        if (bestCost == 0)
            break;
    }
    callout_->setText(bestText);
    f.setPointSizeF(f.pointSizeF() * bestScale);
    callout_->setFont(f);
    callout_->position->setCoords(best->rx, best->ry);
    callout_->setPositionAlignment(best->align);
    if (calloutArrow_)
        calloutArrow_->start->setParentAnchor(best->arrowFromBottom ? callout_->bottom
                                                                    : callout_->left);
}

void RooflinePlot::rebuild() {
    clearGraphs();
    clearItems();
    floating_.clear();
    styleAxes();
    if (!hasData_ || data_.bandwidthBytesPerS <= 0 || data_.peakBf16FlopPerS <= 0)
        return;
    const bool dk = dark();
    const double bw = data_.bandwidthBytesPerS;
    const double peak = data_.peakBf16FlopPerS;
    const double ridge = data_.ridgeFlopPerByte > 0 ? data_.ridgeFlopPerByte : peak / bw;

    double minI = ridge, maxI = ridge, minY = peak;
    for (const auto& v : data_.variants) {
        if (v.intensityFlopPerByte > 0) {
            minI = std::min(minI, v.intensityFlopPerByte);
            maxI = std::max(maxI, v.intensityFlopPerByte);
            minY = std::min(minY, v.attainableFlopPerS);
        }
    }
    if (measuredVisible_)
        for (const auto& m : measured_)
            if (m.intensityFlopPerByte > 0 && m.achievedFlopPerS > 0) {
                minI = std::min(minI, m.intensityFlopPerByte);
                maxI = std::max(maxI, m.intensityFlopPerByte);
                minY = std::min(minY, m.achievedFlopPerS);
            }
    const double x0 = minI / 2.5;
    const double x1 = std::max(maxI, ridge) * 5;
    const double y0 = decadeFloor(std::min(minY, bw * x0) / 1.5);
    xAxis->setRange(x0, x1);
    yAxis->setRange(y0, peak * 4); // room above the roof for the ridge label

    const QColor ink = textColor();
    // Bandwidth slope up to the ridge, then the bf16 tensor roof.
    auto* roof = addGraph();
    roof->setName(
        tr("roof: %1 HBM · %2 bf16 tensor").arg(q(humanBandwidth(bw)), q(humanFlops(peak))));
    roof->setData({x0, ridge, x1}, {bw * x0, peak, peak}, true);
    roof->setPen(QPen(ink, 2.5));
    roof->setAntialiased(true);

    addFloating(addLabel(x1 / 1.1, peak / 1.12, tr("bf16 tensor %1").arg(q(humanFlops(peak))),
                         Qt::AlignRight | Qt::AlignTop, ink, 0.95),
                {{x1 / 1.1, peak / 1.12, Qt::AlignRight | Qt::AlignTop},
                 {x1 / 1.1, peak * 1.12, Qt::AlignRight | Qt::AlignBottom}});
    {
        // The slope's label sits along its lower-left stretch, further along (or above the
        // slope) when a variant's point is there.
        std::vector<Spot> spots;
        for (const double k : {1.6, 4.0, 10.0, 0.6})
            spots.push_back(
                k >= 1 ? Spot{x0 * k, bw * x0 * k / 1.8, Qt::AlignLeft | Qt::AlignTop}
                       : Spot{x0 * 4, bw * x0 * 4 * 1.8, Qt::AlignRight | Qt::AlignBottom});
        addFloating(addLabel(x0 * 1.6, bw * x0 * 1.6 / 1.8, tr("HBM %1").arg(q(humanBandwidth(bw))),
                             Qt::AlignLeft | Qt::AlignTop, ink, 0.95),
                    spots);
    }
    if (data_.peakFp32FlopPerS > 0) {
        const double r32 = data_.peakFp32FlopPerS / bw;
        auto* fp32 = addGraph();
        fp32->setName(tr("fp32 non-tensor %1").arg(q(humanFlops(data_.peakFp32FlopPerS))));
        fp32->setData({r32, x1}, {data_.peakFp32FlopPerS, data_.peakFp32FlopPerS}, true);
        fp32->setPen(QPen(mutedColor(), 2, Qt::DashLine));
        addLabel(x1 / 1.1, data_.peakFp32FlopPerS / 1.12,
                 tr("fp32 non-tensor %1").arg(q(humanFlops(data_.peakFp32FlopPerS))),
                 Qt::AlignRight | Qt::AlignTop, mutedColor(), 0.95);
    }

    // The ridge.
    auto* ridgeLine = new QCPItemLine(this);
    ridgeLine->start->setCoords(ridge, y0);
    ridgeLine->end->setCoords(ridge, peak);
    ridgeLine->setPen(QPen(mutedColor(), 1.5, Qt::DotLine));
    addLabel(ridge, peak * 1.25, tr("ridge %1 FLOP/B").arg(intensityText(ridge)),
             Qt::AlignHCenter | Qt::AlignBottom, mutedColor(), 1.0);

    // Variants of the current model.
    auto* variants = addGraph();
    variants->setName(tr("variants of this model"));
    variants->setLineStyle(QCPGraph::lsNone);
    const QColor vColor = dk ? QColor(0x56, 0xb4, 0xe9) : QColor(0x00, 0x72, 0xb2);
    variants->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssCircle, vColor, palette().color(QPalette::Base), 11));
    variants->setPen(QPen(vColor, 2));
    auto* mlaGraph = addGraph();
    mlaGraph->setName(tr("MLA latent"));
    mlaGraph->setLineStyle(QCPGraph::lsNone);
    const QColor mColor = rankColor(2, dk);
    mlaGraph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDiamond, QPen(mColor, 2),
                                              QBrush(palette().color(QPalette::Base)), 13));
    bool anyMla = false;
    const VariantPoint* current = nullptr;
    // Variants with the same per-GPU intensity coincide (past TP = h_kv they all hold one KV
    // head per GPU): one label names them all.
    std::vector<std::pair<const VariantPoint*, QStringList>> groups;
    for (const auto& v : data_.variants) {
        if (v.intensityFlopPerByte <= 0)
            continue;
        (v.mla ? mlaGraph : variants)->addData(v.intensityFlopPerByte, v.attainableFlopPerS);
        anyMla = anyMla || v.mla;
        if (v.current)
            current = &v;
        QString text = q(v.label);
        if (!v.note.empty())
            text += QStringLiteral(" (") + q(v.note) + QLatin1Char(')');
        auto same = std::find_if(groups.begin(), groups.end(), [&v](const auto& g) {
            return std::abs(g.first->intensityFlopPerByte / v.intensityFlopPerByte - 1) < 0.01;
        });
        if (same == groups.end())
            groups.push_back({&v, QStringList{text}});
        else {
            same->second.append(text);
            if (v.current)
                same->first = &v;
        }
    }
    QStringList sameAsCurrent;
    for (const auto& [v, names] : groups) {
        if (v->current) {
            for (const QString& n : names)
                if (n != q(v->label))
                    sameAsCurrent.append(n);
            continue;
        }
        // Vertical labels rising from each point: the space above the slope is empty, and
        // neighbours a factor of two apart never collide.
        // Three or more coinciding variants: the first and last, so the label fits above the
        // point (all five of DeepSeek-V3's GQA variants at TP 16 ran off the plot).
        const QString text = names.size() > 2 ? names.front() + QStringLiteral("…") + names.back()
                                              : names.join(QStringLiteral(" = "));
        auto* t = addLabel(v->intensityFlopPerByte, v->attainableFlopPerS * 1.5, text,
                           Qt::AlignLeft | Qt::AlignVCenter, v->mla ? mColor : vColor, 0.95, true);
        t->setRotation(-90);
        // Rising from the point, or hanging below it when the top of the plot is too close.
        addFloating(t, {{v->intensityFlopPerByte, v->attainableFlopPerS * 1.5,
                         Qt::AlignLeft | Qt::AlignVCenter},
                        {v->intensityFlopPerByte, v->attainableFlopPerS / 1.5,
                         Qt::AlignRight | Qt::AlignVCenter}});
    }
    if (!anyMla)
        removeGraph(mlaGraph);

    if (current) {
        auto* cur = addGraph();
        cur->setName(tr("current: %1 at %2 of bf16 peak")
                         .arg(q(current->label), percentText(current->fractionOfPeak)));
        cur->setLineStyle(QCPGraph::lsNone);
        const QColor acc = accentColor(dk);
        cur->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(acc, 3),
                                             QBrush(acc.lighter(dk ? 100 : 130)), 17));
        cur->addData(current->intensityFlopPerByte, current->attainableFlopPerS);
        // The callout sits in a corner of the axis rect, an arrow to the point: never clipped;
        // fitCallout() picks the corner once the layout is known.
        auto* t = addText();
        t->position->setType(QCPItemPosition::ptAxisRectRatio);
        t->position->setCoords(0.97, 0.96);
        t->setPositionAlignment(Qt::AlignRight | Qt::AlignBottom);
        t->setTextAlignment(Qt::AlignLeft);
        QString text = tr("%1 at %2 FLOP/B\n%3 of bf16 peak")
                           .arg(q(current->longLabel.empty() ? current->label : current->longLabel),
                                intensityText(current->intensityFlopPerByte),
                                percentText(current->fractionOfPeak));
        calloutTexts_ = QStringList{text};
        if (!sameAsCurrent.isEmpty()) {
            // Preferred on one line; wrapped (narrower) when a narrow dock has no free corner.
            // Past three names, the first and the last and how many (at TP 128 every variant of
            // a 128-head model coincides: the list ran off the plot).
            const QString same = sameAsCurrent.size() > 3
                                     ? tr("%1 … %2 (%3 variants)")
                                           .arg(sameAsCurrent.front(), sameAsCurrent.back())
                                           .arg(sameAsCurrent.size())
                                     : sameAsCurrent.join(QStringLiteral(", "));
            calloutTexts_ = QStringList{text + tr("\nsame per GPU: %1").arg(same),
                                        text + tr("\nsame per GPU:\n%1").arg(same)};
        }
        t->setText(calloutTexts_.front());
        t->setFont(labelFont(1.15, true));
        callout_ = t;
        calloutFont_ = t->font();
        t->setColor(acc);
        t->setBrush(QBrush(palette().color(QPalette::Base)));
        t->setPen(QPen(acc, 1));
        t->setPadding(QMargins(6, 3, 6, 3));
        auto* arrow = new QCPItemLine(this);
        arrow->start->setParentAnchor(t->left);
        calloutArrow_ = arrow;
        arrow->end->setCoords(current->intensityFlopPerByte, current->attainableFlopPerS);
        arrow->setHead(QCPLineEnding(QCPLineEnding::esSpikeArrow, 9, 11));
        arrow->setPen(QPen(acc, 1.5));
    }

    // The measured layer (filled by the measurement backends).
    if (measuredVisible_ && (!measured_.isEmpty() || ceilings_.readBytesPerS > 0)) {
        const QColor mc = rankColor(3, dk);
        if (ceilings_.readBytesPerS > 0) {
            const double mp = ceilings_.peakFlopPerS > 0 ? ceilings_.peakFlopPerS : peak;
            const double mr = mp / ceilings_.readBytesPerS;
            auto* mroof = addGraph();
            mroof->setName(
                tr("measured ceiling %1").arg(q(humanBandwidth(ceilings_.readBytesPerS))));
            mroof->setData({x0, mr, x1}, {ceilings_.readBytesPerS * x0, mp, mp}, true);
            mroof->setPen(QPen(mc, 1.5, Qt::DashDotLine));
            // Its label runs under its slope like the HBM label, further along when the two
            // slopes nearly coincide (a GPU measured against its own datasheet).
            const double xs = x0 * (ceilings_.readBytesPerS > bw / 3 ? 14 : 1.6);
            addLabel(xs, ceilings_.readBytesPerS * xs / 1.8,
                     tr("measured %1").arg(q(humanBandwidth(ceilings_.readBytesPerS))),
                     Qt::AlignLeft | Qt::AlignTop, mc, 0.95);
        }
        if (!measured_.isEmpty()) {
            auto* mg = addGraph();
            mg->setName(tr("measured"));
            mg->setLineStyle(QCPGraph::lsNone);
            mg->setScatterStyle(
                QCPScatterStyle(QCPScatterStyle::ssTriangle, QPen(mc, 2), QBrush(mc), 12));
            for (const auto& m : measured_)
                if (m.intensityFlopPerByte > 0 && m.achievedFlopPerS > 0)
                    mg->addData(m.intensityFlopPerByte, m.achievedFlopPerS);
        }
    }
}

void RooflinePlot::mouseMoveEvent(QMouseEvent* e) {
    PlotWidget::mouseMoveEvent(e);
    const QPointF p = e->position();
    auto near = [&](double x, double y) {
        const double px = xAxis->coordToPixel(x), py = yAxis->coordToPixel(y);
        return std::hypot(px - p.x(), py - p.y()) < 12;
    };
    for (const auto& v : data_.variants) {
        if (v.intensityFlopPerByte > 0 && near(v.intensityFlopPerByte, v.attainableFlopPerS)) {
            QString text =
                tr("<b>%1</b><br>intensity %2 FLOP/byte<br>attainable %3<br>%4 of bf16 "
                   "peak")
                    .arg(q(v.label), q(fixed(v.intensityFlopPerByte, 2)),
                         q(humanFlops(v.attainableFlopPerS)), percentText(v.fractionOfPeak));
            if (!v.note.empty())
                text += tr("<br>evaluated at %1 (the current TP refuses it)").arg(q(v.note));
            QToolTip::showText(e->globalPosition().toPoint(), text, this);
            return;
        }
    }
    if (measuredVisible_)
        for (const auto& m : measured_)
            if (near(m.intensityFlopPerByte, m.achievedFlopPerS)) {
                QToolTip::showText(e->globalPosition().toPoint(),
                                   m.tooltip.isEmpty() ? m.variant : m.tooltip, this);
                return;
            }
    QToolTip::hideText();
}

} // namespace kvscope::ui
