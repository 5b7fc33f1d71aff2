// The numbers: cell per token (model and per GPU), bytes per request, the pool per GPU with its
// breakdown, tokens held, max concurrency, the two vLLM log lines, K/V projection weights, and
// the change against the previous state ("×8 fewer bytes per token per GPU").
#pragma once

#include "core/law/law.h"

#include <QHash>
#include <QWidget>
#include <optional>

class QLabel;
class QGridLayout;

namespace kvscope::ui {

class FitLabel;

class NumbersPanel : public QWidget {
    Q_OBJECT
public:
    explicit NumbersPanel(QWidget* parent = nullptr);

    /// Shows `r`; `previous` (the state before the last change) drives the "change" line.
    void setReport(const kvscope::Report& r, const std::optional<kvscope::Report>& previous);
    /// The text shown for a value key ("cellModel", "cellRank", "requestModel", "requestRank",
    /// "pool", "tokens", "concurrency", "vllmTokens", "vllmConcurrency", "kvProj", "delta").
    QString valueText(const QString& key) const;
    /// The tooltip text of a value key ("poolBreakdown": each pool term's rule and source).
    QString valueTip(const QString& key) const;

protected:
    void changeEvent(QEvent* e) override;

private:
    FitLabel* addValue(QGridLayout* grid, int row, int col, const QString& key,
                       const QString& caption, double fontFactor, int colSpan = 1);
    QGridLayout* addSection(const QString& title);
    void restyle();

    QHash<QString, FitLabel*> values_;
    QHash<QString, FitLabel*> captions_;
    QList<QLabel*> sectionTitles_;
    QList<QPair<FitLabel*, double>> scaled_;
};

} // namespace kvscope::ui
