#include "ui/numberspanel.h"

#include "core/format.h"
#include "ui/theme.h"

#include <QEvent>
#include <QFontDatabase>
#include <QGridLayout>
#include <QLabel>
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

NumbersPanel::NumbersPanel(QWidget* parent) : QWidget(parent) {
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(14, 10, 14, 10);
    v->setSpacing(6);

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
    values_[QStringLiteral("delta")]->setWordWrap(true);
    values_[QStringLiteral("delta")]->setTextFormat(Qt::RichText);
    values_[QStringLiteral("poolBreakdown")]->setTextFormat(Qt::RichText);
    v->addStretch(1);
    restyle();
}

QGridLayout* NumbersPanel::addSection(const QString& title) {
    auto* v = static_cast<QVBoxLayout*>(layout());
    auto* t = new QLabel(title.toUpper(), this);
    sectionTitles_.append(t);
    v->addSpacing(4);
    v->addWidget(t);
    auto* g = new QGridLayout;
    g->setHorizontalSpacing(18);
    g->setVerticalSpacing(0);
    g->setColumnStretch(0, 1);
    g->setColumnStretch(1, 1);
    v->addLayout(g);
    return g;
}

QLabel* NumbersPanel::addValue(QGridLayout* grid, int row, int col, const QString& key,
                               const QString& caption, double fontFactor, int colSpan) {
    auto* box = new QVBoxLayout;
    box->setSpacing(0);
    auto* value = new QLabel(QStringLiteral("—"), this);
    value->setObjectName(QStringLiteral("value.") + key);
    value->setTextInteractionFlags(Qt::TextSelectableByMouse);
    value->setWordWrap(fontFactor < 1.0);
    scaled_.append({value, fontFactor});
    box->addWidget(value);
    if (!caption.isEmpty()) {
        auto* c = new QLabel(caption, this);
        c->setWordWrap(true);
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
    for (QLabel* c : captions_) {
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
        QLabel* l = values_.value(QLatin1String(key));
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
    const QLabel* l = values_.value(key);
    return l ? l->text() : QString();
}

void NumbersPanel::setReport(const Report& r, const std::optional<Report>& previous) {
    auto set = [this](const char* key, const QString& text, const QString& tip = {}) {
        QLabel* l = values_.value(QLatin1String(key));
        if (l->text() != text)
            l->setText(text);
        l->setToolTip(tip);
    };
    set("cellModel", bytes(r.cellBytesPerToken),
        tr("%1 B per token, all layers, all KV heads").arg(q(withCommas(r.cellBytesPerToken))));
    set("cellRank", bytes(r.cellBytesPerTokenPerRank),
        tr("%1 B per token on each GPU (%2 KV head(s) per GPU)")
            .arg(q(withCommas(r.cellBytesPerTokenPerRank)))
            .arg(r.kvHeadsPerRank));
    captions_.value(QStringLiteral("requestModel"))
        ->setText(tr("whole model at %1 tokens").arg(q(withCommas(r.context))));
    set("requestModel", bytes(r.requestBytes), tr("%1 B").arg(q(withCommas(r.requestBytes))));
    set("requestRank", bytes(r.requestBytesPerRank),
        tr("%1 B on each GPU").arg(q(withCommas(r.requestBytesPerRank))));

    const PoolBreakdown& p = r.pool;
    set("pool", p.poolBytes > 0 ? gib(p.poolBytes) : tr("nothing fits"),
        tr("%1 B per GPU").arg(q(withCommas(p.poolBytes))));
    QLabel* poolLabel = values_.value(QStringLiteral("pool"));
    QPalette pp = palette();
    if (!r.fits)
        pp.setColor(QPalette::WindowText, errorColor(isDark(this)));
    poolLabel->setPalette(pp);
    QString breakdown;
    if (p.overridden) {
        breakdown = tr("fixed by hand");
    } else {
        breakdown = tr("%1 × %2 (%3) = %4")
                        .arg(q(fixed(p.util, 2)), gib(p.capacityBytes), q(p.capacitySource),
                             gib(p.budgetBytes));
        breakdown += tr("<br>− weights / TP %1").arg(gib(p.weightBytes));
        if (p.model == PoolModel::Vllm) {
            breakdown += tr("<br>− activation peak %1").arg(gib(p.activationPeakBytes));
            breakdown +=
                tr("<br>− non-torch %1 (CUDA graphs %2, NCCL %3, all-reduce %4, "
                   "context %5)")
                    .arg(gib(p.nonTorchBytes()), bytes(p.cudaGraphBytes), bytes(p.ncclBytes),
                         bytes(p.customAllReduceBytes), bytes(p.cudaContextBytes));
        }
    }
    if (!r.fits && !r.noFitReason.empty())
        breakdown = QStringLiteral("<b>") + q(r.noFitReason).toHtmlEscaped() +
                    QStringLiteral("</b><br>") + breakdown;
    set("poolBreakdown", breakdown);

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
    set("delta", lines.isEmpty() ? QStringLiteral("—") : lines.join(QStringLiteral("<br>")));
}

} // namespace kvscope::ui
