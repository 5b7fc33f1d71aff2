#include "ui/numberspanel.h"

#include "core/format.h"
#include "ui/theme.h"

#include <QEvent>
#include <QFontDatabase>
#include <QGridLayout>
#include <QLabel>
#include <QPainter>
#include <QVBoxLayout>
#include <cmath>

namespace kvscope::ui {

namespace {
QString q(const std::string& s) {
    return QString::fromStdString(s);
}
QString bytes(std::int64_t b) {
    return q(humanBytes(static_cast<double>(b)));
}
QString gib(std::int64_t b) {
    return q(fixed(static_cast<double>(b) / (1024.0 * 1024.0 * 1024.0), 2)) +
           QStringLiteral(" GiB");
}

// "×8" or "×1.6": how many times a changed so a talk can say it aloud.
QString ratioText(double r) {
    const double rounded = std::round(r);
    if (std::abs(r - rounded) < 0.02)
        return QStringLiteral("×") + QString::number(static_cast<long long>(rounded));
    return QStringLiteral("×") + q(fixed(r, r < 10 ? 2 : 1));
}

// One change line, or empty when the value did not move.
// Small changes read better as a percentage ("1.5% more"), large ones as a factor ("×8 fewer").
QString changeLine(double before, double now, const QString& fewer, const QString& more) {
    if (before <= 0 || now <= 0 || std::abs(before - now) <= 1e-9 * std::max(before, now))
        return {};
    const double r = before > now ? before / now : now / before;
    const QString amount =
        r < 1.5 ? q(fixed((r - 1.0) * 100.0, 1)) + QLatin1Char('%') : ratioText(r);
    return amount + QLatin1Char(' ') + (before > now ? fewer : more);
}
} // namespace

// A plain-text label that never wraps and never widens the panel (a line longer than the
// label is elided, and then its tooltip carries the full text and the value's own tip).
// Unlike QLabel, a new text that keeps the size hint only repaints: QLabel::setText always
// asks the layout again, and a panel of values changing on every slider step relayouted
// itself (and its scroll area) on every step.
class FitLabel : public QWidget {
public:
    FitLabel(const QString& text, bool elastic, QWidget* parent)
        : QWidget(parent), text_(text), elastic_(elastic) {
        if (elastic)
            setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
        else
            setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
    }
    const QString& text() const { return text_; }
    void setText(const QString& text) {
        if (text == text_)
            return;
        const QSize before = hint();
        text_ = text;
        elided_ = -1;
        if (hint() != before)
            updateGeometry();
        update();
    }
    const QString& tip() const { return tip_; }
    void setTip(const QString& tip) {
        if (tip == tip_)
            return;
        tip_ = tip;
        elided_ = -1;
        update();
    }
    QSize sizeHint() const override {
        QSize s = hint();
        if (elastic_)
            s.setWidth(std::min(s.width(), 60));
        return s;
    }
    QSize minimumSizeHint() const override {
        QSize s = hint();
        if (elastic_)
            s.setWidth(std::min(s.width(), 40));
        return s;
    }

protected:
    void changeEvent(QEvent* e) override {
        QWidget::changeEvent(e);
        if (e->type() == QEvent::FontChange) {
            elided_ = -1;
            updateGeometry();
        }
    }
    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        p.setPen(palette().color(QPalette::WindowText));
        const QFontMetrics fm(font());
        int y = 0;
        bool elided = false;
        for (const QString& line : text_.split(QLatin1Char('\n'))) {
            const QString e = fm.elidedText(line, Qt::ElideRight, width());
            elided = elided || e != line;
            p.drawText(QRect(0, y, width(), fm.height()), Qt::AlignLeft | Qt::AlignVCenter, e);
            y += fm.lineSpacing();
        }
        if (static_cast<int>(elided) != elided_) {
            elided_ = elided;
            setToolTip(elided ? text_ + (tip_.isEmpty() ? QString() : QStringLiteral("\n\n") + tip_)
                              : tip_);
        }
    }

private:
    QSize hint() const {
        const QFontMetrics fm(font());
        const QStringList lines = text_.split(QLatin1Char('\n'));
        int w = 0;
        for (const QString& l : lines)
            w = std::max(w, fm.horizontalAdvance(l));
        return {w + 2, fm.height() + fm.lineSpacing() * (static_cast<int>(lines.size()) - 1)};
    }

    QString text_;
    bool elastic_;
    QString tip_;
    int elided_ = -1;
};

NumbersPanel::NumbersPanel(QWidget* parent) : QWidget(parent) {
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(14, 10, 14, 10);
    v->setSpacing(2); // fits 1600×1000 without scrolling

    QGridLayout* g = addSection(tr("KV cache per token"));
    addValue(g, 0, 0, QStringLiteral("cellModel"), tr("whole model"), 1.45);
    addValue(g, 0, 1, QStringLiteral("cellRank"), tr("per GPU"), 1.75);

    g = addSection(tr("One request"));
    addValue(g, 0, 0, QStringLiteral("requestModel"), tr("whole model"), 1.2);
    addValue(g, 0, 1, QStringLiteral("requestRank"), tr("per GPU"), 1.2);

    g = addSection(tr("KV pool per GPU"));
    addValue(g, 0, 0, QStringLiteral("pool"), tr("left for KV pages"), 1.45, 2);
    addValue(g, 1, 0, QStringLiteral("poolBreakdown"), QString(), 0.92, 2);

    g = addSection(tr("Capacity"));
    addValue(g, 0, 0, QStringLiteral("tokens"), tr("tokens held"), 1.45);
    addValue(g, 0, 1, QStringLiteral("concurrency"), tr("max concurrency"), 1.75);

    g = addSection(tr("vLLM would log"));
    addValue(g, 0, 0, QStringLiteral("vllmTokens"), QString(), 0.92, 2);
    addValue(g, 1, 0, QStringLiteral("vllmConcurrency"), QString(), 0.92, 2);
    const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    values_[QStringLiteral("vllmTokens")]->setFont(mono);
    values_[QStringLiteral("vllmConcurrency")]->setFont(mono);

    g = addSection(tr("Weights and the decode step"));
    addValue(g, 0, 0, QStringLiteral("kvProj"), tr("K/V projections per layer"), 1.1);
    addValue(g, 0, 1, QStringLiteral("stepKv"), tr("KV share of a step's reads"), 1.1);

    g = addSection(tr("Change against the previous state"));
    addValue(g, 0, 0, QStringLiteral("delta"), QString(), 1.15, 2);
    v->addStretch(1);
    restyle();
}

QGridLayout* NumbersPanel::addSection(const QString& title) {
    auto* v = static_cast<QVBoxLayout*>(layout());
    auto* t = new QLabel(title.toUpper(), this);
    sectionTitles_.append(t);
    v->addSpacing(3);
    v->addWidget(t);
    auto* g = new QGridLayout;
    g->setHorizontalSpacing(18);
    g->setVerticalSpacing(0);
    g->setColumnStretch(0, 1);
    g->setColumnStretch(1, 1);
    v->addLayout(g);
    return g;
}

FitLabel* NumbersPanel::addValue(QGridLayout* grid, int row, int col, const QString& key,
                                 const QString& caption, double fontFactor, int colSpan) {
    auto* box = new QVBoxLayout;
    box->setSpacing(0);
    // Values under 1x (the breakdown, vLLM's lines) and the change lines may be long.
    const bool elastic = fontFactor < 1.0 || colSpan > 1;
    auto* value = new FitLabel(QStringLiteral("—"), elastic, this);
    value->setObjectName(QStringLiteral("value.") + key);
    scaled_.append({value, fontFactor});
    box->addWidget(value);
    if (!caption.isEmpty()) {
        auto* c = new FitLabel(caption, true, this);
        captions_.insert(key, c);
        box->addWidget(c);
    }
    grid->addLayout(box, row * 2, col, 1, colSpan);
    values_.insert(key, value);
    return value;
}

void NumbersPanel::restyle() {
    const QFont base = font();
    const QColor muted = mutedText(this);
    for (QLabel* t : sectionTitles_) {
        t->setFont(scaledFont(base, 0.85, true));
        QPalette p = t->palette();
        p.setColor(QPalette::WindowText, muted);
        t->setPalette(p);
    }
    for (FitLabel* c : captions_) {
        c->setFont(scaledFont(base, 0.9));
        QPalette p = c->palette();
        p.setColor(QPalette::WindowText, muted);
        c->setPalette(p);
    }
    for (const auto& [label, factor] : scaled_) {
        if (label->objectName().startsWith(QLatin1String("value.vllm")))
            continue;
        label->setFont(scaledFont(base, factor, factor >= 1.1));
    }
    const bool dk = isDark(this);
    for (const char* key : {"cellRank", "concurrency"}) {
        FitLabel* l = values_.value(QLatin1String(key));
        QPalette p = l->palette();
        p.setColor(QPalette::WindowText, accentColor(dk));
        l->setPalette(p);
    }
}

void NumbersPanel::changeEvent(QEvent* e) {
    QWidget::changeEvent(e);
    if (e->type() == QEvent::PaletteChange || e->type() == QEvent::FontChange)
        restyle();
}

QString NumbersPanel::valueText(const QString& key) const {
    const FitLabel* l = values_.value(key);
    return l ? l->text() : QString();
}

QString NumbersPanel::valueTip(const QString& key) const {
    const FitLabel* l = values_.value(key);
    return l ? l->tip() : QString();
}

void NumbersPanel::setReport(const Report& r, const std::optional<Report>& previous) {
    auto set = [this](const char* key, const QString& text, const QString& tip = {}) {
        FitLabel* l = values_.value(QLatin1String(key));
        if (l->text() != text)
            l->setText(text);
        l->setTip(tip);
    };
    set("cellModel", bytes(r.cellBytesPerToken),
        tr("%1 B per token, all layers, all KV heads").arg(q(withCommas(r.cellBytesPerToken))));
    set("cellRank", bytes(r.cellBytesPerTokenPerRank),
        tr("%1 B per token on each GPU (%2 KV head(s) per GPU)")
            .arg(q(withCommas(r.cellBytesPerTokenPerRank)))
            .arg(r.kvHeadsPerRank));
    captions_.value(QStringLiteral("requestModel"))
        ->setText(tr("whole model, S = %1").arg(q(withCommas(r.context))));
    set("requestModel", bytes(r.requestBytes), tr("%1 B").arg(q(withCommas(r.requestBytes))));
    set("requestRank", bytes(r.requestBytesPerRank),
        tr("%1 B on each GPU").arg(q(withCommas(r.requestBytesPerRank))));

    const PoolBreakdown& p = r.pool;
    set("pool", p.poolBytes > 0 ? gib(p.poolBytes) : tr("nothing fits"),
        tr("%1 B per GPU").arg(q(withCommas(p.poolBytes))));
    FitLabel* poolLabel = values_.value(QStringLiteral("pool"));
    QPalette pp = palette();
    if (!r.fits)
        pp.setColor(QPalette::WindowText, errorColor(isDark(this)));
    poolLabel->setPalette(pp);
    // The engine's pool arithmetic term by term (PoolBreakdown::terms, as `size --json`'s
    // pool.breakdown): the budget, each subtracted term, the terms shown but not taken off (CUDA
    // graphs before vLLM 0.21); every term's rule and source in the tooltip.
    auto num = [](std::int64_t b) {
        return q(fixed(static_cast<double>(b) / (1024.0 * 1024.0 * 1024.0), 2));
    };
    QString breakdown;
    QString breakdownTip;
    if (p.overridden) {
        breakdown = tr("fixed by hand");
    } else if (!p.terms.empty()) {
        QStringList lines;
        QStringList off, shown, tips;
        for (const PoolTerm& t : p.terms) {
            tips
                << tr("%1: %2 GiB — %3 [%4]").arg(q(t.label), num(t.bytes), q(t.rule), q(t.source));
            if (t.key == "budget")
                lines << tr("%1: %2 = %3").arg(q(p.engine.text()), q(t.rule), gib(t.bytes));
            else if (t.key == "pool")
                continue;
            else if (t.subtracted)
                off << tr("− %1 %2").arg(q(t.label), num(t.bytes));
            else
                shown << tr("%1 %2 GiB not subtracted").arg(q(t.label), num(t.bytes));
        }
        for (int i = 0; i < off.size(); i += 2)
            lines << off.mid(i, 2).join(QStringLiteral("  ")) +
                         (i + 2 >= off.size() ? tr(" GiB") : QString());
        if (!shown.isEmpty())
            lines << QStringLiteral("(") + shown.join(QStringLiteral("; ")) + QStringLiteral(")");
        breakdown = lines.join(QLatin1Char('\n'));
        breakdownTip = tips.join(QLatin1Char('\n'));
    } else {
        breakdown = tr("%1 × %2 = %3\n(%4)")
                        .arg(q(fixed(p.util, 2)), gib(p.capacityBytes), gib(p.budgetBytes),
                             q(p.capacitySource));
        breakdown += tr("\n− weights / TP %1").arg(gib(p.weightBytes));
    }
    if (!r.fits && !r.noFitReason.empty())
        breakdown = q(r.noFitReason) + QLatin1Char('\n') + breakdown;
    set("poolBreakdown", breakdown, breakdownTip);

    set("tokens", q(withCommas(r.tokensCapacity)),
        tr("pool / per-GPU cell%1").arg(r.dcp > 1 ? tr(" × DCP %1").arg(r.dcp) : QString()));
    captions_.value(QStringLiteral("concurrency"))
        ->setText(tr("requests of %1 tokens").arg(q(withCommas(r.context))));
    set("concurrency", q(withCommas(r.maxConcurrency)),
        tr("unrounded %1").arg(q(fixed(r.concurrency, 2))));
    set("vllmTokens", q(r.vllmLogTokens));
    set("vllmConcurrency", q(r.vllmLogConcurrency),
        tr("vLLM pages: %1 B per page per layer, %2 blocks per GPU")
            .arg(q(withCommas(r.pageBytes)), q(withCommas(r.blocksPerRank))));
    QString kv = q(humanCount(static_cast<double>(r.kvProjParamsPerLayer)));
    if (r.kvProjParamsPerLayer != r.kvProjParamsPerLayerModel)
        kv += tr("  (checkpoint %1)")
                  .arg(q(humanCount(static_cast<double>(r.kvProjParamsPerLayerModel))));
    set("kvProj", kv);
    set("stepKv", q(fixed(r.step.kvFraction * 100.0, 1)) + QLatin1Char('%'),
        tr("KV %1 + weights %2 read per decode step per GPU; ≥ %3 ms per token (%4-bound)")
            .arg(bytes(r.step.kvBytes), bytes(r.step.weightBytes),
                 q(fixed(r.step.timeLowerBoundS * 1000.0, 2)), q(toString(r.step.bound))));

    QStringList lines;
    if (previous) {
        const Report& b = *previous;
        for (const QString& l :
             {changeLine(static_cast<double>(b.cellBytesPerTokenPerRank),
                         static_cast<double>(r.cellBytesPerTokenPerRank),
                         tr("fewer bytes per token per GPU"), tr("more bytes per token per GPU")),
              changeLine(static_cast<double>(b.cellBytesPerToken),
                         static_cast<double>(r.cellBytesPerToken), tr("fewer bytes per token"),
                         tr("more bytes per token")),
              changeLine(
                  static_cast<double>(b.maxConcurrency), static_cast<double>(r.maxConcurrency),
                  tr("fewer concurrent requests (%1 → %2)")
                      .arg(q(withCommas(b.maxConcurrency)), q(withCommas(r.maxConcurrency))),
                  tr("more concurrent requests (%1 → %2)")
                      .arg(q(withCommas(b.maxConcurrency)), q(withCommas(r.maxConcurrency)))),
              changeLine(b.intensityFlopPerByte, r.intensityFlopPerByte,
                         tr("lower decode intensity"), tr("higher decode intensity"))})
            if (!l.isEmpty())
                lines.append(l);
    }
    set("delta", lines.isEmpty() ? QStringLiteral("—") : lines.join(QLatin1Char('\n')));
}

} // namespace kvscope::ui
