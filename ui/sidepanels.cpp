#include "ui/sidepanels.h"

#include "core/format.h"
#include "core/model/presets.h"
#include "ui/qstrings.h"
#include "ui/theme.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStyle>
#include <QToolButton>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace kvscope::ui {

namespace {
const QString kCustomId = QStringLiteral("custom");
} // namespace

ModelPanel::ModelPanel(QWidget* parent) : QWidget(parent) {
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(10, 8, 10, 8);
    presets_ = new QComboBox(this);
    presets_->setObjectName(QStringLiteral("modelPresetCombo"));
    presets_->setToolTip(tr("Bundled model presets ([ / ] step through them)"));
    for (const auto& p : kvscope::modelPresets())
        presets_->addItem(q(p.title), q(p.id));
    v->addWidget(presets_);
    auto* row = new QHBoxLayout;
    open_ = new QPushButton(tr("Open config.json…"), this);
    open_->setToolTip(tr("Open a HuggingFace config.json (Ctrl+O), or drop one on the window"));
    recent_ = new QToolButton(this);
    recent_->setText(tr("Recent"));
    recent_->setPopupMode(QToolButton::InstantPopup);
    row->addWidget(open_, 1);
    row->addWidget(recent_);
    v->addLayout(row);

    geometry_ = new QTreeWidget(this);
    geometry_->setObjectName(QStringLiteral("geometryTree"));
    geometry_->setColumnCount(3);
    geometry_->setHeaderLabels({tr("Quantity"), tr("Value"), tr("From")});
    geometry_->setRootIsDecorated(false);
    geometry_->setAlternatingRowColors(true);
    geometry_->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    geometry_->header()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    geometry_->header()->setStretchLastSection(true);
    // The provenance ("fallback: hidden_size / num_attention_heads") wraps onto more lines in
    // a smaller font instead of being cut; its tooltip says it again. A tree view sizes a
    // wrapped row for no particular width, so each row's height is set from the text wrapped at
    // the column's width (fitProvenance), again whenever the column is resized.
    geometry_->setWordWrap(true);
    geometry_->setUniformRowHeights(false);
    geometry_->setTextElideMode(Qt::ElideRight);
    geometry_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    connect(geometry_->header(), &QHeaderView::sectionResized, this, [this](int section, int, int) {
        if (section == 2)
            fitProvenance();
    });
    v->addWidget(geometry_, 1);

    // The warnings follow TP and h_kv. In a fixed-height scroll area their changing height
    // stays inside it: a bare label relayouted the dock, and with it the whole main window,
    // on every slider step that changed a warning.
    warningsArea_ = new QScrollArea(this);
    warningsArea_->setFrameShape(QFrame::NoFrame);
    warningsArea_->setWidgetResizable(true);
    warningsArea_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    warnings_ = new QLabel;
    warnings_->setObjectName(QStringLiteral("modelWarnings"));
    warnings_->setWordWrap(true);
    // Plain text in the warning colour: rich text lays out through a QTextDocument at several
    // widths on every change, plain text through the font metrics.
    warnings_->setTextFormat(Qt::PlainText);
    warnings_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    warningsArea_->setWidget(warnings_);
    warningsArea_->setFixedHeight(QFontMetrics(font()).lineSpacing() * 6 + 4);
    v->addWidget(warningsArea_);

    connect(presets_, &QComboBox::activated, this,
            [this](int i) { Q_EMIT modelRequested(presets_->itemData(i).toString()); });
    connect(open_, &QPushButton::clicked, this, &ModelPanel::openRequested);
}

void ModelPanel::setRecentMenu(QMenu* menu) {
    recent_->setMenu(menu);
}

void ModelPanel::setState(const AppState& s, const Report& r) {
    const QString ref = q(s.modelRef);
    {
        QSignalBlocker block(presets_);
        int idx = presets_->findData(ref);
        if (idx < 0) {
            // A file: one extra entry at the end naming it.
            const int last = presets_->count() - 1;
            if (last >= 0 && presets_->itemData(last, Qt::UserRole + 1).toBool())
                presets_->removeItem(last);
            presets_->addItem(
                tr("file: %1").arg(QFileInfo(ref).fileName().isEmpty() ? ref : q(s.model.name)),
                ref);
            presets_->setItemData(presets_->count() - 1, true, Qt::UserRole + 1);
            presets_->setItemData(presets_->count() - 1, ref, Qt::ToolTipRole);
            idx = presets_->count() - 1;
        }
        presets_->setCurrentIndex(idx);
    }

    const ModelSpec& m = s.model;
    geometry_->clear();
    auto add = [this](const QString& name, const QString& value, const std::string& source) {
        // Spaces after '_' and '/' let a long key wrap ("num_attention_" / "heads").
        QString shown = q(source);
        shown.replace(QLatin1Char('_'), QStringLiteral("_\u200b"));
        auto* it = new QTreeWidgetItem(geometry_, {name, value, shown});
        it->setToolTip(2, q(source));
        it->setFont(2, scaledFont(geometry_->font(), 0.88));
        it->setTextAlignment(1, Qt::AlignRight | Qt::AlignVCenter);
    };
    auto num = [](std::int64_t v) { return q(withCommas(v)); };
    add(tr("layers L"), num(m.layers.value), m.layers.source);
    add(tr("query heads h"), num(m.qHeads.value), m.qHeads.source);
    add(tr("KV heads h_kv"), num(m.kvHeads.value), m.kvHeads.source);
    add(tr("head dim d_h"), num(m.headDim.value), m.headDim.source);
    add(tr("hidden d"), num(m.hidden.value), m.hidden.source);
    if (m.mla) {
        add(tr("kv_lora_rank r"), num(m.kvLoraRank.value), m.kvLoraRank.source);
        add(tr("qk_rope_head_dim"), num(m.qkRopeHeadDim.value), m.qkRopeHeadDim.source);
        add(tr("qk_nope_head_dim"), num(m.qkNopeHeadDim.value), m.qkNopeHeadDim.source);
        add(tr("v_head_dim"), num(m.vHeadDim.value), m.vHeadDim.source);
        add(tr("q_lora_rank"), num(m.qLoraRank.value), m.qLoraRank.source);
    }
    add(tr("dtype"), q(m.torchDtype.value), m.torchDtype.source);
    if (!m.layerWindow.empty() && m.windowLayerCount() > 0)
        add(tr("window layers"), tr("%1 of %2").arg(m.windowLayerCount()).arg(m.layerWindow.size()),
            m.layerKindsSource);
    if (m.routedExperts.value > 0) {
        add(tr("experts"), num(m.routedExperts.value), m.routedExperts.source);
        add(tr("experts / token"), num(m.expertsPerToken.value), m.expertsPerToken.source);
    }
    add(tr("vocab"), num(m.vocab.value), m.vocab.source);
    add(tr("parameters"), q(humanCount(static_cast<double>(r.params.total()))),
        "counted from config");
    add(tr("weights"), q(humanBytes(static_cast<double>(r.weightBytes))), toString(r.weightDtype));
    fitProvenance();

    setWarnings(s, r);
}

void ModelPanel::fitProvenance() {
    // The style's text margins on either side of an item's text (QCommonStyle's view item).
    const int margin = 2 * (geometry_->style()->pixelMetric(QStyle::PM_FocusFrameHMargin) + 1);
    const int width = geometry_->header()->sectionSize(2) - margin;
    if (width <= 20)
        return;
    bool changed = false;
    for (int i = 0; i < geometry_->topLevelItemCount(); ++i) {
        QTreeWidgetItem* it = geometry_->topLevelItem(i);
        const QFontMetrics fm(it->font(2));
        const QRect text = fm.boundingRect(QRect(0, 0, width, 1 << 16),
                                           Qt::AlignLeft | Qt::TextWordWrap, it->text(2));
        const int line = std::max(fm.height(), QFontMetrics(it->font(0)).height());
        // A valid size (an invalid one clears the hint): the width is the column's own, it
        // stretches to fill the view and sizes no column.
        const QSize hint(width, std::max(line, text.height()) + 2);
        if (it->sizeHint(2) != hint) {
            it->setSizeHint(2, hint);
            changed = true;
        }
    }
    if (changed)
        geometry_->doItemsLayout(); // the view caches row heights
}

void ModelPanel::setWarnings(const AppState& s, const Report& r) {
    const ModelSpec& m = s.model;
    QStringList w;
    for (const auto& x : m.warnings)
        w << q(x);
    for (const auto& x : r.warnings)
        if (std::find(m.warnings.begin(), m.warnings.end(), x) == m.warnings.end())
            w << q(x);
    if (w.isEmpty()) {
        warnings_->clear();
        warningsArea_->hide();
        return;
    }
    QPalette pal = warnings_->palette();
    pal.setColor(QPalette::WindowText, warningColor(isDark(this)));
    warnings_->setPalette(pal);
    const QString text = QStringLiteral("⚠ ") + w.join(QStringLiteral("\n⚠ "));
    if (text != warnings_->text())
        warnings_->setText(text);
    warningsArea_->show();
}

GpuPanel::GpuPanel(QWidget* parent) : QWidget(parent) {
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(10, 8, 10, 8);
    presets_ = new QComboBox(this);
    presets_->setObjectName(QStringLiteral("gpuPresetCombo"));
    presets_->setToolTip(tr("GPU presets (G / Shift+G step through them)"));
    for (const auto& p : kvscope::gpuPresets())
        presets_->addItem(q(p.title), q(p.id));
    presets_->addItem(tr("Custom GPU"), kCustomId);
    v->addWidget(presets_);

    auto* form = new QFormLayout;
    auto spin = [this](double max, int decimals, const QString& suffix) {
        auto* s = new QDoubleSpinBox(this);
        s->setRange(0.001, max);
        s->setDecimals(decimals);
        s->setSuffix(suffix);
        s->setKeyboardTracking(false);
        return s;
    };
    memory_ = spin(100000, 1, QStringLiteral(" GB"));
    bandwidth_ = spin(1000, 2, QStringLiteral(" TB/s"));
    bf16_ = spin(1e6, 1, QStringLiteral(" TFLOP/s"));
    fp32_ = spin(1e6, 1, QStringLiteral(" TFLOP/s"));
    perNode_ = new QSpinBox(this);
    perNode_->setRange(1, 1024);
    perNode_->setKeyboardTracking(false);
    form->addRow(tr("Memory"), memory_);
    form->addRow(tr("Bandwidth"), bandwidth_);
    form->addRow(tr("bf16 tensor peak"), bf16_);
    form->addRow(tr("fp32 non-tensor peak"), fp32_);
    form->addRow(tr("GPUs per node"), perNode_);
    v->addLayout(form);
    summary_ = new QLabel(this);
    summary_->setWordWrap(true);
    v->addWidget(summary_);
    v->addStretch(1);

    connect(presets_, &QComboBox::activated, this, [this](int i) {
        const QString id = presets_->itemData(i).toString();
        if (id == kCustomId)
            emitCustom();
        else
            Q_EMIT gpuPresetRequested(id);
    });
    for (QDoubleSpinBox* s : {memory_, bandwidth_, bf16_, fp32_})
        connect(s, &QDoubleSpinBox::valueChanged, this, &GpuPanel::emitCustom);
    connect(perNode_, &QSpinBox::valueChanged, this, &GpuPanel::emitCustom);
}

void GpuPanel::emitCustom() {
    GpuSpec g = gpu_;
    if (g.id != "custom") {
        g.id = "custom";
        g.name = "Custom GPU (from " + (gpu_.name.empty() ? gpu_.id : gpu_.name) + ")";
        g.driverMemoryBytes = 0; // a custom capacity has no driver-reported figure
        g.driverMemorySource.clear();
    }
    g.memoryBytes = static_cast<std::int64_t>(memory_->value() * 1e9);
    g.bandwidthBytesPerS = bandwidth_->value() * 1e12;
    g.peakBf16FlopPerS = bf16_->value() * 1e12;
    g.peakFp32FlopPerS = fp32_->value() * 1e12;
    g.gpusPerNode = perNode_->value();
    Q_EMIT customGpuEdited(g);
}

void GpuPanel::setState(const AppState& s) {
    gpu_ = s.gpu;
    const GpuSpec& g = s.gpu;
    {
        QSignalBlocker b(presets_);
        const int idx = presets_->findData(q(g.id));
        presets_->setCurrentIndex(idx >= 0 ? idx : presets_->findData(kCustomId));
    }
    const QSignalBlocker b1(memory_), b2(bandwidth_), b3(bf16_), b4(fp32_), b5(perNode_);
    memory_->setValue(static_cast<double>(g.memoryBytes) / 1e9);
    bandwidth_->setValue(g.bandwidthBytesPerS / 1e12);
    bf16_->setValue(g.peakBf16FlopPerS / 1e12);
    fp32_->setValue(g.peakFp32FlopPerS / 1e12);
    perNode_->setValue(static_cast<int>(g.gpusPerNode));
    QString text = tr("%1<br>ridge %2 FLOP/byte (bf16)")
                       .arg(q(g.name).toHtmlEscaped(), q(fixed(g.ridgeBf16(), 0)));
    if (g.driverMemoryBytes > 0)
        text += tr("<br>driver reports %1 (%2)")
                    .arg(q(humanBytes(static_cast<double>(g.driverMemoryBytes))),
                         q(g.driverMemorySource).toHtmlEscaped());
    summary_->setText(text);
}

} // namespace kvscope::ui
