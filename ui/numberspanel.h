// The numbers: cell per token (model and per GPU), bytes per request (per layer group for hybrid
// models), the pool per GPU with its breakdown, tokens held, max concurrency, the two vLLM log
// lines, K/V projection weights, the GPU's figures, and the change against the previous
// state ("×8 fewer bytes per token per GPU"), all from the report's field list.
#pragma once

#include "core/law/law.h"

#include <QHash>
#include <QWidget>
#include <optional>

class QLabel;
class QGridLayout;

namespace kvscope::ui {

class FitLabel;
class PanelFields;

class NumbersPanel : public QWidget {
    Q_OBJECT
public:
    explicit NumbersPanel(QWidget* parent = nullptr);

    /// Shows `r`; `previous` (the state before the last change) drives the "change" line. With
    /// the model, hybrid models get their layer groups' bytes; with the GPU, its figures.
    /// Every number comes from the report's field list (core/features/report_fields.h).
    void setReport(const kvscope::Report& r, const std::optional<kvscope::Report>& previous,
                   const kvscope::ModelSpec* m = nullptr, const kvscope::GpuSpec* gpu = nullptr);
    /// The text shown for a value key ("cellModel", "cellRank", "requestModel", "requestRank",
    /// "pool", "tokens", "concurrency", "vllmTokens", "vllmConcurrency", "kvProj", "delta").
    QString valueText(const QString& key) const;
    /// The tooltip text of a value key ("poolBreakdown": each pool term's rule and source).
    QString valueTip(const QString& key) const;
    /// The field-list keys a value key's text was made from ("groups":
    /// "model.layer_groups.0.count", ...; "gpu": the GPU rows marked for the panel).
    QStringList valueFields(const QString& key) const;
    /// The value keys (and "caption." + key) whose text was cut when last painted: elided, or
    /// wrapped past the room the layout gave it. Empty when everything shows whole.
    QStringList cutTexts() const;
    /// Whether the layer-group lines are shown (hybrid models only).
    bool groupsShown() const;
    /// Sections fold away on a click on their title (and back); in order from the top.
    int sectionCount() const;
    void setSectionFolded(int section, bool folded);
    bool sectionFolded(int section) const;

protected:
    void changeEvent(QEvent* e) override;

private:
    FitLabel* addValue(QGridLayout* grid, int row, int col, const QString& key,
                       const QString& caption, double fontFactor, int colSpan = 1,
                       bool captionBelow = false);
    void addRowLabel(QGridLayout* grid, int row, const QString& text);
    QGridLayout* addSection(const QString& title);
    void restyle();
    void show(PanelFields& f, const char* key, const QString& text, const QString& tip = {});
    void setPool(const kvscope::Report& r, PanelFields& f);
    void setGpuLine(PanelFields& f);
    void setChange(const kvscope::Report& r, const std::optional<kvscope::Report>& previous);

    QHash<QString, FitLabel*> values_;
    QHash<QString, FitLabel*> captions_;
    QList<FitLabel*> rowLabels_;
    QList<QLabel*> sectionTitles_;
    QList<QPair<FitLabel*, double>> scaled_;
    QHash<QString, QStringList> fieldsOf_;
    int groupsSection_ = 0;
};

} // namespace kvscope::ui
