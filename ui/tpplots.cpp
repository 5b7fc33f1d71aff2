#include "ui/tpplots.h"

#include "core/format.h"
#include "ui/qstrings.h"
#include "ui/theme.h"
#include "ui/tickers.h"

#include <QToolTip>
#include <algorithm>
#include <cmath>

namespace kvscope::ui {

namespace {
// The series' label ("meta-llama__Meta-Llama-3-8B GQA-8") with its model named as a preset's
// title reads ("Meta-Llama-3-8B GQA-8"), for the legend and the tooltips (the label itself
// stays as it is: setData compares it).
QString seriesName(const TpSeries& s) {
    const QString label = q(s.label);
    const qsizetype space = label.indexOf(QLatin1Char(' '));
    return space < 0 ? withoutOrg(label) : withoutOrg(label.left(space)) + label.mid(space);
}
} // namespace

TpPlot::TpPlot(Kind kind, QWidget* parent) : PlotWidget(parent), kind_(kind) {
    setMouseTracking(true);
    xAxis->setScaleType(QCPAxis::stLogarithmic);
    yAxis->setScaleType(QCPAxis::stLogarithmic);
    xAxis->setTicker(QSharedPointer<Pow2Ticker>::create());
    yAxis->setTicker(QSharedPointer<SiLogTicker>::create());
    xAxis->setLabel(tr("tensor-parallel size (TP)"));
    bottomLegend_->setWrap(1); // one series per row: long model names never clip
    plotLayout()->insertRow(0);
    title_ = new SpriteTitle(this, QString(), labelFont(0.95));
    plotLayout()->addElement(0, 0, title_);
    rebuild();
}

std::vector<double> TpPlot::shown(const TpData& d) const {
    // Everything this plot draws, and nothing else: a context step moves the concurrency but
    // not the tokens or the intensity, and then the plot is left as it is.
    const bool cap = kind_ == Kind::Capacity;
    std::vector<double> v{static_cast<double>(d.currentTp), cap ? d.poolGiBPerRank : 0,
                          cap ? d.crossoverTp.value_or(-1) : 0, cap ? 0 : d.ridgeFlopPerByte,
                          static_cast<double>(d.counterpart.has_value())};
    auto add = [&](const TpSeries& s) {
        v.push_back(static_cast<double>(s.kvHeads));
        v.push_back(static_cast<double>(s.mla));
        for (const auto& p : s.points) {
            v.push_back(static_cast<double>(p.tp));
            v.push_back(valueOf(p));
        }
    };
    add(d.primary);
    if (d.counterpart)
        add(*d.counterpart);
    return v;
}

void TpPlot::setData(const TpData& data) {
    if (hasData_ && data.primary.label == data_.primary.label &&
        (data.counterpart ? data.counterpart->label : std::string()) ==
            (data_.counterpart ? data_.counterpart->label : std::string()) &&
        (kind_ != Kind::Capacity || data.crossoverText == data_.crossoverText) &&
        shown(data) == shown(data_)) {
        data_ = data; // the tooltips' other numbers follow
        return;
    }
    data_ = data;
    hasData_ = true;
    rebuild();
    requestReplot();
}

void TpPlot::setMetric(Metric m) {
    metric_ = m;
    rebuild();
    requestReplot();
}

double TpPlot::valueOf(const TpPoint& p) const {
    if (kind_ == Kind::Intensity)
        return p.intensityFlopPerByte;
    return metric_ == Metric::Tokens ? static_cast<double>(p.tokens) : p.concurrency;
}

void TpPlot::rebuild() {
    clearGraphs();
    clearItems();
    floating_.clear();
    styleAxes();
    styleTitle();
    if (!hasData_ || data_.primary.points.empty())
        return;
    const std::optional<double> maxTp = fitRanges();
    if (!maxTp)
        return;
    // Labels that move to wherever they cover no point and are not clipped (placeFloating).
    const Floating replicate = shadeReplication(*maxTp);
    addCurves();
    const Floating ridge = addRidge();
    const Floating tp = addCurrentTp();
    const Floating cross = addCrossover();
    // Placed in order of importance: each later label avoids the earlier ones.
    addFloating(cross.first, cross.second);
    addFloating(ridge.first, ridge.second);
    addFloating(replicate.first, replicate.second);
    addFloating(tp.first, tp.second);
}

void TpPlot::styleTitle() {
    if (title_) {
        title_->setTextColor(mutedColor());
        title_->setFont(labelFont(0.95));
    }
    if (kind_ == Kind::Intensity)
        yAxis->setLabel(tr("intensity (FLOP/B)")); // the title says the rest
    else
        yAxis->setLabel(metric_ == Metric::Tokens ? tr("tokens held") : tr("concurrent requests"));
    if (title_)
        title_->setText(
            kind_ == Kind::Capacity
                ? tr("pool fixed at %1 GiB per GPU").arg(q(fixed(data_.poolGiBPerRank, 1))) +
                      (data_.crossoverTp || data_.crossoverText.empty()
                           ? QString()
                           : QStringLiteral("\n") + q(data_.crossoverText))
                : tr("FLOP per byte of KV read, per GPU"));
}

std::optional<double> TpPlot::fitRanges() {
    double maxTp = 1, lo = 1e300, hi = 0;
    auto scan = [&](const TpSeries& s) {
        for (const auto& p : s.points) {
            const double v = valueOf(p);
            maxTp = std::max(maxTp, static_cast<double>(p.tp));
            if (v > 0) {
                lo = std::min(lo, v);
                hi = std::max(hi, v);
            }
        }
    };
    scan(data_.primary);
    if (data_.counterpart)
        scan(*data_.counterpart);
    if (kind_ == Kind::Intensity && data_.ridgeFlopPerByte > 0)
        hi = std::max(hi, data_.ridgeFlopPerByte);
    if (hi <= 0)
        return std::nullopt;
    xAxis->setRange(0.8, maxTp * 1.25);
    yAxis->setRange(std::pow(10.0, std::floor(std::log10(lo / 1.5))),
                    std::pow(10.0, std::ceil(std::log10(hi * 1.6))));
    return maxTp;
}

TpPlot::Floating TpPlot::shadeReplication(double maxTp) {
    // Shade where the GQA series' KV heads replicate (TP > h_kv).
    const TpSeries* gqa = !data_.primary.mla                               ? &data_.primary
                          : (data_.counterpart && !data_.counterpart->mla) ? &*data_.counterpart
                                                                           : nullptr;
    if (!gqa || gqa->kvHeads <= 0 || gqa->kvHeads >= maxTp)
        return {};
    const bool dk = dark();
    addWarningBand(static_cast<double>(gqa->kvHeads), yAxis->range().lower, yAxis->range().upper);
    // A shaded band of a few octaves (h_kv = 8 of 128) holds the label only in three
    // short lines: two long ones ran across the current-TP line at its end.
    const bool narrow = std::log2(xAxis->range().upper / static_cast<double>(gqa->kvHeads)) < 6.0;
    auto* label = addLabel(
        xAxis->range().upper / 1.05, yAxis->range().lower * 1.2,
        (narrow ? tr("KV heads\nreplicate\n(TP > %1)") : tr("KV heads replicate\n(TP > %1)"))
            .arg(gqa->kvHeads),
        Qt::AlignRight | Qt::AlignBottom, warningColor(dk), 0.95, true);
    label->setTextAlignment(Qt::AlignRight);
    // Boxed, as the crossover's label: where the band is too full to hold it clear of the
    // lines (Gemma-3's GQA-16 band of two octaves), a line passes behind it, not through.
    label->setBrush(QBrush(palette().color(QPalette::Base)));
    const double xr = xAxis->range().upper / 1.05, yb = yAxis->range().lower * 1.2;
    const double yt = yAxis->range().upper / 1.2;
    const double kv = static_cast<double>(gqa->kvHeads);
    return {label,
            {{xr, yb, Qt::AlignRight | Qt::AlignBottom},
             {kv * 1.05, yb, Qt::AlignLeft | Qt::AlignBottom},
             {xr, yt, Qt::AlignRight | Qt::AlignTop},
             {kv * 1.05, yt, Qt::AlignLeft | Qt::AlignTop},
             {xr, std::sqrt(yb * yt), Qt::AlignRight | Qt::AlignVCenter},
             // Beside the band, pointing at it, where it is too narrow for the label.
             {kv / 1.05, yb, Qt::AlignRight | Qt::AlignBottom},
             {kv / 1.05, yt, Qt::AlignRight | Qt::AlignTop}}};
}

void TpPlot::addSeries(const TpSeries& s, const QColor& c, bool dashed) {
    auto* g = addGraph();
    g->setName(seriesName(s));
    g->setPen(QPen(c, 3, dashed ? Qt::DashLine : Qt::SolidLine));
    g->setScatterStyle(
        QCPScatterStyle(s.mla ? QCPScatterStyle::ssDiamond : QCPScatterStyle::ssCircle, QPen(c, 2),
                        QBrush(palette().color(QPalette::Base)), s.mla ? 12 : 10));
    for (const auto& p : s.points)
        if (valueOf(p) > 0)
            g->addData(static_cast<double>(p.tp), valueOf(p));
}

void TpPlot::addCurves() {
    const bool dk = dark();
    const QColor primaryColor = dk ? QColor(0x56, 0xb4, 0xe9) : QColor(0x00, 0x72, 0xb2);
    addSeries(data_.primary, primaryColor, false);
    if (data_.counterpart)
        addSeries(*data_.counterpart, rankColor(2, dk), true);
}

TpPlot::Floating TpPlot::addRidge() {
    if (kind_ != Kind::Intensity || data_.ridgeFlopPerByte <= 0)
        return {};
    const double r = data_.ridgeFlopPerByte, xm = std::sqrt(xAxis->range().upper);
    auto* ridge = new QCPItemStraightLine(this);
    ridge->point1->setCoords(1, r);
    ridge->point2->setCoords(2, r);
    ridge->setPen(QPen(mutedColor(), 1.5, Qt::DotLine));
    auto* label = addLabel(0.85, r * 1.08, tr("ridge %1 FLOP/B").arg(q(fixed(r, 0))),
                           Qt::AlignLeft | Qt::AlignBottom, mutedColor(), 0.95);
    // Boxed: in a narrow dock no stretch of the ridge line is free of the current TP's
    // line, which then passes behind the label rather than through it.
    label->setBrush(QBrush(palette().color(QPalette::Base)));
    return {label,
            {{0.85, r * 1.08, Qt::AlignLeft | Qt::AlignBottom},
             {0.85, r / 1.08, Qt::AlignLeft | Qt::AlignTop},
             {xm, r * 1.08, Qt::AlignHCenter | Qt::AlignBottom},
             {xm, r / 1.08, Qt::AlignHCenter | Qt::AlignTop},
             {std::sqrt(xm), r * 1.08, Qt::AlignHCenter | Qt::AlignBottom},
             {std::sqrt(xm), r / 1.08, Qt::AlignHCenter | Qt::AlignTop},
             // At the right end, past the current TP's line when that is mid-axis.
             {xAxis->range().upper / 1.05, r * 1.08, Qt::AlignRight | Qt::AlignBottom},
             {xAxis->range().upper / 1.05, r / 1.08, Qt::AlignRight | Qt::AlignTop}}};
}

TpPlot::Floating TpPlot::addCurrentTp() {
    const QColor acc = accentColor(dark());
    const double ctp = static_cast<double>(data_.currentTp);
    auto* cur = new QCPItemStraightLine(this);
    cur->point1->setCoords(ctp, 1);
    cur->point2->setCoords(ctp, 2);
    cur->setPen(QPen(acc, 2));
    const double top = yAxis->range().upper / 1.12, bottom = yAxis->range().lower * 1.12;
    const double middle = std::sqrt(yAxis->range().upper * yAxis->range().lower);
    const double upperQ = std::sqrt(yAxis->range().upper * middle);
    const double lowerQ = std::sqrt(yAxis->range().lower * middle);
    // Right of the line, else left of it (TP at the axis' end), at the top, the middle or the
    // bottom: never clipped, never on a point.
    auto* label = addLabel(ctp * 1.04, top, tr("TP = %1").arg(data_.currentTp),
                           Qt::AlignLeft | Qt::AlignTop, acc, 1.0, true);
    return {label, besideLine(ctp, 1.04,
                              {{top, Qt::AlignTop},
                               {upperQ, Qt::AlignVCenter},
                               {middle, Qt::AlignVCenter},
                               {lowerQ, Qt::AlignVCenter},
                               {bottom, Qt::AlignBottom}})};
}

TpPlot::Floating TpPlot::addCrossover() {
    if (kind_ != Kind::Capacity || !data_.crossoverTp)
        return {};
    const double cx = *data_.crossoverTp;
    auto* x = new QCPItemStraightLine(this);
    x->point1->setCoords(cx, 1);
    x->point2->setCoords(cx, 2);
    x->setPen(QPen(textColor(), 1.5, Qt::DashLine));
    // Under the point where the two lines meet (the MLA series is flat there).
    const TpSeries& mla = data_.primary.mla ? data_.primary : *data_.counterpart;
    const double y = valueOf(mla.points.front());
    // Below the meeting point left of the line, else right of it, else above, else at the
    // bottom: the first that covers no point (a point at TP 4 or 16 sits right there).
    auto* label = addLabel(cx / 1.05, y / 1.5, tr("crossover\nTP = %1").arg(q(fixed(cx, 2))),
                           Qt::AlignRight | Qt::AlignTop, textColor(), 0.95, true);
    label->setTextAlignment(Qt::AlignLeft);
    label->setBrush(QBrush(palette().color(QPalette::Base)));
    const double low = yAxis->range().lower * 1.15, high = yAxis->range().upper / 1.15;
    return {label,
            {{cx / 1.05, y / 1.5, Qt::AlignRight | Qt::AlignTop},
             {cx * 1.05, y / 1.5, Qt::AlignLeft | Qt::AlignTop},
             {cx / 1.05, y * 1.5, Qt::AlignRight | Qt::AlignBottom},
             {cx * 1.05, y * 1.5, Qt::AlignLeft | Qt::AlignBottom},
             {cx / 1.05, low, Qt::AlignRight | Qt::AlignBottom},
             {cx * 1.05, low, Qt::AlignLeft | Qt::AlignBottom},
             {cx / 1.05, high, Qt::AlignRight | Qt::AlignTop},
             {cx * 1.05, high, Qt::AlignLeft | Qt::AlignTop}}};
}

void TpPlot::mouseMoveEvent(QMouseEvent* e) {
    PlotWidget::mouseMoveEvent(e);
    const QPointF pos = e->position();
    auto check = [&](const TpSeries& s) {
        for (const auto& p : s.points) {
            const double v = valueOf(p);
            if (v <= 0)
                continue;
            const double px = xAxis->coordToPixel(static_cast<double>(p.tp));
            const double py = yAxis->coordToPixel(v);
            if (std::hypot(px - pos.x(), py - pos.y()) < 12) {
                QToolTip::showText(
                    e->globalPosition().toPoint(),
                    tr("<b>%1</b> at TP = %2<br>%3 tokens<br>%4 concurrent requests<br>%5 "
                       "FLOP/byte%6")
                        .arg(seriesName(s))
                        .arg(p.tp)
                        .arg(q(withCommas(p.tokens)), q(fixed(p.concurrency, 2)),
                             q(fixed(p.intensityFlopPerByte, 1)),
                             p.replicated ? tr("<br>KV replicated across ranks") : QString()),
                    this);
                return true;
            }
        }
        return false;
    };
    if (check(data_.primary) || (data_.counterpart && check(*data_.counterpart)))
        return;
    QToolTip::hideText();
}

} // namespace kvscope::ui
