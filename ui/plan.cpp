#include "ui/plan.h"

#include "core/features/plan.h"
#include "core/format.h"
#include "core/model/dtype.h"
#include "core/model/presets.h"
#include "ui/qstrings.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

namespace kvscope::ui {

namespace {
QTableWidget* makeTable(const QStringList& headers, QWidget* parent) {
    auto* t = new QTableWidget(0, static_cast<int>(headers.size()), parent);
    t->setHorizontalHeaderLabels(headers);
    t->verticalHeader()->hide();
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    t->horizontalHeader()->setStretchLastSection(true);
    return t;
}

void setRow(QTableWidget* t, int row, const QStringList& cells) {
    for (int c = 0; c < cells.size(); ++c)
        t->setItem(row, c, new QTableWidgetItem(cells[c]));
}
} // namespace

PlanDialog::PlanDialog(const AppState& state, QWidget* parent) : QDialog(parent), state_(state) {
    setWindowTitle(tr("Plan a deployment"));
    setObjectName(QStringLiteral("planDialog"));
    auto* v = new QVBoxLayout(this);
    auto* top = new QHBoxLayout;
    auto* form = new QFormLayout;
    model_ = new QComboBox(this);
    model_->setObjectName(QStringLiteral("planModel"));
    model_->addItem(tr("Current: %1").arg(q(state.modelRef)), q(state.modelRef));
    for (const auto& p : modelPresets())
        if (p.id != state.modelRef)
            model_->addItem(q(p.title), q(p.id));
    context_ = new QSpinBox(this);
    context_->setRange(1, 1 << 30);
    context_->setValue(static_cast<int>(state.deployment.context));
    context_->setSuffix(tr(" tokens"));
    concurrency_ = new QSpinBox(this);
    concurrency_->setRange(1, 1000000);
    concurrency_->setValue(static_cast<int>(std::max<std::int64_t>(64, state.deployment.batch)));
    concurrency_->setSuffix(tr(" requests"));
    form->addRow(tr("Model"), model_);
    form->addRow(tr("Context per request"), context_);
    form->addRow(tr("Target concurrency"), concurrency_);
    auto* dt = new QHBoxLayout;
    for (const char* d : {"auto", "fp8", "fp8_ds_mla"}) {
        auto* c = new QCheckBox(QLatin1String(d), this);
        c->setChecked(std::string(d) != "fp8_ds_mla" || state.model.mla);
        dtypes_ << c;
        dt->addWidget(c);
    }
    form->addRow(tr("KV dtypes"), dt);
    top->addLayout(form, 1);
    gpus_ = new QListWidget(this);
    gpus_->setObjectName(QStringLiteral("planGpus"));
    for (const auto& g : gpuPresets()) {
        auto* item = new QListWidgetItem(q(g.title), gpus_);
        item->setData(Qt::UserRole, q(g.id));
        item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
        item->setCheckState(Qt::Checked);
    }
    gpus_->setMaximumHeight(150);
    auto* gv = new QVBoxLayout;
    gv->addWidget(new QLabel(tr("GPUs"), this));
    gv->addWidget(gpus_);
    top->addLayout(gv, 1);
    v->addLayout(top);

    auto* run = new QPushButton(tr("Plan"), this);
    run->setDefault(true);
    connect(run, &QPushButton::clicked, this, &PlanDialog::plan);
    status_ = new QLabel(this);
    status_->setWordWrap(true);
    auto* row = new QHBoxLayout;
    row->addWidget(run);
    row->addWidget(status_, 1);
    v->addLayout(row);

    auto* split = new QSplitter(Qt::Vertical, this);
    options_ = makeTable({tr("#"), tr("GPU"), tr("TP"), tr("Replicas"), tr("GPUs"), tr("KV dtype"),
                          tr("Max concurrency"), tr("Headroom"), tr("Note")},
                         split);
    options_->setObjectName(QStringLiteral("planOptions"));
    rejections_ =
        makeTable({tr("GPU"), tr("TP"), tr("KV dtype"), tr("Why not"), tr("Detail")}, split);
    rejections_->setObjectName(QStringLiteral("planRejections"));
    split->addWidget(options_);
    split->addWidget(rejections_);
    v->addWidget(split, 1);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    auto* use = buttons->addButton(tr("Use selected option"), QDialogButtonBox::ApplyRole);
    connect(use, &QPushButton::clicked, this, [this] {
        const int r = options_->currentRow();
        if (r >= 0 && r < static_cast<int>(optionStates_.size()))
            Q_EMIT applyRequested(optionStates_[static_cast<std::size_t>(r)]);
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    v->addWidget(buttons);
    resize(1100, 760);
}

void PlanDialog::setContext(int tokens) {
    context_->setValue(tokens);
}
void PlanDialog::setConcurrency(int requests) {
    concurrency_->setValue(requests);
}
QString PlanDialog::statusText() const {
    return status_->text();
}

bool PlanDialog::plan() {
    PlanRequest req;
    const std::string ref = model_->currentData().toString().toStdString();
    auto m = ref == state_.modelRef ? Result<ModelSpec>(state_.model) : loadModel(ref);
    if (!m.ok()) {
        status_->setText(tr("model: %1").arg(q(m.error().message())));
        return false;
    }
    req.model = *m;
    req.context = context_->value();
    req.concurrency = concurrency_->value();
    req.base = state_.deployment;
    req.base.kvHeads.reset();
    for (int i = 0; i < gpus_->count(); ++i)
        if (gpus_->item(i)->checkState() == Qt::Checked) {
            auto g = loadGpu(gpus_->item(i)->data(Qt::UserRole).toString().toStdString());
            if (g.ok())
                req.gpus.push_back(*g);
        }
    if (req.gpus.empty()) {
        status_->setText(tr("GPUs: tick at least one GPU"));
        return false;
    }
    for (auto* c : dtypes_)
        if (c->isChecked()) {
            if (c->text() == QLatin1String("fp8_ds_mla") && !req.model.mla)
                continue;
            auto k = parseKvDtype(c->text().toStdString());
            if (k.ok())
                req.kvDtypes.push_back(*k);
        }
    if (req.kvDtypes.empty()) {
        status_->setText(tr("KV dtypes: tick at least one this model takes"));
        return false;
    }
    auto r = planDeployment(req);
    if (!r.ok()) {
        status_->setText(q(r.error().message()));
        return false;
    }
    options_->setRowCount(static_cast<int>(r->options.size()));
    optionStates_.clear();
    int row = 0;
    for (const PlanOption& o : r->options) {
        setRow(options_, row,
               {QString::number(row + 1), q(o.gpuName), QString::number(o.tp),
                QString::number(o.replicas), QString::number(o.gpus),
                q(toString(o.kvDtype)) + (o.kvDtype == KvDtype::Auto
                                              ? QStringLiteral(" (%1)").arg(q(o.kvDtypeResolved))
                                              : QString()),
                q(withCommas(o.maxConcurrency)),
                QStringLiteral("+%1 %").arg(q(fixed(100.0 * o.headroom, 0))), q(o.note)});
        AppState s = state_;
        s.modelRef = ref;
        s.model = req.model;
        if (auto g = loadGpu(o.gpu); g.ok())
            s.gpu = *g;
        s.deployment = req.base;
        s.deployment.tp = o.tp;
        s.deployment.dcp = 1;
        s.deployment.kvDtype = o.kvDtype;
        s.deployment.context = req.context;
        s.deployment.batch = std::max<std::int64_t>(1, o.report.batch); // one replica's share
        optionStates_.push_back(s);
        ++row;
    }
    rejections_->setRowCount(static_cast<int>(r->rejections.size()));
    row = 0;
    for (const PlanRejection& x : r->rejections)
        setRow(rejections_, row++,
               {q(x.gpu), QString::number(x.tp), q(toString(x.kvDtype)), q(x.reason), q(x.detail)});
    status_->setText(tr("%1 options hold %2 requests of %3 tokens; %4 candidates rejected")
                         .arg(r->options.size())
                         .arg(q(withCommas(req.concurrency)))
                         .arg(q(withCommas(req.context)))
                         .arg(r->rejections.size()));
    if (!r->options.empty())
        options_->selectRow(0);
    return true;
}

} // namespace kvscope::ui
