#include "ui/compare.h"

#include "core/format.h"
#include "ui/mainwindow.h"
#include "ui/qstrings.h"
#include "ui/theme.h"
#include "ui/viewmodel.h"

#include <QDockWidget>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

namespace kvscope::ui {

QString stateTitle(const AppState& s) {
    QString t = q(modelDisplayName(s.modelRef, s.model)) + QStringLiteral(" · ") + q(s.gpu.name) +
                QStringLiteral(" · TP=") + QString::number(s.deployment.tp);
    if (s.deployment.dcp > 1)
        t += QStringLiteral(" DCP=") + QString::number(s.deployment.dcp);
    if (s.deployment.kvHeads)
        t += QStringLiteral(" · h_kv=") + QString::number(*s.deployment.kvHeads);
    t += QStringLiteral(" · ") + q(withCommas(s.deployment.context)) + QStringLiteral(" tokens");
    return t;
}

CompareController::CompareController(MainWindow& w) : QObject(&w), w_(w) {
    setObjectName(QStringLiteral("kvscopeCompare"));
    auto* body = new QWidget;
    body->setObjectName(QStringLiteral("compareView"));
    auto* v = new QVBoxLayout(body);
    header_ = new QLabel(body);
    header_->setWordWrap(true);
    header_->setTextFormat(Qt::RichText);
    table_ = new QTableWidget(0, 4, body);
    table_->setObjectName(QStringLiteral("compareTable"));
    table_->setHorizontalHeaderLabels(
        {tr("Quantity"), tr("A (pinned)"), tr("B (now)"), tr("B / A")});
    table_->verticalHeader()->hide();
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    // The quantity wraps; values and the ratio keep their width.
    table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    table_->setWordWrap(true);
    table_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    table_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    crossover_ = new QLabel(body);
    crossover_->setWordWrap(true);
    v->addWidget(header_);
    v->addWidget(table_, 1);
    v->addWidget(crossover_);
    // Wide enough that every value and phrase reads without scrolling (the bottom docks share
    // the width with the plots).
    body->setMinimumWidth(520);
    dock_ = new QDockWidget(tr("Compare A / B"), &w);
    dock_->setObjectName(QStringLiteral("compareDock"));
    dock_->setWidget(body);
    w.addDockWidget(Qt::BottomDockWidgetArea, dock_);
    dock_->hide();
    connect(&w, &MainWindow::stateChanged, this, &CompareController::refresh);
}

void CompareController::pinCurrent() {
    pin(w_.state(), w_.report());
}

void CompareController::pin(const AppState& a, const Report& report, const QString& title) {
    a_ = a;
    aReport_ = report;
    aTitle_ = title.isEmpty() ? stateTitle(a) : title;
    dock_->show();
    dock_->raise();
    refresh();
}

void CompareController::unpin() {
    a_.reset();
    aReport_.reset();
    comparison_.reset();
    table_->setRowCount(0);
    dock_->hide();
}

void CompareController::refresh() {
    if (!aReport_)
        return;
    comparison_ = compareReports(*aReport_, w_.report());
    const auto& c = *comparison_;
    header_->setText(tr("<b>A</b> %1 (%2)<br><b>B</b> %3 (%4)")
                         .arg(aTitle_.toHtmlEscaped(), q(variantWithGroup(c.a)),
                              stateTitle(w_.state()).toHtmlEscaped(), q(variantWithGroup(c.b))));
    table_->setRowCount(static_cast<int>(c.ratios.size()));
    int row = 0;
    for (const auto& r : c.ratios) {
        auto set = [&](int col, const QString& text) {
            auto* item = new QTableWidgetItem(text);
            if (col > 0 && col < 3)
                item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            table_->setItem(row, col, item);
        };
        set(0, q(r.label));
        // Each value as its report field shows it (core/features/report_fields.h).
        set(1, q(formatCompareValue(r, r.a)));
        set(2, q(formatCompareValue(r, r.b)));
        // The row already names the quantity: "×8 fewer", not "×8 fewer bytes per token ...".
        QString phrase = q(r.phrase);
        const QString label = QLatin1Char(' ') + q(r.label);
        if (phrase.endsWith(label))
            phrase.chop(label.size());
        set(3, phrase);
        ++row;
    }
    table_->resizeRowsToContents();
    int tableHeight = table_->horizontalHeader()->height() + 2 * table_->frameWidth();
    for (int r = 0; r < table_->rowCount(); ++r)
        tableHeight += table_->rowHeight(r);
    table_->setMinimumHeight(tableHeight);
    crossover_->setText(q(c.crossoverPhrase));
    crossover_->setVisible(!c.crossoverPhrase.empty());
}

QString CompareController::text() const {
    QString out = header_->text() + QLatin1Char('\n');
    for (int r = 0; r < table_->rowCount(); ++r) {
        QStringList cells;
        for (int c = 0; c < table_->columnCount(); ++c)
            cells << (table_->item(r, c) ? table_->item(r, c)->text() : QString());
        out += cells.join(QStringLiteral(" | ")) + QLatin1Char('\n');
    }
    return out + crossover_->text();
}

} // namespace kvscope::ui
