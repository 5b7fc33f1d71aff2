#include "ui/explainlog.h"

#include "core/engines/explain_log.h"
#include "core/format.h"
#include "core/model/presets.h"
#include "ui/qstrings.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>

namespace kvscope::ui {

namespace {
QString value(const std::string& unit, double v) {
    if (unit == "B")
        return q(humanBytes(v));
    if (unit == "x")
        return q(fixed(v, 2)) + QStringLiteral("x");
    if (std::abs(v - std::round(v)) < 1e-9 && std::abs(v) < 9e15)
        return q(withCommas(static_cast<std::int64_t>(std::llround(v)))) +
               (unit.empty() ? QString() : QStringLiteral(" ") + q(unit));
    return q(fixed(v, 3)) + (unit.empty() ? QString() : QStringLiteral(" ") + q(unit));
}
} // namespace

ExplainLogDialog::ExplainLogDialog(QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Explain an engine's log"));
    setObjectName(QStringLiteral("explainLogDialog"));
    auto* v = new QVBoxLayout(this);
    v->addWidget(new QLabel(tr("Paste a vLLM or SGLang startup log (or open one):"), this));
    auto* split = new QSplitter(Qt::Vertical, this);
    text_ = new QPlainTextEdit(split);
    text_->setObjectName(QStringLiteral("logText"));
    text_->setLineWrapMode(QPlainTextEdit::NoWrap);
    text_->setPlaceholderText(tr("INFO ... vLLM API server version ..."));
    QWidget* result = buildResultPane(split);
    split->addWidget(text_);
    split->addWidget(result);
    split->setStretchFactor(1, 2);
    v->addWidget(split, 1);
    v->addLayout(buildControlsRow());
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    v->addWidget(buttons);
    resize(1100, 800);
}

QWidget* ExplainLogDialog::buildResultPane(QWidget* parent) {
    auto* result = new QWidget(parent);
    auto* rv = new QVBoxLayout(result);
    rv->setContentsMargins(0, 0, 0, 0);
    summary_ = new QLabel(result);
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    QFont bold = summary_->font();
    bold.setBold(true);
    summary_->setFont(bold);
    terms_ = new QTableWidget(0, 5, result);
    terms_->setObjectName(QStringLiteral("explainTerms"));
    terms_->setHorizontalHeaderLabels(
        {tr("Term"), tr("kvscope predicts"), tr("Log says"), tr("Difference"), tr("Why")});
    terms_->verticalHeader()->hide();
    terms_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    terms_->setWordWrap(true);
    terms_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    terms_->horizontalHeader()->setStretchLastSection(true);
    notes_ = new QLabel(result);
    notes_->setWordWrap(true);
    // A folder of logs: one row per log, the fleet's median and worst token error.
    fleet_ = new QTableWidget(0, 6, result);
    fleet_->setObjectName(QStringLiteral("explainFleet"));
    fleet_->setHorizontalHeaderLabels({tr("Log"), tr("Engine"), tr("Log says (tokens)"),
                                       tr("kvscope predicts"), tr("Error"), tr("Marks / reason")});
    fleet_->verticalHeader()->hide();
    fleet_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    fleet_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    fleet_->horizontalHeader()->setStretchLastSection(true);
    fleet_->hide();
    fleetStats_ = new QLabel(result);
    fleetStats_->setObjectName(QStringLiteral("explainFleetStats"));
    fleetStats_->setWordWrap(true);
    fleetStats_->setFont(bold);
    fleetStats_->hide();
    rv->addWidget(fleetStats_);
    rv->addWidget(fleet_, 1);
    rv->addWidget(summary_);
    rv->addWidget(terms_, 1);
    rv->addWidget(notes_);
    return result;
}

QHBoxLayout* ExplainLogDialog::buildControlsRow() {
    auto* row = new QHBoxLayout;
    auto* open = new QPushButton(tr("Open log…"), this);
    connect(open, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open an engine log"), {},
                                                          tr("Logs (*.log *.txt);;All files (*)"));
        QString err;
        if (!path.isEmpty() && !loadLogFile(path, &err))
            status_->setText(err);
        else if (!path.isEmpty())
            explain();
    });
    auto* openDir = new QPushButton(tr("Open folder…"), this);
    connect(openDir, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a folder of logs"));
        if (!dir.isEmpty())
            explainFolder(dir);
    });
    gpu_ = new QComboBox(this);
    gpu_->addItem(tr("GPU: inferred from the log"), QString());
    for (const auto& g : gpuPresets())
        gpu_->addItem(q(g.title), q(g.id));
    auto* run = new QPushButton(tr("Explain"), this);
    run->setDefault(true);
    connect(run, &QPushButton::clicked, this, &ExplainLogDialog::explain);
    status_ = new QLabel(this);
    status_->setWordWrap(true);
    row->addWidget(open);
    row->addWidget(openDir);
    row->addWidget(gpu_);
    row->addWidget(run);
    row->addWidget(status_, 1);
    return row;
}

void ExplainLogDialog::setLogText(const QString& text) {
    text_->setPlainText(text);
}

bool ExplainLogDialog::loadLogFile(const QString& path, QString* error) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        if (error)
            *error = tr("%1: cannot be read").arg(path);
        return false;
    }
    setLogText(QString::fromUtf8(f.readAll()));
    return true;
}

void ExplainLogDialog::setConfigDirs(const QStringList& dirs) {
    configDirs_ = dirs;
}

QString ExplainLogDialog::fleetText() const {
    return fleetStats_->text();
}

bool ExplainLogDialog::explainFolder(const QString& dir) {
    ExplainOptions opt;
    opt.gpu = gpu_->currentData().toString().toStdString();
    for (const QString& c : configDirs_)
        opt.configDirs.push_back(c.toStdString());
    auto rows = kvscope::explainFolder(dir.toStdString(), opt);
    fleet_->setRowCount(0);
    if (!rows.ok()) {
        status_->setText(q(rows.error().message()));
        return false;
    }
    fleet_->setRowCount(static_cast<int>(rows->size()));
    int row = 0;
    for (const FleetRow& r : *rows) {
        auto set = [&](int col, const QString& s, bool right = false) {
            auto* item = new QTableWidgetItem(s);
            if (right)
                item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            fleet_->setItem(row, col, item);
        };
        set(0, q(r.file));
        if (!r.explanation.ok()) {
            set(5, q(r.explanation.error().message()));
            ++row;
            continue;
        }
        const LogExplanation& e = r.explanation.value();
        set(1, q(e.scenario.deployment.engine.text()));
        const ExplainTerm* tokens = nullptr;
        for (const ExplainTerm& t : e.terms)
            if (t.key == "tokens")
                tokens = &t;
        if (tokens) {
            if (tokens->logged)
                set(2, value("", *tokens->logged), true);
            set(3, value("", tokens->predicted), true);
        }
        if (e.tokensError)
            set(4,
                (*e.tokensError >= 0 ? QStringLiteral("+") : QString()) +
                    q(fixed(100.0 * *e.tokensError, 2)) + QStringLiteral("%"),
                true);
        QStringList marks;
        for (const auto& m : e.marks)
            marks << q(m);
        if (e.smallPool)
            marks << tr("small pool");
        set(5, marks.join(QStringLiteral("; ")));
        ++row;
    }
    const FleetStats st = fleetStats(rows.value());
    fleetStats_->setText(tr("%1 logs: %2 explained, %3 not; median |error| %4%, worst %5% (%6)")
                             .arg(rows->size())
                             .arg(st.explained)
                             .arg(st.failed)
                             .arg(q(fixed(100.0 * st.medianAbsError, 2)),
                                  q(fixed(100.0 * st.worstAbsError, 2)), q(st.worstFile)));
    fleet_->show();
    fleetStats_->show();
    status_->setText(tr("folder %1").arg(dir));
    return true;
}

QString ExplainLogDialog::summaryText() const {
    return summary_->text();
}
QString ExplainLogDialog::statusText() const {
    return status_->text();
}

bool ExplainLogDialog::explain() {
    terms_->setRowCount(0);
    summary_->clear();
    notes_->clear();
    const std::string text = text_->toPlainText().toStdString();
    auto log = parseEngineLog(text);
    if (!log.ok()) {
        status_->setText(tr("log: %1").arg(q(log.error().message())));
        return false;
    }
    ExplainOptions opt;
    opt.gpu = gpu_->currentData().toString().toStdString();
    for (const QString& c : configDirs_)
        opt.configDirs.push_back(c.toStdString());
    auto e = explainEngineLog(*log, opt);
    if (!e.ok()) {
        status_->setText(q(e.error().message()));
        return false;
    }
    status_->setText(tr("%1 log, model %2 → %3")
                         .arg(q(toString(e->log.engine)), q(e->log.model), q(e->modelRef)));
    summary_->setText(q(e->summary));
    terms_->setRowCount(static_cast<int>(e->terms.size()));
    int row = 0;
    for (const ExplainTerm& t : e->terms) {
        auto set = [&](int col, const QString& s) {
            auto* item = new QTableWidgetItem(s);
            if (col >= 1 && col <= 3)
                item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            terms_->setItem(row, col, item);
        };
        set(0, q(t.label));
        set(1, value(t.unit, t.predicted));
        if (t.logged) {
            set(2, value(t.unit, *t.logged) + (t.inferred ? tr(" (implied)") : QString()));
            const double diff = *t.logged - t.predicted;
            set(3, (diff >= 0 ? QStringLiteral("+") : QStringLiteral("−")) +
                       value(t.unit, std::abs(diff)));
        } else {
            set(2, tr("not logged"));
            set(3, QString());
        }
        set(4, q(t.explanation));
        ++row;
    }
    terms_->resizeRowsToContents();
    QStringList notes;
    for (const auto& n : e->notes)
        notes << QStringLiteral("• ") + q(n);
    notes_->setText(notes.join(QLatin1Char('\n')));
    return true;
}

} // namespace kvscope::ui
