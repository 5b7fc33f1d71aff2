// Plan a deployment: model, context, target concurrency, GPUs and KV dtypes in; core's ranked
// options out, with every rejected candidate and why.
#pragma once

#include "ui/appstate.h"

#include <QDialog>

class QComboBox;
class QSpinBox;
class QListWidget;
class QTableWidget;
class QLabel;
class QCheckBox;

namespace kvscope::ui {

class PlanDialog : public QDialog {
    Q_OBJECT
public:
    /// Starts from the window's model, context and batch.
    explicit PlanDialog(const AppState& state, QWidget* parent = nullptr);

    /// Runs the planner with the dialog's inputs; false (and the status line) on a refused
    /// request.
    bool plan();
    QTableWidget* optionsTable() const { return options_; }
    QTableWidget* rejectionsTable() const { return rejections_; }
    QString statusText() const;
    void setContext(int tokens);
    void setConcurrency(int requests);

Q_SIGNALS:
    /// "Use this option" on a row: the state that option describes.
    void applyRequested(const kvscope::ui::AppState& state);

private:
    AppState state_;
    QComboBox* model_ = nullptr;
    QSpinBox* context_ = nullptr;
    QSpinBox* concurrency_ = nullptr;
    QListWidget* gpus_ = nullptr;
    QList<QCheckBox*> dtypes_;
    QTableWidget* options_ = nullptr;
    QTableWidget* rejections_ = nullptr;
    QLabel* status_ = nullptr;
    std::vector<AppState> optionStates_;
};

} // namespace kvscope::ui
