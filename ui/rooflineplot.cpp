#include "ui/rooflineplot.h"

#include "core/format.h"
#include "ui/qstrings.h"
#include "ui/theme.h"
#include "ui/tickers.h"

#include <QToolTip>
#include <algorithm>
#include <array>
#include <cmath>

namespace kvscope::ui {

namespace {
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

namespace {
// Candidate corners for the callout, in order of preference: under the flat roof (bottom
// right), above the slope (top left, where nothing but rising labels is drawn), then mid right.
// A CPU's measured points sit far below a GPU's roof, right where the first corner is.
struct Place {
    double rx, ry;
    Qt::Alignment align;
};
constexpr Place kPlaces[] = {
    {0.97, 0.96, Qt::AlignRight | Qt::AlignBottom},
    {0.03, 0.04, Qt::AlignLeft | Qt::AlignTop},
    {0.97, 0.55, Qt::AlignRight | Qt::AlignVCenter},
};
QRectF placeRect(const Place& p, const QSizeF& box, const QRect& ar) {
    const QPointF a(ar.left() + p.rx * ar.width(), ar.top() + p.ry * ar.height());
    const double x = p.align & Qt::AlignRight ? a.x() - box.width() : a.x();
    const double y = p.align & Qt::AlignBottom    ? a.y() - box.height()
                     : p.align & Qt::AlignVCenter ? a.y() - box.height() / 2
                                                  : a.y();
    return QRectF(QPointF(x, y), box);
}
/// QCPItemText's eight anchors on `box`, clockwise from the top left.
std::array<QPointF, 8> anchorPoints(const QRectF& box) {
    const QPointF c = box.center();
    return {box.topLeft(),     QPointF(c.x(), box.top()),
            box.topRight(),    QPointF(box.right(), c.y()),
            box.bottomRight(), QPointF(c.x(), box.bottom()),
            box.bottomLeft(),  QPointF(box.left(), c.y())};
}
/// The callout's arrow leaves from the corner or edge middle nearest its point: the shortest
/// arrow, crossing the fewest labels.
int nearestAnchor(const QRectF& box, const QPointF& tip) {
    const auto at = anchorPoints(box);
    int best = 0;
    for (int i = 1; i < 8; ++i)
        if (QLineF(at[i], tip).length() < QLineF(at[best], tip).length())
            best = i;
    return best;
}
} // namespace

RooflinePlot::CalloutObstacles RooflinePlot::calloutObstacles() const {
    CalloutObstacles o;
    for (const auto& v : data_.variants)
        if (v.intensityFlopPerByte > 0 && v.attainableFlopPerS > 0)
            o.points.append({xAxis->coordToPixel(v.intensityFlopPerByte),
                             yAxis->coordToPixel(v.attainableFlopPerS)});
    if (measuredVisible_)
        for (const auto& m : measured_)
            if (m.intensityFlopPerByte > 0 && m.achievedFlopPerS > 0)
                o.points.append({xAxis->coordToPixel(m.intensityFlopPerByte),
                                 yAxis->coordToPixel(m.achievedFlopPerS)});
    for (int i = 0; i < itemCount(); ++i)
        if (auto* t = qobject_cast<QCPItemText*>(item(i)); t && t != callout_ && t->visible())
            o.labels.append(itemRect(t));
    if (calloutArrow_)
        o.tip = calloutArrow_->end->pixelPosition();
    return o;
}

void RooflinePlot::fitCallout() {
    if (!callout_)
        return;
    // A narrow plot (presentation fonts, four docks across 1080p) shrinks the callout's font
    // rather than clipping its left edge.
    QFont f = calloutFont_;
    const int textWidth = QFontMetrics(f).boundingRect(QRect(), 0, callout_->text()).width() + 14;
    const int room = axisRect()->width() * 94 / 100;
    if (room > 80 && textWidth > room)
        f.setPointSizeF(f.pointSizeF() * room / textWidth);

    // What the callout must not hide: every plotted point (3 each) and every other label (1
    // each); nor may its arrow cross a label (1 each). Lines may pass behind its opaque box:
    // avoiding them cost it its full size in presentation type.
    const CalloutObstacles o = calloutObstacles();
    const QRect ar = axisRect()->rect();
    auto costOf = [&o](const QRectF& box) {
        const QRectF r = box.adjusted(-6, -6, 6, 6);
        int cost = 0;
        for (const QPointF& pt : o.points)
            cost += r.contains(pt) ? 3 : 0;
        for (const QRectF& l : o.labels)
            cost += r.intersects(l) ? 1 : 0;
        const QPointF from = anchorPoints(box)[nearestAnchor(box, o.tip)];
        for (const QRectF& l : o.labels)
            cost += crosses(QLineF(from, o.tip), l) ? 1 : 0;
        return cost;
    };
    // The first corner that hides nothing, at full size, else at 90% or 80% of it, else with
    // its list of coinciding variants wrapped (a narrow dock: the box is most of the axis
    // width); else the text, corner and size that hide least.
    const Place* best = &kPlaces[0];
    double bestScale = 1.0;
    QString bestText = calloutTexts_.isEmpty() ? callout_->text() : calloutTexts_.front();
    int bestCost = -1;
    for (const QString& text : calloutTexts_) {
        for (const double scale : {1.0, 0.9, 0.8}) {
            QFont fs = f;
            fs.setPointSizeF(f.pointSizeF() * scale);
            const QRect tb = QFontMetrics(fs).boundingRect(QRect(), 0, text);
            const QSizeF box(tb.width() + 14, tb.height() + 8);
            // A box over most of the plot's width leaves the slope's label no room: the
            // wrapped form first, when there is one.
            if (box.width() > ar.width() * 0.6 && &text != &calloutTexts_.back())
                break;
            for (const Place& p : kPlaces) {
                const int cost = costOf(placeRect(p, box, ar));
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
    if (calloutArrow_) {
        const QRectF box = placeRect(*best, textBoxSize(callout_), ar);
        QCPItemAnchor* const anchors[8] = {
            callout_->topLeft,     callout_->top,    callout_->topRight,   callout_->right,
            callout_->bottomRight, callout_->bottom, callout_->bottomLeft, callout_->left};
        calloutArrow_->start->setParentAnchor(anchors[nearestAnchor(box, o.tip)]);
    }
    // The floating labels were placed before the callout moved: again, clear of it and of
    // its arrow.
    placeFloating();
}

void RooflinePlot::rebuild() {
    clearGraphs();
    clearItems();
    floating_.clear();
    styleAxes();
    if (!hasData_ || data_.bandwidthBytesPerS <= 0 || data_.peakBf16FlopPerS <= 0)
        return;
    const double bw = data_.bandwidthBytesPerS;
    const double peak = data_.peakBf16FlopPerS;
    Frame f;
    f.ridge = data_.ridgeFlopPerByte > 0 ? data_.ridgeFlopPerByte : peak / bw;
    double minI = f.ridge, maxI = f.ridge, minY = peak;
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
    f.x0 = minI / 2.5;
    f.x1 = std::max(maxI, f.ridge) * 5;
    f.y0 = decadeFloor(std::min(minY, bw * f.x0) / 1.5);
    // Above the roof: room for two rows of labels (the roof's and the ridge's) when the flat
    // roof is too short to hold its label, a fifth of the axis at least, so the rows still fit
    // when measured points stretch the axis down (a CPU's sit three decades under a GPU roof).
    f.y1 = peak * std::max(8.0, std::pow(peak / f.y0, 0.25));
    xAxis->setRange(f.x0, f.x1);
    yAxis->setRange(f.y0, f.y1);

    // The variants' labels are placed first (each names a point), the ceilings' after them.
    std::vector<std::pair<QCPItemText*, std::vector<Spot>>> ceilings;
    addRoofs(f, ceilings);
    addVariants();
    for (auto& [label, spots] : ceilings)
        addFloating(label, std::move(spots));
    addMeasured(f);
}

void RooflinePlot::addRoofs(const Frame& f,
                            std::vector<std::pair<QCPItemText*, std::vector<Spot>>>& labels) {
    const QColor ink = textColor();
    const double bw = data_.bandwidthBytesPerS;
    const double peak = data_.peakBf16FlopPerS;
    const double x0 = f.x0, x1 = f.x1, ridge = f.ridge;
    // Bandwidth slope up to the ridge, then the bf16 tensor roof.
    auto* roof = addGraph();
    roof->setName(
        tr("roof: %1 HBM · %2 bf16 tensor").arg(q(humanBandwidth(bw)), q(humanFlops(peak))));
    roof->setData({x0, ridge, x1}, {bw * x0, peak, peak}, true);
    roof->setPen(QPen(ink, 2.5));
    roof->setAntialiased(true);

    // The ridge: a dotted line from the axis up to the corner of the roof.
    auto* ridgeLine = new QCPItemLine(this);
    ridgeLine->start->setCoords(ridge, f.y0);
    ridgeLine->end->setCoords(ridge, peak);
    ridgeLine->setPen(QPen(mutedColor(), 1.5, Qt::DotLine));

    // No label crosses a line: the roof's under the flat roof while that is long enough to
    // hold it (a wide plot), else above the roof, where the ridge line has ended, else in the
    // top row (the callout may take the row above the roof); the ridge's over the corner, else
    // at the top, else at the foot of the ridge line.
    const double gap = 1.12;
    labels.push_back({addLabel(x1 / 1.1, peak / gap, tr("bf16 tensor %1").arg(q(humanFlops(peak))),
                               Qt::AlignRight | Qt::AlignTop, ink, 0.95),
                      {{x1 / 1.1, peak / gap, Qt::AlignRight | Qt::AlignTop},
                       {ridge / 1.1, peak * gap, Qt::AlignRight | Qt::AlignBottom},
                       {x1 / 1.1, peak * gap, Qt::AlignRight | Qt::AlignBottom},
                       {x1 / 1.1, f.y1 / 1.15, Qt::AlignRight | Qt::AlignTop}}});
    labels.push_back({addLabel(ridge, peak * gap, tr("ridge %1 FLOP/B").arg(intensityText(ridge)),
                               Qt::AlignHCenter | Qt::AlignBottom, mutedColor(), 1.0),
                      {{ridge, peak * gap, Qt::AlignHCenter | Qt::AlignBottom},
                       {ridge, f.y1 / 1.15, Qt::AlignHCenter | Qt::AlignTop},
                       {ridge * 1.06, f.y0 * 1.15, Qt::AlignLeft | Qt::AlignBottom},
                       {ridge / 1.06, f.y0 * 1.15, Qt::AlignRight | Qt::AlignBottom}}});
    if (data_.peakFp32FlopPerS > 0) {
        const double fp = data_.peakFp32FlopPerS;
        const double r32 = fp / bw;
        auto* fp32 = addGraph();
        fp32->setName(tr("fp32 non-tensor %1").arg(q(humanFlops(fp))));
        fp32->setData({r32, x1}, {fp, fp}, true);
        fp32->setPen(QPen(mutedColor(), 2, Qt::DashLine));
        // Two lines, to fit the stretches the ridge line and the slope leave it: under its
        // right end, over it (the callout may take the space under), over its left end (left
        // of the slope), or between the slope and the ridge.
        auto* t = addLabel(x1 / 1.1, fp / gap, tr("fp32 non-tensor\n%1").arg(q(humanFlops(fp))),
                           Qt::AlignRight | Qt::AlignTop, mutedColor(), 0.95);
        t->setTextAlignment(Qt::AlignRight);
        labels.push_back({t,
                          {{x1 / 1.1, fp / gap, Qt::AlignRight | Qt::AlignTop},
                           {x1 / 1.1, fp * gap, Qt::AlignRight | Qt::AlignBottom},
                           {r32 / 1.1, fp * gap, Qt::AlignRight | Qt::AlignBottom},
                           {r32 * 1.15, fp / gap, Qt::AlignLeft | Qt::AlignTop}}});
    }
    // The slope's label sits along its lower-left stretch, further along (or above the slope)
    // when a variant's point is there.
    std::vector<Spot> spots;
    for (const double k : {1.6, 4.0, 10.0, 0.6})
        spots.push_back(k >= 1 ? Spot{x0 * k, bw * x0 * k / 1.8, Qt::AlignLeft | Qt::AlignTop}
                               : Spot{x0 * 4, bw * x0 * 4 * 1.8, Qt::AlignRight | Qt::AlignBottom});
    // Or above the slope's foot, left of the first point's rising label.
    spots.push_back({x0 * 1.1, bw * x0 * 1.1 * 1.6, Qt::AlignLeft | Qt::AlignBottom});
    spots.push_back({x0 * 1.05, bw * x0 * 4, Qt::AlignLeft | Qt::AlignBottom});
    labels.push_back(
        {addLabel(x0 * 1.6, bw * x0 * 1.6 / 1.8, tr("HBM %1").arg(q(humanBandwidth(bw))),
                  Qt::AlignLeft | Qt::AlignTop, ink, 0.95),
         std::move(spots)});
}

void RooflinePlot::addVariants() {
    const bool dk = dark();
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
    if (current)
        addCurrent(*current, sameAsCurrent);
}

void RooflinePlot::addCurrent(const VariantPoint& current, const QStringList& sameAsCurrent) {
    const bool dk = dark();
    auto* cur = addGraph();
    cur->setName(tr("current: %1 at %2 of bf16 peak")
                     .arg(q(current.label), percentText(current.fractionOfPeak)));
    cur->setLineStyle(QCPGraph::lsNone);
    const QColor acc = accentColor(dk);
    cur->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(acc, 3),
                                         QBrush(acc.lighter(dk ? 100 : 130)), 17));
    cur->addData(current.intensityFlopPerByte, current.attainableFlopPerS);
    // The callout sits in a corner of the axis rect, an arrow to the point: never clipped;
    // fitCallout() picks the corner once the layout is known.
    auto* t = addText();
    t->position->setType(QCPItemPosition::ptAxisRectRatio);
    t->position->setCoords(0.97, 0.96);
    t->setPositionAlignment(Qt::AlignRight | Qt::AlignBottom);
    t->setTextAlignment(Qt::AlignLeft);
    QString text =
        tr("%1 at %2 FLOP/B\n%3 of bf16 peak")
            .arg(q(current.longLabel.empty() ? current.label : current.longLabel),
                 intensityText(current.intensityFlopPerByte), percentText(current.fractionOfPeak));
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
    arrow->end->setCoords(current.intensityFlopPerByte, current.attainableFlopPerS);
    arrow->setHead(QCPLineEnding(QCPLineEnding::esSpikeArrow, 9, 11));
    arrow->setPen(QPen(acc, 1.5));
}

void RooflinePlot::addMeasured(const Frame& f) {
    // The measured layer (filled by the measurement backends).
    if (!measuredVisible_ || (measured_.isEmpty() && ceilings_.readBytesPerS <= 0))
        return;
    const bool dk = dark();
    const double bw = data_.bandwidthBytesPerS;
    const QColor mc = rankColor(3, dk);
    if (const double r = ceilings_.readBytesPerS; r > 0) {
        const double mp =
            ceilings_.peakFlopPerS > 0 ? ceilings_.peakFlopPerS : data_.peakBf16FlopPerS;
        auto* mroof = addGraph();
        mroof->setName(tr("measured ceiling %1").arg(q(humanBandwidth(r))));
        mroof->setData({f.x0, mp / r, f.x1}, {r * f.x0, mp, mp}, true);
        mroof->setPen(QPen(mc, 1.5, Qt::DashDotLine));
        // Its label runs under its slope like the HBM label, further along when the two
        // slopes nearly coincide (a GPU measured against its own datasheet), else over it (a
        // CPU's slope runs along the bottom of the plot).
        std::vector<Spot> spots;
        const std::array<double, 2> under =
            r > bw / 3 ? std::array{14.0, 30.0} : std::array{1.6, 4.0};
        for (const double k : under)
            spots.push_back({f.x0 * k, r * f.x0 * k / 1.8, Qt::AlignLeft | Qt::AlignTop});
        // Over it, from the left; the last two sit right of where the measured points of a
        // sweep usually end, clear of the callout under the flat roof.
        for (const double k : {1.6, 4.0, 10.0, 25.0, 60.0})
            spots.push_back({f.x0 * k, r * f.x0 * k * 1.8, Qt::AlignLeft | Qt::AlignBottom});
        auto* label =
            addLabel(spots.front().x, spots.front().y, tr("measured %1").arg(q(humanBandwidth(r))),
                     spots.front().align, mc, 0.95);
        addFloating(label, std::move(spots));
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
