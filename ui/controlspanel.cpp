#include "ui/controlspanel.h"

#include "core/engines/engines.h"
#include "core/format.h"
#include "ui/qstrings.h"
#include "ui/theme.h"
#include "ui/viewmodel.h"

#include <QComboBox>
#include <QGridLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSlider>
#include <algorithm>
#include <cmath>

namespace kvscope::ui {

namespace {
QSlider* makeSlider(QWidget* parent, const QString& name) {
    auto* s = new QSlider(Qt::Horizontal, parent);
    s->setObjectName(name);
    s->setTickPosition(QSlider::TicksBelow);
    s->setTickInterval(1);
    s->setPageStep(1);
    s->setFocusPolicy(Qt::StrongFocus);
    return s;
}

/// The pool picker's value for the datasheet pool; the engine items hold "vllm@0.19.0".
const QString kDatasheet = QStringLiteral("datasheet");

/// Pipeline stages offered: 1 to 8, never more than the layers (validate()'s bound).
std::vector<std::int64_t> ppChoices(const ModelSpec& m) {
    std::vector<std::int64_t> out;
    for (std::int64_t pp = 1; pp <= 8 && pp <= std::max<std::int64_t>(1, m.layers.value); ++pp)
        out.push_back(pp);
    return out;
}

/// The menu label of a KV dtype: its row in core's dtype table.
QString dtypeTitle(KvDtype d) {
    return q(kvDtypeInfo(d).title);
}
} // namespace

ControlsPanel::ControlsPanel(QWidget* parent) : QWidget(parent) {
    auto* grid = new QGridLayout(this);
    grid->setContentsMargins(10, 8, 10, 8);
    grid->setHorizontalSpacing(10);
    grid->setVerticalSpacing(6);
    grid->setColumnStretch(1, 1);

    kvSlider_ = makeSlider(this, QStringLiteral("kvHeadsSlider"));
    tpSlider_ = makeSlider(this, QStringLiteral("tpSlider"));
    dcpSlider_ = makeSlider(this, QStringLiteral("dcpSlider"));
    contextSlider_ = makeSlider(this, QStringLiteral("contextSlider"));
    batchSlider_ = makeSlider(this, QStringLiteral("batchSlider"));
    utilSlider_ = makeSlider(this, QStringLiteral("utilSlider"));
    ppSlider_ = makeSlider(this, QStringLiteral("ppSlider"));
    utilSlider_->setTickInterval(5);
    utilSlider_->setRange(50, 100);
    contextSlider_->setRange(0, static_cast<int>(contextChoices().size()) - 1);
    contextSlider_->setTickInterval(2);
    batchSlider_->setRange(0, static_cast<int>(batchChoices().size()) - 1);
    dtypeCombo_ = new QComboBox(this);
    dtypeCombo_->setObjectName(QStringLiteral("kvDtypeCombo"));
    poolCombo_ = new QComboBox(this);
    poolCombo_->setObjectName(QStringLiteral("poolModelCombo"));
    // The width does not follow the longest item, so the dock keeps its width.
    poolCombo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    poolCombo_->setMinimumContentsLength(20);
    fillPoolCombo(Deployment{});

    auto valueLabel = [this](const QString& name) {
        auto* l = new QLabel(this);
        l->setObjectName(name);
        l->setFont(scaledFont(font(), 1.05, true));
        // A fixed size: a value changing on every slider step then never relayouts the dock
        // (and with it the whole main window), only repaints the label.
        l->setFixedSize(
            QFontMetrics(l->font()).horizontalAdvance(QStringLiteral("GQA-128 · g = 99")),
            QFontMetrics(l->font()).height() + 4);
        return l;
    };
    kvValue_ = valueLabel(QStringLiteral("kvHeadsValue"));
    tpValue_ = valueLabel(QStringLiteral("tpValue"));
    dcpValue_ = valueLabel(QStringLiteral("dcpValue"));
    contextValue_ = valueLabel(QStringLiteral("contextValue"));
    batchValue_ = valueLabel(QStringLiteral("batchValue"));
    utilValue_ = valueLabel(QStringLiteral("utilValue"));
    ppValue_ = valueLabel(QStringLiteral("ppValue"));

    int row = 0;
    auto add = [&](const QString& name, const QString& keys, QWidget* editor, QLabel* value) {
        auto* l = new QLabel(name, this);
        const QString tip = tr("%1 — keyboard: %2").arg(name, keys);
        l->setToolTip(tip);
        editor->setToolTip(tip);
        grid->addWidget(l, row, 0);
        if (value) {
            grid->addWidget(editor, row, 1);
            grid->addWidget(value, row, 2);
            value->setToolTip(tip);
        } else {
            grid->addWidget(editor, row, 1, 1, 2);
        }
        ++row;
    };
    add(tr("KV heads"), tr("H fewer · Shift+H more"), kvSlider_, kvValue_);
    add(tr("TP"), tr("T down · Shift+T up"), tpSlider_, tpValue_);
    add(tr("DCP"), tr("P down · Shift+P up"), dcpSlider_, dcpValue_);
    add(tr("Context"), tr("C shorter · Shift+C longer"), contextSlider_, contextValue_);
    add(tr("Batch"), tr("B smaller · Shift+B larger"), batchSlider_, batchValue_);
    add(tr("KV dtype"), tr("D next · Shift+D previous"), dtypeCombo_, nullptr);
    add(tr("GPU mem util"), tr("U lower · Shift+U higher"), utilSlider_, utilValue_);
    add(tr("PP"), tr("slider only"), ppSlider_, ppValue_);
    add(tr("Pool model"), tr("M next"), poolCombo_, nullptr);
    grid->setRowStretch(row, 1);

    connectControls();
}

void ControlsPanel::connectControls() {
    connect(kvSlider_, &QSlider::valueChanged, this,
            [this](int i) { sliderMoved(Control::KvHeads, i); });
    connect(tpSlider_, &QSlider::valueChanged, this,
            [this](int i) { sliderMoved(Control::Tp, i); });
    connect(dcpSlider_, &QSlider::valueChanged, this,
            [this](int i) { sliderMoved(Control::Dcp, i); });
    connect(contextSlider_, &QSlider::valueChanged, this,
            [this](int i) { sliderMoved(Control::Context, i); });
    connect(batchSlider_, &QSlider::valueChanged, this,
            [this](int i) { sliderMoved(Control::Batch, i); });
    connect(utilSlider_, &QSlider::valueChanged, this,
            [this](int i) { sliderMoved(Control::Util, i); });
    connect(ppSlider_, &QSlider::valueChanged, this,
            [this](int i) { sliderMoved(Control::Pp, i); });
    connect(dtypeCombo_, &QComboBox::activated, this,
            [this](int i) { sliderMoved(Control::KvDtype, i); });
    connect(poolCombo_, &QComboBox::activated, this,
            [this](int i) { sliderMoved(Control::PoolModel, i); });
}

QSlider* ControlsPanel::slider(Control c) const {
    switch (c) {
    case Control::KvHeads:
        return kvSlider_;
    case Control::Tp:
        return tpSlider_;
    case Control::Dcp:
        return dcpSlider_;
    case Control::Context:
        return contextSlider_;
    case Control::Batch:
        return batchSlider_;
    case Control::Util:
        return utilSlider_;
    case Control::Pp:
        return ppSlider_;
    default:
        return nullptr;
    }
}

void ControlsPanel::sliderMoved(Control c, int i) {
    Deployment d = state_.deployment;
    const auto at = [i](const auto& v) {
        return v[static_cast<std::size_t>(std::clamp<int>(i, 0, static_cast<int>(v.size()) - 1))];
    };
    switch (c) {
    case Control::KvHeads:
        if (kv_.empty())
            return;
        d.kvHeads = at(kv_);
        break;
    case Control::Tp:
        if (tp_.empty())
            return;
        d.tp = at(tp_);
        break;
    case Control::Dcp:
        if (dcp_.empty())
            return;
        d.dcp = at(dcp_);
        break;
    case Control::Context:
        d.context = at(contextChoices());
        break;
    case Control::Batch:
        d.batch = at(batchChoices());
        break;
    case Control::Util:
        d.gpuMemUtil = i / 100.0;
        break;
    case Control::KvDtype:
        if (dtypes_.empty())
            return;
        d.kvDtype = at(dtypes_);
        break;
    case Control::PoolModel: {
        const QString value = poolCombo_->itemData(i).toString();
        if (value == kDatasheet) {
            d.poolModel = PoolModel::Datasheet;
            break;
        }
        auto e = parseEngineSpec(value.toStdString());
        if (!e.ok())
            return;
        // The utilisation follows the release's default unless it was moved off the old one
        // (as `size --engine` does without --gpu-mem-util).
        if (std::fabs(d.gpuMemUtil - defaultGpuMemUtil(d.engine)) < 1e-9)
            d.gpuMemUtil = defaultGpuMemUtil(e.value());
        d.poolModel = PoolModel::Vllm;
        d.engine = e.value();
        break;
    }
    case Control::Pp:
        if (pp_.empty())
            return;
        d.pp = at(pp_);
        break;
    }
    Q_EMIT deploymentRequested(d);
}

void ControlsPanel::step(Control c, int delta) {
    if (QSlider* s = slider(c)) {
        const int step = c == Control::Util ? delta : delta;
        s->setValue(std::clamp(s->value() + step, s->minimum(), s->maximum()));
        return;
    }
    QComboBox* combo = c == Control::KvDtype ? dtypeCombo_ : poolCombo_;
    const int n = combo->count();
    if (n == 0)
        return;
    const int i = ((combo->currentIndex() + delta) % n + n) % n;
    combo->setCurrentIndex(i);
    sliderMoved(c, i);
}

void ControlsPanel::fillPoolCombo(const Deployment& d) {
    // The releases core models, then the datasheet pool; a release a session names that is not
    // in the list (vllm@0.18.0) gets its own item, so the picker always shows what is sized.
    const QString current = d.poolModel == PoolModel::Datasheet ? kDatasheet : q(d.engine.text());
    struct Item {
        QString label, value, tip;
    };
    std::vector<Item> items;
    bool listed = current == kDatasheet;
    for (const EngineRelease& r : modeledEngineReleases()) {
        items.push_back({q(r.label), q(r.spec.text()), q(r.rules)});
        listed = listed || items.back().value == current;
    }
    if (!listed)
        items.push_back({current, current, tr("sized with the rules of the release range")});
    items.push_back(
        {tr("datasheet (the chapter)"), kDatasheet, tr("util × datasheet GB − weights / TP")});
    bool same = poolCombo_->count() == static_cast<int>(items.size());
    for (int i = 0; same && i < poolCombo_->count(); ++i)
        same = poolCombo_->itemData(i).toString() == items[static_cast<std::size_t>(i)].value;
    if (!same) {
        poolCombo_->clear();
        for (const Item& it : items) {
            poolCombo_->addItem(it.label, it.value);
            poolCombo_->setItemData(poolCombo_->count() - 1, it.tip, Qt::ToolTipRole);
        }
    }
    poolCombo_->setCurrentIndex(std::max(0, poolCombo_->findData(current)));
}

void ControlsPanel::setState(const AppState& s) {
    state_ = s;
    const ModelSpec& m = s.model;
    const Deployment& d = s.deployment;
    kv_ = kvHeadChoices(m);
    tp_ = tpChoices(m, d.kvHeads);
    dcp_ = dcpChoices(m, s.gpu, d);
    dtypes_ = kvDtypeChoices(m, s.gpu, d);
    pp_ = ppChoices(m);

    const QSignalBlocker b1(kvSlider_), b2(tpSlider_), b3(dcpSlider_), b4(contextSlider_),
        b5(batchSlider_), b6(utilSlider_), b7(dtypeCombo_), b8(poolCombo_), b9(ppSlider_);

    // h_kv: the current choice (unset = the model's own; the latent for MLA).
    std::optional<std::int64_t> kv = d.kvHeads;
    if (!kv && !m.mla)
        kv = m.kvHeads.value;
    kvSlider_->setRange(0, std::max(0, static_cast<int>(kv_.size()) - 1));
    const auto kvIt = std::find(kv_.begin(), kv_.end(), kv);
    kvSlider_->setValue(kvIt == kv_.end() ? 0 : static_cast<int>(kvIt - kv_.begin()));
    QString kvText = q(kvChoiceLabel(m, kv));
    if (kv && kvText.startsWith(QLatin1String("GQA-")))
        kvText = q(variantWithGroup(kvText.toStdString(), m.qHeads.value, *kv)); // "GQA-8 · g = 4"
    else if (kv)
        kvText += tr("  h_kv %1").arg(*kv);
    kvValue_->setText(kvText);

    tpSlider_->setRange(0, std::max(0, static_cast<int>(tp_.size()) - 1));
    tpSlider_->setValue(nearestIndex(tp_, d.tp));
    tpValue_->setText(QString::number(d.tp));
    dcpSlider_->setRange(0, std::max(0, static_cast<int>(dcp_.size()) - 1));
    dcpSlider_->setValue(nearestIndex(dcp_, d.dcp));
    dcpSlider_->setEnabled(dcp_.size() > 1);
    dcpValue_->setText(QString::number(d.dcp));
    dcpValue_->setToolTip(dcp_.size() > 1 ? QString()
                                          : tr("DCP needs TP > h_kv for GQA/MQA (vLLM refuses "
                                               "it otherwise); MLA has no such condition"));
    contextSlider_->setValue(nearestIndex(contextChoices(), d.context));
    contextValue_->setText(q(withCommas(d.context)));
    batchSlider_->setValue(nearestIndex(batchChoices(), d.batch));
    batchValue_->setText(q(withCommas(d.batch)));
    utilSlider_->setValue(static_cast<int>(std::lround(d.gpuMemUtil * 100)));
    utilValue_->setText(q(fixed(d.gpuMemUtil, 2)));
    ppSlider_->setRange(0, std::max(0, static_cast<int>(pp_.size()) - 1));
    ppSlider_->setValue(nearestIndex(pp_, d.pp));
    ppValue_->setText(QString::number(d.pp));

    // Refilled only when the choices change: a refill re-measures the combo and relayouts the
    // whole panel on every slider step.
    bool sameDtypes = dtypeCombo_->count() == static_cast<int>(dtypes_.size());
    for (int i = 0; sameDtypes && i < dtypeCombo_->count(); ++i)
        sameDtypes = dtypeCombo_->itemText(i) == dtypeTitle(dtypes_[static_cast<std::size_t>(i)]);
    if (!sameDtypes) {
        dtypeCombo_->clear();
        for (KvDtype k : dtypes_)
            dtypeCombo_->addItem(dtypeTitle(k));
    }
    const auto dt = std::find(dtypes_.begin(), dtypes_.end(), d.kvDtype);
    dtypeCombo_->setCurrentIndex(dt == dtypes_.end() ? 0 : static_cast<int>(dt - dtypes_.begin()));
    fillPoolCombo(d);
}

} // namespace kvscope::ui
