#include "ui/numberspanel.h"

#include "core/features/compare.h"
#include "core/features/report_fields.h"
#include "core/format.h"
#include "ui/qstrings.h"
#include "ui/textsprite.h"
#include "ui/theme.h"

#include <QEvent>
#include <QFontDatabase>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QResizeEvent>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <utility>

namespace kvscope::ui {

namespace {
// One change line, or empty when the value did not move: core's phraser (the compare table's),
// so the panel and the compare view say the same change with the same words and thresholds.
QString changeLine(double before, double now, const std::string& label, const char* more = "more",
                   const char* fewer = "fewer") {
    if (before <= 0 || now <= 0 || sameRatio(now / before))
        return {};
    return q(phraseRatio(now / before, label, more, fewer));
}
} // namespace

// A plain-text label that never widens the panel. A fixed one (a big number, a row label) is
// elided when too long; an elastic one (the breakdown, vLLM's lines, the captions) wraps at
// spaces to the panel's width and grows in height, so no line is cut at 1600×1000 or in
// presentation mode. Where text still does not fit, its tooltip carries it whole with the
// value's own tip. Unlike QLabel, a new text that keeps the size (and, wrapped, the height)
// only repaints: QLabel::setText always asks the layout again, and a panel of values changing
// on every slider step relayouted itself (and its scroll area) on every step.
class FitLabel : public QWidget {
public:
    FitLabel(const QString& text, bool elastic, QWidget* parent)
        : QWidget(parent), text_(text), elastic_(elastic) {
        if (elastic) {
            setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
        } else {
            setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
        }
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
    /// Whether the text as last painted was cut (elided, or wrapped past the label's height).
    bool cut() const { return elided_ == 1; }
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
    void resizeEvent(QResizeEvent* e) override {
        QWidget::resizeEvent(e);
        // Wrapped, its height follows its width (the layout sets the width alone: the
        // horizontal policy is Ignored, so a new height never moves the width again).
        if (elastic_ && e->size().width() != e->oldSize().width()) {
            const int h = hint().height();
            if (h != hintHeight_) {
                hintHeight_ = h;
                updateGeometry();
            }
        }
    }
    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        p.setPen(palette().color(QPalette::WindowText));
        const QFontMetrics fm(font());
        bool elided = false;
        if (elastic_) {
            drawCachedText(p, rect(), Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, text_);
            elided = hint().height() > height() + 1 ||
                     (hint().width() > width() && wrapped(width()).width() > width() + 1);
        } else {
            int y = 0;
            for (const QString& line : text_.split(QLatin1Char('\n'))) {
                // Laid out once per text (ui/textsprite.h): a step repaints every value.
                const QString e = cachedElided(font(), line, Qt::ElideRight, width());
                elided = elided || e != line;
                drawCachedText(p, QRect(0, y, width(), fm.height()),
                               Qt::AlignLeft | Qt::AlignVCenter, e);
                y += fm.lineSpacing();
            }
        }
        if (static_cast<int>(elided) != elided_) {
            elided_ = elided;
            setToolTip(elided ? text_ + (tip_.isEmpty() ? QString() : QStringLiteral("\n\n") + tip_)
                              : tip_);
        }
    }

private:
    /// The text's widest line and height; wrapped ones as tall as their lines at the current
    /// width. Kept until the text, the width or the font moves (asked twice per new text).
    QSize hint() const {
        const QString key = font().key();
        if (hintText_ == text_ && hintWidth_ == width() && hintFont_ == key)
            return hint_;
        const QFontMetrics fm(font());
        const QStringList lines = text_.split(QLatin1Char('\n'));
        int w = 0;
        for (const QString& l : lines)
            w = std::max(w, static_cast<int>(qRound(cachedAdvance(font(), l))));
        int h = fm.height() + fm.lineSpacing() * (static_cast<int>(lines.size()) - 1);
        if (elastic_) // the height QPainter::drawText lays the (wrapped) lines out in
            h = wrapped(width() > 20 ? width() : w + 2).height();
        hint_ = {w + 2, h};
        hintText_ = text_;
        hintWidth_ = width();
        hintFont_ = key;
        return hint_;
    }
    /// The text's box wrapped at spaces to `w` px.
    QRect wrapped(int w) const {
        return cachedTextRect(font(), this, QRect(0, 0, w, 1 << 20),
                              Qt::AlignLeft | Qt::TextWordWrap, text_);
    }

    QString text_;
    bool elastic_;
    QString tip_;
    int elided_ = -1;
    int hintHeight_ = -1; ///< the height last asked of the layout (wrapped labels)
    mutable QSize hint_;
    mutable QString hintText_, hintFont_;
    mutable int hintWidth_ = -1;
};

/// A section title that folds its section away and back on a click ("▾ POOL" / "▸ POOL").
class SectionTitle : public QLabel {
public:
    SectionTitle(const QString& title, QWidget* body, QWidget* parent)
        : QLabel(parent), title_(title.toUpper()), body_(body) {
        setCursor(Qt::PointingHandCursor);
        // A long title wraps at the panel's edge; it never widens the panel.
        setWordWrap(true);
        QSizePolicy p(QSizePolicy::Ignored, QSizePolicy::Preferred);
        p.setHeightForWidth(true);
        setSizePolicy(p);
        setMinimumWidth(1);
        setToolTip(QObject::tr("Click to fold or unfold this section"));
        refresh();
    }
    void setFolded(bool folded) {
        folded_ = folded;
        body_->setVisible(!folded && !isHidden());
        refresh();
    }
    bool folded() const { return folded_; }
    /// Shows or hides the whole section (title and body); a folded one stays folded.
    void setShown(bool shown) {
        setVisible(shown);
        body_->setVisible(shown && !folded_);
    }
    void setTitle(const QString& title) {
        title_ = title.toUpper();
        refresh();
    }

protected:
    void mousePressEvent(QMouseEvent*) override { setFolded(!folded_); }

private:
    void refresh() { setText((folded_ ? QStringLiteral("▸ ") : QStringLiteral("▾ ")) + title_); }
    QString title_;
    QWidget* body_;
    bool folded_ = false;
};

NumbersPanel::NumbersPanel(QWidget* parent) : QWidget(parent) {
    auto* v = new QVBoxLayout(this);
    // Every section fits 1600×1000 and presentation mode (1080p) without scrolling: no spacing
    // but the section titles' own line height.
    v->setContentsMargins(12, 2, 12, 2);
    v->setSpacing(0);

    // Each value with its caption on the same line ("40 KiB per GPU"): a line per row, not two.
    // KV cache: a row label per row ("token", "request"), the columns named in the title.
    QGridLayout* g = addSection(tr("KV cache: model · per GPU"));
    g->setColumnStretch(0, 0);
    g->setColumnStretch(2, 1);
    addRowLabel(g, 0, tr("token"));
    addRowLabel(g, 1, tr("request"));
    addValue(g, 0, 1, QStringLiteral("cellModel"), QString(), 1.3);
    addValue(g, 0, 2, QStringLiteral("cellRank"), QString(), 1.5);
    addValue(g, 1, 1, QStringLiteral("requestModel"), QString(), 1.1);
    addValue(g, 1, 2, QStringLiteral("requestRank"), QString(), 1.1);

    g = addSection(tr("Layer groups: a request per GPU"));
    groupsSection_ = static_cast<int>(sectionTitles_.size()) - 1;
    addValue(g, 0, 0, QStringLiteral("groups"), QString(), 0.9, 2);

    g = addSection(tr("KV pool per GPU, capacity"));
    addValue(g, 0, 0, QStringLiteral("pool"), tr("left for KV pages"), 1.3, 2);
    addValue(g, 1, 0, QStringLiteral("poolBreakdown"), QString(), 0.9, 2);
    addValue(g, 2, 0, QStringLiteral("tokens"), tr("tokens held"), 1.3, 1, true);
    addValue(g, 2, 1, QStringLiteral("concurrency"), tr("requests at S"), 1.5, 1, true);

    g = addSection(tr("vLLM would log"));
    addValue(g, 0, 0, QStringLiteral("vllmTokens"), QString(), 0.8, 2);
    addValue(g, 1, 0, QStringLiteral("vllmConcurrency"), QString(), 0.8, 2);

    g = addSection(tr("Weights, decode step, GPU"));
    addValue(g, 0, 0, QStringLiteral("kvProj"), QString(), 0.9);
    addValue(g, 0, 1, QStringLiteral("stepKv"), QString(), 0.9);
    addValue(g, 1, 0, QStringLiteral("gpu"), QString(), 0.9, 2);

    g = addSection(tr("Change against the previous state"));
    addValue(g, 0, 0, QStringLiteral("delta"), QString(), 0.95, 2);
    v->addStretch(1);
    restyle();
}

QGridLayout* NumbersPanel::addSection(const QString& title) {
    auto* v = static_cast<QVBoxLayout*>(layout());
    auto* body = new QWidget(this);
    auto* t = new SectionTitle(title, body, this);
    sectionTitles_.append(t);
    v->addWidget(t);
    v->addWidget(body);
    auto* g = new QGridLayout(body);
    g->setContentsMargins(0, 0, 0, 0);
    g->setHorizontalSpacing(14);
    g->setVerticalSpacing(0);
    g->setColumnStretch(0, 1);
    g->setColumnStretch(1, 1);
    return g;
}

void NumbersPanel::setSectionFolded(int section, bool folded) {
    static_cast<SectionTitle*>(sectionTitles_.at(section))->setFolded(folded);
}

bool NumbersPanel::sectionFolded(int section) const {
    return static_cast<SectionTitle*>(sectionTitles_.at(section))->folded();
}

int NumbersPanel::sectionCount() const {
    return static_cast<int>(sectionTitles_.size());
}

void NumbersPanel::addRowLabel(QGridLayout* grid, int row, const QString& text) {
    auto* l = new FitLabel(text, false, this);
    rowLabels_.append(l);
    grid->addWidget(l, row, 0, Qt::AlignBottom | Qt::AlignLeft);
}

FitLabel* NumbersPanel::addValue(QGridLayout* grid, int row, int col, const QString& key,
                                 const QString& caption, double fontFactor, int colSpan,
                                 bool captionBelow) {
    QBoxLayout* box = captionBelow ? static_cast<QBoxLayout*>(new QVBoxLayout)
                                   : static_cast<QBoxLayout*>(new QHBoxLayout);
    box->setSpacing(captionBelow ? 0 : 6);
    // Values under 1x (the breakdown, vLLM's lines) and the change lines may be long.
    const bool elastic = fontFactor < 1.0 || colSpan > 1;
    auto* value = new FitLabel(QStringLiteral("—"), elastic, this);
    value->setObjectName(QStringLiteral("value.") + key);
    scaled_.append({value, fontFactor});
    box->addWidget(value, elastic ? 1 : 0, Qt::AlignBottom);
    if (!caption.isEmpty()) {
        auto* c = new FitLabel(caption, true, this);
        captions_.insert(key, c);
        box->addWidget(c, 1, Qt::AlignBottom);
    }
    grid->addLayout(box, row, col, 1, colSpan);
    values_.insert(key, value);
    return value;
}

void NumbersPanel::restyle() {
    const QFont base = font();
    const QColor muted = mutedText(this);
    for (QLabel* t : sectionTitles_) {
        t->setFont(scaledFont(base, 0.78, true));
        QPalette p = t->palette();
        p.setColor(QPalette::WindowText, muted);
        t->setPalette(p);
    }
    for (FitLabel* c : captions_.values() + rowLabels_) {
        c->setFont(scaledFont(base, 0.9));
        QPalette p = c->palette();
        p.setColor(QPalette::WindowText, muted);
        c->setPalette(p);
    }
    for (const auto& [label, factor] : scaled_) {
        if (label->objectName().startsWith(QLatin1String("value.vllm"))) {
            // vLLM's lines in the fixed font, at the panel's scale (presentation type too:
            // the system font's own size stayed small on a projector).
            QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
            mono.setPointSizeF(base.pointSizeF() * factor);
            label->setFont(mono);
            continue;
        }
        label->setFont(scaledFont(base, factor, factor >= 1.0));
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

QStringList NumbersPanel::valueFields(const QString& key) const {
    return fieldsOf_.value(key);
}

QStringList NumbersPanel::cutTexts() const {
    QStringList out;
    for (auto it = values_.constBegin(); it != values_.constEnd(); ++it)
        if (it.value()->isVisible() && it.value()->cut())
            out << it.key();
    for (auto it = captions_.constBegin(); it != captions_.constEnd(); ++it)
        if (it.value()->isVisible() && it.value()->cut())
            out << QStringLiteral("caption.") + it.key();
    std::sort(out.begin(), out.end());
    return out;
}

bool NumbersPanel::groupsShown() const {
    return !sectionTitles_.at(groupsSection_)->isHidden();
}

/// The report's fields by key, recording which keys a panel value reads.
class PanelFields {
public:
    PanelFields(const Report& r, const ModelSpec* m, const GpuSpec* g)
        : fields_(reportFields(r, m, g)) {}
    const ReportField& f(const std::string& key) {
        static const ReportField unknown;
        used_ << q(key);
        const ReportField* x = findField(fields_, key);
        return x ? *x : unknown;
    }
    double v(const std::string& key) { return f(key).value.value_or(0); }
    QString human(const std::string& key) { return q(formatFieldHuman(f(key))); }
    QString count(const std::string& key) { return q(withCommas(std::llround(v(key)))); }
    const std::vector<ReportField>& all() const { return fields_; }
    /// The keys read since the last call.
    QStringList take() { return std::exchange(used_, {}); }

private:
    std::vector<ReportField> fields_;
    QStringList used_;
};

namespace {

bool hybrid(const ModelSpec& m) {
    if (m.layerGroups.size() > 1)
        return true;
    return std::any_of(m.layerGroups.begin(), m.layerGroups.end(), [](const LayerGroup& g) {
        return g.window || (g.kind != LayerKind::Full && g.kind != LayerKind::Mla);
    });
}

/// One line per layer group: what of one request it holds on one GPU, and how that behaves
/// with the context (grows with S, capped at the window, fixed per request).
QString groupLines(PanelFields& f, const ModelSpec& m) {
    QStringList lines;
    for (std::size_t i = 0; i < m.layerGroups.size(); ++i) {
        auto key = [i](const char* field) { return layerGroupKey(i, field); };
        QString head =
            f.count(key("count")) + QLatin1Char(' ') + q(toString(m.layerGroups[i].kind));
        if (f.f(key("window")).value)
            head += QStringLiteral(" (") + f.count(key("window")) + QLatin1Char(')');
        QStringList parts;
        if (f.v(key("growing_bytes_per_rank")) > 0)
            parts << QObject::tr("%1 grows with S").arg(f.human(key("growing_bytes_per_rank")));
        if (f.v(key("capped_bytes_per_rank")) > 0)
            parts << QObject::tr("%1 capped").arg(f.human(key("capped_bytes_per_rank")));
        if (f.v(key("fixed_bytes_per_rank")) > 0)
            parts << QObject::tr("%1 fixed").arg(f.human(key("fixed_bytes_per_rank")));
        if (parts.isEmpty())
            continue; // layers without a cache (MLP-only): nothing per request
        lines << head + QStringLiteral(": ") + parts.join(QStringLiteral(" + "));
    }
    return lines.join(QLatin1Char('\n'));
}

} // namespace

void NumbersPanel::setReport(const Report& r, const std::optional<Report>& previous,
                             const ModelSpec* m, const GpuSpec* gpu) {
    PanelFields f(r, m, gpu);
    auto set = [this, &f](const char* key, const QString& text, const QString& tip = {}) {
        show(f, key, text, tip);
    };
    set("cellModel", f.human("cell_bytes_per_token"),
        tr("%1 B per token, all layers, all KV heads").arg(f.count("cell_bytes_per_token")));
    set("cellRank", f.human("cell_bytes_per_token_per_rank"),
        tr("%1 B per token on each GPU (%2 KV head(s) per GPU)")
            .arg(f.count("cell_bytes_per_token_per_rank"), f.count("kv_heads_per_rank")));
    static_cast<SectionTitle*>(sectionTitles_.first())
        ->setTitle(tr("KV cache at S = %1: model · per GPU").arg(f.count("context")));
    f.take();
    set("requestModel", f.human("request_bytes"), tr("%1 B").arg(f.count("request_bytes")));
    set("requestRank", f.human("request_bytes_per_rank"),
        tr("%1 B on each GPU").arg(f.count("request_bytes_per_rank")));

    const bool groups = m && hybrid(*m);
    static_cast<SectionTitle*>(sectionTitles_.at(groupsSection_))->setShown(groups);
    set("groups", groups ? groupLines(f, *m) : QString(),
        tr("Bytes each layer group holds for one request of %1 tokens on one GPU")
            .arg(f.count("context_per_rank")));

    setPool(r, f);
    set("tokens", f.count("tokens_capacity"),
        tr("pool / per-GPU cell%1").arg(r.dcp > 1 ? tr(" × DCP %1").arg(r.dcp) : QString()));
    set("concurrency", f.count("max_concurrency"),
        tr("unrounded %1").arg(q(formatFieldHuman(f.f("concurrency")))));
    set("vllmTokens", q(r.vllmLogTokens),
        tr("%1 tokens (vllm_tokens)").arg(f.count("vllm_tokens")));
    set("vllmConcurrency", q(r.vllmLogConcurrency),
        tr("vLLM pages: %1 B per page per layer, %2 blocks per GPU")
            .arg(f.count("page_bytes"), f.count("blocks_per_rank")));
    QString kv = tr("K/V %1/layer").arg(q(humanCount(f.v("kv_proj_params_per_layer"))));
    if (f.v("kv_proj_params_per_layer") != f.v("kv_proj_params_per_layer_checkpoint"))
        kv += tr(" (ckpt %1)").arg(q(humanCount(f.v("kv_proj_params_per_layer_checkpoint"))));
    set("kvProj", kv,
        tr("K/V projection parameters per layer; the checkpoint's when an h_kv what-if differs"));
    set("stepKv", tr("KV %1 of a step").arg(f.human("decode_step.kv_fraction")),
        tr("KV %1 + weights %2 read per decode step per GPU; ≥ %3 per token (%4-bound)")
            .arg(f.human("decode_step.kv_bytes_per_rank"),
                 f.human("decode_step.weight_bytes_per_rank"),
                 f.human("decode_step.time_lower_bound_s"), q(toString(r.step.bound))));
    if (gpu)
        setGpuLine(f);
    setChange(r, previous);
}

void NumbersPanel::setGpuLine(PanelFields& f) {
    // The GPU section's rows marked for the panel, in the list's order ("L2 cache 50 MiB ·
    // Memory bandwidth 3.35 TB/s"); a new such row shows here with no change to the panel.
    QStringList parts, tips;
    for (const ReportField& row : f.all())
        if (row.panel && row.section == "GPU") {
            const QString text = q(row.label) + QLatin1Char(' ') + f.human(row.key);
            parts << text;
            tips << text + (row.source.empty() ? QString() : QStringLiteral(" — ") + q(row.source));
        }
    show(f, "gpu", parts.join(QStringLiteral(" · ")), tips.join(QLatin1Char('\n')));
}

void NumbersPanel::show(PanelFields& f, const char* key, const QString& text, const QString& tip) {
    FitLabel* l = values_.value(QLatin1String(key));
    if (l->text() != text)
        l->setText(text);
    l->setTip(tip);
    fieldsOf_.insert(QLatin1String(key), f.take());
}

void NumbersPanel::setPool(const Report& r, PanelFields& f) {
    auto set = [this, &f](const char* key, const QString& text, const QString& tip = {}) {
        show(f, key, text, tip);
    };
    const PoolBreakdown& p = r.pool;
    set("pool", p.poolBytes > 0 ? f.human("pool_bytes_per_rank") : tr("nothing fits"),
        tr("%1 B per GPU").arg(f.count("pool_bytes_per_rank")));
    FitLabel* poolLabel = values_.value(QStringLiteral("pool"));
    QPalette pp = palette();
    if (!r.fits)
        pp.setColor(QPalette::WindowText, errorColor(isDark(this)));
    poolLabel->setPalette(pp);
    // The engine's pool arithmetic term by term (the field list's pool.breakdown rows): the
    // budget, each subtracted term, the terms shown but not taken off (CUDA graphs before vLLM
    // 0.21); every term's rule and source in the tooltip.
    auto num = [](double b) { return q(fixed(b / (1024.0 * 1024.0 * 1024.0), 2)); };
    QString breakdown;
    QString breakdownTip;
    if (p.overridden) {
        breakdown = tr("fixed by hand");
    } else if (!p.terms.empty()) {
        QStringList lines;
        QStringList off, shown, tips;
        for (std::size_t i = 0; i < p.terms.size(); ++i) {
            const PoolTerm& t = p.terms[i];
            const double bytes = f.v("pool.breakdown." + std::to_string(i) + ".bytes");
            tips << tr("%1: %2 GiB — %3 [%4]").arg(q(t.label), num(bytes), q(t.rule), q(t.source));
            if (t.key == "budget")
                lines << tr("%1: %2 = %3 GiB").arg(q(p.engine.text()), q(t.rule), num(bytes));
            else if (t.key == "pool")
                continue;
            else if (t.subtracted)
                off << tr("− %1 %2").arg(q(t.label), num(bytes));
            else
                shown << tr("%1 %2 GiB not subtracted").arg(q(t.label), num(bytes));
        }
        for (int i = 0; i < off.size(); i += 2)
            lines << off.mid(i, 2).join(QStringLiteral("  ")) +
                         (i + 2 >= off.size() ? tr(" GiB") : QString());
        if (!shown.isEmpty())
            lines << QStringLiteral("(") + shown.join(QStringLiteral("; ")) + QStringLiteral(")");
        breakdown = lines.join(QLatin1Char('\n'));
        breakdownTip = tips.join(QLatin1Char('\n'));
    } else {
        breakdown = tr("%1 × %2 GiB = %3 GiB\n(%4)")
                        .arg(q(fixed(f.v("pool.gpu_memory_utilization"), 2)),
                             num(f.v("pool.capacity_bytes")), num(f.v("pool.budget_bytes")),
                             q(p.capacitySource));
        breakdown += tr("\n− weights / TP %1 GiB").arg(num(f.v("pool.weight_bytes")));
    }
    if (!r.fits && !r.noFitReason.empty())
        breakdown = q(r.noFitReason) + QLatin1Char('\n') + breakdown;
    set("poolBreakdown", breakdown, breakdownTip);
}

void NumbersPanel::setChange(const Report& r, const std::optional<Report>& previous) {
    QStringList lines;
    if (previous) {
        const Report& b = *previous;
        auto d = [](std::int64_t v) { return static_cast<double>(v); };
        const std::string counts =
            " (" + withCommas(b.maxConcurrency) + " → " + withCommas(r.maxConcurrency) + ")";
        for (const QString& l :
             {changeLine(d(b.cellBytesPerTokenPerRank), d(r.cellBytesPerTokenPerRank),
                         tr("bytes per token per GPU").toStdString()),
              changeLine(d(b.cellBytesPerToken), d(r.cellBytesPerToken),
                         tr("bytes per token").toStdString()),
              changeLine(d(b.maxConcurrency), d(r.maxConcurrency),
                         tr("concurrent requests").toStdString() + counts),
              changeLine(b.intensityFlopPerByte, r.intensityFlopPerByte,
                         tr("decode intensity").toStdString(), "higher", "lower")})
            if (!l.isEmpty())
                lines.append(l);
    }
    FitLabel* l = values_.value(QStringLiteral("delta"));
    l->setText(lines.isEmpty() ? QStringLiteral("—") : lines.join(QLatin1Char('\n')));
}

} // namespace kvscope::ui
