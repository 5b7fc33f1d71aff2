#include "ui/stepplot.h"

#include "core/format.h"
#include "core/law/step.h"
#include "ui/qstrings.h"
#include "ui/theme.h"
#include "ui/tickers.h"

#include <QToolTip>
#include <algorithm>
#include <cmath>

namespace kvscope::ui {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr std::int64_t kMaxGridBatch = 1024;

/// Batches 1, 2, 4, … 1024, plus the current one so its point lies on the curves.
std::vector<std::int64_t> batchGrid(std::int64_t current) {
    std::vector<std::int64_t> out;
    for (std::int64_t b = 1; b <= kMaxGridBatch; b *= 2)
        out.push_back(b);
    if (std::find(out.begin(), out.end(), current) == out.end())
        out.push_back(current);
    std::sort(out.begin(), out.end());
    return out;
}

// What the rows depend on: the model, the GPU and the deployment but for the batch (the grid
// holds it), the h_kv (every layout is swept) and the pool (the step reads no pool). A util,
// pool, batch or h_kv step then leaves the rows as they are.
std::string rowsKey(const AppState& s) {
    const Deployment& d = s.deployment;
    const GpuSpec& g = s.gpu;
    std::string k =
        s.modelRef + '|' + s.model.name + '|' + g.id + '|' + g.name + '|' + d.engine.text();
    for (double v : {g.bandwidthBytesPerS, g.peakBf16FlopPerS, g.peakFp8FlopPerS,
                     g.peakFp32FlopPerS, g.interconnectBytesPerS})
        k += '|' + std::to_string(v);
    for (std::int64_t v :
         {g.memoryBytes, d.tp, d.dcp, d.pp, d.context, static_cast<std::int64_t>(d.kvDtype),
          static_cast<std::int64_t>(d.weightDtype)})
        k += '|' + std::to_string(v);
    return k;
}

/// Powers of two along the batch axis, every second or fourth one where the axis is too
/// narrow for all eleven labels (1 … 1024 ran together in a docked tab at 1600×1000).
class BatchTicker : public Pow2Ticker {
public:
    explicit BatchTicker(QCPAxis* axis) : axis_(axis) {}

protected:
    QVector<double> createTickVector(double tickStep, const QCPRange& range) override {
        const QVector<double> all = Pow2Ticker::createTickVector(tickStep, range);
        const double room = axis_->axisRect()->width();
        const double need =
            QFontMetrics(axis_->tickLabelFont()).horizontalAdvance(QStringLiteral("1024")) + 12;
        int stride = 1;
        while (stride < 8 && static_cast<double>(all.size()) / stride * need > room)
            stride *= 2;
        QVector<double> out;
        for (int i = 0; i < all.size(); i += stride)
            out.append(all[i]);
        return out;
    }

private:
    QCPAxis* axis_;
};

} // namespace

StepPlot::StepPlot(QWidget* parent) : PlotWidget(parent) {
    setMouseTracking(true);
    xAxis->setScaleType(QCPAxis::stLogarithmic);
    xAxis->setTicker(QSharedPointer<BatchTicker>::create(xAxis));
    xAxis->setLabel(tr("batch (concurrent requests in the step)"));
    yAxis2->setLabel(tr("KV % of the step's bytes"));
    bottomLegend_->setWrap(4);
    plotLayout()->insertRow(0);
    title_ = new SpriteTitle(this, QString(), labelFont(0.95));
    plotLayout()->addElement(0, 0, title_);
    // After the floating labels are placed (PlotWidget connects first).
    connect(this, &QCustomPlot::afterLayout, this, &StepPlot::fitPoolLabel);
    // After the legend's items are swapped for the cached ones, before the layout sizes them.
    connect(this, &QCustomPlot::beforeReplot, this, &StepPlot::fitLegendColumns);
    rebuild();
}

void StepPlot::fitPoolLabel() {
    // The pool's label is the least needed (the band is shaded): where the other labels leave
    // it no free spot (a narrow dock), the title says it instead.
    if (!poolLabel_) {
        title_->setText(titleText_);
        return;
    }
    const QRectF box = itemRect(poolLabel_).adjusted(-2, -2, 2, 2);
    bool clear = QRectF(axisRect()->rect()).contains(box);
    for (int i = 0; i < itemCount() && clear; ++i)
        if (auto* t = qobject_cast<QCPItemText*>(item(i)); t && t != poolLabel_ && t->visible())
            clear = !box.intersects(itemRect(t));
    for (const QPointF& p : pointPixels())
        clear = clear && !box.contains(p);
    poolLabel_->setVisible(clear);
    // Beside the formula when both fit the title's width, else alone (never cut at both ends).
    const QString note = tr("shaded: past the pool (B > %1)").arg(maxConcurrency_);
    const QString both = titleText_ + QStringLiteral(" · ") + note;
    const bool fits = QFontMetrics(title_->font()).horizontalAdvance(both) < width() - 8;
    title_->setText(clear ? titleText_ : fits ? both : note);
}

void StepPlot::fitLegendColumns() {
    // Up to four columns, as many as fit the plot's width with each column as wide as its
    // widest entry: four fixed columns cut the layouts' names short ("GQA-" for GQA-16) in a
    // docked tab at 1600×1000, where a third row costs less than unreadable names.
    QList<int> widths;
    for (int i = 0; i < bottomLegend_->elementCount(); ++i)
        if (QCPLayoutElement* e = bottomLegend_->elementAt(i))
            widths.append(e->minimumOuterSizeHint().width());
    if (widths.isEmpty())
        return;
    const QMargins m = bottomLegend_->margins();
    const int room = viewport().width() - m.left() - m.right();
    int columns = 4;
    for (; columns > 1; --columns) {
        QList<int> column(columns, 0);
        for (int i = 0; i < widths.size(); ++i)
            column[i % columns] = std::max(column[i % columns], widths[i]);
        int need = (columns - 1) * bottomLegend_->columnSpacing();
        for (int w : column)
            need += w;
        if (need <= room)
            break;
    }
    if (columns == bottomLegend_->wrap())
        return;
    bottomLegend_->setWrap(columns);
    bottomLegend_->setFillOrder(bottomLegend_->fillOrder(), true); // moves the items already in
}

void StepPlot::setState(const AppState& s, const Report& current) {
    if (!onScreen_) {
        pending_.emplace(s, current);
        return;
    }
    pending_.reset();
    applyState(s, current);
}

void StepPlot::flushPending() const {
    if (!pending_)
        return;
    auto [s, current] = std::move(*pending_);
    pending_.reset();
    const_cast<StepPlot*>(this)->applyState(s, current);
}

void StepPlot::setOnScreen(bool on) {
    onScreen_ = on;
    if (on && pending_) {
        flushPending();
        replot(QCustomPlot::rpQueuedReplot);
    }
}

void StepPlot::applyState(const AppState& s, const Report& current) {
    const std::string rows = rowsKey(s);
    const std::vector<std::int64_t> grid = batchGrid(s.deployment.batch);
    const std::int64_t kv =
        current.attention == AttentionKind::MLA && s.model.mla && !s.deployment.kvHeads
            ? 0
            : current.kvHeads;
    const bool rowsMoved = rows != rowsKey_ || grid != grid_;
    const bool variantMoved = rows != rowsKey_ || kv != currentKv_;
    if (!rowsMoved && !variantMoved && s.deployment.batch == currentBatch_ &&
        current.maxConcurrency == maxConcurrency_)
        return;
    currentBatch_ = s.deployment.batch;
    currentKv_ = kv;
    maxConcurrency_ = current.maxConcurrency;
    if (rowsMoved || modelHidden_ != s.model.hidden.value || modelLayers_ != s.model.layers.value) {
        modelHidden_ = s.model.hidden.value;
        modelLayers_ = s.model.layers.value;
        collectMeasured();
    }
    if (rowsMoved)
        rows_ = stepSweep(s.model, s.gpu, s.deployment, grid);
    // The 10% batch is the current variant's: it follows h_kv, not the batch or the pool.
    if (variantMoved)
        tenPercent_ = batchAtKvFraction(s.model, s.gpu, s.deployment, 0.10);
    rowsKey_ = rows;
    grid_ = grid;
    rebuild();
    requestReplot();
}

void StepPlot::setMeasuredSteps(const std::vector<gpu::StepMeasurement>& steps,
                                const std::string& device) {
    steps_ = steps;
    stepDevice_ = device;
    collectMeasured();
    rebuild();
    requestReplot();
}

void StepPlot::collectMeasured() {
    measured_.clear();
    for (const gpu::StepMeasurement& m : steps_) {
        if (!m.ok || m.medianSeconds <= 0 || m.shape.hidden != modelHidden_ ||
            m.shape.modelLayers != modelLayers_)
            continue;
        MeasuredStepPoint p;
        p.batch = m.shape.batch;
        const double scaled = m.scaledSeconds();
        p.msPerToken = scaled * 1e3;
        p.tokensPerSPerGpu = static_cast<double>(m.shape.batch) / scaled;
        p.tooltip =
            tr("<b>measured</b> on %1 (%2)<br>%3<br>%4 ms for %5 of %6 layers, scaled: %7 ms "
               "per token, %8 tokens/s<br>%9 GB, %10 GFLOP: %11 GB/s, %12 GFLOP/s<br>"
               "<b>%13% of the step roof</b> (%14-bound on the measured ceilings: %15 GB/s "
               "read, %16 GFLOP/s)")
                .arg(q(stepDevice_), q(m.kernel), q(gpu::describe(m.shape)),
                     q(fixed(m.medianSeconds * 1e3, 2)), QString::number(m.shape.layers),
                     QString::number(m.shape.modelLayers), q(fixed(p.msPerToken, 1)),
                     q(fixed(p.tokensPerSPerGpu, 2)), q(fixed(m.counts.bytes / 1e9, 3)))
                .arg(q(fixed(m.counts.flops / 1e9, 2)), q(fixed(m.bytesPerSecond / 1e9, 1)),
                     q(fixed(m.flopPerSecond / 1e9, 1)), q(fixed(100.0 * m.fractionOfRoof, 1)),
                     m.computeBound ? QStringLiteral("compute") : QStringLiteral("memory"),
                     q(fixed(m.readCeiling / 1e9, 1)), q(fixed(m.peak / 1e9, 1)));
        measured_.push_back(p);
    }
}

void StepPlot::setMode(Mode m) {
    mode_ = m;
    rebuild();
    requestReplot();
}

double StepPlot::valueOf(const DecodeStep& s) const {
    return mode_ == Mode::Throughput ? s.tokensPerSPerGpu : s.timeLowerBoundS * 1e3;
}

std::vector<const StepSweepRow*> StepPlot::currentRows() const {
    std::vector<const StepSweepRow*> out;
    for (const auto& r : rows_)
        if (r.kvHeads == currentKv_ && r.step)
            out.push_back(&r);
    return out;
}

void StepPlot::rebuild() {
    clearGraphs();
    clearItems();
    floating_.clear();
    clearPlottables();
    styleAxes();
    poolLabel_ = nullptr;
    titleText_ = mode_ == Mode::Bytes  ? tr("bytes per GPU per step, current variant")
                 : mode_ == Mode::Time ? tr("max(bytes/BW, FLOPs/peak) + all-reduces")
                                       : tr("at the step's lower bound");
    if (title_) {
        title_->setTextColor(mutedColor());
        title_->setFont(labelFont(0.95));
        title_->setText(titleText_);
    }
    if (rows_.empty())
        return;
    double maxBatch = 1;
    for (const auto& r : rows_)
        maxBatch = std::max(maxBatch, static_cast<double>(r.batch));
    xAxis->setRange(0.8, maxBatch * 1.25);

    // Labels that move to wherever they cover no point, no line and no other label
    // (placeFloating), in order of importance: the current point's, the 10% batch's, the pool's.
    Floating pool, ten;
    if (mode_ == Mode::Bytes) {
        addBars();
        pool = shadePastPool(maxBatch, 0, yAxis->range().upper);
    } else {
        if (!addCurves())
            return;
        pool = shadePastPool(maxBatch, yAxis->range().lower, yAxis->range().upper);
        ten = addTenPercent(maxBatch);
    }
    const Floating current = addCurrent(maxBatch);
    addFloating(current.first, current.second);
    addFloating(ten.first, ten.second);
    addFloating(pool.first, pool.second);
    poolLabel_ = pool.first;
}

StepPlot::Floating StepPlot::shadePastPool(double maxBatch, double yLo, double yHi) {
    // Batches the pool cannot hold for the current variant.
    if (maxConcurrency_ < 1 || static_cast<double>(maxConcurrency_) >= maxBatch)
        return {};
    const bool dk = dark();
    addWarningBand(static_cast<double>(maxConcurrency_) + 0.5, yLo, yHi);
    const double xr = xAxis->range().upper / 1.05;
    const double top = mode_ == Mode::Bytes ? yHi * 0.97 : yHi / 1.3;
    const double bottom = mode_ == Mode::Bytes ? yHi * 0.03 : yLo * 1.3;
    // Short: the step plot shares its dock's width with the intensity plot.
    auto* label = addLabel(xr, top, tr("past the pool\n(B > %1)").arg(maxConcurrency_),
                           Qt::AlignRight | Qt::AlignTop, warningColor(dk), 0.9, true);
    label->setTextAlignment(Qt::AlignRight);
    // At the band's right end, else at its left edge (inside it), top, bottom or middle.
    const double xl = static_cast<double>(maxConcurrency_) * 1.15;
    const double mid = mode_ == Mode::Bytes ? (top + bottom) / 2 : std::sqrt(top * bottom);
    const double upper = mode_ == Mode::Bytes ? (top + mid) / 2 : std::sqrt(top * mid);
    return {label,
            {{xr, top, Qt::AlignRight | Qt::AlignTop},
             {xr, bottom, Qt::AlignRight | Qt::AlignBottom},
             {xr, mid, Qt::AlignRight | Qt::AlignVCenter},
             {xr, upper, Qt::AlignRight | Qt::AlignVCenter},
             {xl, top, Qt::AlignLeft | Qt::AlignTop},
             {xl, bottom, Qt::AlignLeft | Qt::AlignBottom},
             {xl, mid, Qt::AlignLeft | Qt::AlignVCenter}}};
}

void StepPlot::addBars() {
    const bool dk = dark();
    yAxis->setScaleType(QCPAxis::stLinear);
    yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
    yAxis->setLabel(tr("GiB per GPU per step"));
    yAxis2->setVisible(false);
    struct Part {
        QString name;
        QColor color;
        std::int64_t DecodeStep::*field;
    };
    const Part parts[] = {{tr("weights"), mutedColor(), &DecodeStep::weightBytes},
                          {tr("KV"), seriesColor(0, dk), &DecodeStep::kvBytes},
                          {tr("activations"), seriesColor(2, dk), &DecodeStep::activationBytes}};
    const auto rows = currentRows();
    QCPBars* below = nullptr;
    double top = 0;
    for (const auto* r : rows)
        top = std::max(top, static_cast<double>(r->step->bytes()) / kGiB);
    for (const Part& p : parts) {
        auto* bars = new QCPBars(xAxis, yAxis);
        bars->setName(p.name);
        bars->setWidthType(QCPBars::wtAxisRectRatio);
        bars->setWidth(0.035);
        QColor fill = p.color;
        fill.setAlpha(200);
        bars->setBrush(fill);
        bars->setPen(QPen(p.color.darker(120), 1));
        for (const auto* r : rows)
            bars->addData(static_cast<double>(r->batch),
                          static_cast<double>((*r->step).*p.field) / kGiB);
        if (below)
            bars->moveAbove(below);
        below = bars;
    }
    yAxis->setRange(0, std::max(1e-9, top * 1.15));
}

bool StepPlot::addCurves() {
    const bool dk = dark();
    yAxis->setScaleType(QCPAxis::stLogarithmic);
    yAxis->setTicker(QSharedPointer<SiLogTicker>::create());
    yAxis->setLabel(mode_ == Mode::Time ? tr("ms per output token") : tr("tokens/s per GPU"));
    double lo = 1e300, hi = 0;
    for (const auto& r : rows_)
        if (r.step && valueOf(*r.step) > 0) {
            lo = std::min(lo, valueOf(*r.step));
            hi = std::max(hi, valueOf(*r.step));
        }
    for (const auto& p : measured_) {
        const double v = mode_ == Mode::Throughput ? p.tokensPerSPerGpu : p.msPerToken;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
    if (hi <= 0)
        return false;
    // Tight around the curves (decade rounding would squash them into the bottom third),
    // but at least one decade so the log ticks have something to label.
    yAxis->setRange(lo / 1.3, std::max(hi * 1.6, lo * 10));

    // The current variant's KV share, on the right axis.
    yAxis2->setVisible(true);
    yAxis2->setScaleType(QCPAxis::stLinear);
    yAxis2->setTicker(QSharedPointer<QCPAxisTicker>::create());
    yAxis2->setRange(0, 100);
    auto* share = addGraph(xAxis, yAxis2);
    share->setName(tr("KV %"));
    QColor sc = accentColor(dk);
    share->setPen(QPen(sc, 1.5, Qt::DotLine));
    sc.setAlpha(dk ? 40 : 28);
    share->setBrush(sc);
    for (const auto* r : currentRows())
        share->addData(static_cast<double>(r->batch), 100.0 * r->step->kvFraction);

    // One curve per KV layout, the current one thicker.
    std::vector<std::int64_t> kvs;
    for (const auto& r : rows_)
        if (std::find(kvs.begin(), kvs.end(), r.kvHeads) == kvs.end())
            kvs.push_back(r.kvHeads);
    for (std::size_t i = 0; i < kvs.size(); ++i) {
        const bool cur = kvs[i] == currentKv_;
        const QColor c = seriesColor(static_cast<int>(i), dk);
        auto* g = addGraph();
        const bool latent = kvs[i] == 0;
        g->setPen(QPen(c, cur ? 4 : 2, latent ? Qt::DashLine : Qt::SolidLine));
        g->setScatterStyle(
            QCPScatterStyle(latent ? QCPScatterStyle::ssDiamond : QCPScatterStyle::ssCircle,
                            QPen(c, 1.5), QBrush(palette().color(QPalette::Base)), 6));
        for (const auto& r : rows_)
            if (r.kvHeads == kvs[i] && r.step && valueOf(*r.step) > 0) {
                g->setName(q(r.variant));
                g->addData(static_cast<double>(r.batch), valueOf(*r.step));
            }
    }

    // Measured steps (a few layers timed, scaled to the model's layer count).
    if (!measured_.empty()) {
        auto* g = addGraph();
        g->setName(tr("measured on %1 (layers scaled)").arg(q(stepDevice_)));
        g->setLineStyle(QCPGraph::lsNone);
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangle, QPen(textColor(), 2),
                                           QBrush(warningColor(dk)), 11));
        for (const auto& p : measured_)
            g->addData(static_cast<double>(p.batch),
                       mode_ == Mode::Throughput ? p.tokensPerSPerGpu : p.msPerToken);
    }
    return true;
}

StepPlot::Floating StepPlot::addTenPercent(double maxBatch) {
    // Where KV reaches 10% of the step: from here on, halving it buys at most 5%. Two short
    // lines: the plot shares a dock's width with the intensity plot.
    if (!tenPercent_ || static_cast<double>(*tenPercent_) > maxBatch)
        return {};
    const double x = static_cast<double>(*tenPercent_);
    auto* line = new QCPItemStraightLine(this);
    line->point1->setCoords(x, 1);
    line->point2->setCoords(x, 2);
    line->setPen(QPen(textColor(), 1.5, Qt::DashLine));
    const double top = yAxis->range().upper / 1.1, bottom = yAxis->range().lower * 1.1;
    const double mid = std::sqrt(top * bottom);
    const double upperQ = std::sqrt(top * mid), lowerQ = std::sqrt(bottom * mid);
    const double xl = xAxis->range().lower * 1.05, xr = xAxis->range().upper / 1.05;
    auto* label = addLabel(x * 1.05, top, tr("KV 10%\nat B = %1").arg(q(withCommas(*tenPercent_))),
                           Qt::AlignLeft | Qt::AlignTop, textColor(), 0.85, true);
    label->setBrush(QBrush(palette().color(QPalette::Base)));
    std::vector<Spot> spots = besideLine(x, 1.05,
                                         {{top, Qt::AlignTop},
                                          {bottom, Qt::AlignBottom},
                                          {mid, Qt::AlignVCenter},
                                          {upperQ, Qt::AlignVCenter},
                                          {lowerQ, Qt::AlignVCenter}});
    spots.push_back({xl, top, Qt::AlignLeft | Qt::AlignTop});
    spots.push_back({xr, bottom, Qt::AlignRight | Qt::AlignBottom});
    return {label, std::move(spots)};
}

StepPlot::Floating StepPlot::addCurrent(double maxBatch) {
    // The current configuration: a ring on its point and a short label beside it (the bound
    // and the full breakdown are the point's tooltip).
    const bool dk = dark();
    for (const auto* r : currentRows()) {
        if (r->batch != currentBatch_)
            continue;
        const QColor acc = accentColor(dk);
        const bool bytes = mode_ == Mode::Bytes;
        const double y = bytes ? static_cast<double>(r->step->bytes()) / kGiB : valueOf(*r->step);
        auto* dot = new QCPItemTracer(this);
        dot->position->setCoords(static_cast<double>(r->batch), y);
        dot->setStyle(QCPItemTracer::tsCircle);
        dot->setSize(16);
        dot->setPen(QPen(acc, 3));
        dot->setBrush(Qt::NoBrush);
        const QString text = bytes ? tr("%1, B = %2: %3")
                                         .arg(q(r->variant))
                                         .arg(r->batch)
                                         .arg(q(humanBytes(static_cast<double>(r->step->bytes()))))
                                   : tr("%1, B = %2\n%3 ms/token, KV %4%")
                                         .arg(q(r->variant))
                                         .arg(r->batch)
                                         .arg(q(fixed(r->step->timeLowerBoundS * 1e3, 2)),
                                              q(fixed(100.0 * r->step->kvFraction, 0)));
        const bool right = static_cast<double>(r->batch) > std::sqrt(maxBatch);
        const double b = static_cast<double>(r->batch);
        const double span = yAxis->range().upper - yAxis->range().lower;
        const double up = bytes ? y + span * 0.04 : y * 1.25;
        const double down = bytes ? y - span * 0.04 : y / 1.25;
        const double top = bytes ? yAxis->range().upper - span * 0.02 : yAxis->range().upper / 1.1;
        const Qt::Alignment near = right ? Qt::AlignRight : Qt::AlignLeft;
        const Qt::Alignment far = right ? Qt::AlignLeft : Qt::AlignRight;
        const double xNear = b * (right ? 0.85 : 1.18), xFar = b * (right ? 1.18 : 0.85);
        auto* label = addLabel(xNear, up, text, near | Qt::AlignBottom, acc, 0.9, true);
        label->setTextAlignment(right ? Qt::AlignRight : Qt::AlignLeft);
        label->setBrush(QBrush(palette().color(QPalette::Base)));
        return {label,
                {{xNear, up, near | Qt::AlignBottom},
                 {xNear, down, near | Qt::AlignTop},
                 {xFar, up, far | Qt::AlignBottom},
                 {xFar, down, far | Qt::AlignTop},
                 {xNear, top, near | Qt::AlignTop},
                 {xFar, top, far | Qt::AlignTop},
                 {xNear, y, near | Qt::AlignVCenter},
                 {xFar, y, far | Qt::AlignVCenter},
                 // Where the point leaves no room on either side (a narrow dock): a top
                 // corner of the plot, the ring still marking the point.
                 {xAxis->range().lower * 1.05, top, Qt::AlignLeft | Qt::AlignTop},
                 {xAxis->range().upper / 1.05, top, Qt::AlignRight | Qt::AlignTop}}};
    }
    return {};
}

void StepPlot::mouseMoveEvent(QMouseEvent* e) {
    PlotWidget::mouseMoveEvent(e);
    const QPointF pos = e->position();
    if (mode_ != Mode::Bytes)
        for (const auto& p : measured_) {
            const double y = mode_ == Mode::Throughput ? p.tokensPerSPerGpu : p.msPerToken;
            const double px = xAxis->coordToPixel(static_cast<double>(p.batch));
            const double py = yAxis->coordToPixel(y);
            if (std::hypot(px - pos.x(), py - pos.y()) < 12) {
                QToolTip::showText(e->globalPosition().toPoint(), p.tooltip, this);
                return;
            }
        }
    for (const auto& r : rows_) {
        if (!r.step || (mode_ == Mode::Bytes && r.kvHeads != currentKv_))
            continue;
        const double y =
            mode_ == Mode::Bytes ? static_cast<double>(r.step->bytes()) / kGiB : valueOf(*r.step);
        if (y <= 0)
            continue;
        const double px = xAxis->coordToPixel(static_cast<double>(r.batch));
        const double py = yAxis->coordToPixel(y);
        if (std::hypot(px - pos.x(), py - pos.y()) < 12) {
            const DecodeStep& s = *r.step;
            QToolTip::showText(
                e->globalPosition().toPoint(),
                tr("<b>%1</b> at batch %2<br>%3 ms per token (%4-bound)<br>%5 tokens/s per "
                   "GPU, %6 for the deployment<br>weights %7, KV %8 (%9%), activations %10<br>"
                   "%11 TFLOP, all-reduces %12")
                    .arg(q(r.variant))
                    .arg(r.batch)
                    .arg(q(fixed(s.timeLowerBoundS * 1e3, 3)), q(toString(s.bound)),
                         q(fixed(s.tokensPerSPerGpu, 1)), q(fixed(s.tokensPerS, 1)),
                         q(humanBytes(static_cast<double>(s.weightBytes))),
                         q(humanBytes(static_cast<double>(s.kvBytes))),
                         q(fixed(100.0 * s.kvFraction, 1)),
                         q(humanBytes(static_cast<double>(s.activationBytes))))
                    .arg(q(fixed(s.flops() / 1e12, 3)),
                         q(humanBytes(static_cast<double>(s.commBytes)))),
                this);
            return;
        }
    }
    QToolTip::hideText();
}

} // namespace kvscope::ui
